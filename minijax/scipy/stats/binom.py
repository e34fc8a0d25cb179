"""The binomial distribution (as jax.scipy.stats.binom)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import gammaln, xlog1py, xlogy
from minijax.scipy.stats._util import promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """Log of the binomial probability mass C(n, y) p^y (1 - p)^(n - y), y = k - loc."""
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = k - loc
    comb = gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1)
    linear = xlogy(y, p) + xlog1py(n - y, -p)
    out = jnp.where(((y == 0) & (n == 0)) | (linear == 0), 0, comb + linear)
    return jnp.where((y >= 0) & (y < n + 1), out, -np.inf)


def pmf(k, n, p, loc=0):
    """The binomial probability mass."""
    return jnp.exp(logpmf(k, n, p, loc))
