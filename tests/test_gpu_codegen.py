"""GPU code generation without a GPU: PTX for the op table and the fusion shapes assembles
with ptxas for sm_80 and sm_90, and the same kernel modules, run on the host by the GPU
emulator over the whole grid (compiler/codegen/gpu/emulate.py), match the HLO evaluator."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from test_cpu_codegen import elementwise_inputs

pytest.importorskip("llvmlite", reason="GPU code generation needs llvmlite")

import minijax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.backends.cuda.emulated import EmulatedRuntime  # noqa: E402
from minijax.backends.cuda.program import GpuExecutable  # noqa: E402
from minijax.compiler.codegen.gpu import ptx as ptxmod  # noqa: E402
from minijax.compiler.codegen.gpu.emulate import run_computation  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.compiler.options import CompileOptions  # noqa: E402
from minijax.compiler.pipeline import optimize  # noqa: E402

N = 1003  # not a multiple of the block size, nor of the vector width
UNARY_FLOAT = ["abs", "negate", "sign", "exponential", "exponential-minus-one", "log",
               "log-plus-one", "logistic", "tanh", "sqrt", "rsqrt", "cbrt", "sine", "cosine",
               "tan", "floor", "ceil", "round-nearest-afz", "round-nearest-even", "erf"]
BINARY_FLOAT = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
                "power", "atan2"]
LIBM_F64 = {"sine", "cosine", "tan", "erf", "power", "atan2", "cbrt"}
UNARY_INT = ["abs", "negate", "sign", "not", "popcnt", "clz"]
BINARY_INT = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
              "and", "or", "xor", "shift-left", "shift-right-logical",
              "shift-right-arithmetic", "power"]
COMPARES = ["EQ", "NE", "LT", "LE", "GT", "GE"]


def _module(et: str, unary, binary, n=N):
    lines = [f"x = {et}[{n}] parameter(0)", f"y = {et}[{n}] parameter(1)"]
    outs = [(f"u{k}", f"{et}[{n}]", f"{op}(x)") for k, op in enumerate(unary)]
    outs += [(f"b{k}", f"{et}[{n}]", f"{op}(x, y)") for k, op in enumerate(binary)]
    outs += [(f"c{k}", f"pred[{n}]", f"compare(x, y), direction={d}")
             for k, d in enumerate(COMPARES)]
    outs += [("s0", f"{et}[{n}]", "select(c2, x, y)"), ("s1", f"{et}[{n}]", "clamp(y, x, y)"),
             ("cv", f"f32[{n}]", "convert(x)"), ("cp", f"pred[{n}]", "convert(x)")]
    for name, ty, expr in outs:
        lines.append(f"{name} = {ty} {expr}")
    root = (f"ROOT out = ({', '.join(t for _, t, _ in outs)}) "
            f"tuple({', '.join(o for o, _, _ in outs)})")
    body = "\n  ".join(lines + [root])
    return parse_module(f"HloModule ew_{et}\nENTRY main {{\n  {body}\n}}\n")


def _compare(got, ref, rtol, atol=1e-30, scaled_atol=0.0):
    """Outputs equal (ints) or close (floats: rtol, plus `scaled_atol` times the output's
    largest magnitude, for sums whose order differs from the evaluator's)."""
    for k, (g, r) in enumerate(zip(got, ref)):
        assert g.dtype == r.dtype, k
        if g.dtype.kind == "f":
            finite = np.abs(r[np.isfinite(r)])
            if scaled_atol and finite.size:
                atol = max(atol, scaled_atol * float(finite.max()))
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(g, r, err_msg=f"output {k}")


def _assembles(executable) -> None:
    if ptxmod.ptxas_path() is None:
        pytest.skip("ptxas is not installed (CUDA toolkit): PTX not assembled")
    for arch in ptxmod.ARCHS:
        text = ptxmod.compile_ptx(executable.ir_text, arch)
        assert f".target {arch}" in text
        assert ptxmod.assemble(text, arch)   # raises PtxasError with ptxas's diagnostics


OP_TABLE = [("f32", np.float32, 2e-6), ("f64", np.float64, 1e-11), ("f16", np.float16, 2e-3),
            ("s32", np.int32, 0), ("s64", np.int64, 0), ("u8", np.uint8, 0),
            ("u32", np.uint32, 0), ("s16", np.int16, 0)]


def _op_table_module(et):
    if et[0] == "f":
        unary = [op for op in UNARY_FLOAT if not (et == "f64" and op in LIBM_F64)]
        binary = [op for op in BINARY_FLOAT if not (et == "f64" and op in LIBM_F64)]
        if et == "f16":   # float16 power/atan2/... compute through float64: not on f16 here
            unary = [op for op in unary if op not in LIBM_F64]
            binary = [op for op in binary if op not in LIBM_F64]
        return _module(et, unary, binary)
    return _module(et, UNARY_INT, BINARY_INT)


@pytest.mark.parametrize("et,dtype,rtol", OP_TABLE, ids=[t[0] for t in OP_TABLE])
def test_op_table_ptx_assembles(et, dtype, rtol):
    ex = GpuExecutable(_op_table_module(et), EmulatedRuntime())
    assert not ex.host_steps(), ex.host_steps()
    _assembles(ex)


@pytest.mark.parametrize("et,dtype,rtol", OP_TABLE, ids=[t[0] for t in OP_TABLE])
def test_op_table_emulated_matches_evaluator(et, dtype, rtol):
    module = _op_table_module(et)
    x, y = elementwise_inputs(dtype, np.random.default_rng(3), N)
    if et == "f16":
        x = np.clip(x, -8, 8).astype(dtype)
    ex = GpuExecutable(module, EmulatedRuntime(max_blocks=2))
    with np.errstate(all="ignore"):
        ref = evaluate_module(module, [x, y])
        got = ex.execute_host([x, y])
    if et[0] == "f":       # float -> f32 of inf/nan is exact; float->int saturation aside
        pass
    _compare(got, ref, rtol)


def test_f64_libm_ops_are_not_gpu_kernels():
    """float64 sin/pow/... call the C math library on the CPU: on the GPU they are reported
    unsupported (the program runs them on the host) rather than leaving a missing symbol."""
    module = _module("f64", ["sine", "cbrt"], ["power"], n=40)
    ex = GpuExecutable(module, EmulatedRuntime())
    notes = "\n".join(ex.notes)
    assert "sine on f64 (calls the C math library, absent on nvptx)" in notes
    x, y = elementwise_inputs(np.float64, np.random.default_rng(0), 40)
    with np.errstate(all="ignore"):
        _compare(ex.execute_host([x, y]), evaluate_module(module, [x, y]), 1e-12)


# ------------------------------------------------------------------ fusion shapes

def _softmax(x):
    return minijax.nn.softmax(x, axis=-1)


def _layer_norm(x):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5)


