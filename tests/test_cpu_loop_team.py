"""Native loops on a team of threads (compiler/codegen/cpu/team.py): the large kernels and
gemms of a native while loop are split into pieces over the pool threads lent to the call.
Results against NumPy loops for teams of 1-4 threads (pieces of unequal size), transposed
and batched gemms, full reductions and nested loops; a team whose lent thread never comes
(the pool is busy) still finishes, on the calling thread alone."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from thread_runner import run_in_threads  # noqa: E402

import minijax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.backends.cpu import native_loops  # noqa: E402
from minijax.backends.cpu.thread_pool import get_pool  # noqa: E402
from minijax.config import config  # noqa: E402


@pytest.fixture(params=[1, 2, 3, 4])
def threads(request):
    before = config._values["minijax_num_threads"]
    config.update("minijax_num_threads", request.param)
    yield request.param
    config.update("minijax_num_threads", before)


def _plan(fn, *args) -> str:
    return fn.lower(*args).compile()._entry.executable.as_text()


def _rng_inputs(seed, *shapes, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) / np.sqrt(s[-1])).astype(dtype) for s in shapes]


def _rnn_step_loop(steps):
    def f(h, wh, b):
        def body(i, h):
            return jnp.tanh(h @ wh + b * i.astype(h.dtype) * 0.01)
        return lax.fori_loop(0, steps, body, h)
    return f


def _rnn_numpy(h, wh, b, steps):
    h = h.astype(np.float64)
    for i in range(steps):
        h = np.tanh(h @ wh + b * i * 0.01)
    return h


def test_split_gemm_and_kernel_match_numpy(threads):
    h, wh, b = _rng_inputs(0, (67, 160), (160, 160), (160,))
    f = minijax.jit(_rnn_step_loop(9))
    plan = _plan(f, h, wh, b)
    assert "split over the thread team" in plan, plan
    np.testing.assert_allclose(np.asarray(f(h, wh, b)), _rnn_numpy(h, wh, b, 9),
                               rtol=2e-5, atol=2e-5)


@settings(max_examples=15, deadline=None)
@given(m=st.integers(16, 70), n=st.integers(1, 150), k=st.integers(1, 150),
       transpose_a=st.booleans(), transpose_b=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2 ** 16))
def test_split_gemm_shapes_and_transposes(m, n, k, transpose_a, transpose_b, dtype, seed):
    """C += op(A) @ op(B) in a loop, with the rows of each gemm split over the team."""
    a_shape = (k, m) if transpose_a else (m, k)
    b_shape = (n, k) if transpose_b else (k, n)
    a, w = _rng_inputs(seed, a_shape, b_shape, dtype=dtype)
    c0 = np.zeros((m, n), dtype)

    def f(a, w, c):
        def body(i, c):
            lhs = a.T if transpose_a else a
            rhs = w.T if transpose_b else w
            return c + (lhs * (i + 1).astype(a.dtype)) @ rhs
        return lax.fori_loop(0, 3, body, c)

    with minijax.enable_x64(dtype == np.float64):
        got = np.asarray(minijax.jit(f)(a, w, c0))
    lhs = (a.T if transpose_a else a).astype(np.float64)
    rhs = (w.T if transpose_b else w).astype(np.float64)
    want = sum((lhs * (i + 1)) @ rhs for i in range(3))
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_batched_gemm_and_full_reduction_split(threads):
    x, w = _rng_inputs(1, (6, 40, 64), (6, 64, 64))

    def f(x, w):
        def body(i, carry):
            x, total = carry
            x = jnp.tanh(jnp.einsum("bij,bjk->bik", x, w))
            return x, total + jnp.sum(x * x)
        return lax.fori_loop(0, 4, body, (x, jnp.float32(0)))

    fn = minijax.jit(f)
    assert "split over the thread team" in _plan(fn, x, w)
    got_x, got_total = fn(x, w)
    ref_x, ref_total = x.astype(np.float64), 0.0
    for _ in range(4):
        ref_x = np.tanh(ref_x @ w)
        ref_total += (ref_x ** 2).sum()
    np.testing.assert_allclose(np.asarray(got_x), ref_x, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(float(got_total), ref_total, rtol=1e-4)


def test_nested_loops_share_the_team(threads):
    h, wh, b = _rng_inputs(2, (48, 96), (96, 96), (96,))

    def f(h, wh, b):
        def outer(j, h):
            return _rnn_step_loop(3)(h, wh, b) * 0.5 + h * 0.5
        return lax.fori_loop(0, 4, outer, h)

    ref = h.astype(np.float64)
    for _ in range(4):
        ref = _rnn_numpy(ref, wh, b, 3) * 0.5 + ref * 0.5
    np.testing.assert_allclose(np.asarray(minijax.jit(f)(h, wh, b)), ref,
                               rtol=2e-5, atol=2e-5)


def test_the_caller_finishes_alone_when_the_pool_is_busy():
    """Every pool thread is blocked in another job: the loop's lent threads start only
    after the loop ended (they then return at once), and the caller ran every piece."""
    before = config._values["minijax_num_threads"]
    config.update("minijax_num_threads", 2)
    try:
        h, wh, b = _rng_inputs(3, (64, 128), (128, 128), (128,))
        f = minijax.jit(_rnn_step_loop(20))
        assert "split over the thread team" in _plan(f, h, wh, b)
        release, started = threading.Event(), threading.Event()

        def hold(_arg):
            started.set()
            release.wait(60)

        get_pool().lend(hold, None, 1)
        assert started.wait(30)
        try:
            got = np.asarray(f(h, wh, b))
        finally:
            release.set()
        np.testing.assert_allclose(got, _rnn_numpy(h, wh, b, 20), rtol=2e-5, atol=2e-5)
    finally:
        config.update("minijax_num_threads", before)


def test_concurrent_calls_each_get_their_own_team():
    h, wh, b = _rng_inputs(4, (64, 128), (128, 128), (128,))
    f = minijax.jit(_rnn_step_loop(6))
    want = _rnn_numpy(h, wh, b, 6)

    def work(k):
        for _ in range(5):
            np.testing.assert_allclose(np.asarray(f(h * 1.0, wh, b)), want,
                                       rtol=2e-5, atol=2e-5)

    run_in_threads(work, 3)


def test_small_loops_stay_on_one_thread():
    h, wh, b = _rng_inputs(5, (4, 8), (8, 8), (8,))
    plan = _plan(minijax.jit(_rnn_step_loop(5)), h, wh, b)
    assert "native loop" in plan and "split over the thread team" not in plan, plan
    assert native_loops.TEAM_MIN_GEMM_MNK > 4 * 8 * 8


def test_team_loops_inside_pmap_use_each_devices_share_of_the_pool():
    """Two devices, four pool threads: each device's native loop runs on a team drawn from
    its own share (two threads) of the pool."""
    before = config._values["minijax_num_threads"]
    config.update("minijax_num_threads", 4)
    try:
        rng = np.random.default_rng(6)
        h = rng.standard_normal((2, 64, 128)).astype(np.float32) / 8
        wh = (rng.standard_normal((128, 128)) / 12).astype(np.float32)
        b = rng.standard_normal(128).astype(np.float32)
        f = minijax.pmap(_rnn_step_loop(7), in_axes=(0, None, None),
                         devices=minijax.devices()[:2])
        got = np.asarray(f(h, wh, b))
        for d in range(2):
            np.testing.assert_allclose(got[d], _rnn_numpy(h[d], wh, b, 7), rtol=2e-5,
                                       atol=2e-5)
    finally:
        config.update("minijax_num_threads", before)
