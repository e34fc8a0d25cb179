"""The GPU's dedicated kernels (gather, scatter, sort, topk, reduce-window,
select-and-scatter, convolution) without a GPU: HLO modules over hypothesis-drawn shapes,
dtypes and edge values (out-of-range gather/scatter indices, NaN/-0/ties in sorts) run on
the emulated runtime, whose every global load/store is bounds-checked, and match the HLO
evaluator (bit for bit where the order of operations is the evaluator's); their PTX
assembles with ptxas for sm_80 and sm_90."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("llvmlite", reason="GPU code generation needs llvmlite")

import minijax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.backends import get_backend  # noqa: E402
from minijax.backends.cuda import NO_GPU  # noqa: E402
from minijax.backends.cuda.driver import cuda_devices  # noqa: E402
from minijax.backends.cuda.emulated import EmulatedRuntime  # noqa: E402
from minijax.backends.cuda.program import GpuExecutable  # noqa: E402
from minijax.compiler.codegen.gpu import nvvm  # noqa: E402
from minijax.compiler.codegen.gpu import ptx as ptxmod  # noqa: E402
from minijax.compiler.codegen.gpu.emulate import HostKernels, host_ir  # noqa: E402
from minijax.compiler.codegen.gpu.function import KernelFunction, stride_loop  # noqa: E402
from minijax.compiler.codegen.llvm_types import I64, const  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.compiler.options import CompileOptions  # noqa: E402
from minijax.compiler.pipeline import optimize  # noqa: E402

DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "s32": np.int32,
          "u8": np.uint8, "s64": np.int64, "bf16": jnp.bfloat16}
FLOATS = ("f32", "f16", "f64", "bf16")


def _module(body: str, computations: str = "") -> object:
    return parse_module(f"HloModule m\n{computations}\nENTRY main {{\n  {body}\n}}\n")


def _binary(name: str, et: str, op: str) -> str:
    root = "b" if op == "set" else f"{op}(a, b)"
    if op == "set":
        return (f"{name} {{\n  a = {et}[] parameter(0)\n  ROOT b = {et}[] parameter(1)\n}}\n")
    return (f"{name} {{\n  a = {et}[] parameter(0)\n  b = {et}[] parameter(1)\n"
            f"  ROOT r = {et}[] {root}\n}}\n")


def _bits(a: np.ndarray) -> np.ndarray:
    """Floats as their bits (NaNs compare by payload), everything else as is."""
    a = np.asarray(a)
    if a.dtype.kind == "f" or a.dtype == jnp.bfloat16:
        return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
    return a


def _run(module, args, exact=True, rtol=0.0):
    """The module on the emulated GPU (grid cut to 2 blocks) and on the evaluator; every
    step must be a device kernel."""
    ex = GpuExecutable(module, EmulatedRuntime(max_blocks=2))
    assert not ex.host_steps(), ex.host_steps()
    with np.errstate(all="ignore"):
        got = ex.execute_host(args)
        ref = evaluate_module(module, args)
    ref = ref if isinstance(ref, (list, tuple)) else [ref]
    for k, (g, r) in enumerate(zip(got, ref)):
        r = np.asarray(r)
        assert g.dtype == r.dtype and g.shape == r.shape, k
        if exact:
            np.testing.assert_array_equal(_bits(g), _bits(r), err_msg=f"output {k}")
        else:
            np.testing.assert_allclose(g.astype(np.float64), r.astype(np.float64), rtol=rtol,
                                       atol=rtol, err_msg=f"output {k}")
    return ex


def _values(et: str, shape, rng, edge=True) -> np.ndarray:
    dt = DTYPES[et]
    if et in FLOATS:
        x = rng.normal(size=shape) * 3
        if edge and x.size:
            flat = x.reshape(-1)
            picks = rng.integers(0, flat.size, size=min(4, flat.size))
            flat[picks] = rng.choice([0.0, -0.0, np.inf, -np.inf], size=len(picks))
        return np.asarray(x).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -100), min(info.max, 100), size=shape,
                        endpoint=True).astype(dt)


# ------------------------------------------------------------------ gather / scatter


@settings(max_examples=8)
@given(st.sampled_from(list(DTYPES)), st.integers(1, 9), st.integers(1, 7),
       st.integers(0, 12), st.sampled_from(["s32", "s64", "u8"]), st.integers(0, 2 ** 16))
def test_gather_rows_clamps_out_of_range_indices(et, a, b, n, it, seed):
    rng = np.random.default_rng(seed)
    m = _module(f"op = {et}[{a},{b}] parameter(0)\n  idx = {it}[{n},1] parameter(1)\n"
                f"  ROOT g = {et}[{n},{b}] gather(op, idx), offset_dims={{1}}, "
                f"collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim=1, "
                f"slice_sizes={{1,{b}}}")
    lo = 0 if it == "u8" else -3
    idx = rng.integers(lo, a + 4, size=(n, 1)).astype(DTYPES[it])
    _run(m, [_values(et, (a, b), rng), idx])


@settings(max_examples=8)
@given(st.sampled_from(["f32", "s32", "bf16"]), st.integers(1, 8), st.integers(1, 8),
       st.integers(1, 8), st.integers(1, 8), st.integers(0, 9), st.integers(0, 2 ** 16))
def test_gather_windows_clamp_to_fit(et, a, b, sa, sb, n, seed):
    sa, sb = min(sa, a), min(sb, b)
    rng = np.random.default_rng(seed)
    m = _module(f"op = {et}[{a},{b}] parameter(0)\n  idx = s32[{n},2] parameter(1)\n"
                f"  ROOT g = {et}[{n},{sa},{sb}] gather(op, idx), offset_dims={{1,2}}, "
                f"collapsed_slice_dims={{}}, start_index_map={{1,0}}, index_vector_dim=1, "
                f"slice_sizes={{{sa},{sb}}}")
    idx = rng.integers(-5, max(a, b) + 5, size=(n, 2)).astype(np.int32)
    _run(m, [_values(et, (a, b), rng), idx])


def test_gather_with_batching_dims():
    rng = np.random.default_rng(0)
    m = _module("op = f32[3,5,4] parameter(0)\n  idx = s32[3,6,1] parameter(1)\n"
                "  ROOT g = f32[3,6,4] gather(op, idx), offset_dims={2}, "
                "collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, "
                "start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,4}")
    idx = rng.integers(-2, 7, size=(3, 6, 1)).astype(np.int32)
    _run(m, [rng.normal(size=(3, 5, 4)).astype(np.float32), idx])



@pytest.mark.parametrize("window, mode", [(1, "window"), (2, "element")])
def test_scatter_with_batching_dims(window, mode):
    """Operand batching dims start at the update's batch position, in both scatter modes
    (the window start logic gather shares)."""
    rng = np.random.default_rng(1)
    wdims, inserted = ("{2}", "{1}") if window == 1 else ("{2,3}", "{}")
    upd_shape = (3, 6, 4) if window == 1 else (3, 6, 2, 4)
    m = _module("op = f32[3,5,4] parameter(0)\n  idx = s32[3,6,1] parameter(1)\n"
                f"  upd = f32[{','.join(map(str, upd_shape))}] parameter(2)\n"
                f"  ROOT s = f32[3,5,4] scatter(op, idx, upd), update_window_dims={wdims}, "
                f"inserted_window_dims={inserted}, scatter_dims_to_operand_dims={{1}}, "
                "input_batching_dims={0}, scatter_indices_batching_dims={0}, "
                "index_vector_dim=2, to_apply=comb", _binary("comb", "f32", "add"))
    idx = rng.integers(-1, 6, size=(3, 6, 1)).astype(np.int32)
    ex = _run(m, [rng.normal(size=(3, 5, 4)).astype(np.float32), idx,
                  rng.normal(size=upd_shape).astype(np.float32)])
    assert f"scatter ({mode})" in ex.as_text()

@settings(max_examples=10)
@given(st.sampled_from(list(DTYPES)), st.sampled_from(["add", "maximum", "set", "multiply"]),
       st.integers(1, 9), st.integers(1, 6), st.integers(0, 30), st.integers(0, 2 ** 16))
def test_scatter_rows_in_order_dropping_out_of_range(et, op, a, b, n, seed):
    """Repeated indices combine in update order: float sums are bitwise the evaluator's
    (sequential) ones; out-of-range rows are dropped."""
    rng = np.random.default_rng(seed)
    m = _module(f"op = {et}[{a},{b}] parameter(0)\n  idx = s32[{n},1] parameter(1)\n"
                f"  upd = {et}[{n},{b}] parameter(2)\n"
                f"  ROOT s = {et}[{a},{b}] scatter(op, idx, upd), update_window_dims={{1}}, "
                f"inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, "
                f"index_vector_dim=1, to_apply=comb", _binary("comb", et, op))
    idx = rng.integers(-2, a + 2, size=(n, 1)).astype(np.int32)
    ex = _run(m, [_values(et, (a, b), rng), idx, _values(et, (n, b), rng)])
    assert "scatter (window)" in ex.as_text()


@settings(max_examples=8)
@given(st.sampled_from(["f32", "s32", "f16"]), st.sampled_from(["add", "set", "minimum"]),
       st.integers(2, 8), st.integers(2, 8), st.integers(2, 3), st.integers(1, 3),
       st.integers(0, 12), st.integers(0, 2 ** 16))
def test_scatter_overlapping_windows(et, op, a, b, wa, wb, n, seed):
    """Windows wider than 1 along scattered dims overlap: one thread per output element."""
    rng = np.random.default_rng(seed)
    wa, wb = min(wa, a), min(wb, b)
    m = _module(f"op = {et}[{a},{b}] parameter(0)\n  idx = s32[{n},2] parameter(1)\n"
                f"  upd = {et}[{n},{wa},{wb}] parameter(2)\n"
                f"  ROOT s = {et}[{a},{b}] scatter(op, idx, upd), update_window_dims={{1,2}}, "
                f"inserted_window_dims={{}}, scatter_dims_to_operand_dims={{0,1}}, "
                f"index_vector_dim=1, to_apply=comb", _binary("comb", et, op))
    idx = rng.integers(-1, max(a, b) + 1, size=(n, 2)).astype(np.int32)
    ex = _run(m, [_values(et, (a, b), rng, edge=False), idx,
                  _values(et, (n, wa, wb), rng, edge=False)])
    assert "scatter (element)" in ex.as_text()


def test_variadic_scatter():
    comp = ("comb {\n  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n"
            "  c = f32[] parameter(2)\n  d = s32[] parameter(3)\n  s = f32[] add(a, c)\n"
            "  m = s32[] maximum(b, d)\n  ROOT t = (f32[], s32[]) tuple(s, m)\n}\n")
    m = _module("x = f32[6] parameter(0)\n  y = s32[6] parameter(1)\n"
                "  idx = s32[9,1] parameter(2)\n  u = f32[9] parameter(3)\n"
                "  v = s32[9] parameter(4)\n"
                "  ROOT s = (f32[6], s32[6]) scatter(x, y, idx, u, v), update_window_dims={}, "
                "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                "index_vector_dim=1, to_apply=comb", comp)
    rng = np.random.default_rng(1)
    _run(m, [rng.normal(size=6).astype(np.float32), rng.integers(-9, 9, 6).astype(np.int32),
             np.array([[0], [5], [5], [-1], [6], [2], [0], [5], [3]], np.int32),
             rng.normal(size=9).astype(np.float32), rng.integers(-9, 9, 9).astype(np.int32)])


# ------------------------------------------------------------------ sort / topk


@settings(max_examples=10)
@given(st.sampled_from(["f32", "s32", "f16", "u8", "bf16", "f64"]), st.integers(0, 5),
       st.integers(0, 70), st.sampled_from([0, 1]), st.sampled_from(["LT", "GT"]),
       st.integers(0, 2 ** 16))
def test_sort_two_operands_stable_by_key(et, rows, n, dim, direction, seed):
    """Keys from a few values (many ties): the payload shows the order is the stable one."""
    rng = np.random.default_rng(seed)
    shape = (rows, n) if dim == 1 else (n, rows)
    dims = ",".join(map(str, shape))
    comp = (f"cmp {{\n  a = {et}[] parameter(0)\n  b = {et}[] parameter(1)\n"
            f"  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
            f"  ROOT r = pred[] compare(a, b), direction={direction}\n}}\n")
    m = _module(f"k = {et}[{dims}] parameter(0)\n  v = s32[{dims}] parameter(1)\n"
                f"  ROOT s = ({et}[{dims}], s32[{dims}]) sort(k, v), dimensions={{{dim}}}, "
                f"is_stable=true, to_apply=cmp", comp)
    keys = rng.integers(0, 4, size=shape).astype(DTYPES[et])
    payload = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    _run(m, [keys, payload])


@settings(max_examples=6)
@given(st.sampled_from([np.float32, np.float16, np.int32]), st.integers(1, 4),
       st.integers(1, 40), st.integers(0, 2 ** 16))
def test_frontend_sort_and_argsort_with_nan_and_signed_zeros(dtype, rows, n, seed):
    rng = np.random.default_rng(seed)
    x = _values("f32", (rows, n), rng, edge=dtype != np.int32).astype(dtype)
    if x.dtype.kind == "f":
        x.reshape(-1)[rng.integers(0, x.size, size=3)] = np.nan
    f = minijax.jit(lambda v: (jnp.sort(v, axis=1), jnp.argsort(-v, axis=1),
                               jnp.sort(v, axis=0)))
    _run(optimize(f.lower(x).module, CompileOptions()), [x])


@settings(max_examples=8)
@given(st.sampled_from(["f32", "f16", "bf16", "f64", "s32", "u8"]), st.integers(0, 4),
       st.integers(1, 50), st.integers(0, 50), st.booleans(), st.integers(0, 2 ** 16))
def test_topk_total_order(et, rows, n, k, largest, seed):
    """NaNs (any sign) above everything, -0 below +0, ties: lower position first."""
    k = min(k, n)
    rng = np.random.default_rng(seed)
    x = _values(et, (rows, n), rng)
    if et in FLOATS and x.size:
        x.reshape(-1)[rng.integers(0, x.size, size=2)] = np.array([np.nan, -np.nan]).astype(
            x.dtype)
        x.reshape(-1)[rng.integers(0, x.size, size=3)] = x.reshape(-1)[0]
    m = _module(f"x = {et}[{rows},{n}] parameter(0)\n"
                f"  ROOT t = ({et}[{rows},{k}], s32[{rows},{k}]) topk(x), k={k}, "
                f"largest={'true' if largest else 'false'}")
    _run(m, [x])


def test_topk_of_jax_value():
    """lax.top_k on the emulated GPU gives JAX's values (hard-coded from JAX 0.10)."""
    x = np.array([[1.0, np.nan, -0.0, 0.0, 3.0, 3.0]], np.float32)
    m = optimize(minijax.jit(lambda v: lax.top_k(v, 4)).lower(x).module, CompileOptions())
    ex = GpuExecutable(m, EmulatedRuntime(max_blocks=2))
    vals, idx = ex.execute_host([x])
    np.testing.assert_array_equal(idx, [[1, 4, 5, 0]])    # JAX: [[1, 4, 5, 0]]
    np.testing.assert_array_equal(vals, [[np.nan, 3.0, 3.0, 1.0]])


