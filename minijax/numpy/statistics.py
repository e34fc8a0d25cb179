"""NaN-aware reductions and order statistics: nansum, nanprod, nanmax, nanmin, nanmean,
nanvar, nanstd, median, quantile, percentile, nanmedian/nanquantile/nanpercentile, average."""

from __future__ import annotations

import math

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.numpy import reductions as red
from minijax.numpy import util
from minijax.numpy.indexing import take_along_axis
from minijax.numpy.ufuncs import _c, _select
from minijax.numpy.ufuncs_logic import isnan, logical_and, logical_not
from minijax.numpy.util import canonicalize_axes, check_arraylike, to_array


def _isnan(a):
    return isnan(a)


def _replace_nan(a, value):
    a = to_array(a)
    if dtypes.kind(get_aval(a).dtype) not in "fc":
        return a
    return _select(_isnan(a), _c(value, a), a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum treating NaNs as zero."""
    check_arraylike("nansum", a)
    return red.sum(_replace_nan(a, 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product treating NaNs as one."""
    check_arraylike("nanprod", a)
    return red.prod(_replace_nan(a, 1), axis, dtype, out, keepdims, initial, where)


def _nan_extreme(name, a, axis, out, keepdims, initial, where):
    check_arraylike(name, a)
    a = to_array(a)
    if dtypes.kind(get_aval(a).dtype) not in "fc":
        fn = red.max if name == "nanmax" else red.min
        return fn(a, axis, out, keepdims, initial, where)
    fill = -np.inf if name == "nanmax" else np.inf
    fn = red.max if name == "nanmax" else red.min
    res = fn(_replace_nan(a, fill), axis, out, keepdims, initial, where)
    all_nan = red.all(_isnan(a), axis=axis, keepdims=keepdims)
    return _select(all_nan, _c(np.nan, res), res)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum ignoring NaNs (NaN for all-NaN slices)."""
    return _nan_extreme("nanmax", a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum ignoring NaNs (NaN for all-NaN slices)."""
    return _nan_extreme("nanmin", a, axis, out, keepdims, initial, where)


def _valid_mask(a, where):
    valid = logical_not(_isnan(a))
    if where is not None:
        valid = logical_and(valid, where)
    return valid


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """Mean of the non-NaN elements."""
    check_arraylike("nanmean", a)
    a = to_array(a)
    if dtypes.kind(get_aval(a).dtype) not in "fc":
        return red.mean(a, axis, dtype, out, keepdims, where=where)
    return red.mean(a, axis, dtype, out, keepdims, where=_valid_mask(a, where))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """Variance of the non-NaN elements."""
    check_arraylike("nanvar", a)
    a = to_array(a)
    if dtypes.kind(get_aval(a).dtype) not in "fc":
        return red.var(a, axis, dtype, out, ddof, keepdims, where=where)
    return red.var(_replace_nan(a, 0), axis, dtype, out, ddof, keepdims,
                   where=_valid_mask(a, where))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """Standard deviation of the non-NaN elements."""
    out_v = nanvar(a, axis, None, out, ddof, keepdims, where)
    req = None if dtype is None else dtypes.canonicalize_dtype(dtype)
    res = lax.sqrt(out_v)
    return util.convert(res, req) if req is not None else res


# --------------------------------------------------------------------------- quantiles

_METHODS = ("linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf",
            "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
            "hazen", "weibull", "median_unbiased", "normal_unbiased")


def _move_axes_last(a, axis):
    """(array with the reduced axes merged into one last axis, reduced axes, ndim)."""
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim)
    keep = [d for d in range(aval.ndim) if d not in axes]
    a = lax.transpose(a, tuple(keep + list(axes)))
    n = int(np.prod([aval.shape[d] for d in axes], dtype=np.int64))
    a = lax.reshape(a, tuple(aval.shape[d] for d in keep) + (n,))
    return a, axes, aval.ndim


