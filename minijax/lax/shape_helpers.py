"""Shape-level conveniences of jax.lax built from the structural primitives: split,
collapse, broadcast_to_rank, empty, and the integer high-half multiply mulhi."""

from __future__ import annotations

import math
import operator

import numpy as np

from minijax import dtypes
from minijax.array import Array
from minijax.core import Tracer, get_aval
from minijax.lax.elementwise import add, mul, sub
from minijax.lax.elementwise_int import (
    bitcast_convert_type,
    bitwise_and,
    lt,
    select,
    shift_right_logical,
)
from minijax.lax.slicing import slice_in_dim
from minijax.lax.structural import full, reshape


def asarray(x):
    """`x` as an Array or tracer (NumPy arrays and scalars at their canonical dtype)."""
    if isinstance(x, (Array, Tracer)):
        return x
    value = np.asarray(x)
    return Array(value.astype(dtypes.canonicalize_dtype(value.dtype), copy=False))


def split(operand, sizes, axis: int = 0):
    """Split `operand` along `axis` into pieces of the given `sizes` (which must sum to the
    axis length); returns a list of arrays."""
    x = asarray(operand)
    shape = get_aval(x).shape
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"split: axis {axis} is out of bounds for an operand of rank {ndim}")
    axis = operator.index(axis) % ndim
    sizes = [operator.index(s) for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != shape[axis]:
        raise ValueError(f"split: sizes {tuple(sizes)} must be nonnegative and sum to the "
                         f"size of axis {axis} of the operand of shape {shape}")
    out, start = [], 0
    for s in sizes:
        out.append(slice_in_dim(x, start, start + s, axis=axis))
        start += s
    return out


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """Merge the dimensions [start_dimension, stop_dimension) of `operand` into one."""
    x = asarray(operand)
    shape = get_aval(x).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(f"collapse: stop_dimension {stop_dimension} is before "
                         f"start_dimension {start_dimension} for shape {shape}")
    size = math.prod(shape[lo:hi])
    return reshape(x, shape[:lo] + (size,) + shape[hi:])


def broadcast_to_rank(x, rank: int):
    """Add leading size-1 dimensions to `x` until it has rank `rank`."""
    x = asarray(x)
    shape = get_aval(x).shape
    if rank < len(shape):
        raise ValueError(f"broadcast_to_rank: rank {rank} is below the operand's rank "
                         f"{len(shape)} (shape {shape})")
    if rank == len(shape):
        return x
    return reshape(x, (1,) * (rank - len(shape)) + shape)


def empty(shape, dtype, *, out_sharding=None):
    """An array of `shape` and `dtype` whose contents are unspecified (zeros in minijax)."""
    del out_sharding  # minijax places arrays on the default device
    return full(tuple(shape), 0, dtypes.canonicalize_dtype(dtype))


def mulhi(x, y, /):
    """The high half of the double-width product x * y of two integers of one dtype
    (signed or unsigned), elementwise."""
    x, y = asarray(x), asarray(y)
    dt, dy = get_aval(x).dtype, get_aval(y).dtype
    if dt != dy or dt.kind not in "iu":
        raise TypeError(f"mulhi requires integer operands of one dtype, got {dt} and {dy}")
    unsigned = np.dtype(f"uint{dt.itemsize * 8}")
    ux = x if dt.kind == "u" else bitcast_convert_type(x, unsigned)
    uy = y if dt.kind == "u" else bitcast_convert_type(y, unsigned)
    half = dt.itemsize * 4
    mask = np.asarray((1 << half) - 1, unsigned)
    h = np.asarray(half, unsigned)
    x_lo, x_hi = bitwise_and(ux, mask), shift_right_logical(ux, h)
    y_lo, y_hi = bitwise_and(uy, mask), shift_right_logical(uy, h)
    hi_lo = mul(x_hi, y_lo)
    cross = add(add(shift_right_logical(mul(x_lo, y_lo), h), bitwise_and(hi_lo, mask)),
                mul(x_lo, y_hi))
    high = add(add(mul(x_hi, y_hi), shift_right_logical(hi_lo, h)),
               shift_right_logical(cross, h))
    if dt.kind == "u":
        return high
    # signed high half = unsigned high half - (x < 0 ? y : 0) - (y < 0 ? x : 0)  (mod 2^n)
    zero = np.asarray(0, dt)
    zero_u = np.asarray(0, unsigned)
    high = sub(high, select(lt(x, zero), uy, full(get_aval(uy).shape, zero_u, unsigned)))
    high = sub(high, select(lt(y, zero), ux, full(get_aval(ux).shape, zero_u, unsigned)))
    return bitcast_convert_type(high, dt)
