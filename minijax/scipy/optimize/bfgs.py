"""BFGS with an inverse-Hessian update and the strong-Wolfe line search, as
``jax.scipy.optimize.minimize(method="BFGS")`` runs it (same iterates and counters)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.scipy.optimize.line_search import line_search, value_and_grad

__all__ = ["BFGSResults", "minimize_bfgs"]


class BFGSResults(NamedTuple):
    """The state and outcome of :func:`minimize_bfgs` (JAX's fields)."""
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    nhev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    H_k: Any
    old_old_fval: Any
    status: Any
    line_search_status: Any


def minimize_bfgs(fun, x0, maxiter: int | None = None, norm=np.inf, gtol: float = 1e-5,
                  line_search_maxiter: int = 10) -> BFGSResults:
    """Minimize ``fun`` over a 1-d ``x`` from ``x0``; stops when ``|grad|_norm < gtol``.

    status: 0 converged, 1 ``maxiter`` reached, 2 + the line search's status when the line
    search failed (3: its zoom failed, 5: it ran out of iterations).
    """
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"minimize(method='BFGS'): x0 must be 1-d, got shape {x0.shape}")
    x0 = x0.astype(jnp.result_type(x0, 1.0))
    if maxiter is None:
        maxiter = int(np.size(x0)) * 200
    n = x0.shape[0]
    f0, g0 = value_and_grad(fun)(x0)
    state = BFGSResults(
        converged=jnp.linalg.norm(g0, ord=norm) < gtol, failed=jnp.array(False),
        k=jnp.array(0), nfev=jnp.array(1), ngev=jnp.array(1), nhev=jnp.array(0), x_k=x0,
        f_k=f0, g_k=g0, H_k=jnp.eye(n, dtype=x0.dtype),
        old_old_fval=f0 + jnp.linalg.norm(g0) / 2, status=jnp.array(0),
        line_search_status=jnp.array(0))

    def cond(s):
        return ~s.converged & ~s.failed & (s.k < maxiter)

    def body(s):
        p = -jnp.dot(s.H_k, s.g_k)
        ls = line_search(fun, s.x_k, p, old_fval=s.f_k, old_old_fval=s.old_old_fval,
                         gfk=s.g_k, maxiter=line_search_maxiter)
        step = ls.a_k.astype(p.dtype) * p
        y = ls.g_k - s.g_k
        rho = jnp.reciprocal(jnp.dot(y, step))
        w = jnp.eye(n, dtype=rho.dtype) - rho * jnp.outer(step, y)
        h_new = w @ s.H_k @ w.T + rho * jnp.outer(step, step)
        h_new = jnp.where(jnp.isfinite(rho), h_new, s.H_k)
        return s._replace(
            converged=jnp.linalg.norm(ls.g_k, ord=norm) < gtol, failed=ls.failed, k=s.k + 1,
            nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev, x_k=s.x_k + step,
            f_k=ls.f_k.astype(s.f_k.dtype), g_k=ls.g_k, H_k=h_new, old_old_fval=s.f_k,
            line_search_status=ls.status)

    s = lax.while_loop(cond, body, state)
    status = jnp.where(s.converged, 0, jnp.where(
        s.k == maxiter, 1, jnp.where(s.failed, 2 + s.line_search_status, -1)))
    return s._replace(status=status)
