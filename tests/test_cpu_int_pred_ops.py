"""Every elementwise opcode on pred and on every integer width: CPU code == HLO evaluator ==
XLA (issue 14: the CPU backend computed add on pred as xor).

Per element type one HLO module holds every unary and binary opcode, the six compares, select,
clamp and a convert to every other type; it is compiled once and run on hypothesis-drawn
operands made of edge values (0, 1, -1, MIN, MAX, shift amounts around the bit width). XLA's
own results for the cases where its semantics are not the obvious ones are hard-coded (taken
from XLA:CPU through jaxlib, with JAX's compile options); where jaxlib can run HLO text the
last test compares against XLA:CPU directly.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")

from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402

N = 67  # odd: leaves vector remainders
TYPES = {"pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
         "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}
UNARY = ["abs", "negate", "sign", "not", "popcnt", "count-leading-zeros", "copy"]
BINARY = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power",
          "and", "or", "xor", "shift-left", "shift-right-logical", "shift-right-arithmetic"]
COMPARES = ["EQ", "NE", "LT", "LE", "GT", "GE"]
CONVERT_TO = list(TYPES) + ["f16", "f32", "f64"]


def _module_text(et: str) -> tuple[str, list[str]]:
    shape = f"{et}[{N}]"
    lines = [f"x = {shape} parameter(0)", f"y = {shape} parameter(1)",
             f"z = {shape} parameter(2)"]
    outs = []
    for k, op in enumerate(UNARY):
        lines.append(f"u{k} = {shape} {op}(x)")
        outs.append((f"u{k}", shape, op))
    for k, op in enumerate(BINARY):
        lines.append(f"b{k} = {shape} {op}(x, y)")
        outs.append((f"b{k}", shape, op))
    for d in COMPARES:
        lines.append(f"c{d} = pred[{N}] compare(x, y), direction={d}")
        outs.append((f"c{d}", f"pred[{N}]", f"compare {d}"))
    lines.append(f"p = pred[{N}] compare(y, z), direction=LT")
    lines.append(f"sel = {shape} select(p, x, z)")
    lines.append(f"clp = {shape} clamp(y, x, z)")
    outs += [("sel", shape, "select"), ("clp", shape, "clamp")]
    for dst in CONVERT_TO:
        if dst != et:
            lines.append(f"cv_{dst} = {dst}[{N}] convert(x)")
            outs.append((f"cv_{dst}", f"{dst}[{N}]", f"convert to {dst}"))
    root = (f"ROOT out = ({', '.join(t for _, t, _ in outs)}) "
            f"tuple({', '.join(n for n, _, _ in outs)})")
    text = "HloModule ops_" + et + "\nENTRY main {\n  " + "\n  ".join(lines + [root]) + "\n}\n"
    return text, [label for _, _, label in outs]


_COMPILED: dict[str, tuple] = {}


def _compiled(et: str):
    if et not in _COMPILED:
        text, labels = _module_text(et)
        _COMPILED[et] = (parse_module(text), CpuBackend().compile(parse_module(text)), labels)
    return _COMPILED[et]


def _edges(dtype) -> list[int]:
    if dtype == np.bool_:
        return [0, 1]
    info = np.iinfo(dtype)
    bits = info.bits
    values = [0, 1, 2, 3, 7, int(info.max), int(info.max) - 1, int(info.min),
              int(info.min) + 1, bits - 1, bits, bits + 1, 63, 64, 65]
    if info.min < 0:
        values += [-1, -2, -3, -7, -bits]
    return [v for v in values if info.min <= v <= info.max]


def _operands(dtype):
    if dtype == np.bool_:
        return hnp.arrays(np.bool_, N)
    info = np.iinfo(dtype)
    return hnp.arrays(dtype, N, elements=st.one_of(
        st.sampled_from(_edges(dtype)), st.integers(int(info.min), int(info.max))))


def _run_both(et, args):
    module, exe, labels = _compiled(et)
    with np.errstate(all="ignore"):
        want = evaluate_module(module, args)
    got = exe.execute(args)
    return got, want, labels


def _assert_same(got, want, labels, args):
    for g, w, label in zip(got, want, labels):
        assert g.dtype == w.dtype, label
        same = (g == w) | (np.isnan(g) & np.isnan(w)) if g.dtype.kind == "f" else g == w
        if not same.all():
            k = int(np.argmin(same))
            pytest.fail(f"{label} on {args[0].dtype}: operands {[a[k] for a in args]}: "
                        f"CPU {g[k]!r}, evaluator {w[k]!r}")


@pytest.mark.parametrize("et", list(TYPES))
@settings(max_examples=15)
@given(data=st.data())
def test_every_elementwise_opcode_cpu_matches_evaluator(et, data):
    dtype = TYPES[et]
    args = [data.draw(_operands(dtype)) for _ in range(3)]
    got, want, labels = _run_both(et, args)
    _assert_same(got, want, labels, args)


@pytest.mark.parametrize("et", list(TYPES))
def test_all_pairs_of_edge_values(et):
    """Every (x, y) pair of edge values once (hypothesis may miss a particular pair)."""
    dtype = TYPES[et]
    pairs = list(itertools.product(_edges(dtype), repeat=2))
    for start in range(0, len(pairs), N):
        chunk = pairs[start:start + N]
        chunk += [chunk[-1]] * (N - len(chunk))
        x = np.array([p[0] for p in chunk], dtype=dtype)
        y = np.array([p[1] for p in chunk], dtype=dtype)
        args = [x, y, np.roll(y, 1)]
        got, want, labels = _run_both(et, args)
        _assert_same(got, want, labels, args)


def _xla_semantics_module(et, ops):
    lines = [f"x = {et}[4] parameter(0)", f"y = {et}[4] parameter(1)"]
    for k, op in enumerate(ops):
        lines.append(f"r{k} = {et}[4] {op}(x, y)")
    root = (f"ROOT out = ({', '.join([f'{et}[4]'] * len(ops))}) "
            f"tuple({', '.join(f'r{k}' for k in range(len(ops)))})")
    return parse_module("HloModule sem\nENTRY main {\n  " + "\n  ".join(lines + [root])
                        + "\n}\n")


def _both_backends(module, args):
    return evaluate_module(module, args), CpuBackend().compile(module).execute(args)


def test_pred_arithmetic_is_integer_arithmetic_then_nonzero():
    x = np.array([0, 0, 1, 1], bool)
    y = np.array([0, 1, 0, 1], bool)
    ops = ["add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum"]
    # add, multiply, maximum, minimum: XLA:CPU's values; the rest: 0/1 integer arithmetic
    # converted with != 0 (x / 0 is all ones, x % 0 is x).
    expect = {"add": [0, 1, 1, 1], "subtract": [0, 1, 1, 0], "multiply": [0, 0, 0, 1],
              "divide": [1, 0, 1, 1], "remainder": [0, 0, 1, 0], "power": [1, 0, 1, 1],
              "maximum": [0, 1, 1, 1], "minimum": [0, 0, 0, 1]}
    for outs in _both_backends(_xla_semantics_module("pred", ops), [x, y]):
        for op, got in zip(ops, outs):
            np.testing.assert_array_equal(got, np.array(expect[op], bool), err_msg=op)


def test_integer_power_and_unsigned_arithmetic_shift_follow_xla_cpu():
    # XLA:CPU's values: the exponent is read as signed and only its low 6 bits count;
    # an arithmetic right shift fills with the top bit for unsigned types too.
    cases = [
        ("s16", [-7, 3, -128, 2], [32766, 64, 64, -1], "power", [-20783, 1, 1, 0]),
        ("u8", [3, 1, 255, 255], [254, 255, 255, 254], "power", [0, 1, 255, 1]),
        ("s8", [-1, -1, -128, 5], [-3, -2, 64, 65], "power", [-1, 1, 1, 5]),
        ("u32", [4294967294, 2147483648, 7, 4294967295], [1, 31, 1, 32],
         "shift-right-arithmetic", [4294967295, 4294967295, 3, 4294967295]),
        ("u8", [254, 128, 127, 255], [1, 7, 1, 200], "shift-right-arithmetic",
         [255, 255, 63, 255]),
    ]
    for et, x, y, op, want in cases:
        dtype = TYPES[et]
        args = [np.array(x).astype(dtype), np.array(y).astype(dtype)]
        for outs in _both_backends(_xla_semantics_module(et, [op]), args):
            np.testing.assert_array_equal(outs[0], np.array(want).astype(dtype),
                                          err_msg=f"{op} on {et}")


def test_float_maximum_minimum_clamp_signed_zeros_and_nan():
    # XLA:CPU: maximum/minimum propagate NaN and order -0 below +0; clamp is built from them.
    z, nz, nan = 0.0, -0.0, np.nan
    for dtype, et in ((np.float32, "f32"), (np.float64, "f64"), (np.float16, "f16")):
        x = np.array([z, nz, nan, 1.0], dtype)
        y = np.array([nz, z, 1.0, nan], dtype)
        text = f"""HloModule mm