def _quantile(name, a, q, axis, method, keepdims, ignore_nan):
    check_arraylike(name, a, q)
    if method not in _METHODS[:5]:
        if method in _METHODS:
            raise NotImplementedError(f"{name}: method={method!r} is not supported yet")
        raise ValueError(f"{name}: method must be one of {_METHODS}, got {method!r}")
    (a,) = util.promote_dtypes_inexact(a)
    dt = get_aval(a).dtype
    if dtypes.is_complex(dt):
        raise ValueError(f"{name} does not support complex input")
    q = util.convert(q, dt, False)
    q_shape = get_aval(q).shape
    a, axes, ndim = _move_axes_last(a, axis)
    batch = get_aval(a).shape[:-1]
    n = get_aval(a).shape[-1]
    if n == 0 and math.prod(q_shape + batch):
        # JAX fails here (its gather of the sorted values is out of range)
        err = IndexError if ignore_nan else TypeError
        raise err(f"{name}: cannot take a quantile over an empty axis (input shape "
                  f"{get_aval(a).shape[:-1] + (0,)} after moving the reduced axes last); "
                  "reduce over a non-empty axis")
    nan_mask = _isnan(a)
    if n:
        # -0.0 and 0.0 sort as equals (stable), as JAX's sort; lax.sort orders -0.0 first
        zero = _c(0, a)
        key = lax.select_n(lax.eq(a, zero), a, lax.broadcast_in_dim(zero, get_aval(a).shape, ()))
        _, sorted_a = lax.sort((key, a), dimension=len(batch), num_keys=1)
    else:
        sorted_a = a
    if ignore_nan:
        count = red.sum(_not(nan_mask), axis=-1, dtype=dt)
    else:
        count = util.convert(n, dt)
    # Positions along the sorted axis, shape q_shape + batch.
    qb = lax.broadcast_in_dim(q, q_shape + batch, tuple(range(len(q_shape))))
    cb = util.broadcast_to(count, q_shape + batch) if get_aval(count).ndim else count
    pos = lax.mul(qb, lax.sub(cb, _c(1, qb)))
    pos = lax.max(pos, _c(0, pos))
    low = lax.floor(pos)
    high = lax.ceil(pos)
    upper = lax.max(lax.sub(cb, _c(1, qb)), _c(0, qb))
    low, high = lax.min(low, upper), lax.min(high, upper)
    idx_dt = dtypes.default_int_dtype()
    lo_v = _take_last(sorted_a, util.convert(low, idx_dt), q_shape, batch)
    hi_v = _take_last(sorted_a, util.convert(high, idx_dt), q_shape, batch)
    if method == "lower":
        out = lo_v
    elif method == "nearest":
        # As JAX: the lower neighbour unless the position is past the midpoint (numpy rounds
        # a halfway position to even instead).
        near_low = lax.le(lax.sub(pos, lax.floor(pos)), _c(0.5, pos))
        out = _select(near_low, lo_v, hi_v)
    elif method == "higher":
        out = hi_v
    elif method == "midpoint":
        out = lax.mul(lax.add(lo_v, hi_v), _c(0.5, lo_v))
    else:
        # lo * (1 - f) + hi * f, as JAX: lo + (hi - lo) * f is NaN between two equal
        # infinities and loses the sign of zero
        frac = lax.sub(pos, low)
        out = lax.add(lax.mul(lo_v, lax.sub(_c(1, frac), frac)), lax.mul(hi_v, frac))
    if n == 0:
        out = util.broadcast_to(_c(np.nan, out), get_aval(out).shape)
    elif not ignore_nan:
        has_nan = red.any(nan_mask, axis=-1)
        out = _select(util.broadcast_to(has_nan, get_aval(out).shape),
                      _c(np.nan, out), out)
    else:
        none = lax.eq(cb, _c(0, cb))
        out = _select(util.broadcast_to(none, get_aval(out).shape), _c(np.nan, out), out)
    if keepdims:
        shape = list(get_aval(out).shape)
        nq = len(q_shape)
        for ax in axes:
            shape.insert(nq + ax, 1)
        out = lax.reshape(out, tuple(shape))
    return out


