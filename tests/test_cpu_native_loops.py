"""While loops run as one native LLVM loop on the CPU backend (backends/cpu/native_loops.py):
results against the HLO evaluator, NumPy and Python loops; which loops take the native
path and which fall back to the Python driver."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from thread_runner import run_in_threads  # noqa: E402

import minijax  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.backends.cpu import (
    CpuBackend,  # noqa: E402
    native_loops,  # noqa: E402
)
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.compiler.pipeline import CompileOptions, optimize  # noqa: E402
from minijax.config import config  # noqa: E402

NATIVE = "native loop"


def _compile(text):
    return CpuBackend().compile(optimize(parse_module(text), CompileOptions(backend="cpu")))


def _run_both(text, args):
    """(CPU result leaves, evaluator result leaves, execution plan text)."""
    want = evaluate_module(parse_module(text), [np.copy(a) for a in args])
    exe = _compile(text)
    got = exe.execute(args)
    if not isinstance(want, (list, tuple)):
        want = [want]
    return got, list(want), exe.as_text()


def _loop_plan_lines(text):
    return [ln for ln in text.splitlines() if ": while" in ln]


# Swaps two elements, passes one through, reads a loop-invariant matrix, carries an
# integer counter, a bool flag and a float64 vector; a dot (batched, transposed rhs) and
# a multi-output fusion in the body; the same value at two root positions.
MIXED_LOOP = """HloModule mixed
cond {
  p = $ST parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = $ST parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  a = f32[3] get-tuple-element(p), index=2
  b = f32[3] get-tuple-element(p), index=3
  w = f32[2,4,3] get-tuple-element(p), index=4
  flag = pred[] get-tuple-element(p), index=5
  d = f64[5] get-tuple-element(p), index=6
  one = s32[] constant(1)
  j = s32[] add(i, one)
  c = f32[3] add(a, b)
  c2 = f32[6] concatenate(c, c), dimensions={0}
  hb = f32[2,1,3] reshape(c2)
  wd = f32[2,1,4] dot(hb, w), $DIMS
  z = f32[] constant(0)
  ws = f32[] reduce(wd, z), dimensions={0,1,2}, to_apply=sum
  wsb = f32[3] broadcast(ws), dimensions={}
  tenth = f32[3] constant({0.1, 0.1, 0.1})
  scaled = f32[3] multiply(wsb, tenth)
  e = f32[3] add(b, scaled)
  nf = pred[] not(flag)
  half = f64[5] constant({0.5, 0.5, 0.5, 0.5, 0.5})
  dd = f64[5] multiply(d, half)
  ROOT t = $ST tuple(j, n, b, e, w, nf, dd, e)
}
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  n = s32[] parameter(0)
  a = f32[3] parameter(1)
  b = f32[3] parameter(2)
  w = f32[2,4,3] parameter(3)
  f = pred[] parameter(4)
  d = f64[5] parameter(5)
  zero = s32[] constant(0)
  init = $ST tuple(zero, n, a, b, w, f, d, a)
  ROOT loop = $ST while(init), condition=cond, body=body
}
""".replace("$ST", "(s32[], s32[], f32[3], f32[3], f32[2,4,3], pred[], f64[5], f32[3])").replace(
    "$DIMS", "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
    "rhs_contracting_dims={2}")


def _mixed_args(n, seed=0):
    rng = np.random.default_rng(seed)
    return [np.int32(n), rng.standard_normal(3).astype(np.float32),
            rng.standard_normal(3).astype(np.float32),
            rng.standard_normal((2, 4, 3)).astype(np.float32), np.bool_(True),
            rng.standard_normal(5)]


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_mixed_state_loop_matches_evaluator_and_runs_natively(n):
    text = MIXED_LOOP
    args = _mixed_args(n, seed=n)
    got, want, plan = _run_both(text, args)
    assert any(NATIVE in ln for ln in _loop_plan_lines(plan)), plan
    assert len(got) == 8
    for g, r in zip(got, want[0] if isinstance(want[0], (list, tuple)) else want):
        r = np.asarray(r)
        assert np.asarray(g).dtype == r.dtype
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-5, atol=1e-6)
    # Python reference of the elements that do not involve the dot.
    assert int(got[0]) == n and int(got[1]) == n
    assert bool(got[5]) == (n % 2 == 0)
    np.testing.assert_allclose(got[6], args[5] * 0.5 ** n)
    np.testing.assert_array_equal(got[4], args[3])     # loop-invariant input passed through
    if n:
        np.testing.assert_array_equal(got[3], got[7])  # one value at two root positions
    else:
        np.testing.assert_array_equal(got[7], args[1])


def test_results_do_not_alias_inputs_or_each_other_across_calls():
    exe = _compile(MIXED_LOOP)
    args = _mixed_args(3, seed=1)
    keep = [np.copy(a) for a in args]
    first = [np.copy(g) for g in exe.execute(args)]
    held = exe.execute(args)
    again = exe.execute(_mixed_args(4, seed=2))  # must not overwrite `held`
    for a, k in zip(args, keep):
        np.testing.assert_array_equal(a, k)     # inputs never written
    for h, f in zip(held, first):
        np.testing.assert_array_equal(h, f)
    assert int(again[0]) == 4


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
  ROOT loop = f32[] while(x), condition=cond, body=body
}
"""


