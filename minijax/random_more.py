"""More of jax.random's distributions, each a transformation of the basic samplers
(uniform, normal, exponential, gamma, rademacher) with JAX's formulas and key use, so that
samples match JAX's for the same key. Re-exported by :mod:`minijax.random`."""

from __future__ import annotations

import math

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.random import _check_prng_key, _float_dtype, normal, rademacher, split, uniform
from minijax.random_distributions import exponential, gamma, loggamma

__all__ = ["ball", "binomial", "chisquare", "clone", "double_sided_maxwell", "f",
           "generalized_normal", "geometric", "lognormal", "maxwell", "multinomial", "pareto",
           "rayleigh", "t", "triangular", "wald", "weibull_min"]


def _params(name, dtype, *params):
    dt = _float_dtype(dtype, name)
    return dt, [jnp.asarray(p, dt) for p in params]


def _shape_of(shape, *params):
    if shape is None:
        return tuple(np.broadcast_shapes(*[jnp.shape(p) for p in params]))
    shape = tuple(shape)
    np.broadcast_shapes(shape, *[jnp.shape(p) for p in params])  # raises if incompatible
    return shape


def clone(key):
    """A copy of ``key`` to use again (JAX's key-reuse checker tracks clones; keys are
    plain values here, so this is the same key's bits)."""
    return key


def pareto(key, b, shape=None, dtype=None):
    """Pareto samples with shape parameter ``b``: exp(e / b), e standard exponential."""
    _check_prng_key("pareto", key)
    dt, (b,) = _params("pareto", dtype, b)
    e = exponential(key, _shape_of(shape, b), dt)
    return jnp.exp(e / b)


def t(key, df, shape=(), dtype=None):
    """Student's t samples with ``df`` degrees of freedom."""
    _check_prng_key("t", key)
    dt, (df,) = _params("t", dtype, df)
    shape = _shape_of(shape, df)
    key_n, key_g = split(key)
    n = normal(key_n, shape, dt)
    half_df = df / 2
    g = gamma(key_g, half_df, shape, dt)
    return n * jnp.sqrt(half_df / g)


def chisquare(key, df, shape=None, dtype=None):
    """Chi-squared samples with ``df`` degrees of freedom."""
    _check_prng_key("chisquare", key)
    dt, (df,) = _params("chisquare", dtype, df)
    shape = _shape_of(shape, df)
    log_g = loggamma(key, df / 2, shape, dt)
    return jnp.exp(log_g + jnp.asarray(math.log(2.0), dt))


def f(key, dfnum, dfden, shape=(), dtype=None):
    """F-distribution samples: (chisquare(dfnum) / dfnum) / (chisquare(dfden) / dfden)."""
    _check_prng_key("f", key)
    dt, (dfnum, dfden) = _params("f", dtype, dfnum, dfden)
    shape = _shape_of(shape, dfnum, dfden)
    key_d, key_n = split(key)
    num = chisquare(key_n, dfnum, shape, dt) / dfnum
    den = chisquare(key_d, dfden, shape, dt) / dfden
    return num / den


def maxwell(key, shape=(), dtype=None):
    """Maxwell samples: the length of a standard normal 3-vector."""
    _check_prng_key("maxwell", key)
    dt = _float_dtype(dtype, "maxwell")
    norm = normal(key, (*tuple(shape), 3), dt)
    return jnp.linalg.norm(norm, axis=-1).astype(dt)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell samples: a Maxwell sample with a random sign, scaled, shifted."""
    _check_prng_key("double_sided_maxwell", key)
    dt, (loc, scale) = _params("double_sided_maxwell", dtype, loc, scale)
    shape = tuple(shape) + tuple(np.broadcast_shapes(jnp.shape(loc), jnp.shape(scale)))
    maxwell_key, rademacher_key = split(key)
    maxwell_rvs = maxwell(maxwell_key, shape, dt)
    sign = rademacher(rademacher_key, shape, dt)
    return sign * maxwell_rvs * scale + loc


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull samples: scale * (-log1p(-u)) ** (1 / concentration)."""
    _check_prng_key("weibull_min", key)
    dt, (scale, concentration) = _params("weibull_min", dtype, scale, concentration)
    u = uniform(key, tuple(shape), dt, 0.0, 1.0)
    return jnp.power(-jnp.log1p(-u), 1.0 / concentration) * scale


def generalized_normal(key, p, shape=(), dtype=None):
    """Generalized normal samples with exponent ``p`` (p=2: normal/sqrt(2); p=1: Laplace)."""
    _check_prng_key("generalized_normal", key)
    dt, (p,) = _params("generalized_normal", dtype, p)
    shape = _shape_of(shape, p)
    key_g, key_r = split(key)
    g = gamma(key_g, 1 / p, shape, dt)
    r = rademacher(key_r, shape, dt)
    return r * g ** (1 / p)


