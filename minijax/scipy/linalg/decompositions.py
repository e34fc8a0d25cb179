"""jax.scipy.linalg's factorizations and solvers, with SciPy's signatures: cholesky,
cho_factor/cho_solve, lu/lu_factor/lu_solve, qr, eigh, eigh_tridiagonal, svd, solve,
solve_triangular, inv, det. Built on minijax.lax.linalg, so they differentiate, vmap and jit.
`overwrite_*`, `check_finite` and the like are accepted for compatibility and ignored."""

from __future__ import annotations

from minijax import numpy as jnp
from minijax.lax import linalg as lax_linalg
from minijax.numpy import linalg as jnp_linalg

__all__ = ["cho_factor", "cho_solve", "cholesky", "det", "eigh", "eigh_tridiagonal", "inv",
           "lu", "lu_factor", "lu_solve", "qr", "solve", "solve_triangular", "svd"]


def _inexact(name, *arrays):
    arrs = [jnp.asarray(a) for a in arrays]
    dtype = jnp.result_type(*arrs)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.result_type(dtype, jnp.float32)
    return [a.astype(dtype) for a in arrs]


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"scipy.linalg.{name}: expected a square matrix (or a batch of "
                         f"them), got shape {a.shape}")


def _mH(x):
    x = jnp.swapaxes(x, -1, -2)
    return jnp.conj(x) if jnp.iscomplexobj(x) else x


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of a Hermitian positive-definite matrix: upper triangular U with
    a = U^H U, or lower triangular L with a = L L^H when `lower=True`."""
    del overwrite_a, check_finite
    (a,) = _inexact("cholesky", a)
    _square("cholesky", a)
    # As scipy and JAX: only the triangle named by `lower` is read (no symmetrizing), so
    # values and gradients ignore the other triangle.
    factor = lax_linalg.cholesky(a if lower else _mH(a), symmetrize_input=False)
    return factor if lower else _mH(factor)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True):
    """(c, lower): the Cholesky factor of `a` and whether it is the lower one, for cho_solve."""
    return cholesky(a, lower=lower), lower


def _matrix_and_rhs(name, what, a, b):
    """`a` and `b` (a vector or a matrix of right-hand sides) broadcast to one batch shape:
    `(a, b as a matrix, whether b was a vector)`; a ValueError when their sizes disagree."""
    vec = b.ndim == a.ndim - 1
    bm = b[..., None] if vec else b
    if bm.shape[-2] != a.shape[-1]:
        raise ValueError(f"scipy.linalg.{name}: {what} of shape {a.shape} and b of shape "
                         f"{b.shape} are incompatible")
    batch = jnp.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    return (jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(bm, batch + bm.shape[-2:]),
            vec)


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """Solve a x = b given `cho_factor(a)`; b is a vector or a matrix of right-hand sides."""
    del overwrite_b, check_finite
    c, lower = c_and_lower
    c, b = _inexact("cho_solve", c, b)
    c, bm, vec = _matrix_and_rhs("cho_solve", "factor", c, b)
    # lower: L (L^H x) = b;  upper: U^H (U x) = b
    y = lax_linalg.triangular_solve(c, bm, left_side=True, lower=lower,
                                    transpose_a=not lower, conjugate_a=not lower)
    x = lax_linalg.triangular_solve(c, y, left_side=True, lower=lower,
                                    transpose_a=lower, conjugate_a=lower)
    return x[..., 0] if vec else x


_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """Solve op(a) x = b for triangular `a`; `trans` 0/'N' (a), 1/'T' (a^T), 2/'C' (a^H)."""
    del overwrite_b, debug, check_finite
    if trans not in _TRANS:
        raise ValueError(f"scipy.linalg.solve_triangular: invalid trans {trans!r}; expected "
                         f"0, 1, 2, 'N', 'T' or 'C'")
    transpose_a, conjugate_a = _TRANS[trans]
    a, b = _inexact("solve_triangular", a, b)
    _square("solve_triangular", a)
    a, bm, vec = _matrix_and_rhs("solve_triangular", "a", a, b)
    x = lax_linalg.triangular_solve(a, bm, left_side=True, lower=lower,
                                    transpose_a=transpose_a, conjugate_a=conjugate_a,
                                    unit_diagonal=unit_diagonal)
    return x[..., 0] if vec else x


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """LU factorization with partial pivoting: (p, l, u) with a = p @ l @ u, or
    (p @ l, u) with `permute_l=True`. Works for rectangular matrices."""
    del overwrite_a, check_finite
    (a,) = _inexact("lu", a)
    if a.ndim < 2:
        raise ValueError(f"scipy.linalg.lu: expected a matrix, got shape {a.shape}")
    m, n = a.shape[-2:]
    k = min(m, n)
    packed, _, perm = lax_linalg.lu(a)
    eye_k = jnp.eye(m, k, dtype=a.dtype)
    l_factor = jnp.tril(packed[..., :, :k], -1) + eye_k
    u_factor = jnp.triu(packed[..., :k, :])
    # a[perm] = l u, so a = P l u with P[perm[i], i] = 1.
    p = jnp.swapaxes(jnp.eye(m, dtype=a.dtype)[perm], -1, -2)
    if permute_l:
        return jnp.matmul(p, l_factor), u_factor
    return p, l_factor, u_factor


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """(lu, piv): the packed LU factors and LAPACK-style pivots (row i was swapped with
    row piv[i]), for lu_solve."""
    del overwrite_a, check_finite
    (a,) = _inexact("lu_factor", a)
    _square("lu_factor", a)
    packed, pivots, _ = lax_linalg.lu(a)
    return packed, pivots


def _pivots_to_permutation(pivots, m):
    """The row permutation that the LAPACK-style row swaps `pivots` apply to range(m)."""
    batch = pivots.shape[:-1]
    perm = jnp.broadcast_to(jnp.arange(m, dtype=pivots.dtype), batch + (m,))
    rows = jnp.arange(m, dtype=pivots.dtype)
    for i in range(pivots.shape[-1]):
        j = pivots[..., i:i + 1]
        pi = perm[..., i:i + 1]
        pj = jnp.take_along_axis(perm, j, axis=-1)
        perm = jnp.where(rows == i, pj, jnp.where(rows == j, pi, perm))
    return perm


def lu_solve(lu_and_piv, b, trans=0, overwrite_b: bool = False, check_finite: bool = True):
    """Solve a x = b (trans 0), a^T x = b (1) or a^H x = b (2) given `lu_factor(a)`."""
    del overwrite_b, check_finite
    packed, pivots = lu_and_piv
    if trans not in (0, 1, 2):
        raise ValueError(f"scipy.linalg.lu_solve: invalid trans {trans!r}; expected 0, 1 or 2")
    packed, b = _inexact("lu_solve", packed, b)
    m = packed.shape[-1]
    vec = b.ndim == 1
    bm = b[:, None] if vec else b
    if bm.shape[-2] != m:
        raise ValueError(f"scipy.linalg.lu_solve: factors of shape {packed.shape} and b of "
                         f"shape {b.shape} are incompatible")
    perm = _pivots_to_permutation(jnp.asarray(pivots), m)
    batch = jnp.broadcast_shapes(packed.shape[:-2], bm.shape[:-2], perm.shape[:-1])
    packed = jnp.broadcast_to(packed, batch + (m, m))
    bm = jnp.broadcast_to(bm, batch + bm.shape[-2:])
    perm = jnp.broadcast_to(perm, batch + (m,))
    solve = lax_linalg.triangular_solve
    if trans == 0:
        pb = jnp.take_along_axis(bm, perm[..., :, None], axis=-2)
        y = solve(packed, pb, left_side=True, lower=True, unit_diagonal=True)
        x = solve(packed, y, left_side=True, lower=False)
    else:
        conj = trans == 2
        y = solve(packed, bm, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
        z = solve(packed, y, left_side=True, lower=True, unit_diagonal=True, transpose_a=True,
                  conjugate_a=conj)
        inverse = jnp.argsort(perm, axis=-1)
        x = jnp.take_along_axis(z, inverse[..., :, None], axis=-2)
    return x[..., 0] if vec else x


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """QR factorization: `mode` 'full' (q, r), 'economic' (reduced q, r) or 'r' ((r,) with the
    full r, as SciPy)."""
    del overwrite_a, lwork, check_finite
    if pivoting:
        raise NotImplementedError("scipy.linalg.qr: pivoting=True is not implemented in "
                                  "minijax")
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"scipy.linalg.qr: unsupported mode {mode!r}; expected 'full', "
                         f"'economic' or 'r'")
    (a,) = _inexact("qr", a)
    q, r = lax_linalg.qr(a, full_matrices=mode != "economic")
    return (r,) if mode == "r" else (q, r)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,  # noqa: A002
         check_finite: bool = True):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix, reading its `lower`
    (default) or upper triangle. The generalized problem (b) is not supported (as in JAX)."""
    del overwrite_a, overwrite_b, turbo, check_finite
    if b is not None:
        raise NotImplementedError("scipy.linalg.eigh: only b=None is supported (as in JAX)")
    if type != 1:
        raise NotImplementedError("scipy.linalg.eigh: only type=1 is supported (as in JAX)")
    if eigvals is not None:
        raise NotImplementedError("scipy.linalg.eigh: only eigvals=None is supported (as in "
                                  "JAX)")
    (a,) = _inexact("eigh", a)
    _square("eigh", a)
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=False)
    return w if eigvals_only else (w, v)


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol=None, key=None):
    """Eigenvalues of the symmetric tridiagonal matrix with diagonal `d` and off-diagonal
    `e`; `select` 'a' (all) or 'i' (indices select_range[0]..select_range[1], inclusive).
    Only eigvals_only=True is supported (as in JAX)."""
    del tol, key
    if not eigvals_only:
        raise NotImplementedError("scipy.linalg.eigh_tridiagonal: only eigvals_only=True is "
                                  "supported (as in JAX)")
    if select not in ("a", "i"):
        raise NotImplementedError(f"scipy.linalg.eigh_tridiagonal: select={select!r} is not "
                                  f"supported; use 'a' or 'i'")
    d, e = _inexact("eigh_tridiagonal", d, e)
    n = d.shape[-1]
    if d.ndim != 1 or e.shape != (n - 1,):
        raise ValueError(f"scipy.linalg.eigh_tridiagonal: expected d of shape (n,) and e of "
                         f"shape (n - 1,), got {d.shape} and {e.shape}")
    off = jnp.diag(e, -1)
    t = jnp.diag(d) + off + _mH(off)
    w = lax_linalg.eigh(t, lower=True, symmetrize_input=False)[1]
    if select == "i":
        lo, hi = (int(v) for v in select_range)
        w = w[..., lo:hi + 1]
    return w


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """Singular value decomposition (u, s, vh), or s with compute_uv=False."""
    del overwrite_a, check_finite, lapack_driver
    (a,) = _inexact("svd", a)
    return jnp_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """Solve a x = b for square `a`; b is (n,) or (n, k). `assume_a='pos'` uses a Cholesky
    factorization (reading the `lower` or upper triangle); 'gen', 'sym', 'her' use LU."""
    del overwrite_a, overwrite_b, debug, check_finite
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"scipy.linalg.solve: unknown assume_a {assume_a!r}; expected "
                         f"'gen', 'sym', 'her' or 'pos'")
    a, b = _inexact("solve", a, b)
    _square("solve", a)
    if assume_a == "pos":
        sym = jnp.tril(a) + _mH(jnp.tril(a, -1)) if lower else jnp.triu(a) + _mH(jnp.triu(a, 1))
        return cho_solve((lax_linalg.cholesky(sym, symmetrize_input=False), True), b)
    if b.ndim == a.ndim - 1:
        return jnp_linalg.solve(a, b[..., None])[..., 0]
    return jnp_linalg.solve(a, b)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """The inverse of a square matrix."""
    return jnp_linalg.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """The determinant of a square matrix."""
    return jnp_linalg.det(a)


