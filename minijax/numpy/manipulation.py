"""Shape manipulation: reshape, ravel, transpose, moveaxis, swapaxes, squeeze, expand_dims,
broadcasting, atleast_*d, concatenate/stack family, split/array_split, tile, repeat, flip,
roll, rot90, pad, append."""

from __future__ import annotations

import operator

import numpy as np

from minijax import dtypes, lax
from minijax.core import Tracer, get_aval
from minijax.errors import ConcretizationTypeError, concretization_message
from minijax.numpy import util
from minijax.numpy.creation import _user_dtype
from minijax.numpy.indexing import take
from minijax.numpy.ufuncs import remainder
from minijax.numpy.util import (
    broadcast_shapes,
    broadcast_to,
    canonicalize_axes,
    canonicalize_axis,
    check_arraylike,
    to_array,
)


def _arr(name, a):
    check_arraylike(name, a)
    return to_array(a)


def _shape_arg(shape):
    if isinstance(shape, (int, np.integer)) or (util.is_array(shape) and shape.ndim == 0):
        return (operator.index(shape),)
    return tuple(operator.index(d) for d in shape)


def _resolve_shape(size, shape, old_shape):
    # TypeErrors naming the shapes, as JAX's.
    if sum(1 for d in shape if d == -1) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got "
                        f"{shape}")
    if any(d < -1 for d in shape):
        raise TypeError(f"cannot reshape array of shape {old_shape} (size {size}) into shape "
                        f"{shape}: dimensions must be >= 0 (or -1 for one unknown size)")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise TypeError(f"cannot reshape array of shape {old_shape} (size {size}) into "
                            f"shape {shape} because the product of specified axis sizes "
                            f"({known}) does not evenly divide {size}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    new_size = int(np.prod(shape, dtype=np.int64))
    if new_size != size:
        raise TypeError(f"cannot reshape array of shape {old_shape} (size {size}) into shape "
                        f"{shape} (size {new_size})")
    return shape


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Give a new shape (one dimension may be -1); order 'C' or 'F'."""
    a = _arr("reshape", a)
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("reshape() missing required argument 'shape'")
    aval = get_aval(a)
    shape = _resolve_shape(aval.size, _shape_arg(shape), aval.shape)
    if order == "C":
        return lax.reshape(a, shape)
    if order == "F":
        t = lax.transpose(a, tuple(reversed(range(aval.ndim))))
        r = lax.reshape(t, tuple(reversed(shape)))
        return lax.transpose(r, tuple(reversed(range(len(shape)))))
    if order == "A":
        raise NotImplementedError("reshape: order='A' is not supported")
    raise ValueError(f"reshape: order must be 'C' or 'F', got {order!r}")


def ravel(a, order="C"):
    """Flatten to 1-D."""
    a = _arr("ravel", a)
    return reshape(a, (get_aval(a).size,), order=order)


def transpose(a, axes=None):
    """Permute the axes (reverse them by default)."""
    a = _arr("transpose", a)
    ndim = get_aval(a).ndim
    if axes is None:
        perm = tuple(reversed(range(ndim)))
    else:
        perm = tuple(canonicalize_axis(ax, ndim) for ax in axes)
        if sorted(perm) != list(range(ndim)):
            raise TypeError(f"transpose permutation isn't a permutation of operand "
                            f"dimensions, got permutation {tuple(axes)} for operand shape "
                            f"{get_aval(a).shape}.")
    return lax.transpose(a, perm)


def permute_dims(a, /, axes):
    """Array API spelling of transpose."""
    return transpose(a, axes)


def matrix_transpose(x, /):
    """Swap the last two axes."""
    x = _arr("matrix_transpose", x)
    ndim = get_aval(x).ndim
    if ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got {ndim=}")
    return lax.transpose(x, tuple(range(ndim - 2)) + (ndim - 1, ndim - 2))


def moveaxis(a, source, destination):
    """Move axes to new positions; the others keep their order."""
    a = _arr("moveaxis", a)
    ndim = get_aval(a).ndim
    src = (source,) if isinstance(source, (int, np.integer)) else tuple(source)
    dst = (destination,) if isinstance(destination, (int, np.integer)) else tuple(destination)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    src = tuple(canonicalize_axis(s, ndim) for s in src)
    dst = tuple(canonicalize_axis(d, ndim) for d in dst)
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("repeated axis in moveaxis")
    perm = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(a, tuple(perm))


def swapaxes(a, axis1, axis2):
    """Interchange two axes."""
    a = _arr("swapaxes", a)
    ndim = get_aval(a).ndim
    perm = list(range(ndim))
    i, j = canonicalize_axis(axis1, ndim), canonicalize_axis(axis2, ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, tuple(perm))


def squeeze(a, axis=None):
    """Remove size-1 axes (all of them, or those named)."""
    a = _arr("squeeze", a)
    shape = get_aval(a).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = canonicalize_axes(axis, len(shape))
        for ax in axes:
            if shape[ax] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not "
                                 f"equal to one, got shape={shape} and dimensions={axes}")
    return lax.reshape(a, tuple(d for i, d in enumerate(shape) if i not in axes))


def expand_dims(a, axis):
    """Insert size-1 axes at the given output positions."""
    a = _arr("expand_dims", a)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out_ndim = get_aval(a).ndim + len(axes)
    axes = canonicalize_axes(axes, out_ndim)
    return util.expand_dims_static(a, axes)


def broadcast_arrays(*args):
    """Broadcast arrays against each other."""
    check_arraylike("broadcast_arrays", *args)
    arrays = [to_array(a) for a in args]
    shape = broadcast_shapes(*(get_aval(a).shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def atleast_1d(*arys):
    """Views with at least one dimension."""
    out = [_at_least(a, 1) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    """Views with at least two dimensions (1-D becomes a row)."""
    out = [_at_least(a, 2) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    """Views with at least three dimensions ((N,) -> (1, N, 1), (M, N) -> (M, N, 1))."""
    out = []
    for a in arys:
        a = _arr("atleast_3d", a)
        shape = get_aval(a).shape
        if len(shape) == 0:
            a = lax.reshape(a, (1, 1, 1))
        elif len(shape) == 1:
            a = lax.reshape(a, (1, shape[0], 1))
        elif len(shape) == 2:
            a = lax.reshape(a, shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def _at_least(a, n):
    a = _arr(f"atleast_{n}d", a)
    shape = get_aval(a).shape
    if len(shape) >= n:
        return a
    return lax.reshape(a, (1,) * (n - len(shape)) + shape)


# --------------------------------------------------------------------------- joining


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing axis (flattened first if axis is None)."""
    if util.is_array(arrays) or isinstance(arrays, np.ndarray):
        arrays = [arrays[i] for i in range(len(arrays))]
    if len(arrays) == 0:
        raise ValueError("Need at least one array to concatenate.")
    check_arraylike("concatenate", *arrays)
    arrays = [to_array(a) for a in arrays]
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    if dtype is not None:
        arrays = [util.convert(a, _user_dtype(dtype)) for a in arrays]
    else:
        arrays = util.promote_dtypes(*arrays) if len(arrays) > 1 else arrays
    ndim = get_aval(arrays[0]).ndim
    if ndim == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    ax = canonicalize_axis(axis, ndim)
    shapes = [get_aval(a).shape for a in arrays]
    listed = ", ".join(str(s) for s in shapes)
    if any(len(s) != ndim for s in shapes):  # TypeErrors as JAX's
        raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: "
                        f"got {listed}.")
    if any(s[:ax] + s[ax + 1:] != shapes[0][:ax] + shapes[0][ax + 1:] for s in shapes):
        raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions "
                        "other than the one being concatenated: concatenating along "
                        f"dimension {ax} for shapes {listed}.")
    if len(arrays) == 1:
        return arrays[0]
    return lax.concatenate(arrays, ax)