def ball(key, d: int, p: float = 2, shape=(), dtype=None):
    """Samples uniform in the unit ``p``-norm ball of dimension ``d`` (last axis)."""
    _check_prng_key("ball", key)
    dt = _float_dtype(dtype, "ball")
    d = int(d)
    key_g, key_e = split(key)
    g = generalized_normal(key_g, p, (*tuple(shape), d), dt)
    e = exponential(key_e, tuple(shape), dt)
    return g / (jnp.sum(jnp.abs(g) ** p, axis=-1) + e)[..., None] ** (1 / p)


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh samples: scale * sqrt(-2 log u)."""
    _check_prng_key("rayleigh", key)
    dt, (scale,) = _params("rayleigh", dtype, scale)
    u = uniform(key, _shape_of(shape, scale), dt, 0.0, 1.0)
    return jnp.sqrt(-2.0 * jnp.log(u)) * scale


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) samples with the given ``mean`` (and shape parameter 1)."""
    _check_prng_key("wald", key)
    dt, (mean,) = _params("wald", dtype, mean)
    shape = _shape_of(shape, mean)
    k1, k2 = split(key)
    v = normal(k1, shape, dt)
    z = uniform(k2, shape, dt)
    y = v * v
    mean_sq = mean * mean
    sqrt_term = jnp.sqrt(4 * mean * y + mean_sq * y * y)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return jnp.where(z <= mean / (mean + x), x, mean_sq / x)


def geometric(key, p, shape=None, dtype=None):
    """Geometric samples (trials until the first success, >= 1) with success rate ``p``."""
    _check_prng_key("geometric", key)
    dtype = jnp.dtype(dtype or jnp.int_)
    p = jnp.asarray(p, jnp.result_type(float))
    u = uniform(key, _shape_of(shape, p), p.dtype)
    return (jnp.floor(jnp.log(u) / jnp.log1p(-p)) + 1).astype(dtype)


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular samples on [left, right] with peak at ``mode``."""
    _check_prng_key("triangular", key)
    dt, (left, mode, right) = _params("triangular", dtype, left, mode, right)
    u = uniform(key, _shape_of(shape, left, mode, right), dt)
    fc = (mode - left) / (right - left)
    out1 = left + jnp.sqrt(u * (right - left) * (mode - left))
    out2 = right - jnp.sqrt((1 - u) * (right - left) * (right - mode))
    return jnp.where(u < fc, out1, out2)


def lognormal(key, sigma=1.0, shape=None, dtype=None):
    """Log-normal samples: exp(sigma * normal)."""
    _check_prng_key("lognormal", key)
    dt, (sigma,) = _params("lognormal", dtype, sigma)
    return jnp.exp(normal(key, _shape_of(shape, sigma), dt) * sigma)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial samples: successes in ``n`` trials of success rate ``p``.

    Sampled exactly by inversion (summing geometric waiting times until they pass ``n``),
    one loop step per success; JAX switches to the BTRS rejection sampler where n*p >= 10,
    so there the samples follow the same distribution but differ from JAX's for a key.
    """
    _check_prng_key("binomial", key)
    dt, (n, p) = _params("binomial", dtype, n, p)
    shape = _shape_of(shape, n, p)
    n, p = jnp.broadcast_to(n, shape), jnp.broadcast_to(p, shape)
    flip = p > 0.5  # count failures instead: fewer loop steps
    q = jnp.where(flip, 1 - p, p)
    log1mq = jnp.log1p(-q)

    def cond(state):
        _, geom_sum, _ = state
        return jnp.any(geom_sum <= n)

    def body(state):
        k, geom_sum, count = state
        k, sub = split(k)
        u = uniform(sub, shape, dt)
        step = jnp.floor(jnp.log(u) / log1mq) + 1
        active = geom_sum <= n
        return (k, jnp.where(active, geom_sum + step, geom_sum),
                jnp.where(active, count + 1, count))

    zeros = jnp.zeros(shape, dt)
    _, _, count = lax.while_loop(cond, body, (key, zeros, zeros))
    successes = jnp.where(q > 0, count - 1, 0.0)
    out = jnp.where(flip, n - successes, successes)
    return jnp.where((p >= 0) & (p <= 1) & (n >= 0), out, jnp.nan).astype(dt)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial counts over the last axis of ``p`` for ``n`` trials: category by category,
    a binomial draw of the remaining trials with the conditional probability."""
    del unroll
    _check_prng_key("multinomial", key)
    dt, (n, p) = _params("multinomial", dtype, n, p)
    k = p.shape[-1]
    batch = tuple(np.broadcast_shapes(jnp.shape(n), p.shape[:-1])) if shape is None else (
        tuple(shape))
    remaining = jnp.broadcast_to(n, batch)
    mass = jnp.ones(batch, dt)
    keys = split(key, k)
    counts = []
    for i in range(k):
        pi = jnp.broadcast_to(p[..., i], batch)
        if i == k - 1:
            c = remaining
        else:
            cond_p = jnp.clip(jnp.where(mass > 0, pi / mass, 0.0), 0.0, 1.0)
            c = binomial(keys[i], remaining, cond_p, batch, dt)
        counts.append(c)
        remaining = remaining - c
        mass = mass - pi
    return jnp.stack(counts, axis=-1)
