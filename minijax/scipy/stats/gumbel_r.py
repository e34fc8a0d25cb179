"""The right-skewed Gumbel distribution (as jax.scipy.stats.gumbel_r)."""

from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy.stats._util import promote, standardize

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """Log of the Gumbel density -(z + e^-z) - log(scale)."""
    z, scale = standardize("gumbel_r.logpdf", x, loc, scale)
    return -(z + jnp.exp(-z)) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """The Gumbel density."""
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """Log of the Gumbel cdf, -e^-z."""
    z, _ = standardize("gumbel_r.logcdf", x, loc, scale)
    return -jnp.exp(-z)


def cdf(x, loc=0, scale=1):
    """The Gumbel cumulative distribution function exp(-e^-z)."""
    return jnp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """The Gumbel survival function 1 - exp(-e^-z)."""
    z, _ = standardize("gumbel_r.sf", x, loc, scale)
    return -jnp.expm1(-jnp.exp(-z))


def logsf(x, loc=0, scale=1):
    """Log of the Gumbel survival function."""
    return jnp.log(sf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    """The Gumbel quantile function loc - scale log(-log p)."""
    p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
    return loc - scale * jnp.log(-jnp.log(p))
