"""Reductions: sum, prod, mean, var, std, max/min (amax/amin), ptp, argmax/argmin, all/any,
cumsum/cumprod and their inverse diff, the nan* variants and count_nonzero. Axis handling
follows NumPy (None, int, tuples, negative axes, keepdims; out-of-range axes raise numpy's
AxisError)."""

from __future__ import annotations

import builtins
import operator

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.numpy import ufuncs, util
from minijax.numpy.creation import _user_dtype as ud
from minijax.numpy.creation import diagonal
from minijax.numpy.manipulation import concatenate
from minijax.numpy.ufuncs import _c, _select, subtract
from minijax.numpy.ufuncs_logic import equal, isclose, isnan, logical_and, logical_or
from minijax.numpy.util import (
    broadcast_to,
    canonicalize_axes,
    canonicalize_axis,
    check_arraylike,
    to_array,
)


def _user_dtype(dtype):
    return ud(dtype)


def _keepdims(out, axes, ndim):
    shape = list(get_aval(out).shape)
    for a in sorted(axes):
        shape.insert(a, 1)
    return lax.reshape(out, tuple(shape))


def _promoted_int_dtype(dtype):
    """Integer/bool sums accumulate in at least the default integer width (JAX's
    promote_integers=True)."""
    dtype = np.dtype(dtype)
    if dtypes.kind(dtype) == "b":
        return dtypes.default_int_dtype()
    if dtypes.kind(dtype) == "i" and dtype.itemsize < dtypes.default_int_dtype().itemsize:
        return dtypes.default_int_dtype()
    if dtypes.kind(dtype) == "u":
        default_uint = np.dtype(f"uint{dtypes.default_int_dtype().itemsize * 8}")
        if dtype.itemsize < default_uint.itemsize:
            return default_uint
    return dtype


def _identity_for(name, dtype):
    dtype = np.dtype(dtype)
    if name in ("sum", "any"):
        return False if dtypes.kind(dtype) == "b" else 0
    if name in ("prod", "all"):
        return True if dtypes.kind(dtype) == "b" else 1
    if name == "max":
        if dtypes.kind(dtype) == "b":
            return False
        return -np.inf if dtypes.kind(dtype) in "fc" else np.iinfo(dtype).min
    if name == "min":
        if dtypes.kind(dtype) == "b":
            return True
        return np.inf if dtypes.kind(dtype) in "fc" else np.iinfo(dtype).max
    raise ValueError(name)


def _lax_reducer(name, dtype):
    kind = dtypes.kind(np.dtype(dtype))
    # Booleans (dtype=bool asked for) add as `or` and multiply as `and`, as in JAX.
    if name == "sum":
        return lax.reduce_or if kind == "b" else lax.reduce_sum
    if name == "prod":
        return lax.reduce_and if kind == "b" else lax.reduce_prod
    if name == "max":
        return lax.reduce_or if kind == "b" else lax.reduce_max
    if name == "min":
        return lax.reduce_and if kind == "b" else lax.reduce_min
    if name == "any":
        return lax.reduce_or
    if name == "all":
        return lax.reduce_and
    raise ValueError(name)


