"""Samplers that are transforms of uniform, normal, exponential and gamma samples: pareto,
t, chisquare, f, maxwell, double_sided_maxwell, weibull_min, generalized_normal, ball,
rayleigh, wald, geometric, triangular, lognormal.

Each uses the transform (and the key splits) that JAX documents for it, so that for the same
key its samples equal JAX's up to rounding of the transcendental functions. Those built on
gamma (t, chisquare, f, generalized_normal, ball) go through minijax's Marsaglia-Tsang
rejection loop, which draws the same bits as JAX's, so they match JAX too."""

from __future__ import annotations

import numpy as np

from minijax import dtypes, lax
from minijax import numpy as jnp
from minijax.numpy.util import check_arraylike
from minijax.random.base import (
    _check_prng_key,
    _check_shape,
    _const,
    _convert,
    _exp,
    _float_dtype,
    _log,
    _log1p,
    _shape,
    _split_list,
    _uniform,
    normal,
    rademacher,
)
from minijax.random.distributions.basic import _exponential, gamma, loggamma

__all__ = ["ball", "chisquare", "double_sided_maxwell", "f", "generalized_normal",
           "geometric", "lognormal", "maxwell", "pareto", "rayleigh", "t", "triangular",
           "wald", "weibull_min"]


def _result_shape(name: str, shape, *params) -> tuple:
    """`shape` checked against the parameters' shapes, or their broadcast shape if None."""
    shapes = [tuple(np.shape(p)) for p in params]
    if shape is None:
        return tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    shape = _shape(shape)
    _check_shape(name, shape, *shapes)
    return shape


def _check_safe_cast(name: str, dtype, *params):
    """JAX refuses parameters whose type does not promote into the sample dtype."""
    for p in params:
        if isinstance(p, (list, tuple)):
            raise TypeError(f"Cannot determine dtype of {p}")
        if jnp.result_type(p, dtype) != dtype:
            raise dtypes.TypePromotionError(
                f"In arguments to {name}, cannot safely cast argument of type "
                f"{jnp.asarray(p).dtype} to {dtype}")


def _prologue(name, key, dtype, shape, *params):
    """(key data, dtype, shape) after JAX's argument checks for a float sampler."""
    data, _ = _check_prng_key(name, key)
    dt = _float_dtype(dtype, name)
    shape = _result_shape(name, shape, *params)
    _check_safe_cast(name, dt, *params)
    return data, dt, shape


def _param(x, dt, shape):
    return jnp.broadcast_to(_convert(x, dt), shape)


def _div_by_param(x, p, dt, shape):
    """x / p for a parameter p broadcast to `shape`. XLA rewrites a division by a broadcast
    into a multiplication by the broadcast reciprocal, which rounds differently: do the same
    where p is broadcast, for JAX's bits (not for bfloat16, where JAX's CPU code keeps the
    true division)."""
    p = _convert(p, dt)
    if tuple(np.shape(p)) == tuple(shape) or np.dtype(dt) == dtypes.bfloat16:
        return lax.div(x, p)
    return lax.mul(x, _param(lax.div(_const(1, dt), p), dt, shape))


def pareto(key, b, shape=None, dtype=None):
    """Pareto(b) samples on [1, inf): exp(E / b) for E standard exponential."""
    data, dt, shape = _prologue("pareto", key, dtype, shape, b)
    return _exp(_div_by_param(_exponential(data, shape, dt), b, dt, shape))


def t(key, df, shape=None, dtype=None):
    """Student's t(df) samples: N * sqrt((df/2) / G) for N normal, G ~ Gamma(df/2)."""
    data, dt, shape = _prologue("t", key, dtype, shape, df)
    key_n, key_g = _split_list(data)
    n = normal(key_n, shape, dt)
    half_df = lax.div(_param(df, dt, shape), _const(2, dt))
    g = gamma(key_g, half_df, shape, dt)
    return lax.mul(n, lax.sqrt(lax.div(half_df, g)))


def chisquare(key, df, shape=None, dtype=None):
    """Chi-square(df) samples: 2 exp(log G) for G ~ Gamma(df/2) (drawn in log space)."""
    data, dt, shape = _prologue("chisquare", key, dtype, shape, df)
    return _chisquare(data, _param(df, dt, shape), shape, dt)


def _chisquare(data, df, shape, dt):
    two = _const(2, dt)
    log_g = loggamma(data, lax.div(df, two), shape, dt)
    return lax.mul(_exp(log_g), two)


def f(key, dfnum, dfden, shape=None, dtype=None):
    """F(dfnum, dfden) samples: (X1 / dfnum) / (X2 / dfden) for chi-square X1, X2."""
    data, dt, shape = _prologue("f", key, dtype, shape, dfnum, dfden)
    key_dfd, key_dfn = _split_list(data)
    num = _div_by_param(_chisquare(key_dfn, _param(dfnum, dt, shape), shape, dt), dfnum, dt,
                        shape)
    den = _div_by_param(_chisquare(key_dfd, _param(dfden, dt, shape), shape, dt), dfden, dt,
                        shape)
    return lax.div(num, den)


def maxwell(key, shape=(), dtype=None):
    """One-sided Maxwell samples: the norm of three standard normals."""
    data, _ = _check_prng_key("maxwell", key)
    dt = _float_dtype(dtype, "maxwell")
    return _maxwell(data, _shape(shape), dt)