FUSIONS = {
    "elementwise_chain": (lambda x: jnp.tanh(x * 2.0 + 1.0) - jnp.exp(-x), [(37, 53)]),
    "vector_flat": (lambda x: jnp.maximum(x, 0.0) * 3.0, [(16, 64)]),
    "softmax_rows": (_softmax, [(9, 300)]),
    "layer_norm_rows": (_layer_norm, [(5, 70)]),
    "row_sum": (lambda x: x.sum(axis=1), [(13, 517)]),
    "col_sum": (lambda x: x.sum(axis=0), [(300, 33)]),
    "col_max_two_stage": (lambda x: x.max(axis=0), [(700, 5)]),
    "full_sum_two_stage": (lambda x: jnp.sum(x * x), [(40000,)]),
    "row_sum_two_stage": (lambda x: x.sum(axis=1), [(2, 40000)]),
    "middle_dim_sum": (lambda x: x.sum(axis=1), [(3, 50, 7)]),
    "argmax_variadic": (lambda x: jnp.argmax(x, axis=1), [(11, 77)]),
    "min_int": (lambda x: jnp.min(x, axis=1), [(6, 45)]),
    "any_pred": (lambda x: jnp.any(x > 1.5, axis=0), [(40, 9)]),
    "transpose_tiled": (lambda x: x.T + 1.0, [(45, 70)]),
    "transpose_3d": (lambda x: jnp.transpose(x, (0, 2, 1)) * 2.0, [(3, 33, 40)]),
    "dynamic_slice": (lambda x: lax.dynamic_slice(x, (jnp.int32(3), jnp.int32(50)), (5, 20)),
                      [(20, 60)]),
    "dynamic_update_slice": (lambda x, u: lax.dynamic_update_slice(
        x, u, (jnp.int32(2), jnp.int32(-4))), [(10, 30), (3, 7)]),
    "pad_concat_iota": (lambda x: jnp.concatenate(
        [jnp.pad(x, ((1, 2), (0, 3))),
         lax.broadcasted_iota(jnp.float32, (x.shape[0] + 3, 10), 1)], axis=1), [(7, 9)]),
    "select_clamp_convert": (lambda x: jnp.where(x > 0, jnp.clip(x, -1, 1),
                                                 (x * 10).astype(jnp.int32).astype(jnp.float32)),
                             [(33, 31)]),
    "bitcast_convert": (lambda x: lax.bitcast_convert_type(x, jnp.int32) >> 3, [(100,)]),
    "broadcast_rows": (lambda x, b: x * b[None, :] + b.sum(), [(19, 23), (23,)]),
}


