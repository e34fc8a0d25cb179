"""The geometric distribution on 1, 2, ... (as jax.scipy.stats.geom)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import xlog1py
from minijax.scipy.stats._util import promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
    """Log of (1 - p)^(y - 1) p, y = k - loc (-inf for y < 1)."""
    k, p, loc = promote("geom.logpmf", k, p, loc)
    y = k - loc
    return jnp.where(y <= 0, -np.inf, xlog1py(y - 1, -p) + jnp.log(p))


def pmf(k, p, loc=0):
    """The geometric probability mass."""
    return jnp.exp(logpmf(k, p, loc))
