"""minijax.scipy.fft (JAX's ``jax.scipy.fft``): the type-2 discrete cosine transform and its
inverse in one and n dimensions (``dct``, ``idct``, ``dctn``, ``idctn``), through an FFT.

As in JAX only type 2 is implemented (``NotImplementedError`` otherwise) and ``norm`` is one
of ``None``/``"backward"`` (unnormalized forward transform, scaled inverse) or ``"ortho"``;
complex input transforms its real and imaginary parts separately.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from minijax import dtypes, lax
from minijax import numpy as jnp

__all__ = ["dct", "dctn", "idct", "idctn"]


def _check(type, norm, what):
    if type != 2:
        raise NotImplementedError(f"jax.scipy.fft.{what}: only DCT type 2 is implemented.")
    if norm is not None and norm not in ("backward", "ortho"):
        raise ValueError(f"jax.scipy.fft.{what}: norm={norm!r} is not implemented "
                         "(use None, 'backward' or 'ortho')")


def _prepare(x, what):
    x = jnp.asarray(x)
    # JAX's dtype: integers as in jnp.fft (int32 -> float32 even with x64); 16-bit floats
    # come back as float32 (the transform runs in complex64 and is not cast back)
    dt = dtypes.to_inexact(x.dtype)
    if dt.kind == "f" and dt.itemsize < 4:
        dt = np.dtype(np.float32)
    return x if dt == x.dtype else x.astype(dt)


def _resize(x, n: int | None):
    """Truncate or zero-pad the last axis to ``n``."""
    if n is None or n == x.shape[-1]:
        return x
    if n <= x.shape[-1]:
        return x[..., :n]
    return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])


def _dct_last(x, n, norm):
    x = _resize(x, n)
    size = x.shape[-1]
    v = jnp.concatenate([x[..., ::2], jnp.flip(x[..., 1::2], -1)], axis=-1)
    k = jnp.arange(size)
    phase = jnp.exp(-0.5j * math.pi * k / size)
    y = 2 * jnp.real(jnp.fft.fft(v, axis=-1) * phase).astype(x.dtype)
    if norm == "ortho":
        scale = jnp.where(k == 0, math.sqrt(1 / (4 * size)), math.sqrt(1 / (2 * size)))
        y = y * scale.astype(y.dtype)
    return y


def _idct_last(x, n, norm):
    x = _resize(x, n)
    size = x.shape[-1]
    k = jnp.arange(size)
    if norm == "ortho":
        scale = jnp.where(k == 0, math.sqrt(4 * size), math.sqrt(2 * size))
        x = x * scale.astype(x.dtype)
    phase = jnp.exp(0.5j * math.pi * k / size)
    v = jnp.real(jnp.fft.ifft(x * phase, axis=-1) * size).astype(x.dtype)
    # x[0] enters the DCT-III sum with weight 1/2 relative to the others
    v = (v - 0.5 * x[..., :1]) / size
    half = (size + 1) // 2
    out = jnp.zeros_like(v)
    out = out.at[..., ::2].set(v[..., :half])
    return out.at[..., 1::2].set(jnp.flip(v[..., half:], -1))


def _along(transform, x, n, axis, norm):
    if jnp.iscomplexobj(x):
        return lax.complex(_along(transform, jnp.real(x), n, axis, norm),
                           _along(transform, jnp.imag(x), n, axis, norm))
    axis = operator.index(axis)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
    y = transform(jnp.moveaxis(x, axis, -1), n, norm)
    return jnp.moveaxis(y, -1, axis)


def _along_axes(transform, x, s, axes, norm):
    """`transform` along each of `axes` in turn, each resized to its entry of `s`."""
    axes, sizes = _axes_and_sizes(x, s, axes)
    for axis, n in zip(axes, sizes):
        x = _along(transform, x, n, axis, norm)
    return x


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """DCT-II along ``axis``: ``y[k] = 2 sum_j x[j] cos(pi k (2j + 1) / (2N))``; ``n``
    truncates or zero-pads the input along ``axis`` first."""
    _check(type, norm, "dct")
    return _along(_dct_last, _prepare(x, "dct"), n, axis, norm)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of :func:`dct` along ``axis`` (a scaled DCT-III)."""
    _check(type, norm, "idct")
    return _along(_idct_last, _prepare(x, "idct"), n, axis, norm)


def _axes_and_sizes(x, s, axes):
    if s is not None:
        try:
            s = [operator.index(v) for v in s]
        except TypeError:
            s = [operator.index(s)]
        if len(s) > x.ndim:
            raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
    if axes is None:
        axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    else:
        axes = tuple(operator.index(a) for a in axes)
        for a in axes:
            if not -x.ndim <= a < x.ndim:
                raise ValueError(f"axis {a} is out of bounds for array of dimension {x.ndim}")
        axes = tuple(a % x.ndim for a in axes)
    if s is not None and len(s) != len(axes):
        raise ValueError(f"s and axes must have the same length, got {len(s)} and {len(axes)}")
    return axes, (s if s is not None else [None] * len(axes))


def dctn(x, type: int = 2, s: Sequence[int] | None = None,
         axes: Sequence[int] | None = None, norm: str | None = None):
    """The n-dimensional DCT-II: :func:`dct` along each of ``axes`` (default: the last
    ``len(s)`` axes, or all), each first resized to the matching entry of ``s``."""
    _check(type, norm, "dctn")
    return _along_axes(_dct_last, _prepare(x, "dctn"), s, axes, norm)


def idctn(x, type: int = 2, s: Sequence[int] | None = None,
          axes: Sequence[int] | None = None, norm: str | None = None):
    """The inverse of :func:`dctn`: :func:`idct` along each of ``axes``."""
    _check(type, norm, "idctn")
    return _along_axes(_idct_last, _prepare(x, "idctn"), s, axes, norm)