@pytest.mark.parametrize("x0", [0.5, 3.0, 100.0, 250.0])
def test_non_tuple_state(x0):
    got, want, plan = _run_both(SCALAR_LOOP, [np.float32(x0)])
    assert any(NATIVE in ln for ln in _loop_plan_lines(plan)), plan
    x = np.float32(x0)
    while x < 100:
        x = x * np.float32(2)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[0], x)


# The condition is a carried bool; the body toggles it when an int64 counter reaches a
# limit, and shifts a uint8 vector.
BOOL_COND_LOOP = """HloModule boolcond
cond {
  p = (pred[], s64[], u8[4]) parameter(0)
  ROOT go = pred[] get-tuple-element(p), index=0
}
body {
  p = (pred[], s64[], u8[4]) parameter(0)
  i = s64[] get-tuple-element(p), index=1
  v = u8[4] get-tuple-element(p), index=2
  one = s64[] constant(1)
  j = s64[] add(i, one)
  lim = s64[] constant(6)
  go = pred[] compare(j, lim), direction=LT
  three = u8[] constant(3)
  tb = u8[4] broadcast(three), dimensions={}
  w = u8[4] add(v, tb)
  ROOT t = (pred[], s64[], u8[4]) tuple(go, j, w)
}
ENTRY main {
  g = pred[] parameter(0)
  i = s64[] parameter(1)
  v = u8[4] parameter(2)
  init = (pred[], s64[], u8[4]) tuple(g, i, v)
  ROOT loop = (pred[], s64[], u8[4]) while(init), condition=cond, body=body
}
"""


@pytest.mark.parametrize("go,i0", [(False, 0), (True, 0), (True, 4), (True, 10)])
def test_bool_condition_and_integer_carries(go, i0):
    v = np.array([0, 100, 250, 255], np.uint8)
    got, want, plan = _run_both(BOOL_COND_LOOP, [np.bool_(go), np.int64(i0), v])
    assert any(NATIVE in ln for ln in _loop_plan_lines(plan)), plan
    g, i, w = go, i0, v.copy()
    while g:
        i += 1
        g = i < 6
        w = (w + np.uint8(3)).astype(np.uint8)
    want = want[0] if isinstance(want[0], (list, tuple)) else want
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert bool(got[0]) is False and int(got[1]) == i
    assert got[2].dtype == np.uint8
    np.testing.assert_array_equal(got[2], w)


SORT_BODY_LOOP = """HloModule sorted
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  s = f32[4] sort(v), dimensions={0}, to_apply=cmp
  neg = f32[4] negate(s)
  ROOT t = (s32[], f32[4]) tuple(j, neg)
}
ENTRY main {
  v = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, v)
  ROOT loop = (s32[], f32[4]) while(init), condition=cond, body=body
}
"""


def test_body_with_an_evaluator_thunk_falls_back_to_the_python_driver():
    before = dict(native_loops.STATS)
    v = np.array([3.0, -1.0, 2.0, 0.5], np.float32)
    got, want, plan = _run_both(SORT_BODY_LOOP, [v])
    lines = _loop_plan_lines(plan)
    assert lines and not any(NATIVE in ln for ln in lines), plan
    assert any("Python driver" in ln and "sort" in ln for ln in lines), plan
    assert native_loops.STATS["fallback"] > before["fallback"]
    x = v.copy()
    for _ in range(3):
        x = -np.sort(x)[::-1]
    want = want[0] if isinstance(want[0], (list, tuple)) else want
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[1], x)


def test_option_off_uses_the_python_driver_with_equal_results():
    text = MIXED_LOOP
    args = _mixed_args(4, seed=3)
    native = _compile(text)
    config.update("minijax_native_loops", False)
    try:
        driver = _compile(text)
    finally:
        config.update("minijax_native_loops", True)
    assert NATIVE in native.as_text() and NATIVE not in driver.as_text()
    for a, b in zip(native.execute(args), driver.execute(args)):
        np.testing.assert_array_equal(a, b)


