"""Generated small gemms (compiler/codegen/cpu/small_gemm.py): register-tiled loops that
native loops and entries call instead of BLAS for gemms of a few rows.

The kernel alone against a float64 NumPy product for every shape class (row and column
tails, transposed A, float32 and float64) and any row range, with guard elements around
the output that must stay untouched; a row range's results bit for bit equal to the same
rows of the whole product (each element is one multiply-add chain over k, whatever tile
computes it, so splitting rows over threads cannot change bits); then jitted loops and
entries that pick it, against NumPy loops, on teams of 1-4 threads."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
import llvmlite.ir as ir  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import minijax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.backends.cpu import native_loops  # noqa: E402
from minijax.backends.cpu.runtime import SYMBOL_PLACEHOLDER, get_jit  # noqa: E402
from minijax.compiler.codegen.cpu.small_gemm import emit_small_gemm  # noqa: E402
from minijax.config import config  # noqa: E402

_KERNEL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_int64, ctypes.c_int64)
_compiled: dict = {}
GUARD = 37  # guard elements before and after the output


def _kernel(dtype: str, m: int, n: int, k: int, a_transposed: bool):
    key = (dtype, m, n, k, a_transposed)
    if key not in _compiled:
        module = ir.Module(name="small_gemm_test")
        name = f"{SYMBOL_PLACEHOLDER}g"
        emit_small_gemm(module, name, dtype, m, n, k, a_transposed)
        _compiled[key] = _KERNEL(get_jit().compile(str(module), [name])[name])
    return _compiled[key]


def _run(dtype, a, b, m, n, k, a_transposed, start, end, fill=np.nan):
    """C's rows [start, end) from the kernel, in a buffer with GUARD fill elements around."""
    out = np.full(GUARD + m * n + GUARD, fill, a.dtype)
    _kernel(dtype, m, n, k, a_transposed)(a.ctypes.data, b.ctypes.data,
                                          out[GUARD:].ctypes.data, start, end)
    return out


def _operands(seed, m, n, k, a_transposed, np_dtype):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m) if a_transposed else (m, k)).astype(np_dtype)
    b = rng.standard_normal((k, n)).astype(np_dtype)
    return a, b


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 70), k=st.integers(1, 40),
       a_transposed=st.booleans(), dtype=st.sampled_from(["f32", "f64"]),
       cut=st.tuples(st.floats(0, 1), st.floats(0, 1)), seed=st.integers(0, 2 ** 16))
def test_kernel_rows_match_numpy_and_stay_in_bounds(m, n, k, a_transposed, dtype, cut, seed):
    np_dtype = np.float32 if dtype == "f32" else np.float64
    a, b = _operands(seed, m, n, k, a_transposed, np_dtype)
    start, end = sorted(int(round(c * m)) for c in cut)
    out = _run(dtype, a, b, m, n, k, a_transposed, start, end)
    lhs = (a.T if a_transposed else a).astype(np.float64)
    want = lhs @ b.astype(np.float64)
    got = out[GUARD:GUARD + m * n].reshape(m, n)
    tol = 1e-5 if dtype == "f32" else 1e-12
    np.testing.assert_allclose(got[start:end], want[start:end], rtol=tol, atol=tol * np.sqrt(k))
    # Nothing outside rows [start, end) is written, nor around the buffer.
    assert np.isnan(got[:start]).all() and np.isnan(got[end:]).all()
    assert np.isnan(out[:GUARD]).all() and np.isnan(out[GUARD + m * n:]).all()


@settings(max_examples=30, deadline=None)
@given(m=st.integers(2, 40), n=st.integers(1, 70), k=st.integers(1, 60),
       a_transposed=st.booleans(), dtype=st.sampled_from(["f32", "f64"]),
       split=st.floats(0, 1), seed=st.integers(0, 2 ** 16))
def test_split_rows_give_the_whole_products_bits(m, n, k, a_transposed, dtype, split, seed):
    np_dtype = np.float32 if dtype == "f32" else np.float64
    a, b = _operands(seed, m, n, k, a_transposed, np_dtype)
    whole = _run(dtype, a, b, m, n, k, a_transposed, 0, m)
    s = int(round(split * m))
    first = _run(dtype, a, b, m, n, k, a_transposed, 0, s)
    second = _run(dtype, a, b, m, n, k, a_transposed, s, m)
    rows = whole[GUARD:GUARD + m * n].reshape(m, n)
    np.testing.assert_array_equal(first[GUARD:GUARD + s * n].reshape(s, n), rows[:s])
    np.testing.assert_array_equal(second[GUARD + s * n:GUARD + m * n].reshape(m - s, n),
                                  rows[s:])


