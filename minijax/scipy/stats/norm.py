"""The normal distribution (as jax.scipy.stats.norm)."""

from __future__ import annotations

import math

from minijax import numpy as jnp
from minijax.scipy.special import log_ndtr, ndtr, ndtri
from minijax.scipy.stats._util import of_z, promote, standardize

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def logpdf(x, loc=0, scale=1):
    """Log of the normal probability density at `x`."""
    z, scale = standardize("norm.logpdf", x, loc, scale)
    return -0.5 * z * z - jnp.log(scale) - _HALF_LOG_2PI


def pdf(x, loc=0, scale=1):
    """The normal probability density at `x`."""
    return jnp.exp(logpdf(x, loc, scale))


cdf = of_z("norm.cdf", ndtr, "The normal cumulative distribution function.")
logcdf = of_z("norm.logcdf", log_ndtr,
              "Log of the normal cumulative distribution function (accurate in the lower tail).")
sf = of_z("norm.sf", lambda z: ndtr(-z), "The normal survival function 1 - cdf.")
logsf = of_z("norm.logsf", lambda z: log_ndtr(-z), "Log of the normal survival function.")


def ppf(q, loc=0, scale=1):
    """The normal quantile function (inverse of cdf)."""
    q, loc, scale = promote("norm.ppf", q, loc, scale)
    return ndtri(q) * scale + loc


def isf(q, loc=0, scale=1):
    """The inverse of the normal survival function."""
    q, loc, scale = promote("norm.isf", q, loc, scale)
    return -ndtri(q) * scale + loc
