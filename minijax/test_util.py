"""Testing helpers (as `jax.test_util`): gradient checks by finite differences and vmap
checks against a Python loop."""

from __future__ import annotations

import contextlib

import numpy as np

from minijax import dtypes, tree_util
from minijax.api import jvp, make_jaxpr, vjp, vmap
from minijax.compiler.evaluator import evaluate_module
from minijax.compiler.lower import lower_jaxpr_to_module
from minijax.config import config


@contextlib.contextmanager
def enable_x64(enabled: bool = True):
    """Turn 64-bit dtypes on (or off) inside the block, restoring the setting after."""
    previous = config.jax_enable_x64
    config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        config.update("jax_enable_x64", previous)


def _np(x):
    return np.asarray(x)


def _rand_like(rng, x):
    x = _np(x)
    if x.dtype.kind == "c":
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    return rng.standard_normal(x.shape).astype(x.dtype)


def _inner(a, b) -> float:
    """Re(sum(a * b)): the real pairing under which JAX's VJP transposes the JVP (no
    conjugation, so holomorphic and non-holomorphic functions both satisfy it)."""
    return float(np.real(np.sum(np.asarray(a, np.complex128) * np.asarray(b, np.complex128))))


def numerical_jvp(f, primals, tangents, eps: float):
    """Central difference (f(x + eps t) - f(x - eps t)) / 2 eps, leaf by leaf."""
    plus = [_np(p) + eps * _np(t) for p, t in zip(primals, tangents, strict=True)]
    minus = [_np(p) - eps * _np(t) for p, t in zip(primals, tangents, strict=True)]
    f_plus = tree_util.tree_leaves(f(*plus))
    f_minus = tree_util.tree_leaves(f(*minus))
    return [(_np(a).astype(np.complex128 if _np(a).dtype.kind == "c" else np.float64)
             - _np(b)) / (2 * eps) for a, b in zip(f_plus, f_minus, strict=True)]


def check_jvp(f, primals, *, eps=1e-4, atol=1e-3, rtol=1e-3, seed=0):
    """Compare minijax.jvp with central finite differences at `primals`."""
    rng = np.random.default_rng(seed)
    tangents = [_rand_like(rng, p) for p in primals]
    _, t_out = jvp(f, tuple(primals), tuple(tangents))
    expected = numerical_jvp(f, primals, tangents, eps)
    for got, want in zip(tree_util.tree_leaves(t_out), expected, strict=True):
        np.testing.assert_allclose(_np(got), want, atol=atol, rtol=rtol,
                                   err_msg="JVP disagrees with finite differences")


def check_vjp(f, primals, *, atol=1e-3, rtol=1e-3, seed=1):
    """Check <vjp(ct), t> == <ct, jvp(t)> (the transpose identity) at random ct and t."""
    rng = np.random.default_rng(seed)
    tangents = [_rand_like(rng, p) for p in primals]
    out, vjp_fn = vjp(f, *primals)
    cts = tree_util.tree_map(lambda o: _rand_like(rng, o), out)
    _, t_out = jvp(f, tuple(primals), tuple(tangents))
    in_cts = vjp_fn(cts)
    lhs = sum(_inner(c, t) for c, t in zip(tree_util.tree_leaves(in_cts), tangents, strict=True))
    rhs = sum(_inner(c, t) for c, t in zip(tree_util.tree_leaves(cts),
                                             tree_util.tree_leaves(t_out), strict=True))
    scale = max(1.0, abs(lhs), abs(rhs))
    if abs(lhs - rhs) > atol * scale + rtol * scale:
        raise AssertionError(f"VJP is not the transpose of the JVP: <vjp(ct), t> = {lhs} but "
                             f"<ct, jvp(t)> = {rhs}")


#: JAX's default gradient tolerances (atol and rtol) by dtype.
default_gradient_tolerance = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3,
                              np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 1e-3,
                              np.dtype(np.complex128): 1e-5}