# ------------------------------------------------------------------ windows


def _window(size, stride, pad, lhs=None, rhs=None) -> str:
    out = (f"size={'x'.join(map(str, size))} stride={'x'.join(map(str, stride))} "
           f"pad={'x'.join(f'{a}_{b}' for a, b in pad)}")
    if lhs:
        out += f" lhs_dilate={'x'.join(map(str, lhs))}"
    if rhs:
        out += f" rhs_dilate={'x'.join(map(str, rhs))}"
    return out


def _window_out(n, k, s, pad, ld=1, rd=1):
    padded = (n - 1) * ld + 1 + pad[0] + pad[1] if n else pad[0] + pad[1]
    span = (k - 1) * rd + 1
    return (padded - span) // s + 1 if padded >= span else 0


@settings(max_examples=10)
@given(st.sampled_from(["f32", "s32", "f16", "bf16"]), st.sampled_from(["add", "maximum"]),
       st.lists(st.integers(1, 7), min_size=2, max_size=2),
       st.lists(st.integers(1, 3), min_size=2, max_size=2),
       st.lists(st.integers(1, 3), min_size=2, max_size=2),
       st.lists(st.tuples(st.integers(-1, 2), st.integers(0, 2)), min_size=2, max_size=2),
       st.lists(st.integers(1, 2), min_size=2, max_size=2),
       st.lists(st.integers(1, 2), min_size=2, max_size=2), st.integers(0, 2 ** 16))
