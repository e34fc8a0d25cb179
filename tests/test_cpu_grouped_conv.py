"""Grouped (feature_group_count) and batch-grouped (batch_group_count) convolutions on the
CPU as im2col + one strided gemm per group, against the HLO evaluator over shapes,
strides, padding, dilations, group counts, layouts and dtypes (16-bit floats computed in
float32); their gradients (and a max pool's) against finite differences; and vmap of grad
of a small CNN (what per-example gradients run: grouped convolutions and select-and-
scatter) against a Python loop of grad, with nothing left on the evaluator."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import minijax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax import dtypes, lax  # noqa: E402
from minijax.test_util import enable_x64, evaluate_lowered  # noqa: E402

NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": dtypes.bfloat16}
LAYOUTS = [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("NHWC", "OIHW", "NCHW")]


def _executable(f, *args):
    return minijax.jit(f).lower(*args).compile()._entry.executable


@st.composite
def grouped_cases(draw):
    groups = draw(st.integers(1, 3))
    batch_groups = 1 if groups > 1 else draw(st.integers(1, 3))
    ksize = [draw(st.integers(1, 3)) for _ in range(2)]
    spatial = [draw(st.integers(1, 7)) for _ in range(2)]
    strides = tuple(draw(st.integers(1, 2)) for _ in range(2))
    padding = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(2)]
    ldil = tuple(draw(st.integers(1, 2)) for _ in range(2))
    rdil = tuple(draw(st.integers(1, 2)) for _ in range(2))
    batch = draw(st.integers(1, 2)) * batch_groups
    cin_g, cout_g = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    layout = draw(st.sampled_from(LAYOUTS))
    return (groups, batch_groups, ksize, spatial, strides, padding, ldil, rdil, batch, cin_g,
            cout_g, layout)


def _operands(case, dtype, rng):
    groups, batch_groups, ksize, spatial, *_, batch, cin_g, cout_g, layout = case
    cin, cout = cin_g * groups, cout_g * groups * batch_groups
    x = rng.standard_normal((batch, cin, *spatial))
    w = rng.standard_normal((cout, cin_g, *ksize))
    if layout[0] == "NHWC":
        x = x.transpose(0, 2, 3, 1)
    if layout[1] == "HWIO":
        w = w.transpose(2, 3, 1, 0)
    return x.astype(dtype), w.astype(dtype)


@settings(max_examples=40, deadline=None)
@given(case=grouped_cases(), et=st.sampled_from(["f32", "f64", "f16", "bf16"]),
       seed=st.integers(0, 5))
def test_grouped_conv_matches_evaluator(case, et, seed):
    groups, batch_groups, _, _, strides, padding, ldil, rdil, *_, layout = case
    dtype = NP[et]
    x, w = _operands(case, dtype, np.random.default_rng(seed))

    def f(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, lhs_dilation=ldil,
                                        rhs_dilation=rdil, dimension_numbers=layout,
                                        feature_group_count=groups,
                                        batch_group_count=batch_groups)
    with enable_x64(et == "f64"):
        try:
            want = evaluate_lowered(f, x, w)[0]
        except Exception:  # noqa: BLE001 - a shape the frontend rejects: nothing to compare
            return
        exe = _executable(f, x, w)
        assert "convolution via im2col" in exe.as_text() and not exe.evaluator_thunks()
        got = np.asarray(minijax.jit(f)(x, w))
    assert got.shape == want.shape and got.dtype == want.dtype
    # 16-bit results: the float32 sum rounded once (the evaluator sums in float64).
    tol = {"f32": 1e-4, "f64": 1e-10, "f16": 4e-3, "bf16": 3e-2}[et]
    scale = 1 + np.abs(want.astype(np.float64))
    np.testing.assert_array_less(np.abs(got.astype(np.float64) - want.astype(np.float64)),
                                 tol * scale + 1e-300)


def test_grouped_conv_without_blas_matches_evaluator(monkeypatch):
    from minijax.backends.cpu import blas as cpu_blas
    monkeypatch.setattr(cpu_blas, "CANDIDATES", ())
    cpu_blas.find_blas.cache_clear()
    minijax.clear_caches()
    try:
        assert cpu_blas.find_blas() is None
        for groups, batch_groups in ((3, 1), (1, 2)):
            case = (groups, batch_groups, [2, 3], [5, 6], (2, 1), [(1, 0), (0, 1)], (1, 2),
                    (2, 1), 2 * batch_groups, 2, 2, LAYOUTS[1])
            x, w = _operands(case, np.float32, np.random.default_rng(4))

            def f(x, w, g=groups, bg=batch_groups):
                return lax.conv_general_dilated(x, w, (2, 1), [(1, 0), (0, 1)], (1, 2),
                                                (2, 1), LAYOUTS[1], feature_group_count=g,
                                                batch_group_count=bg)
            want = evaluate_lowered(f, x, w)[0]
            np.testing.assert_allclose(np.asarray(minijax.jit(f)(x, w)), want, rtol=1e-4,
                                       atol=1e-4)
    finally:
        cpu_blas.find_blas.cache_clear()
        minijax.clear_caches()


def _cnn_loss(params, x, onehot):
    """conv(groups 2) + ReLU + overlapping SAME max pool + conv + dense; float64 inputs."""
    dn = ("NHWC", "HWIO", "NHWC")
    h = lax.conv_general_dilated(x, params["k1"], (1, 1), "SAME", dimension_numbers=dn,
                                 feature_group_count=2)
    h = jnp.tanh(h)
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    h = lax.conv_general_dilated(h, params["k2"], (1, 1), "VALID", dimension_numbers=dn)
    logits = h.reshape(h.shape[0], -1) @ params["w"]
    return -jnp.sum(jax_log_softmax(logits) * onehot)


def jax_log_softmax(z):
    return z - jnp.log(jnp.sum(jnp.exp(z - jnp.max(z, -1, keepdims=True)), -1,
                               keepdims=True)) - jnp.max(z, -1, keepdims=True)


def _cnn_params(rng):
    return {"k1": rng.standard_normal((3, 3, 1, 4)) * 0.5,
            "k2": rng.standard_normal((2, 2, 4, 3)) * 0.5,
            "w": rng.standard_normal((3 * 3 * 3, 5)) * 0.3}


def test_grouped_conv_and_max_pool_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    with enable_x64():
        params = _cnn_params(rng)
        x = rng.standard_normal((2, 8, 8, 2))
        onehot = np.eye(5)[[1, 3]]
        grad = minijax.jit(minijax.grad(_cnn_loss))
        exe = _executable(minijax.grad(_cnn_loss), params, x, onehot)
        text = exe.as_text()
        assert "feature_group_count=2" in text and "select-and-scatter" in text
        assert not exe.evaluator_thunks()
        g = grad(params, x, onehot)
        loss = minijax.jit(_cnn_loss)
        eps = 1e-6
        for name in params:
            for _ in range(3):
                d = rng.standard_normal(params[name].shape)
                plus = dict(params, **{name: params[name] + eps * d})
                minus = dict(params, **{name: params[name] - eps * d})
                fd = (float(loss(plus, x, onehot)) - float(loss(minus, x, onehot))) / (2 * eps)
                np.testing.assert_allclose(float(np.sum(np.asarray(g[name]) * d)), fd,
                                           rtol=1e-5, atol=1e-7)


def test_per_example_grads_vmap_matches_python_loop():
    """vmap(grad) of the CNN: grouped and batch-grouped convolutions and a batched
    select-and-scatter, all compiled; equal to grad per example."""
    rng = np.random.default_rng(1)
    params = {k: v.astype(np.float32) for k, v in _cnn_params(rng).items()}
    x = rng.standard_normal((4, 1, 8, 8, 2)).astype(np.float32)
    onehot = np.eye(5, dtype=np.float32)[[0, 2, 4, 1]][:, None]
    per_example = minijax.vmap(minijax.grad(_cnn_loss), in_axes=(None, 0, 0))
    exe = _executable(per_example, params, x, onehot)
    text = exe.as_text()
    assert "batch_group_count=8" in text and "feature_group_count=4" in text
    assert "select-and-scatter" in text
    assert not exe.evaluator_thunks()
    got = minijax.jit(per_example)(params, x, onehot)
    grad = minijax.jit(minijax.grad(_cnn_loss))
    for i in range(x.shape[0]):
        want = grad(params, x[i], onehot[i])
        for name in params:
            np.testing.assert_allclose(np.asarray(got[name][i]), np.asarray(want[name]),
                                       rtol=2e-5, atol=2e-6)


def test_benchmark_model_per_example_grads_match_python_loop():
    """benchmarks/per_example_grads.py's model: the jitted vmap(grad) equals a loop of grad."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    try:
        import per_example_grads as bench
    finally:
        sys.path.pop(0)
    params = bench.init_params()
    x, y = bench.data(3)
    got = bench.make_per_example_grads(minijax)(params, x, y)
    grad = minijax.jit(minijax.grad(bench.make_loss(minijax)))
    for i in range(3):
        want = grad(params, x[i], y[i])
        for name in params:
            np.testing.assert_allclose(np.asarray(got[name][i]), np.asarray(want[name]),
                                       rtol=2e-5, atol=2e-6)
