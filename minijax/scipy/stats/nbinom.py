"""The negative binomial distribution (as jax.scipy.stats.nbinom)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import gammaln, xlog1py, xlogy
from minijax.scipy.stats._util import promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """Log of C(y + n - 1, y) p^n (1 - p)^y, the probability of y failures before the n-th
    success, y = k - loc."""
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    out = gammaln(y + n) - gammaln(n) - gammaln(y + 1) + xlogy(n, p) + xlog1py(y, -p)
    return jnp.where(y < 0, -np.inf, out)


def pmf(k, n, p, loc=0):
    """The negative binomial probability mass."""
    return jnp.exp(logpmf(k, n, p, loc))
