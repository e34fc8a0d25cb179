"""The normal distribution, as ``jax.scipy.stats.norm`` (``loc``, ``scale`` broadcast)."""

from __future__ import annotations

import math

from minijax import numpy as jnp
from minijax.scipy import special

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _standardize(x, loc, scale):
    x, loc, scale = _promote(x, loc, scale)
    return (x - loc) / scale, scale


def _promote(*args):
    dtype = jnp.result_type(*args, 1.0)  # inexact, weak Python scalars do not widen
    return tuple(jnp.asarray(a, dtype) for a in args)


def logpdf(x, loc=0, scale=1):
    """Log of the normal density at ``x``."""
    z, scale = _standardize(x, loc, scale)
    return -0.5 * z * z - _HALF_LOG_2PI - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """Normal density at ``x``."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """P(X <= x)."""
    z, _ = _standardize(x, loc, scale)
    return special.ndtr(z)


def logcdf(x, loc=0, scale=1):
    """log P(X <= x), accurate far in the lower tail."""
    z, _ = _standardize(x, loc, scale)
    return special.log_ndtr(z)


def sf(x, loc=0, scale=1):
    """P(X > x)."""
    z, _ = _standardize(x, loc, scale)
    return special.ndtr(-z)


def logsf(x, loc=0, scale=1):
    """log P(X > x)."""
    z, _ = _standardize(x, loc, scale)
    return special.log_ndtr(-z)


def ppf(q, loc=0, scale=1):
    """The quantile function: x with P(X <= x) = q."""
    q, loc, scale = _promote(q, loc, scale)
    return special.ndtri(q) * scale + loc
