"""Binomial and multinomial samplers.

binomial follows the algorithm JAX (and TensorFlow) use: for n * min(p, 1 - p) <= 10 the
inversion method (count geometric waiting times until they pass n), otherwise Hormann's
BTRS transformed rejection, both as whole-array while loops with the same key splits as
JAX's, so samples match JAX's for the same key. multinomial draws the outcomes one at a time
as conditional binomials in a scan, as JAX does."""

from __future__ import annotations

import numpy as np

from minijax import dtypes, lax
from minijax import numpy as jnp
from minijax.numpy.util import check_arraylike
from minijax.random.base import (
    _check_prng_key,
    _const,
    _convert,
    _float_dtype,
    _log,
    _log1p,
    _sample_shape,
    _shape,
    _split,
    _split_list,
    _uniform,
)

__all__ = ["binomial", "multinomial"]

# log(k!) - Stirling's approximation of it, for k = 0..9 (the series is used above 9).
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)
_MAX_ITERS = np.iinfo(np.int32).max


def _stirling_tail(k):
    dt = k.dtype
    table = jnp.asarray(np.asarray(_STIRLING_TAIL, dt))
    small = k <= 9
    k = lax.clamp(_const(0, dt), k, _const(9, dt))
    kp1sq = (k + 1) * (k + 1)
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return lax.select(small, jnp.take(table, jnp.floor(k).astype(np.int32)), series)


def _binomial_inversion(data, count, prob, shape):
    dt = prob.dtype
    log_q = _log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, k = carry
        sub, k = _split_list(k)
        num_geom = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform(sub, shape, dt, 0.0, 1.0)
        geom_sum = geom_sum + jnp.ceil(_log(u) / log_q)
        return i + 1, num_geom, geom_sum, k

    def cond(carry):
        return jnp.any(carry[2] <= count) & (carry[0] < _MAX_ITERS)

    init = (jnp.int32(0), jnp.zeros(shape, dt), jnp.zeros(shape, dt), data)
    return lax.while_loop(cond, body, init)[1] - 1


def _btrs(data, count, prob, shape):
    dt = prob.dtype
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, key = carry
        key, sub0, sub1 = _split_list(key, 3)
        u = _uniform(sub0, shape, dt, 0.0, 1.0) - 0.5
        v = _uniform(sub1, shape, dt, 0.0, 1.0)
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        log_v = _log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * _log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * _log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * _log(r * (count - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m)
                 - _stirling_tail(k) - _stirling_tail(count - k))
        accept = accept1 | (~reject & (log_v <= bound))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, key

    def cond(carry):
        return jnp.any(~carry[2]) & (carry[0] < _MAX_ITERS)

    init = (jnp.int32(0), jnp.full(shape, -1, dt), jnp.zeros(shape, bool), data)
    return lax.while_loop(cond, body, init)[1]


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) samples as floats (nan where n < 0, n is nan or p is nan or < 0;
    inf where n is inf). n is floored, as NumPy does for float counts."""
    data, _ = _check_prng_key("binomial", key)
    check_arraylike("binomial", n, p)
    dt = _float_dtype(dtype, "binomial")
    return _binomial(data, n, p, None if shape is None else _shape(shape), dt)


def _binomial(data, count, prob, shape, dt):
    shape = _sample_shape("binomial", shape, np.shape(count), np.shape(prob))
    prob = jnp.asarray(prob)
    if dtypes.kind(prob.dtype) not in "fc":
        prob = prob.astype(dtypes.default_float_dtype())
    count = jnp.broadcast_to(_convert(count, prob.dtype), shape)
    prob = jnp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_bad = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_nan, q_neg = jnp.isnan(q), q < 0.0
    q = lax.select(q_nan | q_neg, jnp.full_like(q, 0.01), q)
    use_inversion = count_bad | (count * q <= 10.0)
    count = jnp.floor(count)
    count_inv = lax.select(use_inversion, count, jnp.zeros_like(count))
    count_btrs = lax.select(use_inversion, jnp.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, jnp.full_like(q, 0.5), q)
    samples = lax.select(use_inversion,
                         _convert(_binomial_inversion(data, count_inv, q, shape), dt),
                         _convert(_btrs(data, count_btrs, q_btrs, shape), dt))
    invalid = q_neg | q_nan | count_bad
    samples = lax.select(invalid, jnp.full_like(samples, np.nan), samples)
    samples = lax.select(count_inf & ~invalid, jnp.full_like(samples, np.inf), samples)
    keep = p_lt_half | count_bad | q_nan | count_inf
    return lax.select(keep, samples, _convert(count, dt) - samples)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial(n, p) counts, outcomes along p's last axis; `shape` (default p.shape)
    is the full result shape, its last axis p's. Drawn as successive binomials of the
    remaining count with the conditional probabilities p_i / sum(p_i..p_k)."""
    data, _ = _check_prng_key("multinomial", key)
    check_arraylike("multinomial", n, p)
    # As JAX, any dtype: the float counts are cast at the end.
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    n, p = jnp.asarray(n), jnp.asarray(p)
    common = dtypes.to_inexact(jnp.result_type(n, p))
    n, p = n.astype(common), p.astype(common)
    shape = tuple(p.shape) if shape is None else _shape(shape)
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.broadcast_to(p, shape)
    p = jnp.moveaxis(p, -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = p / jnp.where(remaining == 0, jnp.ones_like(remaining), remaining)
    keys = _split(data, ratios.shape[0])

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        count = _binomial(k, remainder, jnp.clip(ratio, 0, 1), None, remainder.dtype)
        return remainder - count, count

    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    return jnp.moveaxis(counts, 0, -1).astype(dt)
