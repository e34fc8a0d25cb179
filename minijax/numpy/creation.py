"""Array creation: array, asarray, zeros/ones/full/empty (and *_like), arange, linspace,
logspace, geomspace, eye, identity, tri, tril, triu, diag, diagonal, trace, meshgrid,
indices, copy."""

from __future__ import annotations

import math
import os

import numpy as np

from minijax import dtypes, lax
from minijax.array import Array
from minijax.core import Tracer, get_aval
from minijax.errors import ConcretizationTypeError, JaxRuntimeError, concretization_message
from minijax.numpy import ufuncs, util
from minijax.numpy.array_api import put_on
from minijax.numpy.util import canonicalize_axis, check_arraylike, to_array


def _user_dtype(dtype, warn=True):
    """Canonical dtype for a user-requested dtype (None stays None)."""
    if dtype is None:
        return None
    if dtype is int:
        return dtypes.default_int_dtype()
    if dtype is float:
        return dtypes.default_float_dtype()
    if dtype is complex:
        return dtypes.default_complex_dtype()
    return dtypes.canonicalize_dtype(np.dtype(dtype), warn=warn)


def _has_traced_leaf(obj) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_has_traced_leaf(o) for o in obj)
    return isinstance(obj, (Array, Tracer)) or hasattr(obj, "__jax_array__")


def _nested_to_array(obj):
    """A nested list/tuple containing Arrays or tracers, stacked with lax ops."""
    if not isinstance(obj, (list, tuple)):
        return to_array(obj)
    if len(obj) == 0:
        return to_array(np.zeros((0,), dtypes.default_float_dtype()))
    leaves = [_nested_to_array(o) if isinstance(o, (list, tuple)) else o for o in obj]
    dtype, _ = dtypes.result_type_and_weak(*leaves)
    items = [util.convert(leaf, dtype, False) for leaf in leaves]
    shapes = {get_aval(i).shape for i in items}
    if len(shapes) != 1:
        raise ValueError("setting an array element with a sequence: the nested sequence has "
                         f"inconsistent shapes {sorted(shapes)}")
    items = [lax.reshape(i, (1,) + get_aval(i).shape) for i in items]
    return lax.concatenate(items, 0)


def array(object, dtype=None, copy=True, order="K", ndmin=0, *, device=None):
    """Create an Array from array-like input (nested lists of scalars or arrays); `device`
    (a Device or a single-device sharding) places it."""
    if device is not None:
        return put_on(array(object, dtype, copy, order, ndmin), device)
    if order not in (None, "K", "A", "C"):
        raise NotImplementedError(f"array: order={order!r} is not supported")
    req = _user_dtype(dtype)
    weak = False
    if isinstance(object, (Array, Tracer)) or hasattr(object, "__jax_array__"):
        out = to_array(object)
        weak = get_aval(out).weak_type and req is None
        if isinstance(out, Array) and copy and req is None:
            out = Array(out._buf, weak, out._device, out._committed)
    elif dtypes.is_python_scalar(object):
        weak = req is None and type(object) is not bool
        out = Array(util._scalar_value(object, req or dtypes.python_scalar_dtype(object),
                                        wrap=False),
                    weak)
    elif isinstance(object, (list, tuple)) and _has_traced_leaf(object):
        out = _nested_to_array(object)
    else:
        value = np.asarray(object)
        if value.dtype == np.dtype("O"):
            raise TypeError(f"array: cannot convert {type(object).__name__} to an array")
        if isinstance(object, (list, tuple)) and value.dtype.kind in "iu":
            _check_int_list_fits(value)
        src = dtypes.canonicalize_dtype(value.dtype)
        out = Array(np.array(value, dtype=req or src, copy=True), False)
    if req is not None:
        out = util.convert(out, req, False)
    aval = get_aval(out)
    if ndmin > aval.ndim:
        out = lax.reshape(out, (1,) * (ndmin - aval.ndim) + aval.shape)
    return out


def _check_int_list_fits(value):
    dtype = dtypes.default_int_dtype()
    info = np.iinfo(dtype)
    if value.size and (value.max() > info.max or value.min() < info.min):
        raise OverflowError(f"Python int too large to convert to {dtype}")


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
    """Convert to an Array without copying when possible; `device` places it."""
    return array(a, dtype=dtype, copy=bool(copy), order=order, device=device)


