"""Descriptive statistics of jax.scipy.stats: `mode`, `rankdata`, `sem`."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from minijax import dtypes, lax
from minijax import numpy as jnp
from minijax.lax.vmap import vmap
from minijax.scipy.stats._util import promote

__all__ = ["ModeResult", "mode", "rankdata", "sem"]

_NAN_POLICIES = ("propagate", "omit", "raise")


def _check_nan_policy(name, nan_policy, supported=("propagate",)):
    if nan_policy not in _NAN_POLICIES:
        raise ValueError(f"{name}: illegal nan_policy value {nan_policy!r}; expected one of "
                         f"{set(_NAN_POLICIES)}")
    if nan_policy not in supported:
        raise NotImplementedError(f"{name}: nan_policy={nan_policy!r} is not implemented "
                                  f"(as in JAX, only {' and '.join(supported)}); check for "
                                  f"NaNs before calling")


def _default_float():
    return dtypes.canonicalize_dtype(np.float64)


class ModeResult(NamedTuple):
    """The result of `mode`: the most common values and their counts."""
    mode: jnp.ndarray
    count: jnp.ndarray


def _mode_1d(x):
    """The smallest most frequent value of a 1-d array and its count."""
    s = jnp.sort(x)
    idx = jnp.arange(s.shape[0])
    starts = jnp.concatenate([jnp.array([True]), s[1:] != s[:-1]])
    run_start = lax.cummax(jnp.where(starts, idx, 0), axis=0)
    run_length = idx - run_start + 1
    best = jnp.argmax(run_length)  # the first maximum: the smallest of tied values
    return s[best], run_length[best]


def mode(a, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False):
    """The most common value along `axis` (the smallest on ties) and its count, as
    scipy.stats.mode; returns a `ModeResult(mode, count)`."""
    _check_nan_policy("mode", nan_policy)
    x = jnp.asarray(a)
    if axis is None:
        x, axis = x.ravel(), 0
        out_shape = (1,) * jnp.ndim(a) if keepdims else ()
    else:
        axis = axis % max(x.ndim, 1)
        out_shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape)
                          if keepdims or i != axis)
    x = jnp.moveaxis(x, axis, -1)
    rows = x.reshape((math.prod(x.shape[:-1]), x.shape[-1]))
    if rows.shape[-1] == 0:
        nan = jnp.full(out_shape, np.nan, _default_float())
        return ModeResult(nan, jnp.zeros(out_shape, _default_float()))
    vals, counts = vmap(_mode_1d)(rows)
    return ModeResult(vals.reshape(out_shape), counts.reshape(out_shape))


def _rank_1d(a, method):
    order = jnp.argsort(a, stable=True)
    s = a[order]
    out = _default_float()
    if method == "ordinal":
        ranks = jnp.zeros(a.shape, jnp.int32).at[order].set(jnp.arange(1, a.shape[0] + 1))
        r = ranks.astype(out)
    elif method == "dense":
        starts = jnp.concatenate([jnp.array([True]), s[1:] != s[:-1]])
        dense_sorted = jnp.cumsum(starts)
        r = jnp.zeros(a.shape, dense_sorted.dtype).at[order].set(dense_sorted).astype(out)
    else:
        low = jnp.searchsorted(s, a, side="left").astype(out) + 1
        high = jnp.searchsorted(s, a, side="right").astype(out)
        r = {"min": low, "max": high, "average": 0.5 * (low + high)}[method]
    return jnp.where(jnp.any(jnp.isnan(a)) if jnp.issubdtype(a.dtype, jnp.inexact)
                     else False, np.nan, r)


def rankdata(a, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate"):
    """Ranks of the data (1-based), ties resolved by `method` ('average', 'min', 'max',
    'dense', 'ordinal'), as scipy.stats.rankdata; all NaN where a slice holds a NaN."""
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"rankdata: unknown method {method!r}")
    x = jnp.asarray(a)
    if axis is None:
        return _rank_1d(x.ravel(), method)
    axis = axis % max(x.ndim, 1)
    moved = jnp.moveaxis(x, axis, -1)
    rows = moved.reshape((math.prod(moved.shape[:-1]), moved.shape[-1]))
    ranks = vmap(lambda r: _rank_1d(r, method))(rows)
    return jnp.moveaxis(ranks.reshape(moved.shape), -1, axis)


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False):
    """The standard error of the mean, std(ddof) / sqrt(n), as scipy.stats.sem
    (`nan_policy` 'propagate' or 'omit')."""
    _check_nan_policy("sem", nan_policy, ("propagate", "omit"))
    (b,) = promote("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return b.std(axis, ddof=ddof, keepdims=keepdims) / np.sqrt(size).astype(b.dtype)
    count = jnp.sum(~jnp.isnan(b), axis=axis, keepdims=keepdims)
    return (jnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims)
            / jnp.sqrt(count).astype(b.dtype))
