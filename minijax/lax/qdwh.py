"""`lax.linalg.qdwh`: the polar decomposition x = u h by the QR-based dynamically weighted
Halley iteration (Nakatsukasa, Bai & Gygi 2010), with JAX's schedule.

The iteration works on u_0 = x / sqrt(||x||_1 ||x||_inf). The weights (a_k, b_k, c_k) follow
from the lower bound l_k of u_k's smallest singular value, which starts at eps, so the
whole schedule is static: steps with c_k > 100 use the QR form
  u <- (b/c) u + (a - b/c)/sqrt(c) Q1 Q2^H,  [sqrt(c) u; I] = [Q1; Q2] R,
the others the Cholesky form
  u <- (b/c) u + (a - b/c) u (I + c u^H u)^-1,
and while the last step still moved u by more than (5 eps)^(1/3) (Frobenius norm), Halley
steps (a, b, c) = (3, 1, 3) continue up to max_iterations in all. A Newton-Schulz step
refines u, and h = (u^H x + x^H u) / 2.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.core import get_aval
from minijax.lax import linalg as base
from minijax.lax.control_flow_loops import while_loop
from minijax.lax.elementwise import abs as lax_abs
from minijax.lax.elementwise import add, mul, sub
from minijax.lax.elementwise_int import eq, gt, lt, select_n
from minijax.lax.elementwise_math import rsqrt, sqrt
from minijax.lax.linalg_util import cj, eye_like, matmul, mH, real_part, to_dtype
from minijax.lax.reductions import reduce_max, reduce_sum
from minijax.lax.slicing import slice
from minijax.lax.structural import concatenate, full
from minijax.lax.utils import weak_scalar

__all__ = ["qdwh"]

_CHOLESKY_CUTOFF = 100


def _schedule(eps: float, max_iterations: int):
    """The static weights: lists of (a, b, c) for the QR steps and the Cholesky steps."""
    l, k = eps, 0
    tol_l = 10.0 * eps / 2.0
    qr_steps, chol_steps = [], []
    while l + tol_l < 1 and k < max_iterations:
        k += 1
        l2 = l * l
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** 0.5
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** 0.5
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        l = l * (a + b * l2) / (1 + c * l2)
        (qr_steps if c > _CHOLESKY_CUTOFF else chol_steps).append((a, b, c))
    return qr_steps, chol_steps


def _c(value, like):
    return weak_scalar(value, get_aval(like).dtype)


def _qr_step(u, a, b, c):
    m, n = get_aval(u).shape
    e = b / c
    y = concatenate([mul(u, _c(c ** 0.5, u)), eye_like(full((n, n), 0, get_aval(u).dtype))], 0)
    q, _ = base.qr(y, full_matrices=False)
    q1, q2 = slice(q, (0, 0), (m, n)), slice(q, (m, 0), (m + n, n))
    return add(mul(u, _c(e, u)), mul(matmul(q1, mH(q2)), _c((a - e) / c ** 0.5, u)))


def _cholesky_step(u, a, b, c):
    n = get_aval(u).shape[1]
    e = b / c
    gram = add(mul(matmul(mH(u), u), _c(c, u)), eye_like(full((n, n), 0, get_aval(u).dtype)))
    chol = base.cholesky(gram, symmetrize_input=False)
    # z = u gram^-1 = u L^-H L^-1
    z = base.triangular_solve(chol, u, left_side=False, lower=True, transpose_a=True,
                              conjugate_a=True)
    z = base.triangular_solve(chol, z, left_side=False, lower=True)
    return add(mul(u, _c(e, u)), mul(z, _c(a - e, u)))


def _frobenius(x):
    return sqrt(reduce_sum(real_part(mul(x, cj(x))), (0, 1)))


def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape=None):
    """Polar decomposition x = u h of an m x n matrix (m >= n) by QDWH: returns
    (u, h, num_iters, is_converged) with u having orthonormal columns and h Hermitian
    positive semi-definite (JAX's algorithm and iteration schedule)."""
    del is_hermitian   # unused, as in JAX
    if dynamic_shape is not None:
        raise NotImplementedError("qdwh: dynamic_shape (padded inputs) is not supported in "
                                  "minijax")
    aval = get_aval(x)
    if aval.ndim != 2:
        raise ValueError(f"qdwh: expected a matrix, got {aval.str_short()}")
    m, n = aval.shape
    if m < n:
        raise ValueError("The input matrix of shape M x N must have M >= N.")
    if not dtypes.is_inexact(aval.dtype):
        raise TypeError(f"qdwh: x must be floating or complex, got {aval.str_short()}")
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    rdt = base._real_dtype(aval.dtype)
    eps = float(np.finfo(rdt).eps) if eps is None else float(eps)
    absx = lax_abs(x)
    one_norm = reduce_max(reduce_sum(absx, (0,)), (0,))
    inf_norm = reduce_max(reduce_sum(absx, (1,)), (0,))
    scale = mul(rsqrt(one_norm), rsqrt(inf_norm))
    scale = select_n(eq(one_norm, full((), 0, rdt)), scale, full((), 1, rdt))
    u = mul(x, to_dtype(scale, aval.dtype))
    tol_norm = float(np.cbrt(10.0 * eps / 2.0))

    qr_steps, chol_steps = _schedule(eps, max_iterations)
    for a, b, c in qr_steps:
        u = _qr_step(u, a, b, c)
    not_converged = full((), True, np.bool_)
    for a, b, c in chol_steps:   # all of them; convergence is judged by the last one
        new = _cholesky_step(u, a, b, c)
        not_converged = gt(_frobenius(sub(new, u)), full((), tol_norm, rdt))
        u = new
    k0 = len(qr_steps) + len(chol_steps)

    def keep_going(state):
        k, _, going = state
        return select_n(going, going, lt(k, full((), max_iterations, np.int32)))

    def halley(state):
        k, u, _ = state
        new = _cholesky_step(u, 3.0, 1.0, 3.0)
        return add(k, full((), 1, np.int32)), new, gt(_frobenius(sub(new, u)),
                                                       full((), tol_norm, rdt))

    num_iters, u, not_converged = while_loop(
        keep_going, halley, (full((), k0, np.int32), u, not_converged))
    # Newton-Schulz refinement, then the Hermitian factor
    u = sub(mul(u, _c(1.5, u)), mul(matmul(u, matmul(mH(u), u)), _c(0.5, u)))
    h = matmul(mH(u), x)
    h = mul(add(h, mH(h)), _c(0.5, h))
    return u, h, num_iters, eq(not_converged, full((), False, np.bool_))

