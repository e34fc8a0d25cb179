"""The multinomial distribution (as jax.scipy.stats.multinomial)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import gammaln, xlogy
from minijax.scipy.stats._util import promote

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
    """Log of n! prod p_i^x_i / x_i! over the last axis (-inf unless sum(x) == n). `x` and
    `n` must be integers."""
    (p,) = promote("multinomial.logpmf", p)
    x, n = jnp.asarray(x), jnp.asarray(n)
    if not (jnp.issubdtype(x.dtype, jnp.integer) and jnp.issubdtype(n.dtype, jnp.integer)):
        raise ValueError(f"multinomial.logpmf: x and n must be of integer type; got "
                         f"x.dtype={x.dtype}, n.dtype={n.dtype}")
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    out = gammaln(n + 1) + jnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
    return jnp.where(jnp.sum(x, axis=-1) == n, out, -np.inf)


def pmf(x, n, p):
    """The multinomial probability mass."""
    return jnp.exp(logpmf(x, n, p))
