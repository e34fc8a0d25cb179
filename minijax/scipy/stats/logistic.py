"""The logistic distribution (as jax.scipy.stats.logistic)."""

from __future__ import annotations

from minijax import numpy as jnp
from minijax.scipy.special import expit, logit
from minijax.scipy.stats._util import of_z, promote, standardize

__all__ = ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """Log of the logistic density -z - 2 log(1 + e^-z) - log(scale), in a stable form."""
    z, scale = standardize("logistic.logpdf", x, loc, scale)
    a = jnp.abs(z)
    return -a - 2 * jnp.log1p(jnp.exp(-a)) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    """The logistic density."""
    return jnp.exp(logpdf(x, loc, scale))


cdf = of_z("logistic.cdf", expit, "The logistic cumulative distribution function expit(z).")
sf = of_z("logistic.sf", lambda z: expit(-z), "The logistic survival function expit(-z).")


def ppf(x, loc=0, scale=1):
    """The logistic quantile function loc + scale logit(q)."""
    x, loc, scale = promote("logistic.ppf", x, loc, scale)
    return loc + scale * logit(x)


def isf(x, loc=0, scale=1):
    """The inverse of the logistic survival function."""
    x, loc, scale = promote("logistic.isf", x, loc, scale)
    return loc - scale * logit(x)
