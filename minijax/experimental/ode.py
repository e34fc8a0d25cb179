"""`odeint`: adaptive Dormand-Prince (RK45) integration of ODEs, as `jax.experimental.ode`.

The solver follows JAX's algorithm step for step so that results agree to rounding:

- the state pytree is raveled into one vector; the user's `func(y, t, *args)` is
  closure-converted so that arrays it closes over are differentiated like `args`;
- the first step size comes from Hairer, Norsett & Wanner (Solving ODEs I, sec. II.4);
- each step evaluates the 7-stage Dormand-Prince tableau, estimates the local error from
  the embedded 4th-order solution, accepts the step when the RMS of error / (atol + rtol *
  max(|y0|, |y1|)) is at most 1, and rescales the step by 0.9 * ratio**(-1/5) clipped to
  [0.2, 10] (no shrinking below 1 after an accepted step), clipped to `hmax`;
- outputs at the requested times come from the 4th-order polynomial fitted through the last
  accepted step (dense output), not from extra steps to land on each time;
- reverse-mode derivatives (w.r.t. y0, t and args) use the adjoint method (Chen et al.
  2018, appendix C): an augmented system is integrated backwards between output times with
  the same tolerances.
"""

from __future__ import annotations

import functools
import operator
import weakref
from collections.abc import Callable

import numpy as np

from minijax import api_jit, core, lax, tree_util
from minijax import numpy as jnp
from minijax.api import vjp, vmap
from minijax.core import get_aval
from minijax.custom_derivatives import closure_convert, custom_vjp
from minijax.flatten_util import ravel_pytree

__all__ = ["odeint"]

# Dormand-Prince 5(4) tableau: stage times, stage weights, 5th-order weights, and the
# difference of the 5th- and 4th-order weights (the error estimate).
_ALPHA = np.array([1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0.])
_BETA = np.array([
    [1 / 5, 0, 0, 0, 0, 0, 0],
    [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
    [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]])
_C_SOL = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
_C_ERR = np.array([35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085,
                   125 / 192 - 451 / 720, -2187 / 6784 + 12231 / 42400,
                   11 / 84 - 649 / 6300, -1 / 60])
# Weights giving the solution at the middle of a step (Shampine's dense output).
_C_MID = np.array([6025192743 / 30085553152, 0, 51252292925 / 65400821598,
                   -2691868925 / 45128329728, 187940372067 / 1594534317056,
                   -1776094331 / 19743644256, 11237099 / 235043384]) / 2


def _quartic_through_step(y0, y1, k, dt):
    """Coefficients (highest power first) of the quartic in s = (t - t0) / dt through the
    step's ends, its midpoint and the end slopes."""
    dt = dt.astype(y0.dtype)
    y_mid = y0 + dt * jnp.dot(jnp.asarray(_C_MID, y0.dtype), k)
    dy0, dy1 = k[0], k[-1]
    a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
    b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
    c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
    return jnp.stack([a, b, c, dt * dy0, y0])


def _first_step(fun, t0, y0, f0, rtol, atol, order=4):
    """Initial step size (Hairer, Norsett & Wanner, Solving ODEs I, sec. II.4)."""
    dtype = jnp.result_type(y0, f0, float)
    y0, f0 = y0.astype(dtype), f0.astype(dtype)
    scale = (atol + jnp.abs(y0) * rtol).astype(dtype)
    d0 = jnp.linalg.norm(y0 / scale)
    d1 = jnp.linalg.norm(f0 / scale)
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = fun(y0 + h0.astype(dtype) * f0, t0 + h0)
    d2 = jnp.linalg.norm((f1 - f0) / scale) / h0
    h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / jnp.maximum(d1, d2)) ** (1. / (order + 1.)))
    return jnp.minimum(100. * h0, h1)


def _dopri_step(fun, y0, f0, t0, dt):
    """One Dormand-Prince step: (y1, f1, error estimate, the 7 stage slopes)."""
    alpha = jnp.asarray(_ALPHA, dt.dtype)
    beta = jnp.asarray(_BETA, f0.dtype)
    dt_y = dt.astype(f0.dtype)

    def stage(i, k):
        ti = t0 + dt * alpha[i - 1]
        yi = y0 + dt_y * jnp.dot(beta[i - 1, :], k)
        return k.at[i, :].set(fun(yi, ti))

    k = jnp.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0)
    k = lax.fori_loop(1, 7, stage, k)
    y1 = dt_y * jnp.dot(jnp.asarray(_C_SOL, f0.dtype), k) + y0
    err = dt_y * jnp.dot(jnp.asarray(_C_ERR, f0.dtype), k)
    return y1, k[-1], err, k


def _error_ratio(err, rtol, atol, y0, y1):
    tol = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
    ratio = err / tol.astype(err.dtype)
    sq = ratio.real ** 2 + ratio.imag ** 2 if jnp.iscomplexobj(ratio) else ratio ** 2
    return jnp.sqrt(jnp.mean(sq))


def _next_step(dt, ratio, safety=0.9, ifactor=10.0, dfactor=0.2, order=5.0):
    dfactor = jnp.where(ratio < 1, 1.0, dfactor)
    factor = jnp.minimum(ifactor, jnp.maximum(ratio ** (-1.0 / order) * safety, dfactor))
    return jnp.where(ratio == 0, dt * ifactor, dt * factor)