def _fusion_case(name):
    f, shapes = FUSIONS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))   # the same inputs every run
    args = [rng.normal(0, 2, s).astype(np.float32) for s in shapes]
    if name == "min_int":
        args = [rng.integers(-1000, 1000, shapes[0]).astype(np.int32)]
    lowered = minijax.jit(f).lower(*args)
    return optimize(lowered.module, CompileOptions()), args


@pytest.mark.parametrize("name", sorted(FUSIONS))
def test_fusion_emulated_matches_evaluator(name):
    module, args = _fusion_case(name)
    ex = GpuExecutable(module, EmulatedRuntime(max_blocks=3))
    assert not ex.host_steps(), ex.host_steps()
    ref = evaluate_module(module, args)
    got = ex.execute_host(args)
    _compare(got, ref, 2e-5, atol=1e-7, scaled_atol=2e-6)


def test_fusion_kernel_modes():
    """The fusion shapes above exercise every GPU kernel mode (and vector accesses)."""
    seen, notes = set(), []
    for name in FUSIONS:
        module, _ = _fusion_case(name)
        ex = GpuExecutable(module, EmulatedRuntime())
        seen |= {k.mode for k in ex.kernels}
        notes += [n for k in ex.kernels for n in k.notes]
    assert seen >= {"loop", "transpose", "row_reduce", "col_reduce", "row_fused"}
    assert any("4-wide vector" in n for n in notes)
    assert any("two stages" in n for n in notes)


def test_fusions_ptx_assembles():
    if ptxmod.ptxas_path() is None:
        pytest.skip("ptxas is not installed (CUDA toolkit): PTX not assembled")
    for name in sorted(FUSIONS):
        module, _ = _fusion_case(name)
        _assembles(GpuExecutable(module, EmulatedRuntime()))


def test_two_stage_reductions_are_deterministic_for_any_grid():
    """Partials depend on the shapes only: any grid (the emulator cuts it to 1, 2 or 5
    blocks) gives the same bits."""
    module, args = _fusion_case("full_sum_two_stage")
    results = {GpuExecutable(module, EmulatedRuntime(max_blocks=g)).execute_host(args)[0]
               .tobytes() for g in (1, 2, 5)}
    assert len(results) == 1
    ref = float(np.sum(args[0].astype(np.float64) ** 2))
    got = np.frombuffer(results.pop(), np.float32)[0]
    assert abs(got - ref) <= 1e-5 * ref


