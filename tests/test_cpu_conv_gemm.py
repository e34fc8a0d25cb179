"""CPU convolutions as an explicit im2col copy + one gemm, against the HLO evaluator: both
fill orders (per kernel offset and per output position), strides, dilations, padding, and
the np.matmul fallback when no BLAS gemm is found."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import minijax  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.backends.cpu import blas as cpu_blas  # noqa: E402
from minijax.test_util import enable_x64, evaluate_lowered  # noqa: E402


def _conv_case(data):
    nsp = data.draw(st.integers(1, 2))
    ksize = [data.draw(st.integers(1, 4)) for _ in range(nsp)]
    spatial = [data.draw(st.integers(1, 9)) for _ in range(nsp)]
    strides = tuple(data.draw(st.integers(1, 3)) for _ in range(nsp))
    padding = [(data.draw(st.integers(-1, 2)), data.draw(st.integers(-1, 2)))
               for _ in range(nsp)]
    ldil = tuple(data.draw(st.integers(1, 2)) for _ in range(nsp))
    rdil = tuple(data.draw(st.integers(1, 2)) for _ in range(nsp))
    b, cin, cout = (data.draw(st.sampled_from([1, 2, 3])) for _ in range(3))
    return nsp, ksize, spatial, strides, padding, ldil, rdil, b, cin, cout


def _run(case, dtype, seed):
    nsp, ksize, spatial, strides, padding, ldil, rdil, b, cin, cout = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, cin, *spatial)).astype(dtype)
    w = rng.standard_normal((cout, cin, *ksize)).astype(dtype)

    def f(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, lhs_dilation=ldil,
                                        rhs_dilation=rdil)
    with enable_x64(dtype == np.float64):
        try:
            want = evaluate_lowered(f, x, w)[0]
        except Exception:  # noqa: BLE001 - a shape the frontend rejects: nothing to compare
            return None
        got = np.asarray(minijax.jit(f, backend="cpu")(x, w))
    return got, want


@settings(max_examples=40, deadline=None)
@given(data=st.data(), et=st.sampled_from(["f32", "f64"]))
def test_conv_im2col_gemm_matches_evaluator(data, et):
    dtype = np.float32 if et == "f32" else np.float64
    out = _run(_conv_case(data), dtype, 0)
    if out is None:
        return
    got, want = out
    assert got.shape == want.shape and got.dtype == dtype
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_kernel_gradient_conv_fills_per_output_position():
    """The weight gradient of a SAME conv is a conv with a 28x28 window and 3x3 outputs:
    the im2col copy goes per output position. Checked against NumPy's own computation."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 10, 10, 5)).astype(np.float32)
    k = rng.standard_normal((3, 3, 5, 6)).astype(np.float32)

    def loss(k, x):
        z = lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return lax.reduce_sum(z, (0, 1, 2, 3))
    g = np.asarray(minijax.jit(minijax.grad(loss))(k, x))
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros(k.shape)
    for i in range(3):
        for j in range(3):
            want[i, j] = xp[:, i:i + 10, j:j + 10, :].sum(axis=(0, 1, 2))[:, None]
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-3)


def test_conv_without_blas_matches_evaluator(monkeypatch):
    monkeypatch.setattr(cpu_blas, "CANDIDATES", ())
    cpu_blas.find_blas.cache_clear()
    minijax.clear_caches()
    try:
        assert cpu_blas.find_blas() is None
        case = (2, [3, 2], [7, 6], (2, 1), [(1, 1), (0, 2)], (1, 2), (2, 1), 2, 3, 4)
        got, want = _run(case, np.float32, 1)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    finally:
        cpu_blas.find_blas.cache_clear()
        minijax.clear_caches()
