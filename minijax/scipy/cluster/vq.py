"""minijax.scipy.cluster.vq (JAX's ``jax.scipy.cluster.vq``): nearest-code assignment."""

from __future__ import annotations

from minijax import numpy as jnp

__all__ = ["vq"]


def vq(obs, code_book, check_finite: bool = True):
    """Assign each observation (row of ``obs``, or scalar for 1-d) to its nearest code in
    ``code_book``; returns ``(codes, distances)`` (int32 indices, Euclidean distances).
    ``check_finite`` is accepted and unused (as JAX)."""
    del check_finite
    obs = jnp.asarray(obs)
    code_book = jnp.asarray(code_book)
    dtype = jnp.result_type(obs, code_book, 1.0)
    obs, code_book = obs.astype(dtype), code_book.astype(dtype)
    if obs.ndim != code_book.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, code_book = obs[..., None], code_book[..., None]
    if obs.ndim != 2:
        raise ValueError("ndim different than 1 or 2 are not supported")
    dist = jnp.sum((obs[:, None, :] - code_book[None, :, :]) ** 2, axis=-1)
    codes = jnp.argmin(dist, axis=-1)
    best = jnp.take_along_axis(dist, codes[:, None], axis=-1)[:, 0]
    return codes.astype(jnp.int32), jnp.sqrt(best)
