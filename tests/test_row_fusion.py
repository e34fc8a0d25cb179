"""Row fusion (passes/row_fusion.py) and its "row_fused" CPU kernels (codegen/row_loops.py).

Each program is traced and lowered, optimized by the default pipeline, then checked three
ways: the pass decisions (one row fusion, or none when unsafe, with the fusion log saying
why), the compiled kernel against the HLO evaluator on the same optimized module, and both
against NumPy. Shapes come from hypothesis (rows 0, 1, odd; cols 1, 2, odd vector
remainders) plus fixed sizes above the thread pool's threshold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")

import minijax as jax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.api import make_jaxpr  # noqa: E402
from minijax.backends.cpu import PARALLEL_THRESHOLD, CpuBackend  # noqa: E402
from minijax.compiler.codegen.cpu.row_loops import plan_row_cache  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.compiler.hlo.printer import module_to_text  # noqa: E402
from minijax.compiler.lower import lower_jaxpr_to_module  # noqa: E402
from minijax.compiler.passes.row_fusion import (  # noqa: E402
    MAX_ROW_BYTES,
    RowPlan,
    analyze_row_fusion,
    row_fusion_plan,
)
from minijax.compiler.pipeline import CompileOptions, optimize  # noqa: E402
from minijax.test_util import enable_x64  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


# -- programs (lax terms) and their NumPy references -------------------------------------

def _bcast(v, shape):
    return lax.broadcast_in_dim(v, shape, tuple(range(len(shape) - 1)))


def softmax(x):
    m = lax.reduce_max(x, (x.ndim - 1,))
    e = lax.exp(x - _bcast(m, x.shape))
    return e / _bcast(lax.reduce_sum(e, (x.ndim - 1,)), x.shape)


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layernorm(x, g, b):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * g + b


def np_layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b


def softmax_grad(x, w):
    return jax.grad(lambda x: jnp.sum(jax.nn.softmax(x) * w))(x)


def np_softmax_grad(x, w):
    p = np_softmax(x)
    return p * (w - (p * w).sum(-1, keepdims=True))


def layernorm_grad(x, g, b):
    return jax.grad(lambda x: jnp.sum(layernorm(x, g, b) ** 2))(x)


# -- helpers -------------------------------------------------------------------------------

def optimized(f, *args):
    """f's module, lowered and optimized by the default pipeline (with its hoisted consts)."""
    module, hoisted = lower_jaxpr_to_module(make_jaxpr(f)(*args))
    optimize(module, CompileOptions(backend="cpu"))
    return module, [np.asarray(a) for a in args] + [np.asarray(c) for c in hoisted]


def row_fusions(module):
    return [i for i in module.entry.instructions if i.opcode == "fusion"
            and row_fusion_plan(i.called["calls"]) is not None]


def run_checked(f, *args, rtol=1e-5, atol=1e-6):
    """Compile f on the CPU backend; check it against the evaluator on the same optimized
    module. Returns (module, executable, outputs)."""
    module, inputs = optimized(f, *args)
    exe = CpuBackend().compile(module)
    got = exe.execute(inputs)
    want = evaluate_module(module, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    return module, exe, got


def modes(exe):
    return [k.spec.mode for k in exe.kernels]


# -- the pass fires on the row patterns ----------------------------------------------------

def _ln_args(rows, cols, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, cols)).astype(dtype),
            rng.standard_normal(cols).astype(dtype), rng.standard_normal(cols).astype(dtype))


@pytest.mark.parametrize("name,f,ref,nargs", [
    ("softmax", softmax, np_softmax, 1),
    ("jax.nn.softmax", jax.nn.softmax, np_softmax, 1),
    ("log_softmax", jax.nn.log_softmax, lambda x: np.log(np_softmax(x)), 1),
    ("layernorm", layernorm, np_layernorm, 3),
    ("softmax_grad", softmax_grad, np_softmax_grad, 2),
    ("layernorm_grad", layernorm_grad, None, 3),
])
def test_pattern_becomes_one_row_fused_kernel(name, f, ref, nargs):
    args = _ln_args(37, 129, seed=1)[:nargs]
    if name == "softmax_grad":
        args = (args[0], np.random.default_rng(2).standard_normal((37, 129)).astype(np.float32))
    module, exe, got = run_checked(f, *args, rtol=2e-5, atol=2e-5)
    assert len(row_fusions(module)) == 1
    assert exe.kernel_count == 1 and modes(exe) == ["row_fused"]
    assert any(m.startswith("row-fuse ") for m in module.fusion_log)
    if ref is not None:
        np.testing.assert_allclose(got[0], ref(*args), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f,nargs", [(softmax, 1), (jax.nn.log_softmax, 1), (layernorm, 3),
                                     (softmax_grad, 2), (layernorm_grad, 3)])
