"""The Cauchy distribution (as jax.scipy.stats.cauchy)."""

from __future__ import annotations

import math

from minijax import numpy as jnp
from minijax.scipy.stats._util import of_z, promote, standardize

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """Log of the Cauchy density."""
    z, scale = standardize("cauchy.logpdf", x, loc, scale)
    return -math.log(math.pi) - jnp.log(scale) - jnp.log1p(z * z)


def pdf(x, loc=0, scale=1):
    """The Cauchy density."""
    return jnp.exp(logpdf(x, loc, scale))


def _cdf(z):
    return 0.5 + jnp.arctan(z) / math.pi


def _sf(z):
    return 0.5 - jnp.arctan(z) / math.pi


cdf = of_z("cauchy.cdf", _cdf, "The Cauchy cumulative distribution function 1/2 + arctan(z) / pi.")
logcdf = of_z("cauchy.logcdf", lambda z: jnp.log(_cdf(z)), "Log of the Cauchy cdf.")
sf = of_z("cauchy.sf", _sf, "The Cauchy survival function.")
logsf = of_z("cauchy.logsf", lambda z: jnp.log(_sf(z)), "Log of the Cauchy survival function.")


def ppf(q, loc=0, scale=1):
    """The Cauchy quantile function."""
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    return loc + scale * jnp.tan(math.pi * (q - 0.5))


def isf(q, loc=0, scale=1):
    """The inverse of the Cauchy survival function."""
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    return loc + scale * jnp.tan(math.pi * (0.5 - q))
