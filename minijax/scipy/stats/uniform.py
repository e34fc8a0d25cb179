"""The uniform distribution on [loc, loc + scale] (as jax.scipy.stats.uniform)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._util import promote

__all__ = ["cdf", "logpdf", "pdf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """Log of the uniform density: -log(scale) inside [loc, loc + scale], else -inf."""
    x, loc, scale = promote("uniform.logpdf", x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return jnp.where(inside, -jnp.log(scale), -np.inf)


def pdf(x, loc=0, scale=1):
    """The uniform density."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The uniform cumulative distribution function."""
    x, loc, scale = promote("uniform.cdf", x, loc, scale)
    return jnp.clip((x - loc) / scale, 0, 1)


def ppf(q, loc=0, scale=1):
    """The uniform quantile function loc + q scale (nan outside [0, 1])."""
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    return jnp.where((q < 0) | (q > 1), np.nan, loc + q * scale)
