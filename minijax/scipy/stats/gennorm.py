"""The generalized normal distribution (as jax.scipy.stats.gennorm)."""

from __future__ import annotations

import math

from minijax import numpy as jnp
from minijax.scipy.special import gammainc, gammaln
from minijax.scipy.stats._util import promote

__all__ = ["cdf", "logpdf", "pdf"]


def logpdf(x, beta):
    """Log of the density beta / (2 Gamma(1/beta)) exp(-|x|^beta)."""
    x, beta = promote("gennorm.logpdf", x, beta)
    return jnp.log(beta) - math.log(2) - gammaln(1 / beta) - jnp.abs(x) ** beta


def pdf(x, beta):
    """The density."""
    return jnp.exp(logpdf(x, beta))


def cdf(x, beta):
    """The cumulative distribution function 1/2 (1 + sign(x) P(1/beta, |x|^beta))."""
    x, beta = promote("gennorm.cdf", x, beta)
    return 0.5 * (1 + jnp.sign(x) * gammainc(1 / beta, jnp.abs(x) ** beta))
