"""The Dirichlet distribution (as jax.scipy.stats.dirichlet)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import gammaln, xlogy
from minijax.scipy.stats._util import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, alpha):
    """Log of the Dirichlet density at `x` (components on the first axis; with one component
    fewer than `alpha`, the last is 1 - sum). -inf off the simplex."""
    x, alpha = [jnp.asarray(v) for v in (x, alpha)]
    dtype = promote("dirichlet.logpdf", jnp.zeros((), x.dtype), jnp.zeros((), alpha.dtype))[0]
    x, alpha = x.astype(dtype.dtype), alpha.astype(dtype.dtype)
    if alpha.ndim != 1:
        raise ValueError(f"dirichlet.logpdf: `alpha` must be one-dimensional; got "
                         f"alpha.shape={alpha.shape}")
    k = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (k, k - 1):
        raise ValueError(f"dirichlet.logpdf: `x` must have either the same number of entries "
                         f"as `alpha` or one entry fewer; got x.shape={x.shape}, "
                         f"alpha.shape={alpha.shape}")
    if x.shape[0] != k:
        x = jnp.concatenate([x, 1 - jnp.sum(x, axis=0, keepdims=True)], axis=0)
    a = alpha.reshape((k,) + (1,) * (x.ndim - 1))
    normalize = jnp.sum(gammaln(alpha)) - gammaln(jnp.sum(alpha))
    out = jnp.sum(xlogy(a - 1, x), axis=0) - normalize
    on_simplex = jnp.all(x > 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-6)
    return jnp.where(on_simplex, out, -np.inf)


def pdf(x, alpha):
    """The Dirichlet density."""
    return jnp.exp(logpdf(x, alpha))
