"""The exponential distribution (as jax.scipy.stats.expon)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._util import promote, standardize

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """Log of the exponential density (-inf below loc)."""
    z, scale = standardize("expon.logpdf", x, loc, scale)
    return jnp.where(z < 0, -np.inf, -z - jnp.log(scale))


def pdf(x, loc=0, scale=1):
    """The exponential density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The exponential cumulative distribution function 1 - e^-z."""
    z, _ = standardize("expon.cdf", x, loc, scale)
    return jnp.where(z < 0, 0, -jnp.expm1(-jnp.maximum(z, 0)))


def logcdf(x, loc=0, scale=1):
    """Log of the exponential cdf."""
    z, _ = standardize("expon.logcdf", x, loc, scale)
    return jnp.where(z < 0, -np.inf, jnp.log(-jnp.expm1(-jnp.maximum(z, 0))))


def sf(x, loc=0, scale=1):
    """The exponential survival function e^-z."""
    z, _ = standardize("expon.sf", x, loc, scale)
    return jnp.where(z < 0, 1, jnp.exp(-jnp.maximum(z, 0)))


def logsf(x, loc=0, scale=1):
    """Log of the exponential survival function, -z."""
    z, _ = standardize("expon.logsf", x, loc, scale)
    return jnp.where(z < 0, 0, -z)


def ppf(q, loc=0, scale=1):
    """The exponential quantile function -log(1 - q) scale + loc (nan outside [0, 1])."""
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    out = -jnp.log1p(-q) * scale + loc
    return jnp.where((q < 0) | (q > 1), np.nan, out)