def _dus_loop(it, reread):
    """A loop writing a [2,3] block into a [4,5,6] element at (i-1, 2*i-3, 5-i) (starts
    clamped as XLA does), with `it` start indices; `reread` also reads the element
    elsewhere in the body (then it cannot be updated in place)."""
    extra = ("  s = f32[] reduce(big, z), dimensions={0,1,2}, to_apply=sum\n"
             "  sb = f32[1,2,3] broadcast(s), dimensions={}\n"
             "  u2 = f32[1,2,3] add(u, sb)\n") if reread else "  u2 = f32[1,2,3] add(u, u)\n"
    return f"""HloModule dus
sum {{
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}}
cond {{
  p = ({it}[], f32[4,5,6], f32[1,2,3]) parameter(0)
  i = {it}[] get-tuple-element(p), index=0
  n = {it}[] constant(6)
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  p = ({it}[], f32[4,5,6], f32[1,2,3]) parameter(0)
  i = {it}[] get-tuple-element(p), index=0
  big = f32[4,5,6] get-tuple-element(p), index=1
  u = f32[1,2,3] get-tuple-element(p), index=2
  z = f32[] constant(0)
  one = {it}[] constant(1)
  two = {it}[] constant(2)
  three = {it}[] constant(3)
  five = {it}[] constant(5)
  a = {it}[] subtract(i, one)
  t = {it}[] multiply(i, two)
  b = {it}[] subtract(t, three)
  c = {it}[] subtract(five, i)
{extra}  upd = f32[4,5,6] dynamic-update-slice(big, u2, a, b, c)
  j = {it}[] add(i, one)
  ROOT r = ({it}[], f32[4,5,6], f32[1,2,3]) tuple(j, upd, u)
}}
ENTRY main {{
  i0 = {it}[] parameter(0)
  big = f32[4,5,6] parameter(1)
  u = f32[1,2,3] parameter(2)
  init = ({it}[], f32[4,5,6], f32[1,2,3]) tuple(i0, big, u)
  ROOT loop = ({it}[], f32[4,5,6], f32[1,2,3]) while(init), condition=cond, body=body
}}
"""


@pytest.mark.parametrize("reread", [False, True])
@pytest.mark.parametrize("it,i0", [("s32", 0), ("s32", -3), ("s64", 2), ("u32", 0),
                                   ("s32", 9)])
def test_dynamic_update_slice_of_the_state_in_place_with_clamped_starts(it, i0, reread):
    dtype = {"s32": np.int32, "s64": np.int64, "u32": np.uint32}[it]
    rng = np.random.default_rng(7)
    big = rng.standard_normal((4, 5, 6)).astype(np.float32)
    u = rng.standard_normal((1, 2, 3)).astype(np.float32)
    keep = big.copy()
    got, want, plan = _run_both(_dus_loop(it, reread), [dtype(i0), big, u])
    lines = _loop_plan_lines(plan)
    assert any(NATIVE in ln for ln in lines), lines
    assert any("updated in place" in ln for ln in lines) != reread, lines
    want = want[0] if isinstance(want[0], (list, tuple)) else want
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)   # reread: sums in another order
    # NumPy reference: XLA clamps each start into [0, dim - update dim].
    ref, i = big.copy(), int(i0)
    while i < 6:
        starts = [min(max(s, 0), d - k) for s, d, k in
                  zip((i - 1, 2 * i - 3, 5 - i), (4, 5, 6), (1, 2, 3))]
        if dtype == np.uint32:  # unsigned starts wrap around below zero
            starts = [min(s % 2 ** 32, d - k) for s, d, k in
                      zip((i - 1, 2 * i - 3, 5 - i), (4, 5, 6), (1, 2, 3))]
        sl = tuple(slice(s, s + k) for s, k in zip(starts, (1, 2, 3)))
        ref[sl] = u + (ref.sum(dtype=np.float32) if reread else u)
        i += 1
    np.testing.assert_allclose(got[1], ref, rtol=1e-5)
    np.testing.assert_array_equal(big, keep)   # the input was not written


# ----------------------------------------------------------------------------- jit level


def _jit_plan(fn, *args):
    return fn.lower(*args).compile()._entry.executable.as_text()