concat = concatenate


def stack(arrays, axis=0, out=None, dtype=None):
    """Join arrays along a new axis."""
    if util.is_array(arrays):
        arrays = [arrays[i] for i in range(len(arrays))]
    if len(arrays) == 0:
        raise ValueError("Need at least one array to stack.")
    check_arraylike("stack", *arrays)
    arrays = [to_array(a) for a in arrays]
    shapes = {get_aval(a).shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError("All input arrays must have the same shape. Got "
                         + ", ".join(str(get_aval(a).shape) for a in arrays) + ".")
    ax = canonicalize_axis(axis, get_aval(arrays[0]).ndim + 1)
    return concatenate([util.expand_dims_static(a, (ax,)) for a in arrays], ax, dtype)


def vstack(tup, dtype=None):
    """Stack rows (arrays made at least 2-D, joined along axis 0)."""
    return concatenate([_at_least(a, 2) for a in tup], 0, dtype)


row_stack = vstack


def hstack(tup, dtype=None):
    """Stack columns (axis 1, or axis 0 for 1-D inputs)."""
    arrs = [_at_least(a, 1) for a in tup]
    return concatenate(arrs, 0 if get_aval(arrs[0]).ndim == 1 else 1, dtype)


def dstack(tup, dtype=None):
    """Stack along the third axis."""
    return concatenate([atleast_3d(a) for a in tup], 2, dtype)


def column_stack(tup):
    """Stack 1-D arrays as columns of a 2-D array."""
    arrs = []
    for a in tup:
        a = _arr("column_stack", a)
        if get_aval(a).ndim < 2:
            a = lax.reshape(_at_least(a, 1), (get_aval(_at_least(a, 1)).shape[0], 1))
        arrs.append(a)
    return concatenate(arrs, 1)


def append(arr, values, axis=None):
    """Append values to the end of arr (both flattened if axis is None)."""
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


# --------------------------------------------------------------------------- splitting


def _split(name, ary, indices_or_sections, axis, even):
    ary = _arr(name, ary)
    shape = get_aval(ary).shape
    ax = canonicalize_axis(axis, len(shape))
    n = shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)) or (
            util.is_array(indices_or_sections) and indices_or_sections.ndim == 0):
        sections = operator.index(indices_or_sections)
        if sections == 0:  # JAX (as NumPy's split) fails on n % 0
            raise ZeroDivisionError(f"{name}: cannot split an axis of size {n} into 0 "
                                    "sections; pass a positive number of sections")
        if sections < 0:
            raise ValueError("number sections must be larger than 0.")
        if even and n % sections:
            raise ValueError("array split does not result in an equal division")
        base, extra = divmod(n, sections)
        sizes = [base + 1] * extra + [base] * (sections - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    else:
        idx = [operator.index(i) for i in np.asarray(indices_or_sections).ravel().tolist()]
        bounds = [0] + idx + [n]
    out = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        start = max(0, min(n, start + n if start < 0 else start))
        stop = max(start, min(n, stop + n if stop < 0 else stop))
        lo = [0] * len(shape)
        hi = list(shape)
        lo[ax], hi[ax] = start, stop
        out.append(lax.slice(ary, tuple(lo), tuple(hi)))
    return out


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections or at the given indices."""
    return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis=0):
    """Split into nearly equal sections (or at indices)."""
    return _split("array_split", ary, indices_or_sections, axis, False)


def vsplit(ary, indices_or_sections):
    """Split along axis 0."""
    return split(ary, indices_or_sections, 0)


def hsplit(ary, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-D)."""
    a = _arr("hsplit", ary)
    return split(a, indices_or_sections, 1 if get_aval(a).ndim > 1 else 0)


def dsplit(ary, indices_or_sections):
    """Split along axis 2."""
    return split(ary, indices_or_sections, 2)


# --------------------------------------------------------------------------- repeating


def tile(A, reps):
    """Repeat the whole array `reps` times along each axis."""
    A = _arr("tile", A)
    reps = (operator.index(reps),) if isinstance(reps, (int, np.integer)) else \
        tuple(operator.index(r) for r in reps)
    shape = get_aval(A).shape
    ndim = max(len(reps), len(shape))
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - len(shape)) + shape
    A = lax.reshape(A, shape)
    big = []
    for r, d in zip(reps, shape):
        big += [r, d]
    out = lax.broadcast_in_dim(A, tuple(big), tuple(range(1, 2 * ndim, 2)))
    return lax.reshape(out, tuple(r * d for r, d in zip(reps, shape)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Repeat each element `repeats` times (an int or one count per element)."""
    a = _arr("repeat", a)
    if axis is None:
        a = ravel(a)
        axis = 0
    shape = get_aval(a).shape
    ax = canonicalize_axis(axis, len(shape))
    n = shape[ax]
    static = repeats if not util.is_array(repeats) else util.concrete_or_none(repeats)
    if static is not None and np.ndim(static) == 0:
        r = operator.index(np.asarray(static).item()) if not isinstance(static, int) \
            else static
        if r < 0:
            raise ValueError("repeats may not contain negative values.")
        out_shape = shape[:ax] + (n, r) + shape[ax + 1:]
        dims = tuple(range(ax + 1)) + tuple(range(ax + 2, len(shape) + 1))
        out = lax.broadcast_in_dim(a, out_shape, dims)
        out = lax.reshape(out, shape[:ax] + (n * r,) + shape[ax + 1:])
        if total_repeat_length is not None:
            out = _fit_length(out, ax, total_repeat_length)
        return out
    if static is not None:
        counts = np.broadcast_to(np.asarray(static), (n,))
        if np.any(counts < 0):
            raise ValueError("repeats may not contain negative values.")
        if total_repeat_length is None:
            idx = np.repeat(np.arange(n), counts)
            return take(a, util.convert(idx, dtypes.default_int_dtype()), axis=ax)
    if total_repeat_length is None:
        raise ConcretizationTypeError(concretization_message(
            "jnp.repeat with traced `repeats` needs a static output size", repeats,
            "Pass total_repeat_length=... to jnp.repeat, or make `repeats` static."))
    return _repeat_traced(a, repeats, ax, n, total_repeat_length)


def _fit_length(out, ax, length):
    shape = get_aval(out).shape
    if shape[ax] >= length:
        hi = list(shape)
        hi[ax] = length
        return lax.slice(out, (0,) * len(shape), tuple(hi))
    pad = [(0, 0, 0)] * len(shape)
    pad[ax] = (0, length - shape[ax], 0)
    last = lax.slice(out, tuple(shape[ax] - 1 if i == ax else 0 for i in range(len(shape))),
                     shape)
    extra_shape = tuple(length - shape[ax] if i == ax else d for i, d in enumerate(shape))
    return lax.concatenate([out, broadcast_to(last, extra_shape)], ax)


def _repeat_traced(a, repeats, ax, n, total):
    """Block index per output position via a scatter of block starts and a cumsum."""
    idx_dt = dtypes.default_int_dtype()
    reps = broadcast_to(util.convert(repeats, idx_dt), (n,))
    ends = lax.cumsum(reps, axis=0)
    marks = util.full((total,), 0, idx_dt)
    starts = lax.slice(ends, (0,), (max(n - 1, 0),))
    marks = marks.at[starts].add(1, mode="drop")
    block = lax.cumsum(marks, axis=0)
    block = lax.min(block, util.full((total,), max(n - 1, 0), idx_dt))
    return take(a, block, axis=ax)


# --------------------------------------------------------------------------- reversing


def flip(m, axis=None):
    """Reverse the order of elements along the axes (all by default)."""
    m = _arr("flip", m)
    axes = canonicalize_axes(axis, get_aval(m).ndim)
    return lax.rev(m, axes) if axes else m


def fliplr(m):
    """Reverse axis 1."""
    return flip(m, 1)


def flipud(m):
    """Reverse axis 0."""
    return flip(m, 0)


def _roll_static(a, shift, ax):
    shape = get_aval(a).shape
    n = shape[ax]
    if n == 0:
        return a
    shift %= n
    if shift == 0:
        return a
    lo = [0] * len(shape)
    first_hi = list(shape)
    first_hi[ax] = n - shift
    second_lo = list(lo)
    second_lo[ax] = n - shift
    tail = lax.slice(a, tuple(second_lo), shape)
    head = lax.slice(a, tuple(lo), tuple(first_hi))
    return lax.concatenate([tail, head], ax)


def roll(a, shift, axis=None):
    """Roll elements along axes; elements shifted beyond the end wrap around."""
    a = _arr("roll", a)
    if axis is None:
        shape = get_aval(a).shape
        return reshape(roll(ravel(a), shift, 0), shape)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = shift if isinstance(shift, (tuple, list)) else None
    if shifts is None and util.is_array(shift) and get_aval(shift).ndim == 1:
        shifts = [shift[i] for i in range(get_aval(shift).shape[0])]
    if shifts is None:
        shifts = [shift] * len(axes)
    if len(shifts) != len(axes):
        if len(axes) == 1:
            axes = axes * len(shifts)
        elif len(shifts) == 1:
            shifts = list(shifts) * len(axes)
        else:
            raise ValueError("shift and axis must have the same length")
    ndim = get_aval(a).ndim
    for s, ax in zip(shifts, axes):
        ax = canonicalize_axis(ax, ndim)
        concrete = s if not isinstance(s, Tracer) else s.to_concrete_value()
        if concrete is not None:
            a = _roll_static(a, int(np.asarray(concrete)), ax)
        else:
            a = _roll_dynamic(a, s, ax)
    return a


def _roll_dynamic(a, shift, ax):
    shape = get_aval(a).shape
    n = shape[ax]
    if n == 0:
        return a
    idx_dt = dtypes.default_int_dtype()
    s = remainder(util.convert(shift, idx_dt), n)
    doubled = lax.concatenate([a, a], ax)
    start = lax.sub(util.convert(n, idx_dt), s)
    zero = util.convert(0, idx_dt)
    starts = [start if i == ax else zero for i in range(len(shape))]
    return lax.dynamic_slice(doubled, starts, shape)


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees k times in the plane of `axes`."""
    m = _arr("rot90", m)
    ndim = get_aval(m).ndim
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = canonicalize_axis(axes[0], ndim), canonicalize_axis(axes[1], ndim)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(m, a1), perm)
    return flip(transpose(m, perm), a1)


def rollaxis(a, axis, start=0):
    """Move `axis` to just before position `start` (NumPy's older form of moveaxis)."""
    a = _arr("rollaxis", a)
    ndim = get_aval(a).ndim
    axis = canonicalize_axis(axis, ndim)
    if not -ndim <= start <= ndim:
        raise ValueError(f"start={start} must satisfy {-ndim}<=start<={ndim}")
    start = start + ndim if start < 0 else start
    if axis < start:
        start -= 1
    return a if axis == start else moveaxis(a, axis, start)


def resize(a, new_shape):
    """An array of `new_shape` filled with a's elements (row-major), repeated cyclically
    as needed (zeros when a or the result is empty)."""
    a = _arr("resize", a)
    new_shape = _shape_arg(new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    flat = ravel(a)
    size, new_size = get_aval(flat).shape[0], int(np.prod(new_shape))
    if size == 0 or new_size == 0:
        return lax.full(new_shape, 0, get_aval(a).dtype)
    reps = -(-new_size // size)
    flat = tile(flat, reps) if reps > 1 else flat
    return reshape(lax.slice_in_dim(flat, 0, new_size), new_shape)

