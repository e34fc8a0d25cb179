"""Student's t distribution (as jax.scipy.stats.t)."""

from __future__ import annotations

import math

from minijax import numpy as jnp
from minijax.scipy.special import gammaln
from minijax.scipy.stats._util import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    """Log of Student's t density with `df` degrees of freedom."""
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    return (gammaln(0.5 * (df + 1)) - gammaln(0.5 * df) - 0.5 * jnp.log(df * math.pi)
            - jnp.log(scale) - 0.5 * (df + 1) * jnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    """Student's t density."""
    return jnp.exp(logpdf(x, df, loc, scale))
