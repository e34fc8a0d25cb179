"""Less common NumPy functions in lax terms, with jax.numpy's signatures: float and integer
bit helpers (fabs, frexp, ldexp, gcd, lcm, bitwise_count), structural edits (insert, delete,
compress, extract, choose, block, diagflat, fill_diagonal), matvec/vecmat, host-data
constructors (frombuffer, fromstring) and small predicates (isscalar, iscomplexobj, ...).
Index builders are in extras_index.py, functional helpers in functional.py, polynomials,
windows and gradient in extras_poly.py."""

from __future__ import annotations

import builtins

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.errors import ConcretizationTypeError
from minijax.numpy import base as jnp
from minijax.numpy import util
from minijax.numpy.creation import _user_dtype
from minijax.numpy.dtypes_api import bool_
from minijax.numpy.sorting_searching import argsort, sort
from minijax.numpy.util import check_arraylike, to_array

__all__ = [
    "astype", "bitwise_count", "block", "bool", "choose", "compress", "delete", "diagflat",
    "extract", "fabs", "fill_diagonal", "frexp", "frombuffer", "fromiter", "fromstring", "gcd",
    "insert", "isscalar", "iscomplexobj", "isrealobj", "iterable", "lcm", "ldexp", "matvec",
    "packbits", "spacing", "trim_zeros", "unpackbits", "vecmat"]

bool = bool_  # noqa: A001  (jnp.bool, as in JAX)


def astype(x, dtype, /, *, copy=False, device=None):
    """x converted to `dtype` (jnp.astype; `copy` has no effect: arrays are immutable)."""
    check_arraylike("astype", x)
    return util.convert(x, _user_dtype(dtype), False)


# --------------------------------------------------------------------------- float bits


def fabs(x, /):
    """Absolute value of real x, as a floating-point array."""
    check_arraylike("fabs", x)
    (x,) = util.promote_dtypes_inexact(x)
    if dtypes.is_complex(get_aval(x).dtype):
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return lax.abs(x)


def _float_layout(dtype):
    info = dtypes.finfo(dtype)
    nbits = np.dtype(dtype).itemsize * 8
    int_dtype = {16: np.int16, 32: np.int32, 64: np.int64}[nbits]
    return int(info.nmant), int(info.maxexp) - 1, np.dtype(int_dtype)


def _pow2(k, dtype):
    """2.0 ** k, exactly, for integer k in the normal exponent range of `dtype`."""
    nmant, bias, int_dtype = _float_layout(dtype)
    k = lax.convert_element_type(k, int_dtype)
    bits = lax.shift_left(lax.add(k, util.full_like_scalar(bias, k)),
                          util.full_like_scalar(nmant, k))
    return lax.bitcast_convert_type(bits, dtype)


def _exponent(x):
    """frexp's exponent (int32) of floating x; 0 for zero, inf and nan (not differentiated)."""
    dtype = get_aval(x).dtype
    nmant, bias, int_dtype = _float_layout(dtype)
    x = lax.stop_gradient(x)
    ax = lax.abs(x)
    subnormal = lax.bitwise_and(lax.ne(x, util.full_like_scalar(0, x)),
                                lax.lt(ax, util.full_like_scalar(dtypes.finfo(dtype).tiny, x)))
    boost = nmant + 2
    scaled = jnp.where(subnormal, lax.mul(ax, _pow2(jnp.full((), boost, np.int32), dtype)), ax)
    bits = lax.bitcast_convert_type(scaled, int_dtype)
    field = lax.shift_right_logical(bits, util.full_like_scalar(nmant, bits))
    exp = lax.sub(field, util.full_like_scalar(bias - 1, field))
    exp = lax.convert_element_type(exp, np.int32)
    exp = lax.sub(exp, lax.mul(lax.convert_element_type(subnormal, np.int32),
                               util.full_like_scalar(boost, exp)))
    special = lax.bitwise_or(lax.eq(x, util.full_like_scalar(0, x)),
                             lax.bitwise_not(lax.is_finite(x)))
    return jnp.where(special, util.full_like_scalar(0, exp), exp)