def test_each_reduction_is_computed_once_per_row(f, nargs):
    """The kernel has one loop per stage plus the output loop, and no reduction re-emitted
    inside a loop (an elemental inline reduce there would cost cols^2 per row)."""
    import llvmlite.ir as ir

    from minijax.compiler.codegen.cpu.loops import emit_kernel
    args = _ln_args(16, 64)[:nargs]
    if nargs == 2:
        args = (args[0], args[0] * 2)
    module, _ = optimized(f, *args)
    (fusion,) = row_fusions(module)
    plan = row_fusion_plan(fusion.called["calls"])
    m = ir.Module("t")
    spec = emit_kernel(m, "k", fusion.called["calls"])
    blocks = [blk.name for fn in m.functions for blk in fn.blocks]
    assert spec.mode == "row_fused"
    assert not [b for b in blocks if b.startswith("loop.")]
    loops = {b.split(".")[0] for b in blocks if b.startswith("cols")}
    assert len(loops) == len(plan.passes) + 1


def test_layernorm_gradient_matches_finite_differences_through_jit():
    x, g, b = _ln_args(5, 33, seed=3, dtype=np.float64)
    with enable_x64():
        got = np.asarray(jax.jit(layernorm_grad)(x, g, b))

        def loss(x):
            return float(np.sum(np_layernorm(x, g, b) ** 2))
        eps = 1e-6
        num = np.zeros_like(x)
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                d = np.zeros_like(x)
                d[i, j] = eps
                num[i, j] = (loss(x + d) - loss(x - d)) / (2 * eps)
    np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-5)


def test_softmax_plan_has_two_stages_and_keeps_exp_between_loops():
    module, _ = optimized(softmax, np.zeros((8, 16), np.float32))
    (fusion,) = row_fusions(module)
    body = fusion.called["calls"]
    plan = analyze_row_fusion(body)
    assert isinstance(plan, RowPlan)
    assert (plan.rows, plan.cols) == ((8,), 16)
    kinds = [[r.called["to_apply"].root.opcode for r in p] for p in plan.passes]
    assert kinds == [["maximum"], ["add"]]
    order = {id(i): k for k, i in enumerate(body.instructions)}
    cached = [v.opcode for v, _ in plan_row_cache(plan, order).values()]
    assert cached == ["exponential"]