def test_row_reduce_any_reducer_and_empty_rows():
    """A generic reducer (not a single binary op: the warp/block tree combines it through
    the elemental emitter) and zero-length rows (init values)."""
    text = """HloModule m
mul_add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] add(a, b)
  ROOT c = f32[] copy(s)
}
ENTRY main {
  x = f32[4,45] parameter(0)
  e = f32[4,0] parameter(1)
  z = f32[] constant(2)
  r = f32[4] reduce(x, z), dimensions={1}, to_apply=mul_add
  r0 = f32[4] reduce(e, z), dimensions={1}, to_apply=mul_add
  ROOT t = (f32[4], f32[4]) tuple(r, r0)
}"""
    module = parse_module(text)
    x = np.random.default_rng(0).normal(size=(4, 45)).astype(np.float32)
    e = np.zeros((4, 0), np.float32)
    got = GpuExecutable(module, EmulatedRuntime()).execute_host([x, e])
    np.testing.assert_allclose(got[0], 2 + x.sum(1), rtol=1e-5)
    np.testing.assert_array_equal(got[1], [2, 2, 2, 2])


def test_run_computation_checks_grid_stride_loops():
    """A loop kernel run with a single block of 256 threads still covers 1003 elements."""
    module = _module("f32", ["negate"], [], n=N)
    comp = module.entry
    from minijax.compiler.codegen.kernel_plan import wrap_instruction
    neg = next(i for i in comp.instructions if i.opcode == "negate")
    wrapped, _ = wrap_instruction(neg)
    x = np.arange(N, dtype=np.float32)
    out = run_computation(wrapped, [x], max_blocks=1)
    np.testing.assert_array_equal(out[0], -x)


@pytest.mark.parametrize("dtype,trans", [(np.float32, (False, False)),
                                         (np.float32, (True, True)),
                                         (np.int32, (False, True)),
                                         (np.float16, (True, False))])
def test_generated_gemm_matches_evaluator(dtype, trans):
    """The tiled GEMM kernel (the dot fallback without cuBLAS): batched, transposed operands,
    sizes that are not multiples of the 16x16 tile; it assembles for sm_80/sm_90 too."""
    rng = np.random.default_rng(7)
    b, m, k, n = 2, 19, 37, 21
    ta, tb = trans
    lhs = (b, k, m) if ta else (b, m, k)
    rhs = (b, n, k) if tb else (b, k, n)
    lc, rc = (1 if ta else 2), (2 if tb else 1)
    et = {np.float32: "f32", np.int32: "s32", np.float16: "f16"}[dtype]
    text = f"""HloModule gemm
ENTRY main {{
  a = {et}[{','.join(map(str, lhs))}] parameter(0)
  b = {et}[{','.join(map(str, rhs))}] parameter(1)
  ROOT d = {et}[{b},{m},{n}] dot(a, b), lhs_batch_dims={{0}}, rhs_batch_dims={{0}},
    lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}
}}"""
    module = parse_module(text)
    x = (rng.integers(-9, 9, lhs) if dtype == np.int32 else rng.normal(size=lhs)).astype(dtype)
    y = (rng.integers(-9, 9, rhs) if dtype == np.int32 else rng.normal(size=rhs)).astype(dtype)
    ex = GpuExecutable(module, EmulatedRuntime(gemm=False))
    assert [k.mode for k in ex.kernels] == ["gemm"] and not ex.host_steps()
    got = ex.execute_host([x, y])[0]
    ref = evaluate_module(module, [x, y])[0]
    if dtype == np.int32:
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=2e-3 if dtype == np.float16 else 2e-5,
                                   atol=1e-2 if dtype == np.float16 else 1e-5)
    _assembles(ex)
