"""NaN-aware reductions and order statistics: nansum, nanprod, nanmax, nanmin, nanmean,
nanvar, nanstd, median, quantile, percentile, nanmedian/nanquantile/nanpercentile, average."""

from __future__ import annotations

import builtins
import math

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.numpy import reductions as red
from minijax.numpy import util
from minijax.numpy.indexing import take_along_axis
from minijax.numpy.ufuncs import _c, _select, subtract
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
    if initial is not None:  # the initial value stands for an all-NaN slice (as JAX)
        return res
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


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """Variance of the non-NaN elements (dtype rules as var; `mean` may be given)."""
    check_arraylike("nanvar", a)
    red._no_out(out, "nanvar")
    a = to_array(a)
    aval = get_aval(a)
    comp, res_dt = red._var_dtypes("nanvar", aval.dtype, dtype)
    a = util.convert(a, comp, False)
    if mean is None:
        mu = nanmean(a, axis, dtype=comp, keepdims=True, where=where)
    else:
        mu = util.convert(to_array(mean), comp, False)
    nan = _isnan(a)
    centered = lax.sub(*util.broadcast_arrays_for_op(a, mu))
    centered = _select(nan, _c(0, centered), centered)
    sq = red._squared_magnitude(centered)
    count = red.sum(logical_not(nan), axis=axis, keepdims=keepdims, where=where)
    denom = subtract(count, ddof)
    no_dof = lax.le(denom, _c(0, denom))
    total = red.sum(sq, axis=axis, keepdims=keepdims, where=where)
    total = _select(util.broadcast_to(no_dof, get_aval(total).shape), _c(np.nan, total), total)
    divisor = _select(no_dof, _c(1, denom), denom)
    result = lax.div(*util.broadcast_arrays_for_op(
        total, util.convert(divisor, get_aval(total).dtype, False)))
    return util.convert(result, res_dt, False)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """Standard deviation of the non-NaN elements (sqrt of nanvar)."""
    return lax.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where, mean))


# --------------------------------------------------------------------------- quantiles

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _move_axes_last(a, axis):
    """(array with the reduced axes merged into one last axis, reduced axes, ndim)."""
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim)
    keep = [d for d in range(aval.ndim) if d not in axes]
    a = lax.transpose(a, tuple(keep + list(axes)))
    n = int(np.prod([aval.shape[d] for d in axes], dtype=np.int64))
    a = lax.reshape(a, tuple(aval.shape[d] for d in keep) + (n,))
    return a, axes, aval.ndim


def _quantile(name, a, q, axis, method, keepdims, ignore_nan, q_scale=1.0):
    """Quantiles as JAX computes them: positions and linear interpolation in q's dtype (the
    result converted to a's), `nearest` rounds half down, NaN for slices with NaN (or
    none left with ignore_nan). `q_scale` multiplies q (0.01 for percentiles) as
    q * (scale * (n - 1)), the order XLA's simplifier gives JAX's (q * 0.01) * (n - 1)."""
    check_arraylike(name, a, q)
    if method not in _METHODS:
        raise ValueError(f"{name}: method can only be one of {_METHODS} (as in JAX), "
                         f"got {method!r}")
    q = to_array(q)
    if q_scale == 1.0 and dtypes.kind(get_aval(q).dtype) in "iub":
        # JAX's quantile takes q as it is and floor() rejects integers (percentile promotes)
        raise TypeError(f"{name}: q must be floating point (as in JAX), got "
                        f"{get_aval(q).dtype}; pass e.g. {name}(a, 1.0) or q.astype(float)")
    (a,) = util.promote_dtypes_inexact(a)
    (q,) = util.promote_dtypes_inexact(q)
    dt = get_aval(a).dtype
    if dtypes.is_complex(dt):
        raise ValueError(f"{name} does not support complex input, as the operation is "
                         "poorly defined")
    q = util.convert(q, get_aval(q).dtype, False)
    q_shape = get_aval(q).shape
    if len(q_shape) > 1:
        raise ValueError(f"{name}: q must have rank <= 1, got shape {q_shape}")
    a, axes, ndim = _move_axes_last(a, axis)
    batch = get_aval(a).shape[:-1]
    n = get_aval(a).shape[-1]
    if n == 0 and math.prod(q_shape + batch):
        # JAX fails here: an out-of-range gather (TypeError), or for nan* over all axes an
        # out-of-bounds index (IndexError)
        err = IndexError if ignore_nan and not batch else TypeError
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
    qb = lax.broadcast_in_dim(q, q_shape + batch, tuple(range(len(q_shape))))
    if method == "inverted_cdf":
        out = _inverted_cdf(name, sorted_a, nan_mask, qb, q_scale, ignore_nan, q_shape, batch)
    else:
        out = _interpolated(sorted_a, nan_mask, qb, q_scale, method, ignore_nan, q_shape,
                            batch)
    out = util.convert(out, dt, False)
    if n == 0:
        out = util.broadcast_to(_c(np.nan, out), get_aval(out).shape)
    if keepdims:
        shape = list(get_aval(out).shape)
        nq = len(q_shape)
        for ax in axes:
            shape.insert(nq + ax, 1)
        out = lax.reshape(out, tuple(shape))
    return out


