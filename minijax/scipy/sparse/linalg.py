"""minijax.scipy.sparse.linalg (JAX's ``jax.scipy.sparse.linalg``): the Krylov solvers
``cg``, ``bicgstab`` and ``gmres`` for ``A x = b``.

``A`` and the preconditioner ``M`` are matrices or linear functions; ``b`` and ``x0`` may be
any pytree of arrays (``A`` maps such a pytree to one of the same structure). Each solver
flattens the pytrees to one vector, iterates in a ``lax.while_loop`` (so it traces under
jit and vmap) and returns ``(x, None)`` as JAX does (the second entry is scipy's ``info``,
which JAX does not compute). Convergence: ``|r| <= max(tol |b|, atol)``. Forward-mode
derivatives go through the iterations; reverse mode (JAX's custom_linear_solve) does not
yet.
"""

from __future__ import annotations

from minijax import lax
from minijax import numpy as jnp
from minijax.flatten_util import ravel_pytree
from minijax.tree_util import tree_leaves, tree_structure

__all__ = ["bicgstab", "cg", "gmres"]


def _as_function(op, what):
    if op is None:
        return lambda v: v
    if callable(op):
        return op
    if hasattr(op, "shape") or hasattr(op, "__array__"):
        matrix = jnp.asarray(op)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"{what} must be a square matrix or a linear function, got "
                             f"shape {matrix.shape}")
        return lambda v: jnp.dot(matrix, v)
    raise TypeError(f"linear operator must be either a function or ndarray: {op}")


def _setup(name, A, b, x0, M, maxiter):
    """Flat b and x0, the flat operators, the unravel function and the iteration limit."""
    if x0 is None:
        x0 = _tree_zeros_like(b)
    if tree_structure(x0) != tree_structure(b):
        raise ValueError(f"x0 and b must have matching tree structure: "
                         f"{tree_structure(x0)} vs {tree_structure(b)}")
    for xl, bl in zip(tree_leaves(x0), tree_leaves(b)):
        if jnp.shape(xl) != jnp.shape(bl):
            raise ValueError(f"{name}: arrays in x0 and b must have matching shapes: "
                             f"{jnp.shape(xl)} vs {jnp.shape(bl)}")
    b_flat, unravel = ravel_pytree(b)
    x_flat, _ = ravel_pytree(x0)
    dtype = jnp.result_type(b_flat, x_flat, 1.0)
    b_flat, x_flat = b_flat.astype(dtype), x_flat.astype(dtype)
    a_fun, m_fun = _as_function(A, "A"), _as_function(M, "M")

    def flat(fun):
        def apply(v):
            out, _ = ravel_pytree(fun(unravel(v)))
            return out.astype(dtype)
        return apply

    if maxiter is None:
        maxiter = 10 * b_flat.shape[0]
    return b_flat, x_flat, flat(a_fun), flat(m_fun), unravel, maxiter


def _tree_zeros_like(tree):
    """A pytree of zeros shaped like ``tree``."""
    flat, unravel = ravel_pytree(tree)
    return unravel(jnp.zeros_like(flat))


def _vdot(a, b):
    return jnp.vdot(a, b)


def _norm2(v):
    return jnp.real(_vdot(v, v))


