"""jax.scipy.linalg's Schur decomposition and the matrix functions built on it: schur,
rsf2csf, sqrtm and funm (Schur-Parlett)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.lax import linalg as lax_linalg
from minijax.lax import linalg_more as lax_linalg_more

__all__ = ["funm", "rsf2csf", "schur", "sqrtm"]


def _complex_dtype(dtype):
    return np.result_type(dtype, np.complex64)


def schur(a, output: str = "real"):
    """Schur decomposition a = Z T Z^H: (T, Z). output='real' (real input) gives the real
    Schur form, quasi-triangular with 2x2 blocks for complex-conjugate eigenvalue pairs;
    output='complex' a triangular T."""
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    a = jnp.asarray(a)
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        a = a.astype(jnp.float32)
    if output == "complex":
        a = a.astype(_complex_dtype(a.dtype))
    return lax_linalg_more.schur(a)


def rsf2csf(T, Z, check_finite: bool = True):
    """Convert a real Schur form (T, Z) into the complex one (triangular T), as SciPy: each
    2x2 block is split by a unitary rotation."""
    del check_finite
    T, Z = jnp.asarray(T), jnp.asarray(Z)
    if T.ndim < 2 or T.shape[-1] != T.shape[-2]:
        raise ValueError("Input 'T' must be square.")
    if Z.ndim < 2 or Z.shape[-1] != Z.shape[-2]:
        raise ValueError("Input 'Z' must be square.")
    if T.shape[-1] != Z.shape[-1]:
        raise ValueError(f"Input array shapes must match: Z: {Z.shape} vs. T: {T.shape}")
    return jnp.vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(T, Z)


def _rsf2csf_2d(T, Z):
    dtype = _complex_dtype(jnp.result_type(T, Z, jnp.float32))
    T, Z = T.astype(dtype), Z.astype(dtype)
    n = T.shape[0]
    eps = np.finfo(dtype).eps
    for m in range(n - 1, 0, -1):
        split = jnp.abs(T[m, m - 1]) > eps * (jnp.abs(T[m - 1, m - 1]) + jnp.abs(T[m, m]))
        mu = jnp.linalg.eigvals(T[m - 1:m + 1, m - 1:m + 1])[0] - T[m, m]
        r = jnp.sqrt(jnp.abs(mu) ** 2 + jnp.abs(T[m, m - 1]) ** 2).astype(dtype)
        r = jnp.where(split, r, 1)
        c, s = mu / r, T[m, m - 1] / r
        g = jnp.stack([jnp.stack([jnp.conj(c), s]), jnp.stack([-s, c])])
        t_new = T.at[m - 1:m + 1, m - 1:].set(g @ T[m - 1:m + 1, m - 1:])
        t_new = t_new.at[:m + 1, m - 1:m + 1].set(t_new[:m + 1, m - 1:m + 1] @ jnp.conj(g.T))
        z_new = Z.at[:, m - 1:m + 1].set(Z[:, m - 1:m + 1] @ jnp.conj(g.T))
        T = jnp.where(split, t_new, T).at[m, m - 1].set(0)
        Z = jnp.where(split, z_new, Z)
    return T, Z


def sqrtm(A, blocksize: int = 1):
    """The principal square root of a square matrix (complex), by the Schur method of
    Björck & Hammarling: A = Z T Z^H, U^2 = T solved column by column."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    A = jnp.asarray(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"sqrtm: expected a square matrix, got shape {A.shape}")
    T, Z = schur(A, output="complex")
    n = T.shape[0]
    d = jnp.sqrt(jnp.diagonal(T))
    U = jnp.diag(d)
    for j in range(1, n):
        # (U[:j, :j] + d_j I) U[:j, j] = T[:j, j]: an upper triangular system
        lhs = U[:j, :j] + d[j] * jnp.eye(j, dtype=T.dtype)
        col = lax_linalg.triangular_solve(lhs, T[:j, j:j + 1], left_side=True, lower=False)
        U = U.at[:j, j].set(col[:, 0])
    return Z @ U @ jnp.conj(Z.T)


def funm(A, func, disp: bool = True):
    """func applied to the square matrix A (Schur-Parlett: func on the eigenvalues of the
    complex Schur form, the rest by Parlett's recurrence, Golub & Van Loan alg. 11.1.1).
    With disp=False, also an estimate of the relative error, as SciPy."""
    A = jnp.asarray(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError("expected square array_like input")
    T, Z = rsf2csf(*schur(A))
    n = T.shape[0]
    F = jnp.diag(jnp.asarray(func(jnp.diagonal(T))).astype(T.dtype))
    minden = jnp.abs(T[0, 0])
    for p in range(1, n):
        for i in range(n - p):
            j = i + p
            s = T[i, j] * (F[j, j] - F[i, i])
            s = s + T[i, i + 1:j] @ F[i + 1:j, j] - F[i, i + 1:j] @ T[i + 1:j, j]
            den = T[j, j] - T[i, i]
            F = F.at[i, j].set(jnp.where(den != 0, s / jnp.where(den != 0, den, 1), s))
            minden = jnp.minimum(minden, jnp.abs(den))
    F = Z @ F @ jnp.conj(Z.T)
    if disp:
        return F
    tol = np.finfo(np.float32 if F.dtype == np.complex64 else np.float64).eps
    minden = jnp.where(minden == 0, tol, minden)
    err = jnp.where(jnp.any(jnp.isinf(F)), np.inf, jnp.minimum(1, jnp.maximum(
        tol, (tol / minden) * jnp.linalg.norm(jnp.triu(T, 1), 1))))
    return F, err
