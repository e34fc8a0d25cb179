"""The left-skewed Gumbel distribution (as jax.scipy.stats.gumbel_l)."""

from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy.stats._util import promote, standardize

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """Log of the density z - e^z - log(scale)."""
    z, scale = standardize("gumbel_l.logpdf", x, loc, scale)
    return z - jnp.exp(z) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """The density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The cumulative distribution function 1 - exp(-e^z)."""
    z, _ = standardize("gumbel_l.cdf", x, loc, scale)
    return -jnp.expm1(-jnp.exp(z))


def logcdf(x, loc=0, scale=1):
    """Log of the cdf."""
    return jnp.log(cdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """Log of the survival function, -e^z."""
    z, _ = standardize("gumbel_l.logsf", x, loc, scale)
    return -jnp.exp(z)


def sf(x, loc=0, scale=1):
    """The survival function exp(-e^z)."""
    return jnp.exp(logsf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    """The quantile function loc + scale log(-log(1 - p))."""
    p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
    return loc + scale * jnp.log(-jnp.log1p(-p))