EPS = 1e-4


def _gradient_tolerance(args) -> float:
    kinds = [dtypes.canonicalize_dtype(np.result_type(leaf))
             for leaf in tree_util.tree_leaves(args)]
    tols = [default_gradient_tolerance.get(d, 1e-1) for d in kinds if d.kind in "fc"]
    return max(tols, default=default_gradient_tolerance[np.dtype(np.float32)])


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check derivatives of f up to `order` against finite differences (JAX's signature:
    `atol`/`rtol` default to JAX's tolerance for the arguments' dtype, `eps` to 1e-4).

    Use float64 inputs (enable x64) for tight tolerances.
    """
    args = list(args)
    eps = eps or EPS
    atol = _gradient_tolerance(args) if atol is None else atol
    rtol = _gradient_tolerance(args) if rtol is None else rtol
    if "fwd" in modes:
        check_jvp(f, args, eps=eps, atol=atol, rtol=rtol)
    if "rev" in modes:
        check_vjp(f, args, atol=atol, rtol=rtol)
    if order > 1:
        rng = np.random.default_rng(order)
        if "fwd" in modes:
            tangents = [_rand_like(rng, a) for a in args]

            def f_jvp(*primals):
                return jvp(f, tuple(primals), tuple(tangents))[1]
            check_grads(f_jvp, args, order - 1, ("fwd",), eps=eps, atol=atol, rtol=rtol)
        if "rev" in modes:
            out = f(*args)
            cts = tree_util.tree_map(lambda o: _rand_like(rng, o), out)

            def f_vjp(*primals):
                return vjp(f, *primals)[1](cts)
            check_grads(f_vjp, args, order - 1, ("rev",), eps=eps, atol=atol, rtol=rtol)


def check_vmap(f, args, in_axes=0, out_axes=0, *, atol=1e-6, rtol=1e-6):
    """Compare vmap(f, in_axes, out_axes)(*args) with a Python loop over the batch."""
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    sizes = {_np(a).shape[ax] for a, ax in zip(args, axes, strict=True) if ax is not None}
    (size,) = sizes
    results = []
    for i in range(size):
        sliced = [a if ax is None else np.take(_np(a), i, axis=ax)
                  for a, ax in zip(args, axes, strict=True)]
        results.append(tree_util.tree_leaves(f(*sliced)))
    got = tree_util.tree_leaves(vmap(f, in_axes, out_axes)(*args))
    for k, g in enumerate(got):
        want = np.stack([_np(r[k]) for r in results], axis=out_axes)
        np.testing.assert_allclose(_np(g), want, atol=atol, rtol=rtol,
                                   err_msg="vmap disagrees with a Python loop")
        assert _np(g).dtype == want.dtype, (_np(g).dtype, want.dtype)


def evaluate_lowered(f, *args) -> list:
    """Run f(*args) the compiled way without a backend: trace, lower to HLO and evaluate the
    module with the reference HLO evaluator. Returns the flat list of NumPy outputs."""
    module, hoisted = lower_jaxpr_to_module(make_jaxpr(f)(*args))
    return evaluate_module(module, [np.asarray(a) for a in args] +
                           [np.asarray(c) for c in hoisted])


def float32_ulp_error(got, ref64):
    """Elementwise |got - ref64| in units of float32 spacing at the rounded reference
    (subnormal spacing below); 0 where got is the rounded reference or both are NaN, inf
    where only one is NaN. `got` is float32, `ref64` the float64 reference."""
    ref32 = ref64.astype(np.float32)
    spacing = np.abs(np.spacing(ref32)).astype(np.float64)
    spacing = np.where(spacing == 0, np.float64(np.spacing(np.float32(0))), spacing)
    same = (got == ref32) | (np.isnan(got) & np.isnan(ref64))
    err = np.where(same, 0.0, np.abs(got.astype(np.float64) - ref64) / spacing)
    return np.where(np.isnan(err), np.inf, err)
