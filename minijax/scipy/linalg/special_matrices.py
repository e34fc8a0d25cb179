"""Structured matrices of jax.scipy.linalg: block_diag, toeplitz, hankel, circulant,
companion, hilbert, leslie, pascal."""

from __future__ import annotations

import math

import numpy as np

from minijax import numpy as jnp

__all__ = ["block_diag", "circulant", "companion", "hankel", "hilbert", "leslie", "pascal",
           "toeplitz"]


def block_diag(*arrs):
    """The block-diagonal matrix of the arguments (each made at least 2-D)."""
    if not arrs:
        return jnp.zeros((1, 0))
    blocks = [jnp.atleast_2d(jnp.asarray(a)) for a in arrs]
    for a in blocks:
        if a.ndim != 2:
            raise ValueError(f"scipy.linalg.block_diag: arguments must have two or fewer "
                             f"dimensions, got shape {a.shape}")
    dtype = jnp.result_type(*blocks)
    total = sum(a.shape[1] for a in blocks)
    rows, col = [], 0
    for a in blocks:
        left = jnp.zeros((a.shape[0], col), dtype)
        right = jnp.zeros((a.shape[0], total - col - a.shape[1]), dtype)
        rows.append(jnp.concatenate([left, a.astype(dtype), right], axis=1))
        col += a.shape[1]
    return jnp.concatenate(rows, axis=0)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column `c` and first row `r` (r[0] ignored; default
    conj(c)). Leading dimensions of c and r are batch dimensions."""
    c = jnp.asarray(c)
    r = jnp.conj(c) if r is None else jnp.asarray(r)
    c, r = jnp.atleast_1d(c), jnp.atleast_1d(r)
    dtype = jnp.result_type(c, r)
    m, n = c.shape[-1], r.shape[-1]
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    below = jnp.take(c.astype(dtype), np.clip(i - j, 0, m - 1), axis=-1)
    above = jnp.take(r.astype(dtype), np.clip(j - i, 0, n - 1), axis=-1)
    return jnp.where(i >= j, below, above)


def hankel(c, r=None):
    """The Hankel matrix with first column `c` and last row `r` (r[0] ignored; default
    zeros)."""
    c = jnp.atleast_1d(jnp.asarray(c)).ravel()
    r = jnp.zeros_like(c) if r is None else jnp.atleast_1d(jnp.asarray(r)).ravel()
    vals = jnp.concatenate([c, r[1:].astype(jnp.result_type(c, r))])
    m, n = c.shape[0], r.shape[0]
    return vals[np.arange(m)[:, None] + np.arange(n)[None, :]]


def circulant(c):
    """The circulant matrix whose first column is `c` (batch over leading dimensions)."""
    c = jnp.atleast_1d(jnp.asarray(c))
    n = c.shape[-1]
    idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % n
    return jnp.take(c, idx, axis=-1)


def companion(a):
    """The companion matrix of the polynomial with coefficients `a` (highest first)."""
    a = jnp.atleast_1d(jnp.asarray(a))
    if a.ndim != 1 or a.shape[0] < 2:
        raise ValueError("scipy.linalg.companion: expected at least two coefficients in a "
                         "1-D array")
    n = a.shape[0]
    dtype = jnp.result_type(a.dtype, jnp.float32) if not jnp.issubdtype(
        a.dtype, jnp.inexact) else a.dtype
    first = (-a[1:] / a[0]).astype(dtype)
    return jnp.concatenate([first[None, :], jnp.eye(n - 2, n - 1, dtype=dtype)], axis=0)


def hilbert(n: int):
    """The n x n Hilbert matrix 1 / (i + j + 1)."""
    i = np.arange(n)
    return jnp.asarray(1.0 / (i[:, None] + i[None, :] + 1))


def leslie(f, s):
    """The Leslie matrix with fecundity coefficients `f` (n) and survival `s` (n - 1)."""
    f, s = jnp.atleast_1d(jnp.asarray(f)), jnp.atleast_1d(jnp.asarray(s))
    n = f.shape[-1]
    if s.shape[-1] != n - 1:
        raise ValueError(f"scipy.linalg.leslie: s must have {n - 1} entries, got {s.shape}")
    dtype = jnp.result_type(f, s)
    sub = jnp.diag(s.astype(dtype), -1)[1:]
    return jnp.concatenate([f.astype(dtype)[None, :], sub], axis=0)


def pascal(n: int, kind: str | None = None):
    """The n x n Pascal matrix: 'symmetric' (default), 'lower' or 'upper'."""
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"scipy.linalg.pascal: kind must be 'symmetric', 'lower' or "
                         f"'upper', got {kind!r}")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    if kind == "symmetric":
        vals = np.vectorize(math.comb)(i + j, i)
    elif kind == "lower":
        vals = np.vectorize(math.comb)(i, j)
    else:
        vals = np.vectorize(math.comb)(j, i)
    return jnp.asarray(vals.astype(np.float64))
