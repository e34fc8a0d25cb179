"""The truncated normal distribution (as jax.scipy.stats.truncnorm): the standard normal
restricted to [a, b] (in standardized units), then shifted by loc and scaled by scale."""

from __future__ import annotations

import math

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import log_ndtr, ndtr
from minijax.scipy.stats._util import promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def _log_diff(log_hi, log_lo):
    """log(e^log_hi - e^log_lo) for log_hi >= log_lo."""
    return log_hi + jnp.log(-jnp.expm1(log_lo - log_hi))


def _log_gauss_mass(a, b):
    """log(ndtr(b) - ndtr(a)) for a <= b, accurate in both tails and for wide intervals."""
    left = b <= 0
    right = a > 0
    zero = jnp.zeros_like(a)
    # Each case sees only its own arguments, so no inf/nan reaches the selected values or
    # their gradients.
    al, bl = jnp.where(left, a, zero - 1), jnp.where(left, b, zero)
    ar, br = jnp.where(right, a, zero + 1), jnp.where(right, b, zero + 2)
    am, bm = jnp.where(left | right, zero - 1, a), jnp.where(left | right, zero + 1, b)
    in_left = _log_diff(log_ndtr(bl), log_ndtr(al))
    in_right = _log_diff(log_ndtr(-ar), log_ndtr(-br))
    middle = jnp.log1p(-ndtr(am) - ndtr(-bm))
    return jnp.where(left, in_left, jnp.where(right, in_right, middle))


def _parts(name, x, a, b, loc, scale):
    x, a, b, loc, scale = promote(name, x, a, b, loc, scale)
    return (x - loc) / scale, a, b, scale


def logpdf(x, a, b, loc=0, scale=1):
    """Log of the truncated normal density (-inf outside [a, b])."""
    z, a, b, scale = _parts("truncnorm.logpdf", x, a, b, loc, scale)
    out = -0.5 * z * z - 0.5 * math.log(2 * math.pi) - jnp.log(scale) - _log_gauss_mass(a, b)
    return jnp.where((z < a) | (z > b), -np.inf, out)


def pdf(x, a, b, loc=0, scale=1):
    """The truncated normal density."""
    return jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    """Log of the truncated normal cdf."""
    z, a, b, _ = _parts("truncnorm.logcdf", x, a, b, loc, scale)
    inside = (z > a) & (z < b)
    zc = jnp.where(inside, z, (a + b) / 2)
    out = _log_gauss_mass(a, zc) - _log_gauss_mass(a, b)
    return jnp.where(z <= a, -np.inf, jnp.where(z >= b, 0, out))


def cdf(x, a, b, loc=0, scale=1):
    """The truncated normal cumulative distribution function."""
    return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    """Log of the truncated normal survival function."""
    z, a, b, _ = _parts("truncnorm.logsf", x, a, b, loc, scale)
    inside = (z > a) & (z < b)
    zc = jnp.where(inside, z, (a + b) / 2)
    out = _log_gauss_mass(zc, b) - _log_gauss_mass(a, b)
    return jnp.where(z <= a, 0, jnp.where(z >= b, -np.inf, out))


def sf(x, a, b, loc=0, scale=1):
    """The truncated normal survival function."""
    return jnp.exp(logsf(x, a, b, loc, scale))