def odeint(func: Callable, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=jnp.inf,
           hmax=jnp.inf):
    """Integrate `dy/dt = func(y, t, *args)` from `y0` at `t[0]`; the solution at each `t`.

    Adaptive-step Dormand-Prince Runge-Kutta, differentiable in reverse mode (adjoint method)
    with respect to `y0`, `t` and `args`.

    Args:
      func: the time derivative, `func(y, t, *args)`, of the same structure as `y0`.
      y0: array or pytree of arrays: the initial state.
      t: 1-d float array of strictly increasing times; `t[0]` is the initial time.
      *args: arrays, scalars or pytrees of them passed on to `func`.
      rtol, atol: relative and absolute local error tolerances.
      mxstep: maximum number of steps (accepted or rejected) between two output times.
      hmax: maximum step size.

    Returns:
      The solution at each time in `t`: the structure of `y0`, each leaf with a new leading
      axis of length `len(t)`.
    """
    for arg in tree_util.tree_leaves(args):
        try:
            get_aval(arg)
        except TypeError:
            raise TypeError("The contents of odeint *args must be arrays or scalars, but got "
                            f"{arg}.") from None
    t_dtype = t.dtype if hasattr(t, "dtype") else np.asarray(t).dtype
    if not jnp.issubdtype(t_dtype, jnp.floating):
        raise TypeError(f"t must be an array of floats, but got {t}.")
    if isinstance(core.current_trace(), core.EvalTrace):
        # Nothing to hoist at top level: keying the compiled solver on func itself lets
        # repeated calls reuse it (a converted closure would be a new static argument).
        converted, consts = func, []
    else:
        converted, consts = closure_convert(func, y0, t[0], *args)
    return _solver_for(converted)(rtol, atol, mxstep, hmax, y0, t, *args, *consts)


# One jitted solver per right-hand side, so that jit's recompile accounting (and warning)
# concerns one user function rather than every function ever integrated.
_SOLVERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _solver_for(func):
    try:
        return _SOLVERS[func]
    except (KeyError, TypeError):
        pass
    solver = api_jit.jit(functools.partial(_odeint_flat_wrapper, func),
                         static_argnums=(0, 1, 2, 3))
    try:
        _SOLVERS[func] = solver
    except TypeError:   # not weakly referenceable: compile per call
        pass
    return solver


def _odeint_flat_wrapper(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    y0_flat, unravel = ravel_pytree(y0)

    def flat_func(y, t, *a):
        out, _ = ravel_pytree(func(unravel(y), t, *a))
        return out

    ys = _odeint(flat_func, rtol, atol, mxstep, hmax, y0_flat, ts, *args)
    return vmap(unravel)(ys)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    def f(y, t):
        return func(y, t, *args)

    def to_next_output(carry, target_t):
        def keep_going(state):
            i, _, _, t, dt, _, _ = state
            return (t < target_t) & (i < mxstep) & (dt > 0)

        def attempt(state):
            i, y, fy, t, dt, last_t, coeff = state
            y_new, f_new, err, k = _dopri_step(f, y, fy, t, dt)
            ratio = _error_ratio(err, rtol, atol, y, y_new)
            coeff_new = _quartic_through_step(y, y_new, k, dt)
            dt_new = jnp.clip(_next_step(dt, ratio), min=0., max=hmax)
            accepted = ratio <= 1.
            new = [i + 1, y_new, f_new, t + dt, dt_new, t, coeff_new]
            old = [i + 1, y, fy, t, dt_new, last_t, coeff]
            return [jnp.where(accepted, a, b) for a, b in zip(new, old, strict=True)]

        _, *carry = lax.while_loop(keep_going, attempt, [0, *carry])
        _, _, t, _, last_t, coeff = carry
        s = (target_t - last_t) / (t - last_t)
        return carry, jnp.polyval(coeff, s.astype(coeff.dtype))

    f0 = f(y0, ts[0])
    dt = jnp.clip(_first_step(f, ts[0], y0, f0, rtol, atol), min=0., max=hmax)
    init = [y0, f0, ts[0], dt, ts[0], jnp.stack([y0] * 5)]
    _, ys = lax.scan(to_next_output, init, ts[1:])
    return jnp.concatenate((y0[None], ys))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _odeint_bwd(func, rtol, atol, mxstep, hmax, res, g):
    ys, ts, args = res

    def augmented(state, minus_t, *a):
        # Integrated in reversed time s = -t: d/ds of (y, y_bar, t_bar, args_bar).
        y, y_bar, *_ = state
        y_dot, pullback = vjp(func, y, -minus_t, *a)
        return (-y_dot, *pullback(y_bar))

    def back_one_interval(carry, i):
        y_bar, t0_bar, args_bar = carry
        # Moving output time t_i moves y(t_i) along func: the time cotangent.
        t_bar = jnp.dot(func(ys[i], ts[i], *args), g[i]).real
        t0_bar = t0_bar - t_bar
        state = odeint(augmented, (ys[i], y_bar, t0_bar, args_bar),
                       jnp.array([-ts[i], -ts[i - 1]]), *args, rtol=rtol, atol=atol,
                       mxstep=mxstep, hmax=hmax)
        _, y_bar, t0_bar, args_bar = tree_util.tree_map(operator.itemgetter(1), state)
        return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

    init = (g[-1], 0., tree_util.tree_map(jnp.zeros_like, args))
    (y_bar, t0_bar, args_bar), rev_ts_bar = lax.scan(
        back_one_interval, init, jnp.arange(len(ts) - 1, 0, -1))
    ts_bar = jnp.concatenate([jnp.array([t0_bar]), rev_ts_bar[::-1]])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_bwd)
