"""Differential testing of random small programs (tests/random_programs.py).

Every program runs eagerly, jitted on the CPU backend, jitted on the interpreter backend and
jitted twice; float programs are also checked against a float64 NumPy run (values), against
finite differences of that run (jit of grad), and against a Python loop (jit of vmap);
integer programs are checked bitwise. With real JAX importable, minijax's results and dtypes
are compared with JAX's too (JAX decides semantics; CI has no JAX, so that test skips there).

The "ci" hypothesis profile keeps this to about half a minute; `HYPOTHESIS_PROFILE=differential`
(registered in conftest.py) runs 2000 programs per test for a local campaign.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from random_programs import NUMPY_DIFFERS, float_inputs, int_inputs, programs

import minijax as mj
import minijax.numpy as mjnp

try:
    import jax as real_jax
    import jax.numpy as real_jnp
    real_jax.config.update("jax_platforms", "cpu")
except Exception:  # noqa: BLE001 - JAX is optional
    real_jax = real_jnp = None

# 40 programs per test in CI (about 30 s in all); any other profile (HYPOTHESIS_PROFILE=dev,
# or =differential for 2000 per test) sets the count itself.
CI_EXAMPLES = (40 if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci"
               else settings.default.max_examples)


def _same_bits(got, want, where):
    """Bitwise equality; NaNs equal to NaNs whatever their payloads."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
    if want.dtype.kind == "f":
        nan = np.isnan(want)
        assert (np.isnan(got) == nan).all(), f"{where}: NaN positions differ: {got} vs {want}"
        bits = f"u{want.dtype.itemsize}"
        diff = got[~nan].view(bits) != want[~nan].view(bits)
    else:
        diff = got != want
    if diff.any():
        k = np.argwhere(diff.reshape(got[~np.isnan(want)].shape if want.dtype.kind == "f"
                                     else got.shape))[:4].tolist()
        raise AssertionError(f"{where}: bits differ at {k}:\n got  {got!r}\n want {want!r}")