ENTRY main {{
  x = {et}[4] parameter(0)
  y = {et}[4] parameter(1)
  lo = {et}[] constant(0)
  l = {et}[4] broadcast(lo), dimensions={{}}
  mx = {et}[4] maximum(x, y)
  mn = {et}[4] minimum(x, y)
  cl = {et}[4] clamp(l, x, y)
  ROOT out = ({et}[4], {et}[4], {et}[4]) tuple(mx, mn, cl)
}}
"""
        want = [[z, z, nan, nan], [nz, nz, nan, nan], [nz, z, nan, nan]]
        for outs in _both_backends(parse_module(text), [x, y]):
            for got, w, name in zip(outs, want, ["maximum", "minimum", "clamp"]):
                w = np.array(w, dtype)
                np.testing.assert_array_equal(got, w, err_msg=f"{name} {et}")
                np.testing.assert_array_equal(np.signbit(got), np.signbit(w),
                                              err_msg=f"{name} {et} sign of zero")


def _xla_runner():
    """A function running HLO text on XLA:CPU through jaxlib, or None."""
    jax = pytest.importorskip("jax")
    try:
        from jax._src import compiler
        from jax._src.lib import xla_client as xc
        client = jax.devices("cpu")[0].client
    except Exception:  # noqa: BLE001 - private jaxlib API: skip when it moved
        return None

    def run(text, args):
        proto = xc.hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
        exe = client.compile_and_load(xc._xla.mlir.hlo_to_stablehlo(proto),
                                      client.devices()[:1], compiler.get_compile_options(1, 1))
        x64 = jax.config.jax_enable_x64
        jax.config.update("jax_enable_x64", True)  # or device_put narrows 64-bit operands
        try:
            return [np.asarray(o) for o in exe.execute([jax.device_put(a) for a in args])]
        finally:
            jax.config.update("jax_enable_x64", x64)
    return run


@pytest.mark.parametrize("et", ["pred", "s8", "u16", "s32", "u64"])
def test_against_xla_cpu(et):
    run = _xla_runner()
    if run is None:
        pytest.skip("jaxlib cannot run HLO text here")
    dtype = TYPES[et]
    pairs = list(itertools.product(_edges(dtype), repeat=2))
    x = np.array([p[0] for p in pairs], dtype=dtype)
    y = np.array([p[1] for p in pairs], dtype=dtype)
    # The ops StableHLO accepts on this type (it rejects arithmetic other than add/multiply
    # on i1, and abs/sign on unsigned types).
    ops = ["add", "multiply", "maximum", "minimum", "and", "or", "xor"]
    if et != "pred":
        ops += ["subtract", "divide", "remainder", "power", "shift-left",
                "shift-right-logical", "shift-right-arithmetic"]
    n = len(x)
    lines = [f"x = {et}[{n}] parameter(0)", f"y = {et}[{n}] parameter(1)"]
    lines += [f"r{k} = {et}[{n}] {op}(x, y)" for k, op in enumerate(ops)]
    root = (f"ROOT out = ({', '.join([f'{et}[{n}]'] * len(ops))}) "
            f"tuple({', '.join(f'r{k}' for k in range(len(ops)))})")
    text = "HloModule xla\nENTRY main {\n  " + "\n  ".join(lines + [root]) + "\n}\n"
    want = run(text, [x, y])
    for outs in _both_backends(parse_module(text), [x, y]):
        for op, g, w in zip(ops, outs, want):
            np.testing.assert_array_equal(g, w, err_msg=f"{op} on {et}")

