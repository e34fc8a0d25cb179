"""The gamma distribution (as jax.scipy.stats.gamma)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import gammainc, gammaincc, gammaln, xlogy
from minijax.scipy.stats._util import promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x, a, loc=0, scale=1):
    """Log of the gamma density y^(a-1) e^-y / (Gamma(a) scale), y = (x - loc) / scale."""
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    ok = x >= loc
    y = jnp.where(ok, (x - loc) / scale, jnp.ones_like(x))
    out = xlogy(a - 1, y) - y - gammaln(a) - jnp.log(scale)
    return jnp.where(ok, out, -np.inf)


def pdf(x, a, loc=0, scale=1):
    """The gamma density."""
    return jnp.exp(logpdf(x, a, loc, scale))


def _y(name, x, a, loc, scale):
    x, a, loc, scale = promote(name, x, a, loc, scale)
    return jnp.maximum((x - loc) / scale, 0), a


def cdf(x, a, loc=0, scale=1):
    """The gamma cumulative distribution function P(a, y)."""
    y, a = _y("gamma.cdf", x, a, loc, scale)
    return gammainc(a, y)


def logcdf(x, a, loc=0, scale=1):
    """Log of the gamma cdf."""
    return jnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """The gamma survival function Q(a, y)."""
    y, a = _y("gamma.sf", x, a, loc, scale)
    return gammaincc(a, y)


def logsf(x, a, loc=0, scale=1):
    """Log of the gamma survival function."""
    return jnp.log(sf(x, a, loc, scale))
