"""The left-skewed Gumbel distribution (as jax.scipy.stats.gumbel_l)."""

from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy.stats._util import of_z, promote, standardize

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """Log of the density z - e^z - log(scale)."""
    z, scale = standardize("gumbel_l.logpdf", x, loc, scale)
    return z - jnp.exp(z) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """The density."""
    return jnp.exp(logpdf(x, loc, scale))


def _cdf(z):
    return -jnp.expm1(-jnp.exp(z))


cdf = of_z("gumbel_l.cdf", _cdf, "The cumulative distribution function 1 - exp(-e^z).")
logcdf = of_z("gumbel_l.logcdf", lambda z: jnp.log(_cdf(z)), "Log of the cdf.")
logsf = of_z("gumbel_l.logsf", lambda z: -jnp.exp(z), "Log of the survival function, -e^z.")
sf = of_z("gumbel_l.sf", lambda z: jnp.exp(-jnp.exp(z)), "The survival function exp(-e^z).")


def ppf(p, loc=0, scale=1):
    """The quantile function loc + scale log(-log(1 - p))."""
    p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
    return loc + scale * jnp.log(-jnp.log1p(-p))