def _threshold(b, tol, atol):
    return jnp.maximum(jnp.square(tol) * _norm2(b), jnp.square(atol))


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Conjugate gradients for Hermitian positive definite ``A`` (``M`` approximates
    ``A^-1``); returns ``(x, None)``."""
    b, x0, a_op, m_op, unravel, maxiter = _setup("cg", A, b, x0, M, maxiter)
    limit = _threshold(b, tol, atol)
    r0 = b - a_op(x0)
    z0 = m_op(r0)

    def cond(s):
        _, r, _, _, _, k = s
        return (_norm2(r) > limit) & (k < maxiter)

    def body(s):
        x, r, z, p, rz, k = s
        ap = a_op(p)
        alpha = rz / _vdot(p, ap)
        x = x + alpha * p
        r = r - alpha * ap
        z = m_op(r)
        rz_new = _vdot(r, z)
        p = z + (rz_new / rz) * p
        return x, r, z, p, rz_new, k + 1

    x, *_ = lax.while_loop(cond, body, (x0, r0, z0, z0, _vdot(r0, z0), 0))
    return unravel(x), None


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """The biconjugate gradient stabilized method for general ``A`` (``M`` approximates
    ``A^-1``); returns ``(x, None)``. A breakdown (rho or omega == 0) stops the iteration."""
    b, x0, a_op, m_op, unravel, maxiter = _setup("bicgstab", A, b, x0, M, maxiter)
    limit = _threshold(b, tol, atol)
    r0 = b - a_op(x0)
    one = jnp.ones((), b.dtype)

    def cond(s):
        _, r, *_, k = s
        return (_norm2(r) > limit) & (k < maxiter) & (k >= 0)

    def body(s):
        x, r, rhat, alpha, omega, rho, p, q, k = s
        rho_new = _vdot(rhat, r)
        beta = rho_new / rho * alpha / omega
        p = r + beta * (p - omega * q)
        phat = m_op(p)
        q = a_op(phat)
        alpha = rho_new / _vdot(rhat, q)
        s_vec = r - alpha * q
        shat = m_op(s_vec)
        t = a_op(shat)
        tt = _vdot(t, t)
        # t == 0 when s already solves the system (as for n == 1): no omega step
        omega = jnp.where(tt == 0, 0.0, _vdot(t, s_vec) / jnp.where(tt == 0, 1.0, tt))
        x = x + alpha * phat + omega * shat
        r = s_vec - omega * t
        # exit early with k = -1 on a breakdown (as JAX)
        k = jnp.where((omega == 0) | (rho_new == 0), -11, k)
        return x, r, rhat, alpha, omega, rho_new, p, q, k + 1

    state = (x0, r0, r0, one, one, one, jnp.zeros_like(r0), jnp.zeros_like(r0), 0)
    x, *_ = lax.while_loop(cond, body, state)
    return unravel(x), None


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
    """The restarted generalized minimal residual method for general ``A``: each cycle
    builds a Krylov basis of size ``restart`` for the left-preconditioned system
    ``M A x = M b`` (modified Gram-Schmidt) and minimizes the residual over it; at most
    ``maxiter`` cycles. ``solve_method`` is ``"batched"`` or ``"incremental"`` (both are
    the same least-squares solution here). Returns ``(x, None)``."""
    if solve_method not in ("batched", "incremental"):
        raise ValueError(f"invalid solve_method {solve_method!r}, must be either "
                         "'incremental' or 'batched'")
    b, x0, a_op, m_op, unravel, maxiter = _setup("gmres", A, b, x0, M, maxiter)
    n = b.shape[0]
    restart = min(int(restart), n)
    mb = m_op(b)
    limit = jnp.sqrt(_threshold(mb, tol, atol))

    def residual(x):
        return m_op(b - a_op(x))

    def cycle(x):
        r = residual(x)
        beta = jnp.sqrt(_norm2(r))
        safe_beta = jnp.where(beta == 0, 1.0, beta).astype(r.dtype)
        basis = jnp.zeros((restart + 1, n), r.dtype).at[0].set(r / safe_beta)
        hess = jnp.zeros((restart + 1, restart), r.dtype)

        def arnoldi(j, carry):
            basis, hess = carry
            w = m_op(a_op(basis[j]))
            for_each = jnp.arange(restart + 1) <= j
            # modified Gram-Schmidt twice over (as a single masked projection, repeated)
            for _ in range(2):
                coeffs = jnp.where(for_each, jnp.conj(basis) @ w, 0.0)
                w = w - coeffs @ basis
                hess = hess.at[:, j].add(coeffs)
            norm = jnp.sqrt(_norm2(w))
            hess = hess.at[j + 1, j].set(norm.astype(hess.dtype))
            safe = jnp.where(norm == 0, 1.0, norm).astype(w.dtype)
            basis = basis.at[j + 1].set(w / safe)
            return basis, hess

        basis, hess = lax.fori_loop(0, restart, arnoldi, (basis, hess))
        rhs = jnp.zeros(restart + 1, r.dtype).at[0].set(beta.astype(r.dtype))
        y = jnp.linalg.lstsq(hess, rhs)[0]
        return x + y @ basis[:restart]

    def cond(s):
        x, k, res = s
        return (res > limit) & (k < maxiter)

    def body(s):
        x, k, _ = s
        x = cycle(x)
        return x, k + 1, jnp.sqrt(_norm2(residual(x)))

    x, *_ = lax.while_loop(cond, body, (x0, 0, jnp.sqrt(_norm2(residual(x0)))))
    return unravel(x), None
