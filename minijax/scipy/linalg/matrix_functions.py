"""Matrix functions of jax.scipy.linalg: expm (Pade scaling and squaring), expm_frechet,
polar."""

from __future__ import annotations

import math

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy import linalg as jnp_linalg

__all__ = ["expm", "expm_frechet", "polar"]

# Largest 1-norm for which the degree-m Pade approximant of exp is accurate to the unit
# roundoff (Higham, "The scaling and squaring method for the matrix exponential revisited",
# SIAM J. Matrix Anal. Appl. 26(4), 2005, Table 2.3; and the single-precision values of
# Table 3.1 of Al-Mohy & Higham 2009).
_THETA = {np.dtype(np.float64): (13, 5.371920351148152),
          np.dtype(np.float32): (7, 3.925724783138660)}


def _pade_coefficients(m: int):
    """b_k of the [m/m] Pade approximant of exp: (2m - k)! m! / ((2m)! k! (m - k)!)."""
    f = math.factorial
    return [f(2 * m - k) * f(m) / (f(2 * m) * f(k) * f(m - k)) for k in range(m + 1)]


def _pade(a, m):
    """(U, V) with exp(a) ~ (V - U)^-1 (V + U): U the odd part, V the even part."""
    b = _pade_coefficients(m)
    eye = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    a2 = a @ a
    powers = [eye, a2]
    for _ in range(2, m // 2 + 1):
        powers.append(powers[-1] @ a2)
    odd = sum(b[2 * j + 1] * powers[j] for j in range(m // 2 + 1))
    even = sum(b[2 * j] * powers[j] for j in range(m // 2 + 1))
    return a @ odd, even


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential by Pade approximation with scaling and squaring (degree 13 in
    float64, 7 in float32). Matrices whose norm needs more than `max_squarings` squarings
    give NaN (as in JAX)."""
    del upper_triangular  # no special path for triangular input
    a = jnp.asarray(A)
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        a = a.astype(jnp.result_type(a.dtype, jnp.float32))
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"scipy.linalg.expm: expected a square matrix (or a batch of them), "
                         f"got shape {a.shape}")
    real = np.dtype(jnp.finfo(a.dtype).dtype)
    m, theta = _THETA.get(real, _THETA[np.dtype(np.float32)])
    norm = jnp.max(jnp.sum(jnp.abs(a), axis=-2), axis=-1)           # the 1-norm
    safe = jnp.where(norm > 0, norm, jnp.ones_like(norm))
    s = jnp.maximum(0, jnp.ceil(jnp.log2(safe / theta))).astype(jnp.int32)
    s = jnp.where(norm > 0, s, 0)
    scale = jnp.exp2(-s.astype(real))[..., None, None].astype(a.dtype)
    u, v = _pade(a * scale, m)
    r = jnp_linalg.solve(v - u, v + u)

    def square(i, r):
        return jnp.where((i < s)[..., None, None], r @ r, r)
    r = lax.fori_loop(0, max_squarings, square, r)
    return jnp.where((s > max_squarings)[..., None, None], np.nan, r)


def expm_frechet(A, E, *, method=None, compute_expm: bool = True):
    """The Frechet derivative of expm at A in direction E: (expm(A), L(A, E)), or L alone
    with compute_expm=False. Computed as the top-right block of expm([[A, E], [0, A]])."""
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"scipy.linalg.expm_frechet: unknown method {method!r}")
    a, e = jnp.asarray(A), jnp.asarray(E)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or e.shape != a.shape:
        raise ValueError(f"scipy.linalg.expm_frechet: expected square A and E of the same "
                         f"shape, got {a.shape} and {e.shape}")
    n = a.shape[0]
    dtype = jnp.result_type(a, e)
    big = jnp.block([[a, e], [jnp.zeros((n, n), dtype), a]]).astype(dtype)
    full = expm(big)
    exp_a, frechet = full[:n, :n], full[:n, n:]
    return (exp_a, frechet) if compute_expm else frechet


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
    """The polar decomposition a = u p ('right') or a = p u ('left'), with u unitary and p
    Hermitian positive semi-definite; returns (u, p). Computed from the SVD (for both
    `method`s, 'qdwh' and 'svd')."""
    del eps, max_iterations
    if side not in ("right", "left"):
        raise ValueError(f"scipy.linalg.polar: side must be 'right' or 'left', got {side!r}")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"scipy.linalg.polar: unknown method {method!r}")
    x = jnp.asarray(a)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.result_type(x.dtype, jnp.float32))
    if x.ndim != 2:
        raise ValueError(f"scipy.linalg.polar: expected a matrix, got shape {x.shape}")
    u_svd, s, vh = jnp_linalg.svd(x, full_matrices=False)
    unitary = u_svd @ vh
    if side == "right":
        vs = jnp.conj(vh.T) if jnp.iscomplexobj(vh) else vh.T
        posdef = (vs * s.astype(x.dtype)) @ vh
    else:
        uh = jnp.conj(u_svd.T) if jnp.iscomplexobj(u_svd) else u_svd.T
        posdef = (u_svd * s.astype(x.dtype)) @ uh
    return unitary, posdef