def _reduce(name, a, axis, dtype, keepdims, initial, where, *, promote_int=False,
            has_identity=True):
    check_arraylike(name, a)
    a = _strong(to_array(a))
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim)
    req = _user_dtype(dtype)
    if req is not None:
        a = util.convert(a, req, False)
    elif promote_int or (name in ("sum", "prod") and dtypes.kind(aval.dtype) == "b"):
        # booleans sum and multiply as integers even with promote_integers=False (as JAX)
        dt = _promoted_int_dtype(aval.dtype)
        if dt != aval.dtype:
            a = util.convert(a, dt, False)
    dt = get_aval(a).dtype
    out_dt = None
    if name in ("sum", "prod") and dtypes.is_16bit_float(dt):
        # 16-bit floats accumulate in float32 and round once at the end (as JAX's).
        out_dt, dt = dt, dtypes.float32
        a = util.convert(a, dt, get_aval(a).weak_type)
    if where is not None:
        if not has_identity and initial is None:
            raise ValueError(f"reduction operation '{name}' does not have an identity, so to "
                             "use a where mask one has to specify 'initial'.")
        mask = util.broadcast_to(_to_bool(where), get_aval(a).shape)
        fill = util.broadcast_to(_c(_identity_for(name, dt), a), get_aval(a).shape)
        a = lax.select_n(mask, fill, a)
    reduced_size = int(np.prod([aval.shape[i] for i in axes], dtype=np.int64))
    if not has_identity and initial is None and reduced_size == 0 and aval.size == 0:
        raise ValueError(f"zero-size array to reduction operation {name} which has no "
                         "identity")
    out = _lax_reducer(name, dt)(a, axes) if axes else a
    if initial is not None:
        # through an array: a float initial saturates into an integer dtype, as XLA's convert
        init = util.convert(to_array(initial), dt, get_aval(out).weak_type)
        combine = {"sum": ufuncs.add, "prod": ufuncs.multiply, "max": ufuncs.maximum,
                   "min": ufuncs.minimum}[name]
        out = util.convert(combine(out, init), dt, get_aval(out).weak_type)
    if out_dt is not None:
        out = util.convert(out, out_dt, get_aval(out).weak_type)
    if keepdims:
        out = _keepdims(out, axes, aval.ndim)
    return out


def _strong(a):
    """jnp reductions return strongly typed results, also of weak inputs (as JAX's)."""
    aval = get_aval(a)
    return util.convert(a, aval.dtype, False) if aval.weak_type else a


