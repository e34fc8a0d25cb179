"""Conditionals inside native CPU loops (backends/cpu/native_loops.py, Branch in
codegen/cpu/native_loop.py): lax.cond / lax.switch in a fori_loop, scan or while_loop body
run as a branch of the native code. Results against NumPy loops and the HLO evaluator,
including XLA's rule that an out-of-range branch index runs the last branch."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import minijax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.compiler.pipeline import CompileOptions, optimize  # noqa: E402


def _loop_lines(fn, *args):
    text = fn.lower(*args).compile()._entry.executable.as_text()
    return [ln for ln in text.splitlines() if ": while" in ln]


def _assert_native_with_conditional(fn, *args):
    lines = _loop_lines(fn, *args)
    assert lines and all("native loop" in ln and "conditionals" in ln for ln in lines), lines


def test_cond_with_a_gemm_branch_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = (rng.standard_normal((8, 8)) / 3).astype(np.float32)

    @minijax.jit
    def f(x, w):
        def body(i, x):
            return lax.cond(i % 3 == 0, lambda x: jnp.tanh(x @ w), lambda x: x * 0.5 + 1.0, x)
        return lax.fori_loop(0, 10, body, x)

    _assert_native_with_conditional(f, x, w)
    ref = x.astype(np.float64)
    for i in range(10):
        ref = np.tanh(ref @ w) if i % 3 == 0 else ref * 0.5 + 1.0
    np.testing.assert_allclose(np.asarray(f(x, w)), ref, rtol=1e-5, atol=1e-6)


@settings(max_examples=15, deadline=None)
@given(offsets=st.lists(st.integers(-3, 6), min_size=2, max_size=8),
       seed=st.integers(0, 2 ** 16))
def test_switch_with_any_index_runs_the_branch_xla_picks(offsets, seed):
    """lax.switch clamps its index; a raw conditional with an out-of-range index runs the
    last branch. Both against NumPy over the indices drawn."""
    x = np.random.default_rng(seed).standard_normal(5).astype(np.float32)
    idx = np.array(offsets, np.int32)
    branches = [lambda v: v + 1.0, lambda v: v * 2.0, lambda v: jnp.sin(v)]

    @minijax.jit
    def f(x, idx):
        def body(c, k):
            c = lax.switch(k, branches, c)
            return c, c.sum()
        return lax.scan(body, x, idx)

    _assert_native_with_conditional(f, x, idx)
    ref, sums = x.astype(np.float64), []
    for k in offsets:
        k = min(max(k, 0), 2)
        ref = [ref + 1.0, ref * 2.0, np.sin(ref)][k]
        sums.append(ref.sum())
    got, got_sums = f(x, idx)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got_sums), sums, rtol=1e-5, atol=1e-4)


_RAW = """HloModule raw
b0 {
  p = f32[3] parameter(0)
  ROOT r = f32[3] add(p, p)
}
b1 {
  p = f32[3] parameter(0)
  ROOT r = f32[3] negate(p)
}
b2 {
  p = f32[3] parameter(0)
  c = f32[] constant(10)
  b = f32[3] broadcast(c), dimensions={}
  ROOT r = f32[3] add(p, b)
}
cond {
  s = (s32[], f32[3], s32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[3], s32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[3] get-tuple-element(s), index=1
  ks = s32[4] get-tuple-element(s), index=2
  k1 = s32[1] dynamic-slice(ks, i), dynamic_slice_sizes={1}
  k = s32[] reshape(k1)
  w = f32[3] conditional(k, v, v, v), branch_computations={b0, b1, b2}
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[3], s32[4]) tuple(j, w, ks)
}
ENTRY e {
  v = f32[3] parameter(0)
  ks = s32[4] parameter(1)
  z = s32[] constant(0)
  t = (s32[], f32[3], s32[4]) tuple(z, v, ks)
  w = (s32[], f32[3], s32[4]) while(t), condition=cond, body=body
  ROOT r = f32[3] get-tuple-element(w), index=1
}
"""


@pytest.mark.parametrize("ks", [[0, 1, 2, 0], [5, -1, 3, 1], [-7, 2, 99, 0]])
def test_raw_conditional_out_of_range_index_runs_the_last_branch(ks):
    v = np.array([1.0, -2.0, 0.5], np.float32)
    ks = np.array(ks, np.int32)
    want = evaluate_module(parse_module(_RAW), [v, ks])
    want = want[0] if isinstance(want, (list, tuple)) else want
    exe = CpuBackend().compile(optimize(parse_module(_RAW), CompileOptions(backend="cpu")))
    assert any("native loop" in ln and "conditionals" in ln for ln in exe.as_text().splitlines())
    got = exe.execute([v, ks])
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    ref = v.astype(np.float32)
    for k in ks:
        k = k if 0 <= k < 3 else 2
        ref = [ref + ref, -ref, ref + np.float32(10)][k]
    np.testing.assert_array_equal(np.asarray(got), ref)


def test_tuple_results_and_a_nested_loop_in_a_branch():
    x = np.arange(6, dtype=np.float32)

    @minijax.jit
    def f(x):
        def inner(v):
            return lax.fori_loop(0, 3, lambda j, v: v * 0.5 + j, v)

        def body(i, carry):
            a, b = carry
            return lax.cond(i % 2 == 0, lambda ab: (inner(ab[0]), ab[1] + ab[0].sum()),
                            lambda ab: (ab[0] - 1.0, ab[1] * 2.0), (a, b))
        return lax.fori_loop(0, 5, body, (x, jnp.float32(0)))

    _assert_native_with_conditional(f, x)
    a, b = x.astype(np.float64), 0.0
    for i in range(5):
        if i % 2 == 0:
            s = a.sum()
            for j in range(3):
                a = a * 0.5 + j
            b = b + s
        else:
            a, b = a - 1.0, b * 2.0
    got_a, got_b = f(x)
    np.testing.assert_allclose(np.asarray(got_a), a, rtol=1e-6)
    np.testing.assert_allclose(float(got_b), b, rtol=1e-6)