def _not(mask):
    return util.lax_fn("bitwise_not", "not_")(mask)


def _take_last(sorted_a, idx, q_shape, batch):
    """sorted_a[..., idx] with idx of shape q_shape + batch -> q_shape + batch."""
    nq = len(q_shape)
    nb = len(batch)
    # Move q dims behind the batch dims, add the sorted axis, gather, move back.
    perm = tuple(range(nq, nq + nb)) + tuple(range(nq))
    idx_t = lax.transpose(idx, perm)
    idx_t = lax.reshape(idx_t, batch + (int(np.prod(q_shape, dtype=np.int64)),))
    vals = take_along_axis(sorted_a, idx_t, axis=-1)
    vals = lax.reshape(vals, batch + q_shape)
    inv = tuple(range(nb, nb + nq)) + tuple(range(nb))
    return lax.transpose(vals, inv)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, interpolation=None):
    """The q-th quantiles (q in [0, 1]) over the axes; NaN if a slice contains NaN."""
    return _quantile("quantile", a, q, axis, interpolation or method, keepdims, False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, interpolation=None):
    """quantile ignoring NaNs."""
    return _quantile("nanquantile", a, q, axis, interpolation or method, keepdims, True)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, interpolation=None):
    """The q-th percentiles (q in [0, 100])."""
    check_arraylike("percentile", a, q)
    (q,) = util.promote_dtypes_inexact(q)
    q = lax.div(q, _c(100, q))
    return _quantile("percentile", a, q, axis, interpolation or method, keepdims, False)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, interpolation=None):
    """percentile ignoring NaNs."""
    check_arraylike("nanpercentile", a, q)
    (q,) = util.promote_dtypes_inexact(q)
    q = lax.div(q, _c(100, q))
    return _quantile("nanpercentile", a, q, axis, interpolation or method, keepdims, True)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median over the axes (the midpoint of the two middle values, as JAX's)."""
    return quantile(a, 0.5, axis=axis, keepdims=keepdims, method="midpoint")


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median ignoring NaNs (the midpoint of the two middle values, as JAX's)."""
    return nanquantile(a, 0.5, axis=axis, keepdims=keepdims, method="midpoint")


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """Weighted average; with returned=True also the sum of weights."""
    check_arraylike("average", a)
    a = to_array(a)
    aval = get_aval(a)
    if weights is None:
        avg = red.mean(a, axis, keepdims=keepdims)
        axes = canonicalize_axes(axis, aval.ndim)
        n = int(np.prod([aval.shape[d] for d in axes], dtype=np.int64))
        wsum = util.broadcast_to(util.convert(n, get_aval(avg).dtype), get_aval(avg).shape)
    else:
        check_arraylike("average", weights)
        a, w = util.promote_dtypes_inexact(a, weights)
        w_aval = get_aval(w)
        if w_aval.shape != aval.shape:
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights "
                                 "differ.")
            if not isinstance(axis, (int, np.integer)) and len(tuple(axis)) != 1:
                raise ValueError("Single axis expected when shapes of a and weights differ")
            ax = util.canonicalize_axis(axis if isinstance(axis, (int, np.integer))
                                        else tuple(axis)[0], aval.ndim)
            if w_aval.ndim != 1:
                raise TypeError("1D weights expected when shapes of a and weights differ.")
            if w_aval.shape[0] != aval.shape[ax]:
                raise ValueError("Length of weights not compatible with specified axis.")
            w = lax.broadcast_in_dim(w, aval.shape, (ax,))
        wsum = red.sum(w, axis=axis, keepdims=keepdims)
        prod = lax.mul(*util.broadcast_arrays_for_op(a, w))
        avg = lax.div(*util.broadcast_arrays_for_op(
            red.sum(prod, axis=axis, keepdims=keepdims), wsum))
    if returned:
        if get_aval(wsum).shape != get_aval(avg).shape:
            wsum = util.broadcast_to(wsum, get_aval(avg).shape)
        return avg, wsum
    return avg