def test_outputs_read_elsewhere_stay_outputs_of_the_one_kernel():
    """The row max and sum also leave the fusion (per-row outputs next to the row output)."""
    def f(x):
        m = lax.reduce_max(x, (1,))
        e = lax.exp(x - _bcast(m, x.shape))
        s = lax.reduce_sum(e, (1,))
        return e / _bcast(s, x.shape), m, lax.log(s) + m
    x = np.random.default_rng(4).standard_normal((21, 45)).astype(np.float32)
    module, exe, got = run_checked(f, x)
    assert exe.kernel_count == 1 and modes(exe) == ["row_fused"]
    np.testing.assert_allclose(got[0], np_softmax(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(got[1], x.max(1))
    lse = np.log(np.exp(x - x.max(1, keepdims=True)).sum(1)) + x.max(1)
    np.testing.assert_allclose(got[2], lse, rtol=1e-5)


def test_rank3_rows_and_keepdims_shapes():
    x = np.random.default_rng(5).standard_normal((3, 7, 19)).astype(np.float32)
    g = np.random.default_rng(6).standard_normal(19).astype(np.float32)
    module, exe, got = run_checked(layernorm, x, g, g)
    assert modes(exe) == ["row_fused"]
    np.testing.assert_allclose(got[0], np_layernorm(x, g, g), rtol=1e-4, atol=1e-5)


# -- and not when it is unsafe -------------------------------------------------------------

def _rejections(module):
    return [m for m in module.fusion_log if m.startswith("reject row fusion")]


def test_not_over_a_non_minor_dimension():
    x = np.random.default_rng(7).standard_normal((12, 40)).astype(np.float32)
    module, exe, got = run_checked(lambda x: jax.nn.softmax(x, axis=0), x)
    assert not row_fusions(module) and "row_fused" not in modes(exe)
    assert any("minor dimension" in m for m in _rejections(module))
    np.testing.assert_allclose(got[0], np_softmax(x.T).T, rtol=1e-5, atol=1e-7)


def test_not_when_a_row_result_is_read_along_the_columns():
    x = np.random.default_rng(8).standard_normal((24, 24)).astype(np.float32)

    def f(x):
        s = lax.reduce_sum(x, (1,))
        return x / lax.broadcast_in_dim(s, x.shape, (1,))
    module, exe, got = run_checked(f, x)
    assert not row_fusions(module) and "row_fused" not in modes(exe)
    assert any("other than its own row" in m for m in _rejections(module))
    np.testing.assert_allclose(got[0], x / x.sum(1)[None, :], rtol=1e-4)


def test_not_when_a_row_result_moves_to_another_row():
    x = np.random.default_rng(9).standard_normal((10, 30)).astype(np.float32)

    def f(x):
        s = lax.rev(lax.reduce_max(x, (1,)), (0,))
        return x - _bcast(s, x.shape)
    module, exe, got = run_checked(f, x)
    assert not row_fusions(module)
    assert any("other than its own row" in m for m in _rejections(module))
    np.testing.assert_array_equal(got[0], x - x.max(1)[::-1, None])


def test_not_when_rows_are_too_long_for_cache():
    cols = MAX_ROW_BYTES // 4 + 1
    x = np.random.default_rng(10).standard_normal((3, cols)).astype(np.float32)
    module, exe, got = run_checked(softmax, x)
    assert not row_fusions(module) and "row_fused" not in modes(exe)
    assert any("do not stay in cache" in m for m in _rejections(module))
    np.testing.assert_allclose(got[0], np_softmax(x), rtol=1e-5, atol=1e-9)


def test_analysis_reasons():
    text = """HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] add(a, b) }
fused {
  x = f32[4,6] parameter(0)
  z = f32[] constant(0)
  s = f32[4] reduce(x, z), dimensions={1}, to_apply=add
  t = f32[6,4] transpose(x), dimensions={1,0}
  u = f32[6] reduce(t, z), dimensions={1}, to_apply=add
  ROOT o = (f32[4], f32[6]) tuple(s, u)
}
ENTRY main {
  x = f32[4,6] parameter(0)
  ROOT f = (f32[4], f32[6]) fusion(x), kind=kInput, calls=fused
}
"""
    body = parse_module(text).computations[1]
    assert "reduces dims" in analyze_row_fusion(body)
    assert row_fusion_plan(body) is None


# -- values over hypothesis shapes ---------------------------------------------------------

SHAPES = st.tuples(st.sampled_from([0, 1, 2, 3, 7, 31]),
                   st.sampled_from([1, 2, 3, 5, 8, 17, 33, 100, 257]))


@settings(max_examples=25)
@given(shape=SHAPES, dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2 ** 16))
def test_softmax_and_layernorm_values(shape, dtype, seed):
    rows, cols = shape
    x, g, b = _ln_args(rows, cols, seed, dtype)
    x = x * 4
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    with enable_x64():
        for f, ref, args in ((softmax, np_softmax, (x,)),
                             (layernorm, np_layernorm, (x, g, b))):
            module, exe, got = run_checked(f, *args, **tol)
            assert got[0].dtype == dtype
            assert (modes(exe) == ["row_fused"]) == (cols >= 2)
            np.testing.assert_allclose(got[0], ref(*args), rtol=1e-4 if dtype == np.float32
                                       else 1e-9, atol=1e-5 if dtype == np.float32 else 1e-9)


@settings(max_examples=10)
@given(shape=SHAPES, seed=st.integers(0, 2 ** 16))
def test_gradients_values(shape, seed):
    rows, cols = shape
    x, g, b = _ln_args(rows, cols, seed)
    w = np.random.default_rng(seed + 1).standard_normal((rows, cols)).astype(np.float32)
    _, _, got = run_checked(softmax_grad, x, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[0], np_softmax_grad(x, w), rtol=1e-4, atol=1e-5)
    run_checked(layernorm_grad, x, g, b, rtol=2e-4, atol=2e-4)


def test_sizes_over_the_threading_threshold():
    cols = 1023
    rows = PARALLEL_THRESHOLD // (3 * cols) + 5
    x = np.random.default_rng(11).standard_normal((rows, cols)).astype(np.float32)
    module, exe, got = run_checked(softmax, x)
    assert modes(exe) == ["row_fused"] and exe.kernels[0].threads > 1
    np.testing.assert_allclose(got[0], np_softmax(x), rtol=1e-5, atol=1e-8)
    x, g, b = _ln_args(rows, cols, 12)
    _, exe, got = run_checked(layernorm, x, g, b, rtol=1e-4, atol=1e-5)
    assert exe.kernels[0].threads > 1
    np.testing.assert_allclose(got[0], np_layernorm(x, g, b), rtol=1e-4, atol=1e-4)


def test_nan_and_infinite_rows():
    x = np.random.default_rng(13).standard_normal((6, 9)).astype(np.float32)
    x[1, 3] = np.nan
    x[2, :] = -np.inf
    x[3, 4] = np.inf
    _, _, got = run_checked(softmax, x)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(got[0], np_softmax(x), rtol=1e-5, equal_nan=True)
    assert np.isnan(got[0][1]).all() and np.isnan(got[0][2]).all()


def test_integer_rows():
    x = np.random.default_rng(14).integers(-50, 50, (9, 13)).astype(np.int32)

    def f(x):
        m = lax.reduce_max(x, (1,))
        d = x - _bcast(m, x.shape)
        return d * _bcast(lax.reduce_sum(d, (1,)), x.shape)
    _, exe, got = run_checked(f, x)
    assert modes(exe) == ["row_fused"]
    d = x - x.max(1, keepdims=True)
    np.testing.assert_array_equal(got[0], d * d.sum(1, keepdims=True))


# -- HLO text and the compile-plan cache ---------------------------------------------------

def test_printed_module_parses_back_and_runs_the_same():
    x, g, b = _ln_args(11, 27, 15)
    module, inputs = optimized(layernorm_grad, x, g, b)
    text = module_to_text(module)
    again = parse_module(text)
    assert module_to_text(again) == text
    assert len(row_fusions(again)) == 1
    exe = CpuBackend().compile(again)
    assert modes(exe) == ["row_fused"]
    np.testing.assert_allclose(exe.execute(inputs)[0], evaluate_module(again, inputs)[0],
                               rtol=2e-4, atol=2e-4)


SCRIPT = r"""
import json, os
import numpy as np
import minijax as jax
from minijax import lax
from minijax.compiler import pipeline
if os.environ.get("FORBID_OPTIMIZE"):
    def forbidden(*a, **k):
        raise AssertionError("the pass pipeline ran")
    pipeline.optimize = forbidden

@jax.jit
def f(x):
    m = lax.reduce_max(x, (1,))
    e = lax.exp(x - lax.broadcast_in_dim(m, x.shape, (0,)))
    return e / lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), x.shape, (0,)), m
x = np.random.default_rng(0).standard_normal((700, 513)).astype(np.float32)
out = f(x)
exe = f.lower(x).compile()._entry.executable
print(json.dumps({"values": [np.asarray(o).tobytes().hex() for o in out],
                  "modes": [k.spec.mode for k in exe.kernels],
                  "hits": f.cache_stats.disk_hits}))
"""


def test_compile_plan_replays_in_a_new_process(tmp_path):
    env = dict(os.environ, MINIJAX_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    env.pop("MINIJAX_FLAGS", None)
    runs = []
    for extra in ({}, {"FORBID_OPTIMIZE": "1"}):
        out = subprocess.run([sys.executable, "-c", SCRIPT], env=dict(env, **extra),
                             capture_output=True, text=True, cwd=str(ROOT), timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert runs[0]["modes"] == runs[1]["modes"] == ["row_fused"]
    assert runs[1]["hits"] >= 1
    assert runs[0]["values"] == runs[1]["values"]
    x = np.random.default_rng(0).standard_normal((700, 513)).astype(np.float32)
    sm = np.frombuffer(bytes.fromhex(runs[1]["values"][0]), np.float32).reshape(x.shape)
    np.testing.assert_allclose(sm, np_softmax(x), rtol=1e-5, atol=1e-8)


def test_inside_a_loop_body():
    """Row fusion also runs on control-flow bodies (each iteration is one row kernel)."""
    x = np.random.default_rng(16).standard_normal((9, 23)).astype(np.float32)

    def f(x):
        return lax.fori_loop(0, 3, lambda i, v: softmax(v * 3.0), x)
    module, inputs = optimized(f, x)
    bodies = [c for c in module.computations if c is not module.entry]
    assert any(row_fusion_plan(i.called["calls"]) is not None for c in bodies
               for i in c.instructions if i.opcode == "fusion")
    got = CpuBackend().compile(module).execute(inputs)[0]
    want = x
    for _ in range(3):
        want = np_softmax(want * 3.0)
    np.testing.assert_allclose(got, evaluate_module(module, inputs)[0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