def _maxwell(data, shape, dt):
    return jnp.linalg.norm(normal(data, (*shape, 3), dt), axis=-1)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell samples: a random sign times a Maxwell sample, scaled and
    shifted. As JAX, the result shape is `shape + broadcast(loc, scale).shape`, where an
    empty `shape` is first replaced by the parameters' shape."""
    data, _ = _check_prng_key("double_sided_maxwell", key)
    dt = _float_dtype(dtype, "double_sided_maxwell")
    params_shape = tuple(np.broadcast_shapes(np.shape(loc), np.shape(scale)))
    shape = _shape(shape) or params_shape
    shape = shape + params_shape
    maxwell_key, sign_key = _split_list(data)
    rvs = _maxwell(maxwell_key, shape, dt)
    sign = rademacher(sign_key, shape, dt)
    return lax.mul(sign, rvs) * jnp.asarray(scale) + jnp.asarray(loc)


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull samples by the inverse CDF: scale * (-log1p(-u)) ** (1 / concentration)."""
    data, _ = _check_prng_key("weibull_min", key)
    dt = _float_dtype(dtype, "weibull_min")
    u = _uniform(data, _shape(shape), dt, 0.0, 1.0)
    return jnp.power(-_log1p(-u), 1.0 / jnp.asarray(concentration)) * jnp.asarray(scale)


def generalized_normal(key, p: float, shape=(), dtype=None):
    """Generalized normal samples (density proportional to exp(-|x|^p)): a random sign
    times G ** (1/p) for G ~ Gamma(1/p)."""
    data, _ = _check_prng_key("generalized_normal", key)
    dt = _float_dtype(dtype, "generalized_normal")
    return _generalized_normal(data, p, _shape(shape), dt)


def _generalized_normal(data, p, shape, dt):
    k_gamma, k_sign = _split_list(data)
    inv_p = 1 / jnp.asarray(p) if not isinstance(p, (int, float)) else 1 / p
    g = gamma(k_gamma, inv_p, shape, dt)
    return rademacher(k_sign, shape, dt) * g ** inv_p


def ball(key, d: int, p: float = 2, shape=(), dtype=None):
    """Uniform samples from the unit Lp ball in d dimensions, shape `(*shape, d)`
    (Barthe et al.: generalized normals scaled by their norm plus an exponential)."""
    data, _ = _check_prng_key("ball", key)
    dt = _float_dtype(dtype, "ball")
    try:
        d = int(d)
    except Exception as e:
        raise TypeError(f"d must be a concrete integer (not a traced value): {d!r}. The "
                        "error occurred in jax.random.ball()") from e
    shape = _shape(shape)
    k1, k2 = _split_list(data)
    g = _generalized_normal(k1, p, (*shape, d), dt)
    e = _exponential(k2, shape, dt)
    inv_p = 1 / jnp.asarray(p) if not isinstance(p, (int, float)) else 1 / p
    return g / ((jnp.sum(jnp.abs(g) ** p, axis=-1) + e) ** inv_p)[..., None]


def rayleigh(key, scale, shape=None, dtype=None):
    """Rayleigh(scale) samples: scale * sqrt(-2 log u)."""
    data, dt, shape = _prologue("rayleigh", key, dtype, shape, scale)
    u = _uniform(data, shape, dt, 0.0, 1.0)
    return lax.mul(_param(scale, dt, shape), lax.sqrt(lax.mul(_log(u), _const(-2, dt))))


def wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian, unit shape) samples by Michael, Schucany and Haas's method
    from one normal and one uniform sample."""
    data, dt, shape = _prologue("wald", key, dtype, shape, mean)
    k1, k2 = _split_list(data)
    mean = _param(mean, dt, shape)
    v = normal(k1, shape, dt)
    z = _uniform(k2, shape, dt, 0.0, 1.0)
    y = lax.integer_pow(v, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(4 * mean * y + mean_sq * lax.integer_pow(y, 2))
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


def geometric(key, p, shape=None, dtype=None):
    """Geometric(p) samples (trials up to the first success, >= 1):
    floor(log u / log1p(-p)) + 1, as integers."""
    data, _ = _check_prng_key("geometric", key)
    dt = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    if dt.kind not in "iu":
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dt}")
    check_arraylike("geometric", p)
    shape = _result_shape("geometric", shape, p)
    p = jnp.asarray(p)
    if dtypes.kind(p.dtype) not in "fc":
        p = p.astype(dtypes.default_float_dtype())
    u = _uniform(data, shape, p.dtype, 0.0, 1.0)
    u = jnp.where(u == 0, jnp.ones_like(u), u)
    log_q = jnp.broadcast_to(_log1p(-p), shape)
    g = lax.floor(lax.div(_log(u), log_q)) + 1
    return _convert(g, dt)


def triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular(left, mode, right) samples by the inverse CDF."""
    data, dt, shape = _prologue("triangular", key, dtype, shape, left, mode, right)
    left, right, mode = (_param(v, dt, shape) for v in (left, right, mode))
    fc = (mode - left) / (right - left)
    u = _uniform(data, shape, dt, 0.0, 1.0)
    below = left + lax.sqrt(u * (right - left) * (mode - left))
    above = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select(u < fc, below, above)


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
    """Log-normal samples exp(sigma * N) (N standard normal, real or complex)."""
    data, _ = _check_prng_key("lognormal", key)
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    if dtypes.kind(dt) not in "fc":
        raise ValueError("dtype argument to `lognormal` must be a float or complex dtype, "
                         f"got {dt}")
    shape = _result_shape("lognormal", shape, sigma)
    _check_safe_cast("lognormal", dt, sigma)
    return _exp(lax.mul(normal(data, shape, dt), _param(sigma, dt, shape)))