def test_scan_rnn_runs_natively_and_matches_numpy():
    rng = np.random.default_rng(0)
    steps, batch, din, hidden = 20, 4, 6, 8
    xs = rng.standard_normal((steps, batch, din)).astype(np.float32)
    wx = (rng.standard_normal((din, hidden)) / 3).astype(np.float32)
    wh = (rng.standard_normal((hidden, hidden)) / 3).astype(np.float32)
    h0 = np.zeros((batch, hidden), np.float32)

    @minijax.jit
    def f(xs, wx, wh, h0):
        def body(h, x):
            # cos(x) keeps x @ wx in the loop (loop dot hoisting takes a bare slice's dot
            # out), so the loop runs two gemms per step.
            h = lax.tanh(lax.add(lax.dot(lax.cos(x), wx), lax.dot(h, wh)))
            return h, None
        return lax.scan(body, h0, xs)[0]

    plan = _jit_plan(f, xs, wx, wh, h0)
    assert any(NATIVE in ln and "2 gemms" in ln for ln in _loop_plan_lines(plan)), plan
    h = h0.astype(np.float64)
    for t in range(steps):
        h = np.tanh(np.cos(xs[t]) @ wx + h @ wh)
    np.testing.assert_allclose(np.asarray(f(xs, wx, wh, h0)), h, rtol=1e-5, atol=1e-5)


@settings(max_examples=10, deadline=None)
@given(steps=st.integers(0, 7), n=st.sampled_from([1, 3, 16]),
       dtype=st.sampled_from([np.float32, np.int32, np.int16]))
def test_scan_with_stacked_outputs_matches_python(steps, n, dtype):
    """(float64 inputs would be float32 here: jax_enable_x64 is off.)"""
    rng = np.random.default_rng(steps * 7 + n)
    xs = (rng.standard_normal((steps, n)) * 4).astype(dtype)
    c0 = (rng.standard_normal(n) * 4).astype(dtype)

    def f(c0, xs):
        def body(c, x):
            c = lax.add(lax.mul(c, dtype(2) if dtype != np.float32 else dtype(0.5)), x)
            return c, lax.mul(c, c)
        return lax.scan(body, c0, xs)

    c_got, ys_got = minijax.jit(f)(c0, xs)
    c, ys = c0.copy(), []
    for t in range(steps):
        c = (c * (dtype(2) if dtype != np.float32 else dtype(0.5)) + xs[t]).astype(dtype)
        ys.append((c * c).astype(dtype))
    want_ys = np.stack(ys) if ys else np.zeros((0, n), dtype)
    assert np.asarray(c_got).dtype == dtype
    np.testing.assert_allclose(np.asarray(c_got), c, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ys_got), want_ys, rtol=1e-6)


def test_scan_stacked_outputs_are_written_in_place():
    def f(c0, xs):
        def body(c, x):
            c = lax.add(lax.mul(c, 0.5), x)
            return c, lax.mul(c, c)
        return lax.scan(body, c0, xs)

    xs = np.linspace(-1, 1, 300 * 8).astype(np.float32).reshape(300, 8)
    c0 = np.ones(8, np.float32)
    jf = minijax.jit(f)
    lines = _loop_plan_lines(_jit_plan(jf, c0, xs))
    assert any(NATIVE in ln and "1 state elements updated in place" in ln for ln in lines)
    c, ys = jf(c0, xs)
    cc, want = c0.copy(), []
    for t in range(300):
        cc = cc * np.float32(0.5) + xs[t]
        want.append(cc * cc)
    np.testing.assert_allclose(np.asarray(ys), np.stack(want), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(c), cc, rtol=1e-6)


@pytest.mark.parametrize("lo,hi", [(0, 0), (0, 1), (2, 9), (5, 3)])
def test_fori_loop_small_body(lo, hi):
    x = np.arange(5, dtype=np.float32)

    @minijax.jit
    def f(x, lo, hi):
        return lax.fori_loop(lo, hi, lambda i, v: lax.add(lax.mul(v, 1.5), 1.0), x)

    lo, hi = np.int32(lo), np.int32(hi)
    assert any(NATIVE in ln for ln in _loop_plan_lines(_jit_plan(f, x, lo, hi)))
    want = x.copy()
    for _ in range(lo, hi):
        want = want * np.float32(1.5) + np.float32(1)
    np.testing.assert_allclose(np.asarray(f(x, lo, hi)), want, rtol=1e-6)