def test_reduce_window(et, op, dims, size, stride, pad, lhs, rhs, seed):
    out = [_window_out(n, k, s, p, ld, rd)
           for n, k, s, p, ld, rd in zip(dims, size, stride, pad, lhs, rhs)]
    rng = np.random.default_rng(seed)
    init = "0" if op == "add" else "-inf" if et in FLOATS else "-2147483648"
    m = _module(f"x = {et}[{dims[0]},{dims[1]}] parameter(0)\n"
                f"  z = {et}[] constant({init})\n"
                f"  ROOT r = {et}[{out[0]},{out[1]}] reduce-window(x, z), "
                f"window={{{_window(size, stride, pad, lhs, rhs)}}}, to_apply=comb",
                _binary("comb", et, op))
    _run(m, [_values(et, tuple(dims), rng)])


@settings(max_examples=8)
@given(st.sampled_from(["f32", "s32"]), st.sampled_from(["GE", "GT", "LE"]),
       st.lists(st.integers(1, 8), min_size=2, max_size=2),
       st.lists(st.integers(1, 3), min_size=2, max_size=2),
       st.lists(st.integers(1, 3), min_size=2, max_size=2),
       st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=2, max_size=2),
       st.integers(0, 2 ** 16))
def test_select_and_scatter(et, direction, dims, size, stride, pad, seed):
    out = [_window_out(n, k, s, p) for n, k, s, p in zip(dims, size, stride, pad)]
    rng = np.random.default_rng(seed)
    comps = (f"sel {{\n  a = {et}[] parameter(0)\n  b = {et}[] parameter(1)\n"
             f"  ROOT r = pred[] compare(a, b), direction={direction}\n}}\n"
             + _binary("add", et, "add"))
    m = _module(f"x = {et}[{dims[0]},{dims[1]}] parameter(0)\n"
                f"  src = {et}[{out[0]},{out[1]}] parameter(1)\n  z = {et}[] constant(1)\n"
                f"  ROOT r = {et}[{dims[0]},{dims[1]}] select-and-scatter(x, src, z), "
                f"window={{{_window(size, stride, pad)}}}, select=sel, scatter=add", comps)
    x = rng.integers(0, 4, size=dims).astype(DTYPES[et])       # ties: first one wins
    _run(m, [x, _values(et, tuple(out), rng, edge=False)])


