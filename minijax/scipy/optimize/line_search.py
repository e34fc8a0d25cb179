"""A line search for the strong Wolfe conditions (Nocedal and Wright, *Numerical
Optimization*, algorithms 3.5 and 3.6), as ``jax.scipy.optimize``'s BFGS uses it.

The bracketing phase doubles the step until the sufficient-decrease condition fails or the
slope turns non-negative; the zoom phase then shrinks the bracket, trying in turn a cubic
interpolant through the last three points, a quadratic through the two ends and bisection.
Both phases are ``lax.while_loop``s over dicts of scalars, so the search traces under jit and
vmap; both zooms of an outer step are traced and the one not needed runs zero iterations.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from minijax import dtypes, lax
from minijax import numpy as jnp
from minijax.interpreters import ad

__all__ = ["LineSearchResults", "line_search", "value_and_grad"]


def value_and_grad(fun):
    """``x -> (fun(x), d fun / dx)`` for a scalar ``fun`` of one array, by linearizing and
    transposing (the library layer sits below ``minijax.api``, so this is the small
    single-argument form of ``minijax.value_and_grad`` that the solvers need)."""
    def evaluate(x):
        (value,), linear = ad.linearize_flat(lambda v: [jnp.asarray(fun(v))], [x])
        if value.shape != ():
            raise TypeError(f"minimize: the objective must return a scalar, got shape "
                            f"{value.shape}")
        (grad,) = linear.transpose([jnp.ones_like(value)])
        if type(grad) is ad.Zero:
            grad = jnp.zeros_like(x)
        return value, grad.astype(x.dtype)
    return evaluate

# Only these keys of a zoom's state are copied into the outer search's state.
_STAR = ("a_star", "phi_star", "dphi_star", "g_star")


class LineSearchResults(NamedTuple):
    """The outcome of :func:`line_search` (JAX's fields)."""
    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


def _where(cond, new: dict, old: dict) -> dict:
    """``old`` with the keys of ``new`` replaced where ``cond`` holds."""
    out = dict(old)
    for key, value in new.items():
        out[key] = jnp.where(cond, value, old[key])
    return out


def _cubic_min(a, fa, fpa, b, fb, c, fc):
    """Minimizer of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    rb, rc = fb - fa - fpa * db, fc - fa - fpa * dc
    big_a = (dc ** 2 * rb - db ** 2 * rc) / denom
    big_b = (-dc ** 3 * rb + db ** 3 * rc) / denom
    return a + (-big_b + jnp.sqrt(big_b * big_b - 3.0 * big_a * fpa)) / (3.0 * big_a)


def _quad_min(a, fa, fpa, b, fb):
    """Minimizer of the quadratic through (a, fa) with slope fpa and (b, fb)."""
    db = b - a
    curv = (fb - fa - fpa * db) / (db * db)
    return a - fpa / (2.0 * curv)


def _zoom(phi_dphi, sufficient, curvature, lo: tuple, hi: tuple, g0, skip):
    """Algorithm 3.6: shrink [lo, hi] (each ``(a, phi, dphi)``) to a strong-Wolfe step."""
    dtype = lo[0].dtype
    state = dict(done=jnp.array(False), failed=jnp.array(False), j=jnp.array(0),
                 a_lo=lo[0], phi_lo=lo[1], dphi_lo=lo[2], a_hi=hi[0], phi_hi=hi[1],
                 dphi_hi=hi[2], a_rec=(lo[0] + hi[0]) / 2, phi_rec=(lo[1] + hi[1]) / 2,
                 a_star=jnp.ones((), dtype), phi_star=lo[1], dphi_star=lo[2], g_star=g0,
                 nfev=jnp.array(0))
    threshold = 1e-5 if dtypes.finfo(dtype).bits < 64 else 1e-10

    def body(s):
        width = s["a_hi"] - s["a_lo"]
        left, right = jnp.minimum(s["a_hi"], s["a_lo"]), jnp.maximum(s["a_hi"], s["a_lo"])
        s = dict(s, failed=s["failed"] | (width <= threshold))
        cubic = _cubic_min(s["a_lo"], s["phi_lo"], s["dphi_lo"], s["a_hi"], s["phi_hi"],
                           s["a_rec"], s["phi_rec"])
        use_cubic = (s["j"] > 0) & (cubic > left + 0.2 * width) & (cubic < right - 0.2 * width)
        quad = _quad_min(s["a_lo"], s["phi_lo"], s["dphi_lo"], s["a_hi"], s["phi_hi"])
        use_quad = ~use_cubic & (quad > left + 0.1 * width) & (quad < right - 0.1 * width)
        a_j = jnp.where(use_cubic, cubic, jnp.where(use_quad, quad, (s["a_lo"] + s["a_hi"]) / 2))
        phi_j, dphi_j, g_j = phi_dphi(a_j)
        s = dict(s, nfev=s["nfev"] + 1)
        to_hi = sufficient(a_j, phi_j) | (phi_j >= s["phi_lo"])
        to_star = curvature(dphi_j) & ~to_hi
        lo_to_hi = (dphi_j * (s["a_hi"] - s["a_lo"]) >= 0) & ~to_hi & ~to_star
        to_lo = ~to_hi & ~to_star
        s = _where(to_hi, dict(a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=s["a_hi"],
                               phi_rec=s["phi_hi"]), s)
        s = _where(to_star, dict(a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j), s)
        s = dict(s, done=s["done"] | to_star)
        s = _where(lo_to_hi, dict(a_hi=s["a_lo"], phi_hi=s["phi_lo"], dphi_hi=s["dphi_lo"],
                                  a_rec=s["a_hi"], phi_rec=s["phi_hi"]), s)
        s = _where(to_lo & ~lo_to_hi, dict(a_rec=s["a_lo"], phi_rec=s["phi_lo"]), s)
        s = _where(to_lo, dict(a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j), s)
        j = s["j"] + 1
        return dict(s, j=j, failed=s["failed"] | (j >= 30))

    return lax.while_loop(lambda s: ~s["done"] & ~skip & ~s["failed"], body, state)


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1: float = 1e-4,
                c2: float = 0.9, maxiter: int = 20) -> LineSearchResults:
    """A step ``a`` along the descent direction ``pk`` from ``xk`` satisfying the strong
    Wolfe conditions ``f(xk + a pk) <= f(xk) + c1 a f'`` and ``|f'(a)| <= c2 |f'(0)|``."""
    dtype = jnp.result_type(xk, pk, 1.0)
    xk, pk = jnp.asarray(xk, dtype), jnp.asarray(pk, dtype)
    f_and_g = value_and_grad(f)

    def phi_dphi(t):
        phi, g = f_and_g(xk + jnp.asarray(t, dtype) * pk)
        return phi, jnp.real(jnp.dot(g, pk)), g

    given = old_fval is not None and gfk is not None
    if given:
        phi0, dphi0 = jnp.asarray(old_fval), jnp.real(jnp.dot(gfk, pk))
    else:
        phi0, dphi0, gfk = phi_dphi(0.0)
    if old_old_fval is not None:
        candidate = 1.01 * 2 * (phi0 - old_old_fval) / dphi0
        start = jnp.where(candidate > 1, 1.0, candidate).astype(dtype)
    else:
        start = jnp.ones((), dtype)

    def sufficient(a, phi):
        return phi > phi0 + c1 * a * dphi0

    def curvature(dphi):
        return jnp.abs(dphi) <= -c2 * dphi0

    zero = jnp.zeros((), dtype)
    state = dict(done=jnp.array(False), failed=jnp.array(False), i=jnp.array(1), a_prev=zero,
                 phi_prev=phi0, dphi_prev=dphi0, nfev=jnp.array(0 if given else 1),
                 a_star=zero, phi_star=phi0, dphi_star=dphi0, g_star=gfk)

    def body(s):
        a_i = jnp.where(s["i"] == 1, start, s["a_prev"] * 2)
        phi_i, dphi_i, g_i = phi_dphi(a_i)
        zoom_up = sufficient(a_i, phi_i) | ((phi_i >= s["phi_prev"]) & (s["i"] > 1))
        accept = curvature(dphi_i) & ~zoom_up
        zoom_down = (dphi_i >= 0) & ~zoom_up & ~accept
        prev = (s["a_prev"], s["phi_prev"], s["dphi_prev"])
        cur = (a_i, phi_i, dphi_i)
        z1 = _zoom(phi_dphi, sufficient, curvature, prev, cur, gfk, ~zoom_up)
        z2 = _zoom(phi_dphi, sufficient, curvature, cur, prev, gfk, ~zoom_down)
        s = dict(s, nfev=s["nfev"] + 1 + z1["nfev"] + z2["nfev"])
        s = _where(zoom_up, {k: z1[k] for k in _STAR}, s)
        s = dict(s, done=s["done"] | zoom_up, failed=s["failed"] | (zoom_up & z1["failed"]))
        s = _where(accept, dict(a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i), s)
        s = dict(s, done=s["done"] | accept)
        s = _where(zoom_down, {k: z2[k] for k in _STAR}, s)
        s = dict(s, done=s["done"] | zoom_down,
                 failed=s["failed"] | (zoom_down & z2["failed"]))
        return dict(s, i=s["i"] + 1, a_prev=a_i, phi_prev=phi_i, dphi_prev=dphi_i)

    s = lax.while_loop(lambda s: ~s["done"] & (s["i"] <= maxiter) & ~s["failed"], body, state)
    status = jnp.where(s["failed"], 1, jnp.where(s["i"] > maxiter, 3, 0))
    a_k = s["a_star"]
    if dtypes.finfo(dtype).bits != 64:
        # a tiny step would stall the search direction in single precision
        a_k = jnp.where(jnp.abs(a_k) < 1e-8, jnp.sign(a_k) * 1e-8, a_k)
    return LineSearchResults(failed=s["failed"] | ~s["done"], nit=s["i"] - 1, nfev=s["nfev"],
                             ngev=s["nfev"], k=s["i"], a_k=a_k, f_k=s["phi_star"],
                             g_k=s["g_star"], status=status)
