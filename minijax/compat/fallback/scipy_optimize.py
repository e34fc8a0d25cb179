"""``jax.scipy.optimize.minimize`` with ``method="BFGS"``.

BFGS with an inverse-Hessian update and a backtracking (Armijo) line search, in a
``lax.while_loop`` so that it traces under jit and vmap. JAX's line search is a zoom search
for the strong Wolfe conditions, so iterates can differ from JAX's on the way; the minimum
found (to ``tol`` in the gradient norm) is the same for smooth convex problems.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from minijax import lax
from minijax import numpy as jnp
from minijax.api import value_and_grad

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
    """The outcome of :func:`minimize` (JAX's fields)."""
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def minimize(fun, x0, args=(), *, method: str, tol: float | None = None,
             options: dict | None = None) -> OptimizeResults:
    """Minimize ``fun(x, *args)`` over a 1-d ``x`` from ``x0``."""
    if method.lower() != "bfgs":
        raise ValueError(f"minimize: method {method!r} is not supported; use method='BFGS'.")
    options = dict(options or {})
    maxiter = int(options.get("maxiter", 200 * x0.size if hasattr(x0, "size") else 200))
    gtol = float(tol if tol is not None else options.get("gtol", 1e-5))
    x0 = jnp.asarray(x0)
    x0 = x0.astype(jnp.result_type(x0, 1.0))
    f_and_g = value_and_grad(lambda x: fun(x, *args))
    n = x0.shape[0]
    eye = jnp.eye(n, dtype=x0.dtype)

    def line_search(x, f, g, p):
        slope = jnp.dot(g, p)

        def cond(s):
            alpha, f_new, _, k = s
            return (f_new > f + 1e-4 * alpha * slope) & (k < 30)

        def body(s):
            alpha, _, _, k = s
            alpha = alpha * 0.5
            f_new, g_new = f_and_g(x + alpha * p)
            return alpha, jnp.where(jnp.isfinite(f_new), f_new, jnp.inf), g_new, k + 1

        f1, g1 = f_and_g(x + p)
        return lax.while_loop(cond, body, (jnp.ones((), x.dtype),
                                           jnp.where(jnp.isfinite(f1), f1, jnp.inf), g1, 0))

    def cond(state):
        _, _, g, _, k, _, failed = state
        return (jnp.linalg.norm(g, ord=jnp.inf) > gtol) & (k < maxiter) & ~failed

    def body(state):
        x, f, g, h, k, nfev, _ = state
        p = -h @ g
        alpha, f_new, g_new, evals = line_search(x, f, g, p)
        s = alpha * p
        y = g_new - g
        sy = jnp.dot(s, y)
        rho = jnp.where(sy > 0, 1.0 / jnp.where(sy > 0, sy, 1.0), 0.0)
        left = eye - rho * jnp.outer(s, y)
        h_new = jnp.where(sy > 0, left @ h @ left.T + rho * jnp.outer(s, s), h)
        failed = ~jnp.isfinite(f_new) | (f_new > f)
        return (x + s, f_new, g_new, h_new, k + 1, nfev + evals + 1, failed)

    f0, g0 = f_and_g(x0)
    x, f, g, h, k, nfev, failed = lax.while_loop(
        cond, body, (x0, f0, g0, eye, 0, 1, jnp.zeros((), bool)))
    converged = jnp.linalg.norm(g, ord=jnp.inf) <= gtol
    status = jnp.where(converged, 0, jnp.where(failed, 3, 1))
    return OptimizeResults(x=x, success=converged, status=status, fun=f, jac=g, hess_inv=h,
                           nfev=nfev, njev=nfev, nit=k)
