"""The beta-binomial distribution (as jax.scipy.stats.betabinom)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import betaln
from minijax.scipy.stats._util import promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, a, b, loc=0):
    """Log of C(n, y) B(y + a, n - y + b) / B(a, b), y = floor(k) - loc."""
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    y = jnp.floor(k) - loc
    log_comb = -jnp.log1p(n) - betaln(n - y + 1, y + 1)
    out = log_comb + betaln(y + a, n - y + b) - betaln(a, b)
    out = jnp.where((y == 0) & (n == 0), 0, out)
    out = jnp.where((y < 0) | (y > n) | (y + a <= 0), -np.inf, out)
    return jnp.where((n < 0) | (a <= 0) | (b <= 0), np.nan, out)


def pmf(k, n, a, b, loc=0):
    """The beta-binomial probability mass."""
    return jnp.exp(logpmf(k, n, a, b, loc))
