"""The multivariate normal distribution (as jax.scipy.stats.multivariate_normal)."""

from __future__ import annotations

import math

from minijax import numpy as jnp
from minijax.lax import linalg as lax_linalg

__all__ = ["logpdf", "pdf"]


def logpdf(x, mean, cov, allow_singular=None):
    """Log of the multivariate normal density at `x` (vectors on the last axis; `cov` a
    scalar, or a matrix (batch allowed) factored by Cholesky)."""
    if allow_singular is not None:
        raise NotImplementedError("multivariate_normal.logpdf: allow_singular is not "
                                  "supported (as in JAX)")
    x, mean, cov = _promote3(x, mean, cov)
    if not mean.shape:
        return -0.5 * (x - mean) ** 2 / cov - 0.5 * (math.log(2 * math.pi) + jnp.log(cov))
    n = mean.shape[-1]
    d = x - mean
    if not cov.shape:
        return (-0.5 * jnp.sum(d * d, axis=-1) / cov
                - 0.5 * n * (math.log(2 * math.pi) + jnp.log(cov)))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal.logpdf: incompatible shapes: mean "
                         f"{mean.shape}, cov {cov.shape} (cov must end in ({n}, {n}))")
    chol = lax_linalg.cholesky(cov)
    batch = jnp.broadcast_shapes(d.shape[:-1], chol.shape[:-2])
    chol = jnp.broadcast_to(chol, batch + (n, n))
    d = jnp.broadcast_to(d, batch + (n,))
    y = lax_linalg.triangular_solve(chol, d[..., None], left_side=True, lower=True)[..., 0]
    log_det = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * jnp.sum(y * y, axis=-1) - 0.5 * n * math.log(2 * math.pi) - log_det


def _promote3(x, mean, cov):
    # Promote to one inexact dtype without broadcasting (the shapes differ by design).
    dtype = jnp.result_type(jnp.asarray(x), jnp.asarray(mean), jnp.asarray(cov))
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.result_type(dtype, jnp.float32)
    return [jnp.asarray(v).astype(dtype) for v in (x, mean, cov)]


def pdf(x, mean, cov):
    """The multivariate normal density."""
    return jnp.exp(logpdf(x, mean, cov))