def _close(got, want, where, rtol=2e-5, scale=None):
    """Values within rtol of the output's scale; NaN and inf positions equal."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all(), f"{where}: NaN positions differ:\n{got}\n{want}"
    inf = np.isinf(want)
    assert (got[inf] == want[inf]).all(), f"{where}: infinities differ:\n{got}\n{want}"
    finite = ~(nan | inf)
    if scale is None:
        scale = 1.0 + (np.abs(want[finite]).max() if finite.any() else 0.0)
    err = np.abs(got[finite] - want[finite])
    assert (err <= rtol * scale).all(), (
        f"{where}: max error {err.max():.3g} > {rtol} x scale {scale:.3g}:\n got  {got}\n"
        f" want {want}")


def _jit(program, backend):
    return mj.jit(lambda *xs: program(mjnp, *xs), backend=backend)


def _run_minijax_three_ways(program, inputs):
    """Eager, jit on cpu (twice), jit on the interpreter: returns (eager, [(where, out)])."""
    eager = [np.asarray(v) for v in program(mjnp, *[mjnp.asarray(x) for x in inputs])]
    runs = []
    cpu = _jit(program, "cpu")
    runs.append(("jit[cpu]", cpu(*inputs)))
    runs.append(("jit[cpu] again", cpu(*inputs)))
    runs.append(("jit[interpreter]", _jit(program, "interpreter")(*inputs)))
    return eager, runs


# --------------------------------------------------------------------------- float programs

@settings(max_examples=CI_EXAMPLES)
@given(program=programs("float"), seed=st.integers(0, 2**31 - 1), edges=st.booleans())
def test_float_programs_eager_jit_interpreter_agree(program, seed, edges):
    inputs = float_inputs(np.random.default_rng(seed), program, edges=edges)
    eager, runs = _run_minijax_three_ways(program, inputs)
    for where, outs in runs:
        for k, (got, want) in enumerate(zip(outs, eager, strict=True)):
            label = f"{where} output {k} of\n{program}"
            if program.exact():
                _same_bits(got, want, label)
            else:
                _close(got, want, label)


@settings(max_examples=CI_EXAMPLES)
@given(program=programs("float"), seed=st.integers(0, 2**31 - 1))
def test_float_programs_match_float64_numpy(program, seed):
    if not program.continuous():
        return  # rounding differences flip discontinuous ops; the agreement test covers them
    inputs = float_inputs(np.random.default_rng(seed), program)
    want = program(np, *[x.astype(np.float64) for x in inputs])
    got = _jit(program, "cpu")(*inputs)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert np.asarray(g).dtype == np.float32
        _close(g, w, f"output {k} vs float64 NumPy of\n{program}", rtol=2e-4)


def _numpy_loss(program, weights):
    def loss(*xs):
        return sum(float(np.sum(o * w)) for o, w in zip(program(np, *xs), weights, strict=True))
    return loss


def _finite_differences(loss, inputs, index, h):
    """One-sided differences (forward, backward) of `loss` along each element of input
    `index`, in float64."""
    xs = [x.astype(np.float64) for x in inputs]
    forward, backward = np.zeros(xs[index].shape), np.zeros(xs[index].shape)
    flat = xs[index].reshape(-1)
    here = loss(*xs)
    for i in range(flat.size):
        step = h * max(1.0, abs(flat[i]))
        old = flat[i]
        flat[i] = old + step
        forward.reshape(-1)[i] = (loss(*xs) - here) / step
        flat[i] = old - step
        backward.reshape(-1)[i] = (here - loss(*xs)) / step
        flat[i] = old
    return forward, backward


@settings(max_examples=CI_EXAMPLES)
@given(program=programs("float", shapes=[(), (1,), (4,), (2, 3), (0,)]),
       seed=st.integers(0, 2**31 - 1))
def test_float_programs_grad_matches_finite_differences(program, seed):
    if not program.continuous():
        return
    rng = np.random.default_rng(seed)
    inputs = float_inputs(rng, program)
    weights = [rng.standard_normal(program.shape) for _ in program.outputs]

    def loss(*xs):
        outs = program(mjnp, *xs)
        return sum(mjnp.sum(o * w.astype(np.float32)) for o, w in zip(outs, weights,
                                                                          strict=True))

    argnums = tuple(range(program.n_inputs))
    grads = mj.jit(mj.grad(loss, argnums=argnums))(*inputs)
    np_loss = _numpy_loss(program, weights)
    for index, g in enumerate(grads):
        g = np.asarray(g)
        assert g.shape == program.shape and g.dtype == np.float32
        forward, backward = _finite_differences(np_loss, inputs, index, 1e-6)
        fd = (forward + backward) / 2
        # Where the one-sided differences disagree the point sits on a kink or a tie (sort
        # of equal values, max of equal values): JAX's convention there is checked by the
        # regression tests, not by finite differences.
        smooth_here = np.abs(forward - backward) <= 1e-3 * (1 + np.abs(fd))
        scale = 1.0 + np.abs(fd).max(initial=0.0)
        err = np.abs(g - fd)[smooth_here]
        assert (err <= 2e-3 * scale).all(), (
            f"gradient of input {index}: max error {err.max():.3g} (scale {scale:.3g}):\n"
            f" grad {g}\n fd   {fd}\nof\n{program}")


@settings(max_examples=CI_EXAMPLES)
@given(program=programs("float", shapes=[(), (3,), (2, 3), (0,), (1, 4)]),
       seed=st.integers(0, 2**31 - 1), edges=st.booleans())
def test_float_programs_vmap_matches_python_loop(program, seed, edges):
    rng = np.random.default_rng(seed)
    batch = [float_inputs(rng, program, edges=edges) for _ in range(3)]
    stacked = [np.stack([b[i] for b in batch]) for i in range(program.n_inputs)]
    got = mj.jit(mj.vmap(lambda *xs: program(mjnp, *xs)))(*stacked)
    rows = [[np.asarray(v) for v in program(mjnp, *[mjnp.asarray(x) for x in b])]
            for b in batch]
    for k, g in enumerate(got):
        want = np.stack([r[k] for r in rows])
        label = f"vmap output {k} of\n{program}"
        if program.exact():
            _same_bits(g, want, label)
        else:
            _close(g, want, label)


# --------------------------------------------------------------------------- int programs

@settings(max_examples=CI_EXAMPLES)
@given(program=programs("int"), seed=st.integers(0, 2**31 - 1))
def test_int_programs_bitwise_everywhere(program, seed):
    inputs = int_inputs(np.random.default_rng(seed), program)
    eager, runs = _run_minijax_three_ways(program, inputs)
    for where, outs in runs:
        for k, (got, want) in enumerate(zip(outs, eager, strict=True)):
            _same_bits(got, want, f"{where} output {k} of\n{program}")
    if not program.ops() & NUMPY_DIFFERS:
        with np.errstate(all="ignore"):
            reference = program(np, *inputs)
        for k, (got, want) in enumerate(zip(eager, reference, strict=True)):
            assert got.dtype == np.dtype(program.dtype), f"output {k} dtype of\n{program}"
            _same_bits(got, np.asarray(want).astype(got.dtype), f"NumPy output {k} of\n{program}")


@settings(max_examples=CI_EXAMPLES)
@given(program=programs("int"), seed=st.integers(0, 2**31 - 1))
def test_int_programs_vmap_matches_python_loop(program, seed):
    rng = np.random.default_rng(seed)
    batch = [int_inputs(rng, program) for _ in range(2)]
    stacked = [np.stack([b[i] for b in batch]) for i in range(program.n_inputs)]
    got = mj.jit(mj.vmap(lambda *xs: program(mjnp, *xs)))(*stacked)
    rows = [program(mjnp, *[mjnp.asarray(x) for x in b]) for b in batch]
    for k, g in enumerate(got):
        want = np.stack([np.asarray(r[k]) for r in rows])
        _same_bits(g, want, f"vmap output {k} of\n{program}")


# --------------------------------------------------------------------------- real JAX

@pytest.mark.skipif(real_jax is None, reason="real JAX is not installed (optional)")
@settings(max_examples=CI_EXAMPLES)
@given(program=st.one_of(programs("float"), programs("int")),
       seed=st.integers(0, 2**31 - 1), edges=st.booleans())
def test_programs_match_real_jax(program, seed, edges):
    rng = np.random.default_rng(seed)
    inputs = (float_inputs(rng, program, edges=edges) if program.kind == "float"
              else int_inputs(rng, program))
    if program.kind == "int":
        # Op by op: XLA's simplifier rewrites abs(x * x) to x * x, which differs once the
        # product wraps (int8 -116: JAX's jit gives -112, its eager ops and XLA's own
        # semantics 112); minijax follows the operations' semantics.
        want = program(real_jnp, *[real_jnp.asarray(x) for x in inputs])
    else:
        want = real_jax.jit(lambda *xs: program(real_jnp, *xs))(*inputs)
    got = _jit(program, "cpu")(*inputs)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        w = np.asarray(w)
        label = f"output {k} vs JAX of\n{program}"
        assert np.asarray(g).dtype == w.dtype, f"{label}: dtype {g.dtype} != JAX {w.dtype}"
        if program.kind == "int":
            _same_bits(g, w, label)
        else:
            _close(g, w, label, rtol=1e-4)


# --------------------------------------------------------------------------- regressions

@pytest.mark.parametrize("shape, axis", [((2, 3, 2), -1), ((4, 1000), 0), ((3000,), None),
                                         ((5, 4097), 1)])
def test_sum_of_x_minus_x_keeps_inf_minus_inf_nan(shape, axis):
    """Found by this suite: the CPU reduction's `fadd reassoc nsz` let LLVM fold
    acc + (x - x) to acc, so sum(x - x) was 0 where x held inf or NaN (eager and XLA: NaN)."""
    x = np.ones(shape, np.float32)
    x.reshape(-1)[[0, -1]] = [np.inf, np.nan]
    for f in (lambda v: mjnp.sum(v - v, axis=axis),
              lambda v: -mjnp.sum(mjnp.negative(-v) - v, axis=axis)):
        want = np.asarray(f(mjnp.asarray(x)))
        assert np.isnan(want).any()
        _same_bits(mj.jit(f)(x), want, f"sum of x - x over {shape}, axis {axis}")