def _scale_exact(x, k):
    """x * 2**k for int32 k where the result is normal or x is scaled towards 1: split into
    two exact power-of-two factors so each stays representable."""
    dtype = get_aval(x).dtype
    half = lax.div(k, util.full_like_scalar(2, k))
    return lax.mul(lax.mul(x, _pow2(half, dtype)), _pow2(lax.sub(k, half), dtype))


def frexp(x, /):
    """Split x into mantissa (|m| in [0.5, 1)) and int32 exponent with x = m * 2**e."""
    check_arraylike("frexp", x)
    (x,) = util.promote_dtypes_inexact(x)
    if dtypes.is_complex(get_aval(x).dtype):
        raise TypeError("frexp does not support complex-valued inputs")
    e = _exponent(x)
    return _scale_exact(x, lax.neg(e)), e


def ldexp(x1, x2, /):
    """x1 * 2**x2 for integer x2, rounded once (exact unless the result is subnormal or
    overflows)."""
    check_arraylike("ldexp", x1, x2)
    d1, d2 = util.dtype_of(x1), util.dtype_of(x2)
    if dtypes.is_complex(d1) or d2.kind not in "iub":
        raise ValueError(f"ldexp not supported for input types {(d1, d2)}")
    (x1,) = util.promote_dtypes_inexact(x1)
    x2 = to_array(x2)
    x1, x2 = util.broadcast_arrays_for_op(x1, x2)
    dtype = get_aval(x1).dtype
    nmant, bias, _ = _float_layout(dtype)
    lo, hi = -bias - nmant - 1, 2 * bias
    big = 4 * bias + nmant
    e = lax.convert_element_type(lax.clamp(util.full_like_scalar(-big, x2), x2,
                                           util.full_like_scalar(big, x2)), np.int32)
    ex = _exponent(x1)
    total = lax.clamp(np.int32(lo), lax.add(ex, e), np.int32(hi))
    b = lax.clamp(np.int32(1 - bias), total, np.int32(bias))
    a = lax.sub(total, b)
    mant = _scale_exact(x1, lax.neg(ex))
    return lax.mul(lax.mul(mant, _pow2(a, dtype)), _pow2(b, dtype))


def spacing(x, /):
    """The distance from x to the adjacent float away from zero (NumPy's ulp, signed like
    x; float16 steps toward +inf, as NumPy and JAX)."""
    check_arraylike("spacing", x)
    (x,) = util.promote_dtypes_inexact(x)
    if x.dtype.kind == "c":
        raise ValueError("jnp.spacing is not defined for complex inputs.")
    inf = jnp.asarray(np.inf, x.dtype)
    if x.dtype == np.float16:
        return jnp.nextafter(x, inf) - x
    step = jnp.nextafter(x, jnp.copysign(inf, x)) - x
    # Where subnormals flush to zero the step from 0 would be 0: use the true spacing.
    tiny = jnp.asarray(dtypes.finfo(x.dtype).smallest_subnormal, x.dtype)
    return jnp.where(step == 0, jnp.copysign(tiny, x), step)


# --------------------------------------------------------------------------- integer bits


def _integer_args(name, *args):
    check_arraylike(name, *args)
    args = util.promote_args_numeric(name, *args)
    if get_aval(args[0]).dtype.kind not in "iu":
        raise ValueError(f"Arguments to jax.numpy.{name} must be integers.")
    return args


def _gcd(a, b):
    a, b = lax.abs(a), lax.abs(b)
    zero = util.full_like_scalar(0, a)
    one = util.full_like_scalar(1, a)

    def cond(carry):
        return lax.reduce_or(lax.ne(carry[1], zero), tuple(range(get_aval(a).ndim)))

    def body(carry):
        x, y = carry
        nz = lax.ne(y, zero)
        safe = jnp.where(nz, y, one)
        return jnp.where(nz, y, x), jnp.where(nz, lax.rem(x, safe), zero)

    if get_aval(a).size == 0:
        return a
    # abs again: |INT_MIN| overflows, so remainders of it may come out negative.
    return lax.abs(lax.while_loop(cond, body, (a, b))[0])