def _interpolated(sorted_a, nan_mask, qb, q_scale, method, ignore_nan, q_shape, batch):
    q_dt = get_aval(qb).dtype
    n = get_aval(sorted_a).shape[-1]
    if ignore_nan:
        cb = util.broadcast_to(red.sum(_not(nan_mask), axis=-1, dtype=q_dt), q_shape + batch)
        # q * (scale * (count - 1)): XLA reassociates JAX's (q * 0.01) * (count - 1)
        pos = lax.mul(qb, lax.mul(_c(q_scale, qb), lax.sub(cb, _c(1, qb))))
    else:
        cb = util.convert(n, q_dt, False)
        # q * scale * (n - 1) with the constants folded first (rounded in q's dtype)
        factor = np.asarray(q_scale, q_dt) * np.asarray(builtins.max(n - 1, 0), q_dt)
        pos = lax.mul(qb, _c(factor, qb))
    low = lax.floor(pos)
    high = lax.ceil(pos)
    high_w = lax.sub(pos, low)
    upper = lax.max(lax.sub(cb, _c(1, cb)), _c(0, cb))
    low = lax.min(lax.max(low, _c(0, low)), upper)
    high = lax.min(lax.max(high, _c(0, high)), upper)
    idx_dt = dtypes.default_int_dtype()
    lo_v = _take_last(sorted_a, util.convert(low, idx_dt), q_shape, batch)
    hi_v = _take_last(sorted_a, util.convert(high, idx_dt), q_shape, batch)
    if method == "lower":
        out = lo_v
    elif method == "higher":
        out = hi_v
    elif method == "nearest":   # half-way rounds down, as JAX
        out = _select(lax.le(high_w, _c(0.5, high_w)), lo_v, hi_v)
    elif method == "midpoint":
        out = lax.mul(lax.add(lo_v, hi_v), _c(0.5, lo_v))
    else:
        # lo * (1 - f) + hi * f in q's dtype, as JAX: lo + (hi - lo) * f is NaN between two
        # equal infinities and loses the sign of zero
        lo_v, hi_v = util.convert(lo_v, q_dt, False), util.convert(hi_v, q_dt, False)
        out = lax.add(lax.mul(lo_v, lax.sub(_c(1, high_w), high_w)), lax.mul(hi_v, high_w))
    if ignore_nan:
        bad = lax.eq(cb, _c(0, cb))
    else:
        bad = util.broadcast_to(red.any(nan_mask, axis=-1), get_aval(out).shape)
    return _select(bad, _c(np.nan, out), out)


def _inverted_cdf(name, sorted_a, nan_mask, qb, q_scale, ignore_nan, q_shape, batch):
    """The smallest sorted value whose cumulative count reaches q * (number of values)."""
    dt = get_aval(sorted_a).dtype
    q_dt = get_aval(qb).dtype
    if q_dt != dt:
        raise TypeError(f"{name}: method='inverted_cdf' needs q of the input's dtype (as in "
                        f"JAX), got q {q_dt} and input {dt}; convert one of them")
    if q_scale != 1.0:
        qb = lax.mul(qb, _c(q_scale, qb))
    nq, nb = len(q_shape), len(batch)
    n = get_aval(sorted_a).shape[-1]
    # NaNs sort last, so the cumulative weight of the valid values is 1, 2, ..., count.
    weights = util.convert(_not(_isnan(sorted_a)), dt, False)
    cum = lax.cumsum(weights, axis=nb)
    total = lax.slice_in_dim(cum, n - 1, n, axis=nb)
    total = lax.reshape(total, batch)
    target = lax.mul(qb, util.broadcast_to(total, q_shape + batch))
    cum_b = lax.broadcast_in_dim(cum, q_shape + batch + (n,), tuple(range(nq, nq + nb + 1)))
    tgt_b = lax.broadcast_in_dim(target, q_shape + batch + (n,), tuple(range(nq + nb)))
    idx_dt = dtypes.default_int_dtype()
    idx = red.sum(lax.lt(cum_b, tgt_b), axis=-1, dtype=idx_dt)
    if ignore_nan:
        valid = red.sum(_not(nan_mask), axis=-1, dtype=q_dt)
    else:
        valid = lax.full(batch, n, q_dt)
    limit = util.convert(lax.sub(valid, _c(1, valid)), idx_dt, False)
    idx = lax.max(_c(0, idx), lax.min(idx, util.broadcast_to(limit, q_shape + batch)))
    out = _take_last(sorted_a, idx, q_shape, batch)
    if ignore_nan:
        bad = lax.eq(valid, _c(0, valid))
    else:
        bad = red.any(nan_mask, axis=-1)
    return _select(util.broadcast_to(bad, get_aval(out).shape), _c(np.nan, out), out)


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
    # q / 100 is q * 0.01 in JAX (XLA rewrites a division by a constant)
    return _quantile("percentile", a, q, axis, interpolation or method, keepdims, False,
                     q_scale=0.01)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, interpolation=None):
    """percentile ignoring NaNs."""
    check_arraylike("nanpercentile", a, q)
    return _quantile("nanpercentile", a, q, axis, interpolation or method, keepdims, True,
                     q_scale=0.01)


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