def _to_bool(x):
    x = to_array(x)
    if dtypes.kind(get_aval(x).dtype) == "b":
        return x
    return lax.ne(x, _c(0, x))


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
    """Sum of elements over the given axes."""
    _no_out(out, "sum")
    return _reduce("sum", a, axis, dtype, keepdims, initial, where,
                   promote_int=promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    """Product of elements over the given axes."""
    _no_out(out, "prod")
    return _reduce("prod", a, axis, dtype, keepdims, initial, where,
                   promote_int=promote_integers)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum over the given axes (NaNs propagate)."""
    _no_out(out, "max")
    return _reduce("max", a, axis, None, keepdims, initial, where, has_identity=False)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum over the given axes (NaNs propagate)."""
    _no_out(out, "min")
    return _reduce("min", a, axis, None, keepdims, initial, where, has_identity=False)


amax, amin = max, min


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    """True if all elements (over the axes) are truthy."""
    _no_out(out, "all")
    check_arraylike("all", a)
    return _reduce("all", _to_bool(a), axis, None, keepdims, None, where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """True if any element (over the axes) is truthy."""
    _no_out(out, "any")
    check_arraylike("any", a)
    return _reduce("any", _to_bool(a), axis, None, keepdims, None, where)


def _no_out(out, name):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")


def ptp(a, axis=None, out=None, keepdims=False):
    """Range (max - min) over the axes."""
    return subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def count_nonzero(a, axis=None, keepdims=False):
    """Number of nonzero elements over the axes."""
    check_arraylike("count_nonzero", a)
    return sum(_to_bool(a), axis=axis, dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def _count(aval, axes, where, dtype):
    if where is None:
        n = int(np.prod([aval.shape[i] for i in axes], dtype=np.int64))
        return util.convert(n, dtype, False)
    mask = util.broadcast_to(_to_bool(where), aval.shape)
    return sum(mask, axis=axes, dtype=dtype)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over the axes (integers averaged in floating point)."""
    _no_out(out, "mean")
    check_arraylike("mean", a)
    a = to_array(a)
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim)
    req = _user_dtype(dtype)
    if req is not None and dtypes.kind(req) in "iub":
        return _integer_mean(a, aval, axes, req, keepdims, where)
    comp = dtypes.to_inexact(req if req is not None else aval.dtype)
    comp = dtypes.canonicalize_dtype(comp)
    # 16-bit floats are summed and divided in float32, rounded once at the end (as JAX's).
    out_dt = comp if dtypes.is_16bit_float(comp) else None
    comp = dtypes.upcast_16bit(comp)
    a = util.convert(a, comp, False)
    total = sum(a, axis=axes, keepdims=keepdims, where=where, promote_integers=False)
    count = _count(aval, axes, where, dtypes.real_dtype(comp))
    if keepdims and where is not None:
        count = _keepdims(count, axes, aval.ndim)
    count = util.convert(count, comp, False) if dtypes.is_complex(comp) else count
    out = lax.div(*util.broadcast_arrays_for_op(total, util.convert(
        count, comp, get_aval(total).weak_type)))
    if out_dt is not None:
        out = util.convert(out, out_dt, get_aval(out).weak_type)
    return util.convert(out, req, False) if req is not None else out


_mean = mean  # var's `mean` argument shadows the function


def _integer_mean(a, aval, axes, dtype, keepdims, where):
    """mean(dtype=an integer type), as JAX computes it: the sum in that type (wrapping),
    divided by the count converted to it, with XLA's integer division (x / 0 is -1, or
    all ones unsigned)."""
    if dtypes.kind(dtype) == "b":
        raise TypeError("mean: dtype bool is not supported: the mean divides, and division "
                        "does not accept booleans; ask for an integer or float dtype")
    total = sum(a, axis=axes, dtype=dtype, keepdims=keepdims, where=where)
    count = _count(aval, axes, where, dtype)
    if keepdims and where is not None:
        count = _keepdims(count, axes, aval.ndim)
    return lax.div(*util.broadcast_arrays_for_op(total, count))


def _correction(ddof, correction):
    """`correction` is the array API's name for `ddof`; giving both is an error (as JAX)."""
    if correction is None:
        return ddof
    if not isinstance(ddof, int) or ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


def _var_dtypes(name, a_dtype, dtype):
    """(computation dtype, result dtype) of a variance, as JAX: an asked-for dtype is both
    (16-bit floats computed in float32); otherwise integers become floats and complex
    inputs give real variances."""
    req = _user_dtype(dtype)
    if req is not None:
        if dtypes.is_complex(a_dtype) and not dtypes.is_complex(req):
            raise ValueError(f"jnp.{name}: a real dtype ({req}) for the variance of complex "
                             f"values ({a_dtype}) is not supported (as in JAX); ask for a "
                             "complex dtype or take the variance of the real/imaginary part")
        return dtypes.upcast_16bit(req), req
    if dtypes.kind(a_dtype) not in "fc":
        out = dtypes.canonicalize_dtype(dtypes.to_inexact(a_dtype))
        return dtypes.upcast_16bit(out), out
    return dtypes.upcast_16bit(a_dtype), dtypes.real_dtype(a_dtype)


def _squared_magnitude(centered):
    if dtypes.is_complex(get_aval(centered).dtype):
        return lax.real(lax.mul(centered, lax.conj(centered)))
    return lax.mul(centered, centered)


def _nan_where_no_dof(result, ok):
    """NaN where no degrees of freedom are left; an integer/bool result (dtype= asked for)
    becomes a weak default float here, as in JAX (where(ok, result, nan) promotes)."""
    if dtypes.kind(get_aval(result).dtype) in "iub":
        result = util.convert(result, dtypes.default_float_dtype(), True)
    ok = util.broadcast_to(ok, get_aval(result).shape)
    return _select(ok, result, _c(np.nan, result))


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
    """Variance over the axes, with `ddof` (or `correction`) degrees of freedom removed.

    As JAX: `dtype` is also the computation dtype (the input is converted to it first);
    `mean` may be given (broadcastable, e.g. computed with keepdims=True)."""
    _no_out(out, "var")
    check_arraylike("var", a)
    correction = _correction(ddof, correction)
    a = to_array(a)
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim)
    comp, res_dt = _var_dtypes("var", aval.dtype, dtype)
    a = util.convert(a, comp, False)
    if mean is None:
        mu = _mean(a, axis=axes, dtype=comp, keepdims=True, where=where)
    else:
        mu = util.convert(to_array(mean), comp, False)
    sq = _squared_magnitude(lax.sub(*util.broadcast_arrays_for_op(a, mu)))
    comp = get_aval(sq).dtype
    count = _count(aval, axes, where, comp)
    if keepdims and where is not None:
        count = _keepdims(count, axes, aval.ndim)
    denom = lax.sub(*util.broadcast_arrays_for_op(count, util.convert(correction, comp, False)))
    total = sum(sq, axis=axes, dtype=comp, keepdims=keepdims, where=where)
    result = util.convert(lax.div(*util.broadcast_arrays_for_op(total, denom)), res_dt, False)
    return _nan_where_no_dof(result, lax.gt(denom, _c(0, denom)))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
    """Standard deviation over the axes (sqrt of var); `dtype` must be inexact (as JAX)."""
    req = _user_dtype(dtype)
    if req is not None and dtypes.kind(req) not in "fc":
        raise ValueError(f"dtype argument to jnp.std must be inexact; got {req}")
    _no_out(out, "std")
    return lax.sqrt(var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                        mean=mean, correction=correction))



