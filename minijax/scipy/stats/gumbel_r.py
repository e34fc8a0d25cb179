"""The right-skewed Gumbel distribution (as jax.scipy.stats.gumbel_r)."""

from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy.stats._util import of_z, promote, standardize

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """Log of the Gumbel density -(z + e^-z) - log(scale)."""
    z, scale = standardize("gumbel_r.logpdf", x, loc, scale)
    return -(z + jnp.exp(-z)) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """The Gumbel density."""
    return jnp.exp(logpdf(x, loc, scale))


def _sf(z):
    return -jnp.expm1(-jnp.exp(-z))


logcdf = of_z("gumbel_r.logcdf", lambda z: -jnp.exp(-z), "Log of the Gumbel cdf, -e^-z.")
cdf = of_z("gumbel_r.cdf", lambda z: jnp.exp(-jnp.exp(-z)),
           "The Gumbel cumulative distribution function exp(-e^-z).")
sf = of_z("gumbel_r.sf", _sf, "The Gumbel survival function 1 - exp(-e^-z).")
logsf = of_z("gumbel_r.logsf", lambda z: jnp.log(_sf(z)), "Log of the Gumbel survival function.")


def ppf(p, loc=0, scale=1):
    """The Gumbel quantile function loc - scale log(-log p)."""
    p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
    return loc - scale * jnp.log(-jnp.log(p))
