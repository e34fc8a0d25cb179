"""Structured matrices of jax.scipy.linalg: block_diag, toeplitz, hankel, circulant,
companion, hilbert, leslie, pascal, dft, hadamard, helmert, invhilbert, invpascal, fiedler,
convolution_matrix. Those of a static size are built on the host with NumPy."""

from __future__ import annotations

import math

import numpy as np

from minijax import numpy as jnp

__all__ = ["block_diag", "circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion",
           "hadamard", "hankel", "helmert", "hilbert", "invhilbert", "invpascal", "leslie",
           "pascal", "toeplitz"]


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


def dft(n: int, scale: str | None = None, *, dtype=None):
    """The n x n discrete Fourier transform matrix exp(-2 pi i j k / n), scaled by 1
    (scale=None), 1/sqrt(n) ('sqrtn') or 1/n ('n')."""
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"scipy.linalg.dft: scale must be None, 'sqrtn' or 'n', got "
                         f"{scale!r}")
    jk = np.outer(np.arange(n), np.arange(n)) % max(n, 1)
    m = np.exp(-2j * np.pi * jk / max(n, 1))
    if scale == "sqrtn":
        m = m / math.sqrt(n)
    elif scale == "n":
        m = m / n
    out = jnp.asarray(m)
    return out if dtype is None else out.astype(dtype)


def hadamard(n: int, dtype=int):
    """The n x n Hadamard matrix (Sylvester's construction; n a power of 2)."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"scipy.linalg.hadamard: n must be a positive power of 2, got {n}")
    h = np.ones((1, 1), np.int64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return jnp.asarray(h).astype(dtype)


def helmert(n: int, full: bool = False):
    """The Helmert matrix: an orthogonal matrix whose first row is constant (dropped unless
    `full`)."""
    rows = [np.full(n, 1 / math.sqrt(n))]
    for i in range(1, n):
        r = np.zeros(n)
        r[:i] = 1 / math.sqrt(i * (i + 1))
        r[i] = -i / math.sqrt(i * (i + 1))
        rows.append(r)
    m = np.array(rows).reshape(n, n)
    return jnp.asarray(m if full else m[1:])


def invhilbert(n: int):
    """The inverse of the n x n Hilbert matrix (from its closed form in binomials)."""
    m = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            m[i, j] = ((-1) ** (i + j) * (i + j + 1) * math.comb(n + i, n - j - 1)
                       * math.comb(n + j, n - i - 1) * math.comb(i + j, i) ** 2)
    return jnp.asarray(m)


def invpascal(n: int, kind: str | None = None):
    """The inverse of `pascal(n, kind)`."""
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"scipy.linalg.invpascal: kind must be 'symmetric', 'lower' or "
                         f"'upper', got {kind!r}")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    lower_inv = np.vectorize(math.comb)(i, j) * (-1.0) ** (i + j)
    if kind == "lower":
        m = lower_inv
    elif kind == "upper":
        m = lower_inv.T
    else:  # pascal = L L^T, so its inverse is L^-T L^-1
        m = lower_inv.T @ lower_inv
    return jnp.asarray(m)


def fiedler(a):
    """The symmetric Fiedler matrix |a_i - a_j| of a 1-d array."""
    a = jnp.atleast_1d(jnp.asarray(a))
    if a.ndim != 1:
        raise ValueError(f"scipy.linalg.fiedler: expected a 1-d array, got shape {a.shape}")
    return jnp.abs(a[:, None] - a[None, :])


def convolution_matrix(a, n: int, mode: str = "full"):
    """The Toeplitz matrix A with A @ v == jnp.convolve(a, v, mode) for v of length n."""
    a = jnp.atleast_1d(jnp.asarray(a))
    if a.ndim != 1 or a.shape[0] == 0:
        raise ValueError("scipy.linalg.convolution_matrix: a must be a non-empty 1-d array")
    if n <= 0:
        raise ValueError(f"scipy.linalg.convolution_matrix: n must be positive, got {n}")
    m = a.shape[0]
    rows = np.arange(m + n - 1)[:, None] - np.arange(n)[None, :]   # index into a
    full = jnp.where((rows >= 0) & (rows < m), jnp.take(a, np.clip(rows, 0, m - 1)), 0)
    if mode == "full":
        return full
    if mode == "same":
        length = max(m, n)
        start = (m + n - 1 - length) // 2
    elif mode == "valid":
        length = max(m, n) - min(m, n) + 1
        start = min(m, n) - 1
    else:
        raise ValueError(f"scipy.linalg.convolution_matrix: mode must be 'full', 'same' or "
                         f"'valid', got {mode!r}")
    return full[start:start + length]


def fiedler_companion(a):
    """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients `a`
    (highest power first; batched over leading axes): its eigenvalues are the roots."""
    a = jnp.atleast_1d(jnp.asarray(a))
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        a = a.astype(jnp.float32)
    if a.shape[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero "
                         f"length, but got an array of shape {a.shape}.")
    n = a.shape[-1] - 1
    if n == 0:
        return jnp.zeros(a.shape[:-1] + (0, 0), a.dtype)
    a = a / a[..., :1]
    if n == 1:
        return -a[..., 1:, None]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    # -a[1] at (0, 0), 1 at (1, 0); on even rows i: -a[i+2] at (i, i+1), 1 at (i, i+2) and
    # (for i >= 2) -a[i+1] at (i, i-1); on odd rows i >= 3: 1 at (i, i-2)
    coef = np.zeros((n, n), np.int64)   # index into a of the -a[...] entries, 0 for none
    ones = np.zeros((n, n), bool)
    even = (i % 2 == 0)
    coef[(i == 0) & (j == 0)] = 1
    ones[(i == 1) & (j == 0)] = True
    sup = (j == i + 1) & even
    coef[sup] = np.broadcast_to(np.minimum(i + 2, n), (n, n))[sup]
    ones |= (j == i + 2) & even
    sub = (j == i - 1) & even & (i >= 2)
    coef[sub] = np.broadcast_to(np.minimum(i + 1, n), (n, n))[sub]
    ones |= (j == i - 2) & (i % 2 == 1) & (i >= 3)
    vals = -jnp.take(a, jnp.asarray(coef.reshape(-1)), axis=-1).reshape(a.shape[:-1] + (n, n))
    return jnp.where(jnp.asarray(coef > 0), vals,
                     jnp.where(jnp.asarray(ones), jnp.ones((), a.dtype), jnp.zeros((), a.dtype)))
