"""The beta distribution (as jax.scipy.stats.beta)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import betainc, betaln, xlog1py, xlogy
from minijax.scipy.stats._util import promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x, a, b, loc=0, scale=1):
    """Log of the beta density y^(a-1) (1-y)^(b-1) / (B(a, b) scale) on [loc, loc + scale]."""
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    out = xlogy(a - 1, y) + xlog1py(b - 1, -y) - betaln(a, b) - jnp.log(scale)
    out = jnp.where((x > loc + scale) | (x < loc), -np.inf, out)
    return jnp.where((a <= 0) | (b <= 0) | (scale <= 0), np.nan, out)


def pdf(x, a, b, loc=0, scale=1):
    """The beta density."""
    return jnp.exp(logpdf(x, a, b, loc, scale))


def _y(name, x, a, b, loc, scale):
    x, a, b, loc, scale = promote(name, x, a, b, loc, scale)
    return jnp.clip((x - loc) / scale, 0, 1), a, b


def cdf(x, a, b, loc=0, scale=1):
    """The beta cumulative distribution function I_y(a, b)."""
    y, a, b = _y("beta.cdf", x, a, b, loc, scale)
    return betainc(a, b, y)


def logcdf(x, a, b, loc=0, scale=1):
    """Log of the beta cdf."""
    return jnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """The beta survival function I_{1-y}(b, a)."""
    y, a, b = _y("beta.sf", x, a, b, loc, scale)
    return betainc(b, a, 1 - y)


def logsf(x, a, b, loc=0, scale=1):
    """Log of the beta survival function."""
    return jnp.log(sf(x, a, b, loc, scale))
