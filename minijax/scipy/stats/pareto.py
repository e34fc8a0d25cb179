"""The Pareto distribution (as jax.scipy.stats.pareto)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._util import promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def _parts(name, x, b, loc, scale):
    x, b, loc, scale = promote(name, x, b, loc, scale)
    z = (x - loc) / scale
    below = x < loc + scale
    return jnp.where(below, jnp.ones_like(z), z), b, scale, below


def logpdf(x, b, loc=0, scale=1):
    """Log of the Pareto density log(b) - (b + 1) log(z) - log(scale), for z >= 1."""
    z, b, scale, below = _parts("pareto.logpdf", x, b, loc, scale)
    return jnp.where(below, -np.inf, jnp.log(b) - (b + 1) * jnp.log(z) - jnp.log(scale))


def pdf(x, b, loc=0, scale=1):
    """The Pareto density."""
    return jnp.exp(logpdf(x, b, loc, scale))


def logsf(x, b, loc=0, scale=1):
    """Log of the Pareto survival function, -b log(z)."""
    z, b, _, below = _parts("pareto.logsf", x, b, loc, scale)
    return jnp.where(below, 0, -b * jnp.log(z))


def sf(x, b, loc=0, scale=1):
    """The Pareto survival function z^-b."""
    return jnp.exp(logsf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    """The Pareto cumulative distribution function 1 - z^-b."""
    z, b, _, below = _parts("pareto.cdf", x, b, loc, scale)
    return jnp.where(below, 0, -jnp.expm1(-b * jnp.log(z)))


def logcdf(x, b, loc=0, scale=1):
    """Log of the Pareto cdf."""
    z, b, _, below = _parts("pareto.logcdf", x, b, loc, scale)
    return jnp.where(below, -np.inf, jnp.log(-jnp.expm1(-b * jnp.log(z))))


def ppf(q, b, loc=0, scale=1):
    """The Pareto quantile function loc + scale (1 - q)^(-1/b) (nan outside [0, 1])."""
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    out = loc + scale * jnp.exp(-jnp.log1p(-q) / b)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, out)
