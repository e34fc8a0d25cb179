"""The exponential distribution (as jax.scipy.stats.expon)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._util import of_z, promote, standardize

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """Log of the exponential density (-inf below loc)."""
    z, scale = standardize("expon.logpdf", x, loc, scale)
    return jnp.where(z < 0, -np.inf, -z - jnp.log(scale))


def pdf(x, loc=0, scale=1):
    """The exponential density."""
    return jnp.exp(logpdf(x, loc, scale))


cdf = of_z("expon.cdf", lambda z: jnp.where(z < 0, 0, -jnp.expm1(-jnp.maximum(z, 0))),
           "The exponential cumulative distribution function 1 - e^-z.")
logcdf = of_z("expon.logcdf",
              lambda z: jnp.where(z < 0, -np.inf, jnp.log(-jnp.expm1(-jnp.maximum(z, 0)))),
              "Log of the exponential cdf.")
sf = of_z("expon.sf", lambda z: jnp.where(z < 0, 1, jnp.exp(-jnp.maximum(z, 0))),
          "The exponential survival function e^-z.")
logsf = of_z("expon.logsf", lambda z: jnp.where(z < 0, 0, -z),
             "Log of the exponential survival function, -z.")


def ppf(q, loc=0, scale=1):
    """The exponential quantile function -log(1 - q) scale + loc (nan outside [0, 1])."""
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    out = -jnp.log1p(-q) * scale + loc
    return jnp.where((q < 0) | (q > 1), np.nan, out)