def gcd(x1, x2, /):
    """Elementwise greatest common divisor of |x1| and |x2| (Euclid's algorithm)."""
    x1, x2 = _integer_args("gcd", x1, x2)
    x1, x2 = util.broadcast_arrays_for_op(x1, x2)
    shape = util.broadcast_shapes(x1.shape, x2.shape)
    return _gcd(util.broadcast_to(x1, shape), util.broadcast_to(x2, shape))


def lcm(x1, x2, /):
    """Elementwise least common multiple of |x1| and |x2| (0 if either is 0)."""
    x1, x2 = _integer_args("lcm", x1, x2)
    shape = util.broadcast_shapes(x1.shape, x2.shape)
    x1, x2 = util.broadcast_to(x1, shape), util.broadcast_to(x2, shape)
    d = _gcd(x1, x2)
    zero = lax.eq(d, util.full_like_scalar(0, d))
    safe = jnp.where(zero, util.full_like_scalar(1, d), d)
    # As JAX: |x1| * (|x2| // gcd), wrapping (not re-made positive) where it overflows.
    out = lax.mul(lax.abs(x1), lax.div(lax.abs(x2), safe))
    return jnp.where(zero, util.full_like_scalar(0, d), out)


def bitwise_count(x, /):
    """Number of 1 bits in |x| (uint8), for integer and boolean x."""
    check_arraylike("bitwise_count", x)
    x = to_array(x)
    kind = dtypes.kind(get_aval(x).dtype)
    if kind not in "iub":
        raise TypeError(f"bitwise_count only accepts integer or boolean arguments, got "
                        f"{get_aval(x).dtype}")
    if kind == "b":
        return lax.convert_element_type(x, np.uint8)
    if kind == "i":
        x = lax.abs(x)
    return lax.convert_element_type(lax.population_count(x), np.uint8)


def _bit_order(bitorder):
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    return np.arange(8)[::-1] if bitorder == "big" else np.arange(8)


