"""The Bernoulli distribution (as jax.scipy.stats.bernoulli)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import xlog1py, xlogy
from minijax.scipy.stats._util import promote

__all__ = ["cdf", "logpmf", "pmf", "ppf"]


def logpmf(k, p, loc=0):
    """Log of the Bernoulli probability mass (log p at 1, log(1 - p) at 0)."""
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    y = k - loc
    out = xlogy(y, p) + xlog1py(1 - y, -p)
    return jnp.where((y < 0) | (y > 1), -np.inf, out)


def pmf(k, p, loc=0):
    """The Bernoulli probability mass."""
    return jnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    """The Bernoulli cumulative distribution function (nan for a NaN or p outside [0, 1])."""
    k, p = promote("bernoulli.cdf", k, p)
    out = jnp.where(k < 0, jnp.zeros_like(p), jnp.where(k < 1, 1 - p, jnp.ones_like(p)))
    return jnp.where(jnp.isnan(k) | jnp.isnan(p) | (p < 0) | (p > 1), np.nan, out)


def ppf(q, p):
    """The Bernoulli quantile function: 0 where q <= 1 - p, else 1 (nan off [0, 1])."""
    q, p = promote("bernoulli.ppf", q, p)
    bad = jnp.isnan(q) | jnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return jnp.where(bad, np.nan, jnp.where(q <= 1 - p, 0, 1).astype(q.dtype))