# --------------------------------------------------------------------------- arg reductions


def _arg_reduce(name, a, axis, keepdims):
    check_arraylike(name, a)
    a = to_array(a)
    aval = get_aval(a)
    if axis is None:
        if aval.size == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        flat = lax.reshape(a, (aval.size,))
        out = getattr(lax, name)(flat, 0, dtypes.default_int_dtype())
        if keepdims:
            out = lax.reshape(out, (1,) * aval.ndim)
        return out
    ax = canonicalize_axis(axis, aval.ndim)
    if aval.shape[ax] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    out = getattr(lax, name)(a, ax, dtypes.default_int_dtype())
    return _keepdims(out, (ax,), aval.ndim) if keepdims else out


def argmax(a, axis=None, out=None, keepdims=None):
    """Index of the maximum (first occurrence; NaN counts as the maximum)."""
    _no_out(out, "argmax")
    return _arg_reduce("argmax", a, axis, bool(keepdims))


def argmin(a, axis=None, out=None, keepdims=None):
    """Index of the minimum (first occurrence; NaN counts as the minimum)."""
    _no_out(out, "argmin")
    return _arg_reduce("argmin", a, axis, bool(keepdims))


def nanargmax(a, axis=None, out=None, keepdims=None):
    """argmax ignoring NaNs."""
    a = to_array(a)
    if dtypes.kind(get_aval(a).dtype) not in "fc":
        return argmax(a, axis, keepdims=keepdims)
    return argmax(_select(isnan(a), _c(-np.inf, a), a), axis, keepdims=keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
    """argmin ignoring NaNs."""
    a = to_array(a)
    if dtypes.kind(get_aval(a).dtype) not in "fc":
        return argmin(a, axis, keepdims=keepdims)
    return argmin(_select(isnan(a), _c(np.inf, a), a), axis, keepdims=keepdims)


# --------------------------------------------------------------------------- cumulative


def _cumulative(name, lax_name, a, axis, dtype, nan_fill=None, promote_int=False,
                array_api=False):
    check_arraylike(name, a)
    a = to_array(a)
    aval = get_aval(a)
    if axis is None and array_api and aval.ndim > 1:
        raise ValueError(f"{name}: the input array has rank {aval.ndim}, however axis was "
                         "not set to an explicit value. The axis argument is only optional "
                         "for one-dimensional arrays.")
    if axis is None:
        a = lax.reshape(a, (aval.size,))
        axis = 0
    ax = canonicalize_axis(axis, get_aval(a).ndim)
    req = _user_dtype(dtype)
    if req is not None:
        dt = req
    elif promote_int or dtypes.kind(aval.dtype) == "b":  # cumsum keeps narrow ints (as JAX's)
        dt = _promoted_int_dtype(aval.dtype)
    else:
        dt = aval.dtype
    # NaNs are replaced before the conversion to dtype= (as JAX): NaN -> int would be 0
    if nan_fill is not None and dtypes.kind(get_aval(a).dtype) in "fc":
        a = _select(isnan(a), _c(nan_fill, a), a)
    a = util.convert(a, dt, False)
    if get_aval(a).shape[ax] == 0:
        return a
    if dtypes.kind(dt) == "b":      # dtype=bool: a running `or` / `and`, as in JAX
        lax_name = {"cumsum": "cummax", "cumprod": "cummin"}.get(lax_name, lax_name)
    if dtypes.is_16bit_float(dt) and lax_name in ("cumsum", "cumprod"):
        # Accumulate 16-bit floats in float32; each prefix is rounded once.
        weak = get_aval(a).weak_type
        out = getattr(lax, lax_name)(util.convert(a, dtypes.float32, weak), axis=ax)
        return util.convert(out, dt, weak)
    return getattr(lax, lax_name)(a, axis=ax)


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along an axis (the flattened array if axis is None)."""
    _no_out(out, "cumsum")
    return _cumulative("cumsum", "cumsum", a, axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along an axis."""
    _no_out(out, "cumprod")
    return _cumulative("cumprod", "cumprod", a, axis, dtype)


def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum treating NaN as zero."""
    return _cumulative("nancumsum", "cumsum", a, axis, dtype, nan_fill=0)


def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product treating NaN as one."""
    return _cumulative("nancumprod", "cumprod", a, axis, dtype, nan_fill=1)


def _with_initial(name, out, x, axis, identity, include_initial):
    if not include_initial:
        return out
    ndim = np.ndim(x) if not hasattr(x, "shape") else len(x.shape)
    if ndim == 0:
        raise ValueError(f"{name}: the input must be non-scalar to take a cumulative "
                         f"reduction with include_initial=True, got a scalar")
    aval = get_aval(out)
    ax = 0 if axis is None else canonicalize_axis(axis, ndim)
    shape = list(aval.shape)
    shape[ax] = 1
    return lax.concatenate([lax.full(tuple(shape), identity, aval.dtype), out], ax)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial: bool = False):
    """Array API cumulative sum: integers narrower than the default are promoted; with
    `include_initial` the result starts with the sum of nothing (0)."""
    out = _cumulative("cumulative_sum", "cumsum", x, axis, dtype, promote_int=True,
                      array_api=True)
    return _with_initial("cumulative_sum", out, x, axis, 0, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial: bool = False):
    """Array API cumulative product: booleans become integers, narrow integers stay narrow
    (as JAX, unlike cumulative_sum); with `include_initial` the result starts with the
    empty product (1)."""
    out = _cumulative("cumulative_prod", "cumprod", x, axis, dtype, array_api=True)
    return _with_initial("cumulative_prod", out, x, axis, 1, include_initial)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """n-th discrete difference along `axis` (booleans use !=, as NumPy)."""
    check_arraylike("diff", a)
    a = to_array(a)
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    if n == 0:
        return a
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = canonicalize_axis(axis, a.ndim)
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        extra = to_array(extra)
        if extra.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            extra = broadcast_to(extra, tuple(shape))
        parts.append(extra)
    if parts[0] is not None or parts[1] is not None:
        seq = [p for p in (parts[0], a, parts[1]) if p is not None]
        a = concatenate(seq, axis=axis)
    for _ in range(n):
        m = a.shape[axis]
        hi = lax.slice_in_dim(a, builtins.min(1, m), m, axis=axis)
        lo = lax.slice_in_dim(a, 0, builtins.max(m - 1, 0), axis=axis)
        a = (hi != lo) if a.dtype == np.bool_ else hi - lo
    return a


# ------------------------------------------------- whole-array comparisons and trace


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if every pair is close (see isclose)."""
    return all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """True if both arrays have the same shape and elements."""
    a1, a2 = to_array(a1), to_array(a2)
    if get_aval(a1).shape != get_aval(a2).shape:
        return util.convert(False, dtypes.bool_)
    eq = equal(a1, a2)
    if equal_nan:
        eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)))
    return all(eq)


def array_equiv(a1, a2):
    """True if the arrays are equal after broadcasting."""
    a1, a2 = to_array(a1), to_array(a2)
    try:
        util.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
    except ValueError:
        return util.convert(False, dtypes.bool_)
    return all(equal(a1, a2))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    """Sum along a diagonal."""
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)
