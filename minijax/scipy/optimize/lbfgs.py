"""Limited-memory BFGS (Nocedal and Wright, algorithm 7.5) with the strong-Wolfe line search,
as ``jax.scipy.optimize.minimize(method="l-bfgs-experimental-do-not-rely-on-this")`` runs
it: the same iterates, counters and statuses. Complex ``x`` is minimized over its real and
imaginary parts (Sorber et al.), as in JAX.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.scipy.optimize.line_search import line_search, value_and_grad

__all__ = ["LBFGSResults", "minimize_lbfgs"]


class LBFGSResults(NamedTuple):
    """The state and outcome of :func:`minimize_lbfgs` (JAX's fields)."""
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    s_history: Any
    y_history: Any
    rho_history: Any
    gamma: Any
    status: Any
    ls_status: Any


def _direction(s: LBFGSResults):
    """-H g by the two-loop recursion over the filled part of the history (newest last)."""
    size = s.rho_history.shape[0]
    filled = jnp.minimum(s.k, size)
    q = -jnp.conj(s.g_k)
    alphas = [None] * size
    for i in range(size - 1, -1, -1):
        used = i >= size - filled
        a_i = s.rho_history[i] * jnp.real(jnp.dot(jnp.conj(s.s_history[i]), q))
        a_i = jnp.where(used, a_i, 0.0).astype(s.rho_history.dtype)
        alphas[i] = a_i
        q = q - a_i * jnp.conj(s.y_history[i])
    q = s.gamma * q
    for i in range(size):
        used = i >= size - filled
        b_i = s.rho_history[i] * jnp.real(jnp.dot(s.y_history[i], q))
        q = q + jnp.where(used, alphas[i] - b_i, 0.0).astype(q.dtype) * s.s_history[i]
    return q


def _push(history, new):
    return jnp.roll(history, -1, axis=0).at[-1].set(new)


def minimize_lbfgs(fun, x0, maxiter: float | None = None, norm=np.inf, maxcor: int = 10,
                   ftol: float = 2.220446049250313e-09, gtol: float = 1e-05,
                   maxfun: float | None = None, maxgrad: float | None = None,
                   maxls: int = 20) -> LBFGSResults:
    """Minimize ``fun`` over a 1-d ``x`` from ``x0`` with a history of ``maxcor`` pairs.

    status: 0 converged (``|grad|_norm < gtol``), 1 ``maxiter``, 2 ``maxfun``, 3
    ``maxgrad``, 4 the decrease fell below ``ftol``, 5 the line search failed.
    """
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"minimize(method='l-bfgs'): x0 must be 1-d, got shape {x0.shape}")
    if not jnp.issubdtype(x0.dtype, jnp.inexact):
        x0 = x0.astype(jnp.result_type(x0, 1.0))
    d = x0.shape[0]
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = d * 200
    maxiter = np.inf if maxiter is None else maxiter
    maxfun = np.inf if maxfun is None else maxfun
    maxgrad = np.inf if maxgrad is None else maxgrad
    f0, g0 = value_and_grad(fun)(x0)
    state = LBFGSResults(
        converged=jnp.array(False), failed=jnp.array(False), k=jnp.array(0),
        nfev=jnp.array(1), ngev=jnp.array(1), x_k=x0, f_k=f0, g_k=g0,
        s_history=jnp.zeros((maxcor, d), x0.dtype), y_history=jnp.zeros((maxcor, d), x0.dtype),
        rho_history=jnp.zeros((maxcor,), x0.dtype), gamma=jnp.ones((), x0.dtype),
        status=jnp.array(0), ls_status=jnp.array(0))

    def body(s):
        p = _direction(s)
        ls = line_search(fun, s.x_k, p, old_fval=s.f_k, gfk=s.g_k, maxiter=maxls)
        step = ls.a_k.astype(p.dtype) * p
        y = ls.g_k - s.g_k
        rho_inv = jnp.real(jnp.dot(y, step))
        rho = jnp.reciprocal(rho_inv).astype(y.dtype)
        gamma = rho_inv / jnp.real(jnp.dot(jnp.conj(y), y))
        status = jnp.array(0)
        status = jnp.where(s.f_k - ls.f_k < ftol, 4, status)
        status = jnp.where(s.ngev >= maxgrad, 3, status)
        status = jnp.where(s.nfev >= maxfun, 2, status)
        status = jnp.where(s.k >= maxiter, 1, status)
        status = jnp.where(ls.failed, 5, status)
        converged = jnp.linalg.norm(ls.g_k, ord=norm) < gtol
        return s._replace(
            converged=converged, failed=(status > 0) & ~converged, k=s.k + 1,
            nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev,
            x_k=(s.x_k + step).astype(s.x_k.dtype), f_k=ls.f_k.astype(s.f_k.dtype),
            g_k=ls.g_k.astype(s.g_k.dtype), s_history=_push(s.s_history, step),
            y_history=_push(s.y_history, y), rho_history=_push(s.rho_history, rho),
            gamma=gamma.astype(s.g_k.dtype), status=jnp.where(converged, 0, status),
            ls_status=ls.status)

    return lax.while_loop(lambda s: ~s.converged & ~s.failed, body, state)
