"""The wrapped Cauchy distribution on [0, 2 pi] (as jax.scipy.stats.wrapcauchy)."""

from __future__ import annotations

import math

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.stats._util import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
    """Log of (1 - c^2) / (2 pi (1 + c^2 - 2 c cos x)); -inf outside [0, 2 pi], nan unless
    0 < c < 1."""
    x, c = promote("wrapcauchy.logpdf", x, c)
    out = (jnp.log(1 - c * c) - math.log(2 * math.pi)
           - jnp.log(1 + c * c - 2 * c * jnp.cos(x)))
    out = jnp.where((x >= 0) & (x <= 2 * math.pi), out, -np.inf)
    return jnp.where((c > 0) & (c < 1), out, np.nan)


def pdf(x, c):
    """The wrapped Cauchy density."""
    return jnp.exp(logpdf(x, c))