@settings(max_examples=8)
@given(st.sampled_from(["f32", "f64", "f16", "s32"]), st.integers(1, 2), st.integers(1, 3),
       st.integers(1, 4), st.lists(st.integers(1, 7), min_size=2, max_size=2),
       st.lists(st.integers(1, 3), min_size=2, max_size=2),
       st.lists(st.integers(1, 2), min_size=2, max_size=2),
       st.lists(st.tuples(st.integers(-1, 2), st.integers(0, 2)), min_size=2, max_size=2),
       st.lists(st.integers(1, 2), min_size=2, max_size=2),
       st.lists(st.integers(1, 2), min_size=2, max_size=2), st.integers(0, 2 ** 16))
def test_convolution(et, batch, groups, per_group, sp, ksize, stride, pad, lhs, rhs, seed):
    rng = np.random.default_rng(seed)
    cin, cout = 2 * groups, per_group * groups
    out = [_window_out(n, k, s, p, ld, rd)
           for n, k, s, p, ld, rd in zip(sp, ksize, stride, pad, lhs, rhs)]
    m = _module(f"x = {et}[{batch},{sp[0]},{sp[1]},{cin}] parameter(0)\n"
                f"  w = {et}[{ksize[0]},{ksize[1]},2,{cout}] parameter(1)\n"
                f"  ROOT c = {et}[{batch},{out[0]},{out[1]},{cout}] convolution(x, w), "
                f"window={{{_window(ksize, stride, pad, lhs, rhs)}}}, "
                f"dim_labels=b01f_01io->b01f, feature_group_count={groups}")
    x = _values(et, (batch, sp[0], sp[1], cin), rng, edge=False)
    w = _values(et, (ksize[0], ksize[1], 2, cout), rng, edge=False)
    if et == "s32":
        _run(m, [x, w])
    else:
        _run(m, [x, w], exact=False, rtol={"f16": 2e-2, "f32": 1e-5, "f64": 1e-12}[et])