def copy(a, order=None):
    """A copy of `a` (arrays are immutable, so this only rewraps the buffer)."""
    return array(a, copy=True)


def _shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        shape = tuple(util.concrete_int(d, "shape") for d in shape)
    except TypeError as err:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, "
                        f"got {shape!r}.") from err
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimensions are not allowed, got shape {shape}")
    return shape


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


_PHYSICAL_MEMORY = _physical_memory()


def _check_allocation(shape, dtype) -> None:
    """An array larger than the machine's memory fails now, naming its shape and size (not
    at first use inside NumPy)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if _PHYSICAL_MEMORY is not None and nbytes > _PHYSICAL_MEMORY:
        raise JaxRuntimeError(
            f"RESOURCE_EXHAUSTED: Out of memory allocating {nbytes} bytes for an array of "
            f"shape {tuple(shape)} and dtype {np.dtype(dtype).name} ({nbytes / 2**30:.1f} "
            f"GiB; this machine has {_PHYSICAL_MEMORY / 2**30:.1f} GiB).")


def full(shape, fill_value, dtype=None, *, device=None):
    """An array of `shape` filled with `fill_value` (which broadcasts)."""
    shape = _shape(shape)
    req = _user_dtype(dtype)
    _check_allocation(shape, req or util.dtype_of(fill_value))
    if util.ndim_of(fill_value) == 0 and not isinstance(fill_value, (list, tuple)):
        if req is not None and dtypes.is_python_scalar(fill_value):  # straight to req
            return lax.broadcast_in_dim(util.convert(fill_value, req, False), shape, ())
        value = to_array(fill_value)
        aval = get_aval(value)
        dt = req or aval.dtype
        value = util.convert(value, dt, req is None and aval.weak_type)
        return lax.broadcast_in_dim(value, shape, ())
    value = asarray(fill_value, dtype=req)
    return util.broadcast_to(value, shape)


def zeros(shape, dtype=None, *, device=None):
    """An array of zeros (default dtype float32, or float64 with x64)."""
    return full(shape, 0, _user_dtype(dtype) or dtypes.default_float_dtype())


def ones(shape, dtype=None, *, device=None):
    """An array of ones."""
    return full(shape, 1, _user_dtype(dtype) or dtypes.default_float_dtype())


def empty(shape, dtype=None, *, device=None):
    """Like zeros (arrays are never uninitialized)."""
    return zeros(shape, dtype)


def _like(a, dtype, shape):
    aval = get_aval(to_array(a)) if not isinstance(a, (list, tuple)) else \
        get_aval(asarray(a))
    dt = _user_dtype(dtype) or aval.dtype
    out_shape = aval.shape if shape is None else _shape(shape)
    weak = aval.weak_type and dtype is None
    return dt, out_shape, weak


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    """An array shaped like `a` filled with `fill_value`."""
    dt, out_shape, weak = _like(a, dtype, shape)
    if util.ndim_of(fill_value) == 0:
        return lax.broadcast_in_dim(util.convert(fill_value, dt, weak), out_shape, ())
    return util.broadcast_to(util.convert(fill_value, dt, weak), out_shape)


def zeros_like(a, dtype=None, shape=None, *, device=None):
    """Zeros with the shape and dtype of `a`."""
    return full_like(a, 0, dtype, shape)


def ones_like(a, dtype=None, shape=None, *, device=None):
    """Ones with the shape and dtype of `a`."""
    return full_like(a, 1, dtype, shape)


def empty_like(prototype, dtype=None, shape=None, *, device=None):
    """Like zeros_like."""
    return zeros_like(prototype, dtype, shape)


# --------------------------------------------------------------------------- ranges


def _static_scalar(x, name):
    if isinstance(x, Tracer):
        value = x.to_concrete_value()
        if value is None:
            raise ConcretizationTypeError(concretization_message(
                f"jnp.{name} requires concrete (static) arguments", x,
                "Pass Python numbers, or build the array with lax.iota / jnp.linspace."))
        return np.asarray(value).item()
    if isinstance(x, (Array, np.ndarray, np.generic)):
        return np.asarray(x).item()
    return x


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values in [start, stop) (static arguments, like JAX)."""
    args = [a for a in (start, stop, step) if a is not None]
    req = _user_dtype(dtype)
    if req is None:
        req = dtypes.result_type(*[a if not isinstance(a, Tracer) else a for a in args])
    values = [_static_scalar(a, "arange") for a in (start, stop, step)]
    start, stop, step = values
    if stop is None and step is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if step == 0:
        raise ZeroDivisionError("arange: step must not be zero")
    ints = all(isinstance(v, (int, np.integer, bool)) for v in (start, stop, step))
    if ints and req.kind in "iu":
        n = max(0, -(-(stop - start) // step))
        out = util.iota(req, (n,))
        if step != 1:
            out = lax.mul(out, util.full_like_scalar(step, out))
        if start != 0:
            out = lax.add(out, util.full_like_scalar(start, out))
        return out
    with np.errstate(all="ignore"):
        value = np.arange(start, stop, step).astype(req)
    return Array(value, False)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """`num` evenly spaced samples over [start, stop] (start/stop may be arrays).

    As JAX: computed in the inexact version of the requested dtype as
    start * (1 - t) + stop * t with t = i / div, the endpoint set to stop exactly, floored
    before a conversion to an integer dtype; the step (retstep) is (stop - start) / div."""
    num = util.concrete_int(num, "linspace: num")
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    check_arraylike("linspace", start, stop)
    req = _user_dtype(dtype)
    start, stop = util.promote_dtypes_inexact(start, stop)
    if req is None:
        req = get_aval(start).dtype
    comp = dtypes.canonicalize_dtype(dtypes.to_inexact(req))
    start, stop = util.convert(start, comp), util.convert(stop, comp)
    bshape = util.broadcast_shapes(get_aval(start).shape, get_aval(stop).shape)
    start, stop = util.broadcast_to(start, bshape), util.broadcast_to(stop, bshape)
    div = (num - 1) if endpoint else num
    if num > 1:
        # XLA rewrites the division by the constant div into a product with its reciprocal
        step = _times_reciprocal(lax.sub(stop, start), div)
        out = _linspace_body(start, stop, div, comp, bshape)
        if endpoint:
            out = lax.concatenate([out, lax.reshape(stop, (1,) + bshape)], 0)
    elif num == 1:
        step = util.full((), np.nan, comp) if endpoint else lax.sub(stop, start)
        out = lax.reshape(start, (1,) + bshape)
    else:
        step = util.full((), np.nan, comp)
        out = util.full((0,) + bshape, 0, comp)
    out = _move_first_axis(out, axis)
    if req.kind in "iu":
        out = lax.floor(out)
    out = util.convert(out, req)
    return (out, step) if retstep else out


def _wide_real(dtype):
    """The real dtype XLA:CPU computes `dtype`'s arithmetic in (bfloat16 runs in float32)."""
    real = np.dtype(dtypes.finfo(dtype).dtype)
    return np.dtype(np.float32) if real == dtypes.bfloat16 else real


def _times_reciprocal(x, div):
    """x / div as XLA evaluates it: x times 1 / div rounded to the (wide) real dtype."""
    dtype = get_aval(x).dtype
    wide = _wide_real(dtype)
    inv = wide.type(1) / wide.type(div)
    if wide != dtype and dtype.kind != "c":
        prod = lax.mul(util.convert(x, wide), util.full(get_aval(x).shape, inv, wide))
        return util.convert(prod, dtype)
    return lax.mul(x, util.full(get_aval(x).shape, inv, dtype))


def _linspace_body(start, stop, div, comp, bshape):
    """The first `div` samples, rounded op by op as XLA evaluates JAX's linspace.

    JAX computes start * (1 - t) + stop * t with t = iota / div in the real dtype; XLA turns
    the division into a multiplication by the rounded reciprocal c, and for real scalar
    bounds reassociates stop * (i * c) into i * (stop * c). bfloat16 arithmetic runs in
    float32 and rounds after each op, with c kept at float32 precision. (XLA:CPU may further
    contract the final multiply-add into an FMA in float32/float64; that last-ulp choice of
    its LLVM backend is not reproduced.)"""
    shape = (div,) + bshape
    bdims = tuple(range(1, len(shape)))
    real = np.dtype(dtypes.finfo(comp).dtype)
    i = util.iota(real, shape, 0)
    t = _times_reciprocal(i, div)
    start_b = lax.broadcast_in_dim(start, shape, bdims)
    left = lax.mul(start_b, lax.sub(util.full(shape, 1, comp), util.convert(t, comp)))
    if not bshape and comp == real and real != dtypes.bfloat16:
        stop_c = _times_reciprocal(stop, div)
        right = lax.mul(i, lax.broadcast_in_dim(stop_c, shape, ()))
    else:
        right = lax.mul(lax.broadcast_in_dim(stop, shape, bdims), util.convert(t, comp))
    return lax.add(left, right)


def _move_first_axis(out, axis):
    ndim = get_aval(out).ndim
    axis = canonicalize_axis(axis, ndim)
    if axis == 0:
        return out
    perm = list(range(1, ndim))
    perm.insert(axis, 0)
    return lax.transpose(out, tuple(perm))


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """Samples evenly spaced on a log scale: base ** linspace(start, stop)."""
    req = _user_dtype(dtype)
    lin = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    out = ufuncs.power(util.convert(base, get_aval(lin).dtype), lin)
    return util.convert(out, req) if req is not None else out


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Samples evenly spaced on a log scale between start and stop (same sign)."""
    req = _user_dtype(dtype)
    start, stop = util.promote_dtypes_inexact(start, stop)
    sign = ufuncs.sign(start)
    lin = linspace(ufuncs.log(ufuncs.abs(start)), ufuncs.log(ufuncs.abs(stop)), num,
                   endpoint=endpoint, axis=0)
    out = ufuncs.multiply(sign, ufuncs.exp(lin))
    if num > 0:
        bshape = get_aval(out).shape[1:]
        zeros_b = (0,) * len(bshape)
        pieces = [lax.reshape(util.broadcast_to(start, bshape), (1,) + bshape)]
        inner_stop = num - 1 if endpoint else num
        if inner_stop > 1:
            pieces.append(lax.slice(out, (1,) + zeros_b, (inner_stop,) + bshape))
        if endpoint and num > 1:
            pieces.append(lax.reshape(util.broadcast_to(stop, bshape), (1,) + bshape))
        out = lax.concatenate(pieces, 0) if len(pieces) > 1 else pieces[0]
    out = _move_first_axis(out, axis)
    return util.convert(out, req) if req is not None else out


# --------------------------------------------------------------------------- matrices


def _tri_mask(n, m, k):
    rows = util.iota(dtypes.int32, (n, m), 0)
    cols = util.iota(dtypes.int32, (n, m), 1)
    return lax.ge(lax.add(rows, util.full_like_scalar(k, rows)), cols)


def eye(N, M=None, k=0, dtype=None, *, device=None):
    """A 2-D array with ones on the k-th diagonal."""
    n = util.concrete_int(N, "eye: N")
    m = n if M is None else util.concrete_int(M, "eye: M")
    k = util.concrete_int(k, "eye: k")
    if n < 0 or m < 0:
        raise ValueError(f"negative dimensions are not allowed, got ({n}, {m})")
    rows = util.iota(dtypes.int32, (n, m), 0)
    cols = util.iota(dtypes.int32, (n, m), 1)
    mask = lax.eq(lax.add(rows, util.full_like_scalar(k, rows)), cols)
    return util.convert(mask, _user_dtype(dtype) or dtypes.default_float_dtype())


def identity(n, dtype=None):
    """The n x n identity matrix."""
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below the k-th diagonal."""
    n = util.concrete_int(N, "tri: N")
    m = n if M is None else util.concrete_int(M, "tri: M")
    return util.convert(_tri_mask(n, m, util.concrete_int(k, "tri: k")),
                        _user_dtype(dtype) or dtypes.default_float_dtype())


def _tri_select(m, k, lower):
    check_arraylike("tril" if lower else "triu", m)
    m = to_array(m)
    aval = get_aval(m)
    if aval.ndim < 2:
        raise ValueError(f"{'tril' if lower else 'triu'} requires an array of at least two "
                         f"dimensions, got shape {aval.shape}")
    n, c = aval.shape[-2:]
    mask = _tri_mask(n, c, k if lower else k - 1)
    if not lower:
        mask = util.lax_fn("bitwise_not", "not_")(mask)
    mask = lax.broadcast_in_dim(mask, aval.shape, (aval.ndim - 2, aval.ndim - 1))
    zero = util.broadcast_to(util.full_like_scalar(0, m), aval.shape)
    return lax.select_n(mask, zero, m)


def tril(m, k=0):
    """Lower triangle of (the last two axes of) m."""
    return _tri_select(m, util.concrete_int(k, "tril: k"), True)


def triu(m, k=0):
    """Upper triangle of (the last two axes of) m."""
    return _tri_select(m, util.concrete_int(k, "triu: k"), False)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of the (axis1, axis2) planes, appended as the last axis."""
    check_arraylike("diagonal", a)
    a = to_array(a)
    aval = get_aval(a)
    if aval.ndim < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    a1, a2 = canonicalize_axis(axis1, aval.ndim), canonicalize_axis(axis2, aval.ndim)
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = util.concrete_int(offset, "diagonal: offset")
    perm = [d for d in range(aval.ndim) if d not in (a1, a2)] + [a1, a2]
    a = lax.transpose(a, tuple(perm))
    batch = get_aval(a).shape[:-2]
    n, m = get_aval(a).shape[-2:]
    if offset >= 0:
        length = max(0, min(n, m - offset))
        r0, c0 = 0, offset
    else:
        length = max(0, min(n + offset, m))
        r0, c0 = -offset, 0
    nb = len(batch)
    if length == 0:
        empty = lax.slice(a, (0,) * (nb + 2), batch + (0, 0))
        return lax.reshape(empty, batch + (0,))
    sq = lax.slice(a, (0,) * nb + (r0, c0), batch + (r0 + length, c0 + length))
    flat = lax.reshape(sq, batch + (length * length,))
    return lax.slice(flat, (0,) * (nb + 1), batch + (length * length,),
                     (1,) * nb + (length + 1,))


def diag(v, k=0):
    """Extract a diagonal (2-D input) or build a diagonal matrix (1-D input)."""
    check_arraylike("diag", v)
    v = to_array(v)
    k = util.concrete_int(k, "diag: k")
    aval = get_aval(v)
    if aval.ndim == 2:
        return diagonal(v, k)
    if aval.ndim != 1:
        raise ValueError("diag input must be 1d or 2d")
    n = aval.shape[0] + abs(k)
    padded = lax.pad(v, util.full_like_scalar(0, v), [(0, abs(k), 0)])
    mat = lax.broadcast_in_dim(padded, (n, n), (0,) if k >= 0 else (1,))
    rows = util.iota(dtypes.int32, (n, n), 0)
    cols = util.iota(dtypes.int32, (n, n), 1)
    mask = lax.eq(lax.add(rows, util.full_like_scalar(k, rows)), cols)
    return lax.select_n(mask, util.broadcast_to(util.full_like_scalar(0, v), (n, n)), mat)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate matrices from coordinate vectors ('xy' or 'ij' indexing)."""
    check_arraylike("meshgrid", *xi)
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing!r}")
    args = [to_array(x) for x in xi]
    args = [lax.reshape(x, (get_aval(x).size,)) for x in args]
    shape = [get_aval(x).shape[0] for x in args]
    if indexing == "xy" and len(args) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(args):
        dim = i
        if indexing == "xy" and len(args) >= 2 and i < 2:
            dim = 1 - i
        if sparse:
            s = [1] * len(args)
            s[dim] = shape[dim]
            out.append(lax.reshape(x, tuple(s)))
        else:
            out.append(lax.broadcast_in_dim(x, tuple(shape), (dim,)))
    return out


def indices(dimensions, dtype=None, sparse=False):
    """An array of index grids for a shape (stacked along a new first axis)."""
    dims = _shape(dimensions)
    dt = _user_dtype(dtype) or dtypes.default_int_dtype()
    grids = []
    for i, n in enumerate(dims):
        if sparse:
            s = [1] * len(dims)
            s[i] = n
            grids.append(lax.reshape(util.iota(dt, (n,)), tuple(s)))
        else:
            grids.append(util.iota(dt, dims, i))
    if sparse:
        return tuple(grids)
    if not grids:
        return zeros((0,), dt)
    return lax.concatenate([lax.reshape(g, (1,) + dims) for g in grids], 0)

