"""The Laplace distribution (as jax.scipy.stats.laplace)."""

from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy.stats._util import of_z, standardize

__all__ = ["cdf", "logpdf", "pdf"]


def logpdf(x, loc=0, scale=1):
    """Log of the Laplace density -|z| - log(2 scale)."""
    z, scale = standardize("laplace.logpdf", x, loc, scale)
    return -jnp.abs(z) - jnp.log(2 * scale)


def pdf(x, loc=0, scale=1):
    """The Laplace density."""
    return jnp.exp(logpdf(x, loc, scale))


cdf = of_z("laplace.cdf", lambda z: jnp.where(z < 0, 0.5 * jnp.exp(jnp.minimum(z, 0)),
                                             1 - 0.5 * jnp.exp(-jnp.maximum(z, 0))),
           "The Laplace cumulative distribution function.")