def packbits(a, axis=None, bitorder="big"):
    """The truth values of `a` packed 8 to a uint8 along `axis` (flattened if None),
    zero-padding the last byte; bitorder 'big' puts the first bit in the top position."""
    check_arraylike("packbits", a)
    arr = to_array(a)
    if arr.dtype.kind not in "iub":
        raise TypeError("Expected an input array of integer or boolean data type")
    shifts = _bit_order(bitorder)
    if axis is None:
        arr, axis = jnp.ravel(arr), 0
    bits = jnp.moveaxis(arr != 0, axis, -1).astype(np.uint8)
    n = bits.shape[-1]
    pad = -n % 8
    if pad:
        bits = jnp.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, pad)])
    bits = bits.reshape(bits.shape[:-1] + ((n + pad) // 8, 8))
    packed = jnp.sum(bits << jnp.asarray(shifts, np.uint8), axis=-1, dtype=np.uint8)
    return jnp.moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of the uint8 array `a` as a uint8 array of 0s and 1s along `axis`
    (flattened if None); `count` keeps that many bits (zero-padding past the end;
    negative drops bits from the end)."""
    check_arraylike("unpackbits", a)
    arr = to_array(a)
    if arr.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    shifts = jnp.asarray(_bit_order(bitorder), np.uint8)
    bits = (arr[..., None] >> shifts) & np.uint8(1)
    if axis is None:
        bits, axis = jnp.ravel(bits), 0
    else:
        axis = util.canonicalize_axis(axis, arr.ndim)
        bits = jnp.moveaxis(bits, -1, axis + 1)
        bits = bits.reshape(arr.shape[:axis] + (8 * arr.shape[axis],) + arr.shape[axis + 1:])
    if count is not None:
        n = bits.shape[axis]
        count = int(count)
        keep = builtins.max(n + count, 0) if count < 0 else count
        if keep <= n:
            bits = lax.slice_in_dim(bits, 0, keep, axis=axis)
        else:
            pads = [(0, 0)] * bits.ndim
            pads[axis] = (0, keep - n)
            bits = jnp.pad(bits, pads)
    return bits


# --------------------------------------------------------------------------- diagonals


def _index_array(values):
    return jnp.asarray(np.asarray(values, dtype=dtypes.default_int_dtype()))


def diagflat(v, k=0):
    """A 2-D array with the flattened input on the k-th diagonal."""
    check_arraylike("diagflat", v)
    return jnp.diag(jnp.ravel(v), k)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """A copy of `a` with its main diagonal set to `val` (JAX's form: pass inplace=False)."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    check_arraylike("fill_diagonal", a, val)
    a, val = to_array(a), to_array(val)
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    n = min(a.shape)
    idx = (jnp.arange(n),) * a.ndim
    if val.ndim > 0 and n:
        flat = jnp.ravel(val)
        if flat.size == 0:
            return a
        val = jnp.tile(flat, -(-n // flat.size))[:n]
    return a.at[idx].set(val.astype(a.dtype))


# --------------------------------------------------------------------------- structural


def _block_depth(arrays, index=()):
    if isinstance(arrays, tuple):
        raise TypeError(f"arrays{''.join(f'[{i}]' for i in index)} is a tuple. Only lists can "
                        f"be used to arrange blocks, and np.block does not allow implicit "
                        f"conversion from tuple to ndarray.")
    if isinstance(arrays, list):
        if not arrays:
            raise ValueError(f"List at arrays{''.join(f'[{i}]' for i in index)} cannot be "
                             f"empty")
        depths = [_block_depth(a, index + (i,)) for i, a in enumerate(arrays)]
        if len({d for d, _ in depths}) != 1:
            raise ValueError("List depths are mismatched: all lists in a block must be "
                             "nested to the same depth")
        return depths[0][0] + 1, builtins.max(nd for _, nd in depths)
    return 0, util.ndim_of(arrays)


def block(arrays):
    """Assemble an array from nested lists of blocks (the innermost lists concatenate along
    the last axis)."""
    depth, max_ndim = _block_depth(arrays)
    ndim = builtins.max(depth, max_ndim)

    def build(x, level):
        if level == depth:
            check_arraylike("block", x)
            x = to_array(x)
            return lax.reshape(x, (1,) * (ndim - x.ndim) + x.shape)
        parts = [build(a, level + 1) for a in x]
        return jnp.concatenate(parts, axis=level - depth)

    return build(arrays, 0)


def _axis_front(name, arr, axis):
    check_arraylike(name, arr)
    arr = to_array(arr)
    if axis is None:
        return jnp.ravel(arr), 0
    return arr, util.canonicalize_axis(axis, arr.ndim)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """`arr` without the entries `obj` (slice, indices or boolean mask) along `axis`."""
    arr, axis = _axis_front("delete", arr, axis)
    n = arr.shape[axis]
    if isinstance(obj, slice):
        keep = np.delete(np.arange(n), obj)
        return jnp.take(arr, _index_array(keep), axis=axis)
    concrete = util.concrete_or_none(obj)
    if concrete is None:
        if not assume_unique_indices:
            raise ConcretizationTypeError("jnp.delete(arr, obj): obj must be concrete "
                                          "(static) unless assume_unique_indices=True")
        idx = jnp.ravel(to_array(obj))
        idx = sort(jnp.where(idx < 0, idx + n, idx))
        idx = idx - jnp.arange(idx.shape[0], dtype=idx.dtype)
        keep = jnp.arange(n - idx.shape[0], dtype=idx.dtype)
        keep = keep + jnp.sum(keep[None, :] >= idx[:, None], axis=0, dtype=idx.dtype)
        return jnp.take(arr, keep, axis=axis)
    if concrete.dtype == np.bool_ and concrete.shape != (n,):
        raise ValueError(f"boolean array argument obj to delete must be one dimensional and "
                         f"match the axis length of {n}")
    keep = np.delete(np.arange(n), concrete.astype(concrete.dtype if concrete.dtype.kind == "b"
                                                   else np.int64))
    return jnp.take(arr, _index_array(keep), axis=axis)


def insert(arr, obj, values, axis=None):
    """`arr` with `values` inserted before the indices `obj` along `axis` (indices out of
    range are clipped, as in JAX; traced indices are supported)."""
    arr, axis = _axis_front("insert", arr, axis)
    n = arr.shape[axis]
    values = util.convert(values, arr.dtype)
    if isinstance(obj, slice):
        obj = np.arange(*obj.indices(n))
    idx = to_array(obj)
    if idx.ndim > 1:
        raise ValueError("jnp.insert(): obj must be a slice, a one-dimensional array, or a "
                         "scalar")
    if idx.dtype.kind not in "iu":
        raise TypeError(f"jnp.insert(): index array must be integer typed, got {idx.dtype}")
    values = lax.reshape(values, (1,) * builtins.max(arr.ndim - values.ndim, 0) + values.shape)
    if idx.ndim == 0:
        values = jnp.moveaxis(values, 0, axis)
        k = values.shape[axis]
        idx = jnp.broadcast_to(idx, (k,))
    else:
        k = idx.shape[0]
    shape = list(arr.shape)
    shape[axis] = k
    values = jnp.broadcast_to(values, tuple(shape))
    idx = idx.astype(dtypes.default_int_dtype())
    idx = jnp.clip(jnp.where(idx < 0, idx + n, idx), 0, n)
    order = argsort(idx)
    value_pos = idx.at[order].add(jnp.arange(k, dtype=idx.dtype))
    keep_mask = jnp.ones((n + k,), np.bool_).at[value_pos].set(False)
    arr_pos = jnp.nonzero(keep_mask, size=n)[0]
    out_shape = list(arr.shape)
    out_shape[axis] = n + k
    out = jnp.moveaxis(jnp.zeros(tuple(out_shape), arr.dtype), axis, 0)
    out = out.at[value_pos].set(jnp.moveaxis(values, axis, 0))
    out = out.at[arr_pos].set(jnp.moveaxis(arr, axis, 0))
    return jnp.moveaxis(out, 0, axis)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of `a` along `axis` where the 1-D `condition` is true (size= pads or
    truncates to a static length, for jit)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    check_arraylike("compress", condition, a)
    cond = to_array(condition)
    if cond.ndim != 1:
        raise ValueError("condition must be a 1D array")
    cond = cond.astype(np.bool_)
    a, axis = _axis_front("compress", a, axis)
    n = a.shape[axis]
    if cond.shape[0] > n:
        extra = util.concrete_or_none(cond[n:])
        if extra is None or extra.any():
            raise ValueError(f"condition has {cond.shape[0]} entries, more than the "
                             f"{n} along axis {axis}")
        cond = cond[:n]
    a = lax.slice_in_dim(a, 0, cond.shape[0], axis=axis)
    if size is None:
        idx = jnp.nonzero(cond)[0]
        return jnp.take(a, idx, axis=axis)
    size = util.concrete_int(size, "compress: size")
    idx = jnp.nonzero(cond, size=size, fill_value=cond.shape[0])[0]
    return jnp.take(a, idx, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of `arr` where `condition` is true, flattened (size= for jit)."""
    check_arraylike("extract", condition, arr)
    return compress(jnp.ravel(condition), jnp.ravel(arr), size=size, fill_value=fill_value)


def choose(a, choices, out=None, mode="raise"):
    """out[i] = choices[a[i]][i] with broadcasting; mode 'raise' (eager only), 'wrap' or
    'clip' for out-of-range entries."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    check_arraylike("choose", a, *choices)
    a = to_array(a)
    if a.dtype.kind not in "iu":
        raise TypeError(f"choose: index array must be integer typed, got {a.dtype}")
    n = len(choices)
    if mode == "raise":
        value = util.concrete_or_none(a)
        if value is None:
            raise ConcretizationTypeError("jnp.choose with mode='raise' needs concrete "
                                          "indices; use mode='wrap' or mode='clip' under jit")
        if np.any((value < 0) | (value >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = a % n
    elif mode == "clip":
        a = jnp.clip(a, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    arrays = util.promote_dtypes(*choices)
    shape = util.broadcast_shapes(a.shape, *(x.shape for x in arrays))
    stacked = jnp.stack([jnp.broadcast_to(x, shape) for x in arrays])
    idx = jnp.broadcast_to(a, shape)[None].astype(np.int32)
    return jnp.take_along_axis(stacked, idx, axis=0)[0]


def trim_zeros(filt, trim="fb", axis=None):
    """filt without its leading ('f' in trim) and/or trailing ('b') zeros along `axis`
    (every axis if None: the bounding box of the nonzero elements). The result's size
    depends on the values, so filt must be concrete (not traced under jit)."""
    check_arraylike("trim_zeros", filt)
    arr = to_array(filt)
    value = util.concrete_or_none(arr)
    if value is None:
        raise ConcretizationTypeError(
            "jnp.trim_zeros: the size of the result depends on the values of its argument, "
            "so it cannot be traced (under jit). Trim eagerly, or use "
            "jnp.nonzero(..., size=) to compute fixed-size bounds.")
    if value.ndim == 0:
        raise ValueError("trim_zeros requires at least a 1-D array")
    axes = range(value.ndim) if axis is None else \
        util.canonicalize_axes((axis,) if isinstance(axis, (int, np.integer)) else axis,
                          value.ndim)
    trim = trim.lower()
    nonzero = np.nonzero(value)
    index = [slice(None)] * value.ndim
    for ax in axes:
        if not nonzero[ax].size:
            index[ax] = slice(0, 0)
            continue
        lo = int(nonzero[ax].min()) if "f" in trim else 0
        hi = int(nonzero[ax].max()) + 1 if "b" in trim else value.shape[ax]
        index[ax] = slice(lo, hi)
    return arr[tuple(index)]


def matvec(x1, x2, /):
    """Batched matrix-vector product: (..., m, n) x (..., n) -> (..., m)."""
    check_arraylike("matvec", x1, x2)
    x1, x2 = to_array(x1), to_array(x2)
    if x1.ndim < 2 or x2.ndim < 1:
        raise ValueError(f"matvec: expected x1.ndim >= 2 and x2.ndim >= 1, got shapes "
                         f"{x1.shape} and {x2.shape}")
    return jnp.matmul(x1, x2[..., None])[..., 0]


def vecmat(x1, x2, /):
    """Batched vector-matrix product conj(x1) @ x2: (..., n) x (..., n, m) -> (..., m)."""
    check_arraylike("vecmat", x1, x2)
    x1, x2 = to_array(x1), to_array(x2)
    if x1.ndim < 1 or x2.ndim < 2:
        raise ValueError(f"vecmat: expected x1.ndim >= 1 and x2.ndim >= 2, got shapes "
                         f"{x1.shape} and {x2.shape}")
    return jnp.matmul(jnp.conj(x1)[..., None, :], x2)[..., 0, :]


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """An array from raw bytes (numpy.frombuffer, then converted to a minijax Array)."""
    return jnp.asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromiter(*args, **kwargs):
    """Not provided, as in JAX: consuming an iterator is a side effect (unsafe under jit)."""
    raise NotImplementedError(
        "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for "
        "use with JIT and other JAX transformations. Consider using "
        "jnp.asarray(np.fromiter(...)) instead, although care should be taken if "
        "np.fromiter is used within a jax transformations because of its potential "
        "side-effect of consuming the iterable object.")


def fromstring(string, dtype=float, count=-1, *, sep):
    """An array from text data separated by `sep` (numpy.fromstring on the host)."""
    return jnp.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def isscalar(element) -> builtins.bool:
    """True for scalars and zero-dimensional array-likes (JAX's rule, stable under jit)."""
    if np.isscalar(element):
        return True
    if util.is_array(element) or isinstance(element, np.ndarray):
        return element.ndim == 0
    if hasattr(element, "__jax_array__"):
        return jnp.asarray(element).ndim == 0
    return False


def iscomplexobj(x) -> builtins.bool:
    """True if x has a complex dtype (regardless of its values)."""
    if x is None:
        return False
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        dtype = np.asarray(x).dtype
    return np.issubdtype(dtype, np.complexfloating)


def isrealobj(x) -> builtins.bool:
    """True if x does not have a complex dtype."""
    return not iscomplexobj(x)


def iterable(y) -> builtins.bool:
    """True if iter(y) succeeds."""
    return np.iterable(y)