@pytest.mark.parametrize("limit", [-10.0, 0.0, 10.0, 1e4])
def test_while_loop_with_data_dependent_condition(limit):
    def f(x, limit):
        def cond(s):
            return lax.lt(lax.reduce_sum(s[1], (0,)), limit)

        def body(s):
            k, v, other = s
            return lax.add(k, 1), lax.add(lax.mul(v, 1.5), 1.0), other
        return lax.while_loop(cond, body, (0, x, x))

    x = np.array([0.25, -0.5, 1.0], np.float32)
    jf = minijax.jit(f)
    assert any(NATIVE in ln for ln in _loop_plan_lines(_jit_plan(jf, x, np.float32(limit))))
    k, v, other = jf(x, np.float32(limit))
    kk, vv = 0, x.copy()
    while vv.sum() < np.float32(limit):
        kk, vv = kk + 1, vv * np.float32(1.5) + np.float32(1)
    assert int(k) == kk
    np.testing.assert_allclose(np.asarray(v), vv, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(other), x)


@settings(max_examples=8, deadline=None)
@given(outer_n=st.integers(0, 4), inner_n=st.integers(0, 3), size=st.sampled_from([1, 6]))
def test_nested_loops_run_as_one_native_loop(outer_n, inner_n, size):
    """An inner fori_loop (trip count from the data, zero trips too) with an invariant
    input and a carried counter, inside a scan with stacked outputs."""
    x = np.linspace(-1, 1, size).astype(np.float32)
    xs = np.arange(outer_n * size, dtype=np.float32).reshape(outer_n, size) / 10

    @minijax.jit
    def f(x, xs, m):
        def outer(v, row):
            def inner(j, s):
                u, k = s
                return lax.add(lax.mul(u, 0.5), row), lax.add(k, 2)
            w, k = lax.fori_loop(0, m, inner, (v, np.int32(0)))
            w = lax.sub(w, lax.convert_element_type(k, np.float32))
            return w, lax.mul(w, 2.0)
        return lax.scan(outer, x, xs)

    m = np.int32(inner_n)
    lines = _loop_plan_lines(_jit_plan(f, x, xs, m))
    if outer_n >= 2:  # (shorter scans are unrolled before they reach the backend)
        assert len(lines) == 1 and NATIVE in lines[0] and "1 nested loops" in lines[0], lines
    v_got, ys_got = f(x, xs, m)
    v, ys = x.copy(), []
    for t in range(outer_n):
        for _ in range(inner_n):
            v = v * np.float32(0.5) + xs[t]
        v = v - np.float32(2 * inner_n)
        ys.append(v * 2)
    np.testing.assert_allclose(np.asarray(v_got), v, rtol=1e-6, atol=1e-6)
    want_ys = np.stack(ys) if ys else np.zeros((0, size), np.float32)
    np.testing.assert_allclose(np.asarray(ys_got), want_ys, rtol=1e-6, atol=1e-6)


def test_nested_loop_with_an_unsupported_body_keeps_both_on_the_driver():
    v = np.array([3.0, -1.0, 2.0, 0.5], np.float32)

    @minijax.jit
    def f(v):
        def outer(i, v):
            return lax.fori_loop(0, 2, lambda j, u: lax.neg(lax.sort(u)), v)
        return lax.fori_loop(0, 3, outer, v)

    lines = _loop_plan_lines(_jit_plan(f, v))
    assert not any(NATIVE in ln for ln in lines), lines
    assert any("Python driver" in ln and "sort" in ln for ln in lines), lines
    want = v.copy()
    for _ in range(6):
        want = -np.sort(want)
    np.testing.assert_array_equal(np.asarray(f(v)), want)


def test_concurrent_calls_from_threads():
    x = np.arange(64, dtype=np.float32) / 64

    @minijax.jit
    def f(x, n):
        return lax.fori_loop(0, n, lambda i, v: lax.add(lax.mul(v, 0.9), 0.1), x)

    want = {}
    for n in range(1, 9):
        w = x.copy()
        for _ in range(n):
            w = w * np.float32(0.9) + np.float32(0.1)
        want[n] = w
    f(x, np.int32(1))

    def work(seed):
        for k in range(30):
            n = (seed + k) % 8 + 1
            np.testing.assert_allclose(np.asarray(f(x, np.int32(n))), want[n], rtol=1e-6)

    run_in_threads(work, 3)


def test_disk_cache_replay_rebuilds_the_native_loop(tmp_path):
    text = MIXED_LOOP
    args = _mixed_args(3, seed=5)
    old = config._values["minijax_cache_dir"]
    config.update("minijax_cache_dir", str(tmp_path))
    try:
        first = _compile(text)
        second = _compile(text)      # from the stored plan and object file
    finally:
        config.update("minijax_cache_dir", old)
    assert NATIVE in second.as_text()
    assert second.llvm_ir() == ""    # nothing was emitted: the plan was replayed
    for a, b in zip(first.execute(args), second.execute(args)):
        np.testing.assert_array_equal(a, b)
