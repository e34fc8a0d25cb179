"""jax.scipy.linalg's Hessenberg reduction, qr_multiply and solve_sylvester, built on
lax.linalg's hessenberg / householder_product / qr / eig."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.lax import linalg as lax_linalg
from minijax.lax import linalg_more as lax_linalg_more

__all__ = ["hessenberg", "qr_multiply", "solve_sylvester"]


def _inexact(*arrays):
    arrays = [jnp.asarray(a) for a in arrays]
    dtype = jnp.result_type(*arrays, jnp.float32) if not any(
        jnp.issubdtype(a.dtype, jnp.inexact) for a in arrays) else jnp.result_type(*arrays)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.float32
    return [a.astype(dtype) for a in arrays]


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True):
    """Upper Hessenberg form H of a square matrix (a = Q H Q^H); with calc_q, (H, Q)."""
    del overwrite_a, check_finite
    (a,) = _inexact(a)
    n = a.shape[-1]
    if n == 0:
        return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
    packed, taus = lax_linalg_more.hessenberg(a)
    h = jnp.triu(packed, -1)
    if not calc_q:
        return h
    q = lax_linalg_more.householder_product(packed[..., 1:, :-1], taus)
    batch = a.shape[:-2]
    q = jnp.concatenate([
        jnp.concatenate([jnp.ones(batch + (1, 1), a.dtype), jnp.zeros(batch + (1, n - 1),
                                                                      a.dtype)], axis=-1),
        jnp.concatenate([jnp.zeros(batch + (n - 1, 1), a.dtype), q], axis=-1)], axis=-2)
    return h, q


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """(c @ Q, R) for mode 'right' (c has m columns) or (Q @ c, R) for 'left' (c has
    k = min(m, n) rows), where a = Q R (reduced); `conjugate` uses conj(Q). A 1-D c gives a
    1-D product, as SciPy."""
    del overwrite_a, overwrite_c
    if pivoting:
        raise NotImplementedError("scipy.linalg.qr_multiply: pivoting=True is not implemented "
                                  "in minijax")
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    a, c = _inexact(a, c)
    onedim = c.ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                         f"{tuple(a.shape)} so Q has {k} columns, but c has {c.shape[-2]} rows "
                         f"(expected {k}).")
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                         f"{tuple(a.shape)} so Q has {m} rows, but c has {c.shape[-1]} columns "
                         f"(expected {m}).")
    q, r = lax_linalg.qr(a, full_matrices=False)
    if conjugate:
        q = jnp.conj(q)
    out = jnp.matmul(q, c) if mode == "left" else jnp.matmul(c, q)
    if onedim:
        out = out.ravel()
    return out, jnp.triu(r[..., :k, :])


def _sylvester_2d(a, b, c, method, tol):
    m, n = c.shape
    if method == "schur":
        # (I_n (x) A + B^T (x) I_m) vec(X) = vec(C), vec stacking columns
        op = jnp.kron(jnp.eye(n, dtype=a.dtype), a) + jnp.kron(b.T, jnp.eye(m, dtype=a.dtype))
        x = jnp.linalg.solve(op, c.T.reshape(-1)).reshape(n, m).T
    else:
        ra, ua = jnp.linalg.eig(a)
        rb, ub = jnp.linalg.eig(b)
        f = jnp.linalg.solve(ua, c.astype(ra.dtype) @ ub)
        x = ua @ (f / (ra[:, None] + rb[None, :])) @ jnp.linalg.inv(ub)
        if not jnp.issubdtype(c.dtype, jnp.complexfloating):
            x = x.real
    ea, eb = jnp.linalg.eigvals(a), jnp.linalg.eigvals(b)
    singular = jnp.any(jnp.abs(ea[:, None] + eb[None, :]) < tol)
    return jnp.where(singular, jnp.full_like(x, np.nan), x)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """X with A X + X B = C. NaNs when some eigenvalues of A and -B are within `tol` (no
    unique solution), as JAX. method 'schur' solves the equivalent Kronecker-product system
    directly (JAX uses Bartels-Stewart; the solution is the same), 'eigen' diagonalizes A
    and B as JAX does."""
    if method not in ("schur", "eigen"):
        raise ValueError(f"Unrecognized method {method}. The two valid methods are either "
                         "\"schur\" or \"eigen\".")
    A, B, C = _inexact(A, B, C)
    m, n = C.shape[-2:]
    if A.shape[-2:] != (m, m) or B.shape[-2:] != (n, n):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {A.shape}\n"
                         f"B: {B.shape}\nC: {C.shape}")
    return jnp.vectorize(lambda a, b, c: _sylvester_2d(a, b, c, method, tol),
                         signature="(m,m),(n,n),(m,n)->(m,n)")(A, B, C)
