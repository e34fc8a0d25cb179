"""``jax.scipy.optimize.minimize`` and its result type."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from minijax.scipy.optimize.bfgs import minimize_bfgs
from minijax.scipy.optimize.lbfgs import minimize_lbfgs

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


def minimize(fun: Callable, x0, args: tuple = (), *, method: str, tol: float | None = None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
    """Minimize the scalar ``fun(x, *args)`` over a 1-d ``x`` from ``x0``.

    ``method``: ``"BFGS"`` (``options``: ``maxiter``, ``norm``, ``gtol``,
    ``line_search_maxiter``) or ``"l-bfgs-experimental-do-not-rely-on-this"`` (``maxiter``,
    ``norm``, ``maxcor``, ``ftol``, ``gtol``, ``maxfun``, ``maxgrad``, ``maxls``); as in
    JAX, ``tol`` is accepted and unused.
    """
    del tol  # as JAX: solver tolerances go through ``options``
    options = dict(options or {})
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to minimize must be a tuple, got {args!r}")

    def fun_with_args(x):
        return fun(x, *args)

    if method.lower() == "bfgs":
        r = minimize_bfgs(fun_with_args, x0, **options)
        return OptimizeResults(x=r.x_k, success=r.converged & ~r.failed, status=r.status,
                               fun=r.f_k, jac=r.g_k, hess_inv=r.H_k, nfev=r.nfev, njev=r.ngev,
                               nit=r.k)
    if method.lower() == "l-bfgs-experimental-do-not-rely-on-this":
        r = minimize_lbfgs(fun_with_args, x0, **options)
        return OptimizeResults(x=r.x_k, success=r.converged & ~r.failed, status=r.status,
                               fun=r.f_k, jac=r.g_k, hess_inv=None, nfev=r.nfev, njev=r.ngev,
                               nit=r.k)
    raise ValueError(f"Method {method} not recognized")
