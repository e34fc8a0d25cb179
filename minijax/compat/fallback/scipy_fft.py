"""``jax.scipy.fft``: the type-2 discrete cosine transform and its inverse, through an FFT."""

from __future__ import annotations

import math

from minijax import numpy as jnp

__all__ = ["dct", "idct"]


def _check(type, norm, what):
    if type != 2:
        raise NotImplementedError(f"{what}: only type=2 is implemented (as JAX).")
    if norm not in (None, "ortho", "backward"):
        raise ValueError(f"{what}: norm must be None, 'backward' or 'ortho', got {norm!r}")


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """DCT-II along ``axis``: ``y[k] = 2 sum_j x[j] cos(pi k (2j + 1) / (2N))``."""
    _check(type, norm, "dct")
    x = jnp.moveaxis(jnp.asarray(x), axis, -1)
    if n is not None:
        x = x[..., :n] if n <= x.shape[-1] else jnp.pad(
            x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])
    size = x.shape[-1]
    v = jnp.concatenate([x[..., ::2], jnp.flip(x[..., 1::2], -1)], axis=-1)
    k = jnp.arange(size)
    phase = jnp.exp(-0.5j * math.pi * k / size)
    y = 2 * jnp.real(jnp.fft.fft(v, axis=-1) * phase).astype(x.dtype)
    if norm == "ortho":
        scale = jnp.where(k == 0, math.sqrt(1 / (4 * size)), math.sqrt(1 / (2 * size)))
        y = y * scale.astype(y.dtype)
    return jnp.moveaxis(y, -1, axis)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of :func:`dct` (a scaled DCT-III)."""
    _check(type, norm, "idct")
    x = jnp.moveaxis(jnp.asarray(x), axis, -1)
    if n is not None:
        x = x[..., :n] if n <= x.shape[-1] else jnp.pad(
            x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])
    size = x.shape[-1]
    k = jnp.arange(size)
    if norm == "ortho":
        scale = jnp.where(k == 0, math.sqrt(4 * size), math.sqrt(2 * size))
        x = x * scale.astype(x.dtype)
    phase = jnp.exp(0.5j * math.pi * k / size)
    v = jnp.real(jnp.fft.ifft(x * phase, axis=-1) * size).astype(x.dtype)
    # x[0] enters the sum with weight 1/2 relative to the others in DCT-III
    v = v - 0.5 * x[..., :1]
    v = v / size
    out = jnp.zeros_like(v)
    half = (size + 1) // 2
    out = out.at[..., ::2].set(v[..., :half])
    out = out.at[..., 1::2].set(jnp.flip(v[..., half:], -1))
    return jnp.moveaxis(out, -1, axis)