def test_batch_group_convolution_of_a_weight_gradient():
    """The weight gradient of a grouped convolution (batch_group_count) on the device."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 6, 5, 4)).astype(np.float32)
    w = rng.normal(size=(3, 3, 2, 6)).astype(np.float32)

    def loss(a, b):
        return lax.conv_general_dilated(a, b, (1, 1), "SAME", feature_group_count=2,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC")).sum()
    f = minijax.jit(minijax.grad(loss, argnums=(0, 1)))
    _run(optimize(f.lower(x, w).module, CompileOptions()), [x, w], exact=False, rtol=1e-4)


# ------------------------------------------------------------------ whole programs, PTX


def _cnn_step_module():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 8, 8, 3)).astype(np.float32)
    w = rng.normal(size=(3, 3, 3, 4)).astype(np.float32) * 0.3
    labels = np.array([1, 3], np.int32)
    emb = rng.normal(size=(10, 4)).astype(np.float32)

    def loss(w, emb, x, labels):
        h = lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = lax.reduce_window(jnp.maximum(h, 0), -jnp.inf, lax.max, (1, 2, 2, 1),
                              (1, 2, 2, 1), "VALID")
        logits = h.mean(axis=(1, 2)) @ emb.T
        top = lax.top_k(logits, 2)[0].sum()
        return -jnp.take_along_axis(minijax.nn.log_softmax(logits), labels[:, None],
                                    axis=1).sum() + 0.01 * top + jnp.sort(logits)[:, 0].sum()
    f = minijax.jit(minijax.value_and_grad(loss, argnums=(0, 1)))
    args = [w, emb, x, labels]
    return optimize(f.lower(*args).module, CompileOptions()), args


def test_cnn_training_step_runs_entirely_on_the_device():
    module, args = _cnn_step_module()
    ex = _run(module, args, exact=False, rtol=2e-4)
    text = ex.as_text()
    for kind in ("convolution (direct)", "reduce-window", "select-and-scatter", "topk",
                 "sort (bitonic", "gather", "scatter"):
        assert kind in text, kind


def test_op_kernels_ptx_assembles():
    if ptxmod.ptxas_path() is None:
        pytest.skip("ptxas is not installed (CUDA toolkit): PTX not assembled")
    module, _ = _cnn_step_module()
    ex = GpuExecutable(module, EmulatedRuntime())
    comps = (_binary("comb", "f32", "add") + "cmp {\n  a = f16[] parameter(0)\n"
             "  b = f16[] parameter(1)\n  ROOT r = pred[] compare(a, b), direction=LT\n}\n")
    extra = _module("op = bf16[9,4] parameter(0)\n  idx = s64[5,1] parameter(1)\n"
                    "  h = f16[7,5] parameter(2)\n  u = f32[5,4] parameter(3)\n"
                    "  o = f32[9,4] parameter(4)\n"
                    "  g = bf16[5,4] gather(op, idx), offset_dims={1}, "
                    "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
                    "slice_sizes={1,4}\n"
                    "  s = f32[9,4] scatter(o, idx, u), update_window_dims={1}, "
                    "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                    "index_vector_dim=1, to_apply=comb\n"
                    "  t = f16[7,5] sort(h), dimensions={1}, to_apply=cmp\n"
                    "  k = (f16[7,2], s32[7,2]) topk(h), k=2, largest=false\n"
                    "  ROOT r = (bf16[5,4], f32[9,4], f16[7,5], (f16[7,2], s32[7,2])) "
                    "tuple(g, s, t, k)", comps)
    for executable in (ex, GpuExecutable(extra, EmulatedRuntime())):
        assert not executable.host_steps(), executable.host_steps()
        for arch in ptxmod.ARCHS:
            text = ptxmod.compile_ptx(executable.ir_text, arch)
            assert ptxmod.assemble(text, arch)


@pytest.mark.skipif(not cuda_devices(), reason=f"needs a real NVIDIA GPU ({NO_GPU})")
def test_real_gpu_runs_the_op_kernels():
    """The CNN step (conv, pooling and its gradient, top-k, sort, gather, scatter) on the
    real GPU: no host step, values as the evaluator's."""
    module, args = _cnn_step_module()
    ex = get_backend("cuda").compile(module)
    assert not ex.host_steps(), ex.host_steps()
    ref = evaluate_module(module, args)
    for g, r in zip(ex.execute_host(args), ref):
        np.testing.assert_allclose(g, np.asarray(r), rtol=2e-4, atol=2e-4)


