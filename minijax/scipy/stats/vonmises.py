"""The von Mises distribution on the circle (as jax.scipy.stats.vonmises)."""

from __future__ import annotations

import math

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import i0e
from minijax.scipy.stats._util import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
    """Log of the density exp(kappa cos x) / (2 pi I0(kappa)); nan unless kappa > 0."""
    x, kappa = promote("vonmises.logpdf", x, kappa)
    out = kappa * (jnp.cos(x) - 1) - math.log(2 * math.pi) - jnp.log(i0e(kappa))
    return jnp.where(kappa > 0, out, np.nan)


def pdf(x, kappa):
    """The von Mises density."""
    return jnp.exp(logpdf(x, kappa))
