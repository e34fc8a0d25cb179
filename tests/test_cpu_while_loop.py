"""The CPU backend's while-loop runner (tuple state unpacked into the body's slots) against
Python loops and the HLO evaluator."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import minijax  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.compiler.pipeline import CompileOptions, optimize  # noqa: E402

# The body swaps two elements, passes one through, and its cond reads two elements.
SWAP_LOOP = """HloModule swap
cond {
  p = (s32[], s32[], f32[3], f32[3], f32[2,2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], s32[], f32[3], f32[3], f32[2,2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  a = f32[3] get-tuple-element(p), index=2
  b = f32[3] get-tuple-element(p), index=3
  w = f32[2,2] get-tuple-element(p), index=4
  one = s32[] constant(1)
  j = s32[] add(i, one)
  c = f32[3] add(a, b)
  ROOT t = (s32[], s32[], f32[3], f32[3], f32[2,2]) tuple(j, n, b, c, w)
}
ENTRY main {
  n = s32[] parameter(0)
  a = f32[3] parameter(1)
  b = f32[3] parameter(2)
  w = f32[2,2] parameter(3)
  zero = s32[] constant(0)
  init = (s32[], s32[], f32[3], f32[3], f32[2,2]) tuple(zero, n, a, b, w)
  loop = (s32[], s32[], f32[3], f32[3], f32[2,2]) while(init), condition=cond, body=body
  x = f32[3] get-tuple-element(loop), index=2
  y = f32[3] get-tuple-element(loop), index=3
  v = f32[2,2] get-tuple-element(loop), index=4
  ROOT r = (f32[3], f32[3], f32[2,2]) tuple(x, y, v)
}
"""

# State that is not a tuple: the generic runner.
SCALAR_LOOP = """HloModule scalar
cond {
  p = f32[] parameter(0)
  lim = f32[] constant(100)
  ROOT lt = pred[] compare(p, lim), direction=LT
}
body {
  p = f32[] parameter(0)
  two = f32[] constant(2)
  ROOT m = f32[] multiply(p, two)
}
ENTRY main {
  x = f32[] parameter(0)
  loop = f32[] while(x), condition=cond, body=body
  ROOT r = (f32[]) tuple(loop)
}
"""


def _run_both(text, args):
    module = parse_module(text)
    want = evaluate_module(parse_module(text), [np.copy(a) for a in args])
    exe = CpuBackend().compile(optimize(module, CompileOptions(backend="cpu")))
    return exe.execute(args), want


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_tuple_loop_with_swaps_and_pass_through_matches_evaluator_and_python(n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    w = rng.standard_normal((2, 2)).astype(np.float32)
    got, want = _run_both(SWAP_LOOP, [np.int32(n), a, b, w])
    x, y = a.copy(), b.copy()
    for _ in range(n):
        x, y = y, x + y
    for g, r, p in zip(got, want, (x, y, w)):
        np.testing.assert_allclose(g, r, rtol=1e-6)
        np.testing.assert_allclose(g, p, rtol=1e-6)


@pytest.mark.parametrize("x0", [0.5, 3.0, 100.0, 250.0])
def test_non_tuple_state_loop(x0):
    got, want = _run_both(SCALAR_LOOP, [np.float32(x0)])
    x = np.float32(x0)
    while x < 100:
        x = x * np.float32(2)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[0], x)


@settings(max_examples=12, deadline=None)
@given(steps=st.integers(0, 9), batch=st.sampled_from([1, 2, 5]),
       hidden=st.sampled_from([1, 3, 8]))
def test_scan_rnn_with_nested_fori_matches_python_loop(steps, batch, hidden):
    rng = np.random.default_rng(steps * 100 + batch * 10 + hidden)
    xs = rng.standard_normal((steps, batch, 4)).astype(np.float32)
    wx = rng.standard_normal((4, hidden)).astype(np.float32)
    wh = (rng.standard_normal((hidden, hidden)) / 3).astype(np.float32)
    h0 = rng.standard_normal((batch, hidden)).astype(np.float32)

    def f(xs, wx, wh, h0):
        def body(h, x):
            h = lax.tanh(lax.add(lax.dot(x, wx), lax.dot(h, wh)))
            # A nested loop that scales h by 0.5 twice.
            h = lax.fori_loop(0, 2, lambda i, v: lax.mul(v, 0.5), h)
            return h, lax.reduce_sum(h, (1,))
        return lax.scan(body, h0, xs)

    h_got, ys_got = minijax.jit(f)(xs, wx, wh, h0)
    h, ys = h0.astype(np.float64), []
    for t in range(steps):
        h = np.tanh(xs[t] @ wx + h @ wh) * 0.25
        ys.append(h.sum(1))
    np.testing.assert_allclose(np.asarray(h_got), h, rtol=1e-4, atol=1e-5)
    want_ys = np.stack(ys) if ys else np.zeros((0, batch))
    np.testing.assert_allclose(np.asarray(ys_got), want_ys, rtol=1e-4, atol=1e-5)


def test_while_loop_with_pytree_state_and_data_dependent_trip_count():
    def f(x, limit):
        def cond(s):
            return lax.lt(lax.reduce_sum(s[1], (0,)), limit)

        def body(s):
            k, v, other = s
            return lax.add(k, 1), lax.add(lax.mul(v, 1.5), 1.0), other
        return lax.while_loop(cond, body, (0, x, x))

    x = np.array([0.25, -0.5, 1.0], np.float32)
    for limit in (-10.0, 0.0, 10.0, 1000.0):
        k, v, other = minijax.jit(f)(x, np.float32(limit))
        kk, vv = 0, x.copy()
        while vv.sum() < np.float32(limit):
            kk, vv = kk + 1, vv * np.float32(1.5) + np.float32(1)
        assert int(k) == kk
        np.testing.assert_allclose(np.asarray(v), vv, rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(other), x)


def _counter_loop(et, direction, limit, constant_first):
    operands = "lim, i" if constant_first else "i, lim"
    return f"""HloModule counter
cond {{
  p = ({et}[], f32[2]) parameter(0)
  i = {et}[] get-tuple-element(p), index=0
  lim = {et}[] constant({limit})
  ROOT c = pred[] compare({operands}), direction={direction}
}}
body {{
  p = ({et}[], f32[2]) parameter(0)
  i = {et}[] get-tuple-element(p), index=0
  v = f32[2] get-tuple-element(p), index=1
  step = {et}[] constant(3)
  j = {et}[] add(i, step)
  half = f32[] constant(0.5)
  hb = f32[2] broadcast(half), dimensions={{}}
  w = f32[2] add(v, hb)
  ROOT t = ({et}[], f32[2]) tuple(j, w)
}}
ENTRY main {{
  i0 = {et}[] parameter(0)
  v0 = f32[2] parameter(1)
  init = ({et}[], f32[2]) tuple(i0, v0)
  loop = ({et}[], f32[2]) while(init), condition=cond, body=body
  a = {et}[] get-tuple-element(loop), index=0
  b = f32[2] get-tuple-element(loop), index=1
  ROOT r = ({et}[], f32[2]) tuple(a, b)
}}
"""


_PY_COMPARE = {"LT": lambda a, b: a < b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b,
               "GE": lambda a, b: a >= b, "EQ": lambda a, b: a == b,
               "NE": lambda a, b: a != b}


@pytest.mark.parametrize("constant_first", [False, True])
@pytest.mark.parametrize("direction", sorted(_PY_COMPARE))
@pytest.mark.parametrize("et", ["s32", "s64", "u32", "f32"])
def test_counter_condition_in_every_direction(et, direction, constant_first):
    """Loops whose condition compares the counter with a constant (tested in Python on the
    CPU backend when the counter is an integer) match the evaluator and a Python loop."""
    limit = 10
    text = _counter_loop(et, direction, limit, constant_first)
    dtype = {"s32": np.int32, "s64": np.int64, "u32": np.uint32, "f32": np.float32}[et]
    test = _PY_COMPARE[direction]
    ran = 0
    for start in (0, 1, 7, 10, 11, 25):
        i, v, n = start, np.zeros(2, np.float32), 0
        while (test(limit, i) if constant_first else test(i, limit)) and n < 50:
            i, v, n = i + 3, v + np.float32(0.5), n + 1
        if n == 50:
            continue  # this start never ends the loop
        got, want = _run_both(text, [dtype(start), np.zeros(2, np.float32)])
        assert int(got[0]) == int(want[0]) == i
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[1], v)
        ran += 1
    assert ran >= 2