# ------------------------------------------------------------------ the emulator's checks


def _off_by_one_module(n: int):
    """A kernel writing out[i + 1] for i < n: its last store is one element too far."""
    module = nvvm.new_module("oob")
    comp = _module(f"x = f32[{n}] parameter(0)\n  ROOT y = f32[{n}] negate(x)").entry
    f = KernelFunction(module, "oob", comp, [comp.root.shape])
    b = f.b
    with stride_loop(b, f.global_id(), const(I64, n), f.grid_size()) as i:
        v = b.load(b.gep(f.param_ptrs[0], [i], inbounds=True))
        b.store(v, b.gep(f.out_ptrs[0], [b.add(i, const(I64, 1))], inbounds=True))
    f.finish()
    return str(module)


def test_emulator_reports_out_of_bounds_global_accesses():
    host = HostKernels(_off_by_one_module(10))
    x, y = np.ones(10, np.float32), np.zeros(10, np.float32)
    with pytest.raises(IndexError, match="kernel oob: 1 global access"):
        host.launch("oob", 1, 32, [x, y, np.zeros(16, np.uint8)])
    assert y[1:].tolist() == [1.0] * 9          # the in-bounds stores happened
    host.launch("oob", 1, 32, [x, np.zeros(11, np.float32), np.zeros(16, np.uint8)])
    rt = EmulatedRuntime()                       # device buffers: sizes as allocated
    mod = rt.load_kernels(_off_by_one_module(10), ["oob"])
    a, out = rt.upload(x), rt.allocate(40)
    with pytest.raises(IndexError, match="outside its buffers"):
        mod.launch("oob", 1, 32, [a.ptr, out.ptr, 0])


def test_emulated_launches_name_no_unknown_ir():
    """The bounds check rewrites exactly the global loads/stores of a module."""
    host = host_ir(_off_by_one_module(4))
    assert host.count("@minijax_emu_checked(") == 3   # one load, one store, the definition
    assert "addrspace" not in host


def test_sort_scratch_is_bounded_for_long_rows():
    """Each row in flight holds next_pow2(n) int32 slots: long rows get fewer blocks."""
    comp = ("cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT r = pred[] compare(a, b), direction=LT\n}\n")
    m = _module("x = f32[64,4000000] parameter(0)\n"
                "  ROOT s = f32[64,4000000] sort(x), dimensions={1}, to_apply=cmp", comp)
    (kernel,) = GpuExecutable(m, EmulatedRuntime()).kernels
    assert kernel.scratch_bytes <= 256 << 20
    assert kernel.launches[0].grid * (1 << 22) * 4 == kernel.scratch_bytes