def test_special_values_propagate():
    """inf and NaN operands give IEEE results (no reassociation drops them)."""
    a = np.ones((3, 4), np.float32)
    b = np.ones((4, 18), np.float32)
    a[0, 1] = np.inf
    a[1, 2] = np.nan
    b[3, 17] = -np.inf
    out = _run("f32", a, b, 3, 18, 4, False, 0, 3, fill=0.0)
    got = out[GUARD:GUARD + 54].reshape(3, 18)
    with np.errstate(invalid="ignore"):
        want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(got, want.astype(np.float32))


@pytest.fixture(params=[1, 2, 4])
def threads(request):
    before = config._values["minijax_num_threads"]
    config.update("minijax_num_threads", request.param)
    yield request.param
    config.update("minijax_num_threads", before)


def _plan(fn, *args) -> str:
    return fn.lower(*args).compile()._entry.executable.as_text()


@pytest.mark.parametrize("m,n,k", [(32, 128, 128), (7, 33, 5), (24, 150, 64), (1, 9, 3)])
def test_rnn_loop_uses_generated_gemms_and_matches_numpy(threads, m, n, k):
    rng = np.random.default_rng(m * n + k)
    xs = rng.standard_normal((6, m, k)).astype(np.float32)
    wx = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    wh = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    h0 = rng.standard_normal((m, n)).astype(np.float32)

    def f(xs, wx, wh, h0):
        def body(h, x):
            return jnp.tanh(x @ wx + h @ wh), None
        return lax.scan(body, h0, xs)[0]

    fn = minijax.jit(f)
    assert "generated small gemms" in _plan(fn, xs, wx, wh, h0)
    h = h0.astype(np.float64)
    for x in xs:
        h = np.tanh(x @ wx + h @ wh)
    np.testing.assert_allclose(np.asarray(fn(xs, wx, wh, h0)), h, rtol=2e-5, atol=2e-5)


def test_team_split_keeps_bits(threads):
    """A generated gemm split over 2-4 threads gives one thread's bits."""
    rng = np.random.default_rng(3)
    c0 = rng.standard_normal((29, 40)).astype(np.float32)
    w = (rng.standard_normal((40, 40)) / 7).astype(np.float32)

    def f(c, w):
        return lax.fori_loop(0, 5, lambda i, c: jnp.sin(c @ w), c)

    got = np.asarray(minijax.jit(f)(c0, w))
    config.update("minijax_num_threads", 1)
    want = np.asarray(minijax.jit(f)(c0, w))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_entry_dots_and_batched_dots(dtype):
    """Small dots outside loops (the native entry) and batched ones, against NumPy."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 5, 7)).astype(dtype)
    b = rng.standard_normal((3, 7, 19)).astype(dtype)
    x = rng.standard_normal((9, 30)).astype(dtype)
    w = rng.standard_normal((30, 17)).astype(dtype)

    def f(a, b, x, w):
        xt_x = lax.dot_general(x, x[:, :17] * 2, (((0,), (0,)), ((), ())))  # A transposed
        return jnp.einsum("bij,bjk->bik", a, b), x @ w, xt_x

    with minijax.enable_x64(dtype == np.float64):
        fn = minijax.jit(f)
        assert "3 dot(s) as generated small gemms" in _plan(fn, a, b, x, w)
        got = fn(a, b, x, w)
        a64, b64, x64, w64 = (np.asarray(v, np.float64) for v in (a, b, x, w))
        want = [a64 @ b64, x64 @ w64, x64.T @ (x64[:, :17] * 2)]
        tol = 1e-5 if dtype == np.float32 else 1e-12
        for g, w_ in zip(got, want):
            assert g.dtype == dtype
            np.testing.assert_allclose(np.asarray(g), w_, rtol=tol, atol=tol)


def test_large_or_transposed_b_gemms_keep_blas():
    assert native_loops.use_small_gemm(32, 128, 128, False)
    assert not native_loops.use_small_gemm(32, 128, 128, True)
    assert not native_loops.use_small_gemm(native_loops.SMALL_GEMM_MAX_ROWS + 1, 8, 8, False)
    assert not native_loops.use_small_gemm(4, 1024, 1024, False)
