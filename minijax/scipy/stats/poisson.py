"""The Poisson distribution (as jax.scipy.stats.poisson)."""

from __future__ import annotations

import math

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import entr, gammaincc, gammaln, xlogy
from minijax.scipy.stats._util import promote

__all__ = ["cdf", "entropy", "logpmf", "pmf"]

#: Below this mean the entropy is the sum of -p log p over k < _ENTROPY_TERMS; above, the
#: asymptotic series in 1/mu is accurate to float64 rounding.
_ENTROPY_SWITCH = 50.0
_ENTROPY_TERMS = 160


def logpmf(k, mu, loc=0):
    """Log of the Poisson probability mass k log(mu) - mu - log(k!) (-inf off the integers
    >= loc)."""
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    y = k - loc
    out = xlogy(y, mu) - gammaln(y + 1) - mu
    return jnp.where((y < 0) | (jnp.round(k) != k), -np.inf, out)


def pmf(k, mu, loc=0):
    """The Poisson probability mass."""
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """The Poisson cumulative distribution function Q(floor(k - loc) + 1, mu)."""
    k, mu, loc = promote("poisson.cdf", k, mu, loc)
    y = k - loc
    out = gammaincc(jnp.floor(jnp.maximum(y, 0)) + 1, mu)
    return jnp.where(y < 0, 0, out)


def entropy(mu, loc=0):
    """The entropy of the Poisson distribution (loc does not change it); nan for mu < 0."""
    mu, loc = promote("poisson.entropy", mu, loc)
    small = mu < _ENTROPY_SWITCH
    mu_s = jnp.where(small & (mu > 0), mu, jnp.ones_like(mu))
    ks = jnp.arange(_ENTROPY_TERMS, dtype=mu.dtype).reshape((-1,) + (1,) * mu.ndim)
    probs = jnp.exp(xlogy(ks, mu_s) - gammaln(ks + 1) - mu_s)
    by_sum = jnp.sum(entr(probs), axis=0)
    mu_l = jnp.where(small, jnp.full_like(mu, 2 * _ENTROPY_SWITCH), mu)
    asymptotic = (0.5 * jnp.log(2 * math.pi * math.e * mu_l) - 1 / (12 * mu_l)
                  - 1 / (24 * mu_l ** 2) - 19 / (360 * mu_l ** 3))
    out = jnp.where(small, by_sum, asymptotic)
    out = jnp.where(mu == 0, 0, out)
    return jnp.where(mu < 0, np.nan, out)
