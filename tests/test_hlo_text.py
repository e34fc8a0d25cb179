"""HLO text printer and parser: realistic samples, round-trip properties, error messages."""

import math
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, __file__.rsplit("/", 1)[0])

from hlo_text_samples import ALL_SAMPLES, OPTIMIZED_DUMP, SOFTMAX_OLD_STYLE  # noqa: E402

from minijax.compiler.hlo.builder import HloBuilder, scalar_computation  # noqa: E402
from minijax.compiler.hlo.ir import Computation, Module, Shape  # noqa: E402
from minijax.compiler.hlo.parser import HloParseError, parse_module, parse_shape  # noqa: E402
from minijax.compiler.hlo.printer import (  # noqa: E402
    computation_to_text,
    instruction_to_text,
    module_to_text,
    shape_to_text,
)
from minijax.compiler.hlo.verifier import HloVerificationError, verify_module  # noqa: E402


def _roundtrip(text: str) -> str:
    module = parse_module(text)
    verify_module(module)
    printed = module_to_text(module)
    again = parse_module(printed)
    verify_module(again)
    assert module_to_text(again) == printed
    return printed


def _instr(module, name):
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.name == name:
                return instr
    raise KeyError(name)


# ----------------------------------------------------------------------------- samples

@pytest.mark.parametrize("name", sorted(ALL_SAMPLES))
def test_samples_parse_verify_and_reprint_stably(name):
    _roundtrip(ALL_SAMPLES[name])


def test_sum_sample_structure():
    m = parse_module(ALL_SAMPLES["sum_xpyz"])
    assert m.name == "jit_f" and m.entry.name == "main.13"
    assert [c.name for c in m.computations] == ["region_0.8", "main.13"]
    red = m.entry.root
    assert red.opcode == "reduce" and red.attrs["dimensions"] == (0,)
    assert red.called["to_apply"] is m.computations[0]
    assert red.metadata == {"op_name": "jit(f)/jit(main)/reduce_sum[axes=(0,)]",
                            "source_file": "/tmp/f.py", "source_line": 4}
    assert [p.parameter_number for p in m.entry.parameters] == [0, 1, 2]
    assert m.attrs["allow_spmd_sharding_propagation_to_output"] == "{true}"
    text = module_to_text(m)
    assert text.startswith("HloModule jit_f, entry_computation_layout="
                           "{(f32[8]{0}, f32[8]{0}, f32[8]{0})->f32[]}")
    assert ("  ROOT reduce.12 = f32[] reduce(add.5, constant.6), dimensions={0}, "
            "to_apply=region_0.8, metadata={op_name=") in text


def test_old_style_percent_names_and_operand_shapes():
    m = parse_module(SOFTMAX_OLD_STYLE)
    text = module_to_text(m)
    assert "%" not in text
    assert "ROOT divide.19 = f32[2,5]{1,0} divide(exponential.12, broadcast.18)" in text
    assert _instr(m, "constant.4").literal == -np.inf
    assert m.entry.name == "main.21"


def test_optimized_dump_details():
    m = parse_module(OPTIMIZED_DUMP)
    p0 = _instr(m, "Arg_0.1")
    assert p0.shape == Shape("f32", (8, 128)) and p0.attrs["sharding"] == "{replicated}"
    assert _instr(m, "Arg_1.2").attrs["frontend_attributes"] == (
        '{_xla_buffer_placement="arg"}')
    f1 = _instr(m, "fusion.1")
    assert f1.attrs["kind"] == "kInput" and f1.called["calls"].name == "fused_reduce"
    assert f1.attrs["backend_config"].startswith('{"operation_queue_id":"0"')
    assert _instr(m, "fusion").metadata["deduplicated_name"] == "fusion"
    assert [o.name for o in m.entry.root.operands] == ["fusion.1", "fusion"]
    text = _roundtrip(OPTIMIZED_DUMP)
    assert "backend_config={\"operation_queue_id\"" in text and "/*" not in text


def test_attribute_values_from_samples():
    m = parse_module(ALL_SAMPLES["misc_ops"])
    rw = _instr(m, "rw").attrs["window"]
    assert rw["size"] == (2, 2) and rw["stride"] == (2, 2) and rw["pad"] == ((0, 0), (0, 0))
    assert _instr(m, "sl").attrs["slice"] == ((0, 4, 2), (1, 4, 1))
    assert _instr(m, "pd").attrs["padding"] == ((1, 2, 0), (0, 1, 2))
    assert _instr(m, "ds").attrs["dynamic_slice_sizes"] == (2, 2)
    assert _instr(m, "srt").attrs["is_stable"] is True
    sas = _instr(m, "sas")
    assert sas.called["select"].name == "ge_f32" and sas.called["scatter"].name == "add_f32"
    assert _instr(m, "cc").attrs["custom_call_target"] == "my_target"
    assert _instr(m, "out").shape.layout == (0, 1)
    assert _instr(m, "c", ).attrs["direction"] == "GE"
    big = _instr(m, "big").literal
    assert big.dtype == np.float32 and big.shape == (3, 2, 2)
    assert big[1, 1, 0] == np.inf and math.copysign(1, big[1, 1, 1]) == -1
    assert np.isnan(big[2, 0, 1]) and big[2, 1, 0] == np.float32(0.1)
    conv = parse_module(ALL_SAMPLES["convolution"]).entry.root
    assert conv.attrs["dim_labels"] == "b01f_01io->b01f"
    assert conv.attrs["feature_group_count"] == 2
    assert conv.attrs["window"]["pad"] == ((1, 1), (1, 1))
    dot = parse_module(ALL_SAMPLES["batched_dot"]).entry.root
    assert dot.attrs["lhs_batch_dims"] == (0,) and dot.attrs["rhs_contracting_dims"] == (1,)
    assert dot.attrs["operand_precision"] == "{default,default}"
    gs = parse_module(ALL_SAMPLES["gather_scatter"])
    g = _instr(gs, "gather.4")
    assert g.attrs["slice_sizes"] == (1, 3) and g.attrs["indices_are_sorted"] is True
    assert _instr(gs, "scatter.14").attrs["unique_indices"] is True
    cond = parse_module(ALL_SAMPLES["conditional"])
    branches = _instr(cond, "conditional.15").called["branch_computations"]
    assert [b.name for b in branches] == ["branch_0.5", "branch_1.8", "branch_2.11"]
    assert _instr(cond, "p").attrs["comparison_type"] == "SIGNED"
    wl = parse_module(ALL_SAMPLES["while_loop"])
    w = _instr(wl, "while.18")
    assert w.called["condition"].name == "region_1.12" and w.called["body"].name == "region_0.4"


def test_forward_references_and_no_header():
    text = """
ENTRY e {
  ROOT r = f32[2]{0} call(p), to_apply=callee
  p = f32[2]{0} parameter(0)
}
callee {
  ROOT q = f32[2]{0} parameter(0)
}
"""
    m = parse_module(text)
    assert m.entry.name == "e" and m.name == "module"
    assert [i.name for i in m.entry.instructions] == ["p", "r"]
    verify_module(m)
    printed = module_to_text(m)
    assert printed.index("callee {") < printed.index("ENTRY e {")


# ----------------------------------------------------------------------------- printing

def test_shapes_and_layouts_text():
    assert shape_to_text(Shape("f32", (4, 8))) == "f32[4,8]{1,0}"
    assert shape_to_text(Shape("s32", ())) == "s32[]"
    assert shape_to_text(Shape("f32", (4, 8), (0, 1))) == "f32[4,8]{0,1}"
    t = Shape.tuple([Shape("f32", (4,)), Shape("s32", ())])
    assert shape_to_text(t) == "(f32[4]{0}, s32[])"
    assert parse_shape("(f32[4]{0}, s32[])") == t
    assert parse_shape("f32[8,128]{1,0:T(8,128)}") == Shape("f32", (8, 128))
    assert parse_shape("f32[<=4]") == Shape("f32", (4,))
    assert parse_shape("token[]") == Shape("token")


def test_instruction_and_computation_text():
    comp = Computation("c")
    b = HloBuilder(comp)
    x = b.parameter(0, Shape("f32", (2, 2)), name="x")
    k = b.constant(np.array([[1, 2], [3, 4]], np.float32), name="k")
    y = b.add(x, k, name="y", metadata=dict(op_name='say "hi"', source_file="a\\b.py",
                                            source_line=12))
    b.set_root(y)
    assert instruction_to_text(k) == "k = f32[2,2]{1,0} constant({ { 1, 2 }, { 3, 4 } })"
    assert instruction_to_text(y) == (
        'y = f32[2,2]{1,0} add(x, k), metadata={op_name="say \\"hi\\"" '
        'source_file="a\\\\b.py" source_line=12}')
    assert computation_to_text(comp).splitlines()[-2].startswith("  ROOT y = ")
    m = parse_module(computation_to_text(comp, is_entry=True))
    assert _instr(m, "y").metadata["op_name"] == 'say "hi"'
    assert _instr(m, "y").metadata["source_file"] == "a\\b.py"


@pytest.mark.parametrize("value,et,text", [
    (1.5, "f32", "1.5"), (1.0, "f32", "1"), (-np.inf, "f32", "-inf"), (np.inf, "f64", "inf"),
    (np.nan, "f32", "nan"), (True, "pred", "true"), (False, "pred", "false"),
    (-7, "s32", "-7"), (0.1, "f64", "0.1"), (1e30, "f32", "1e+30"), (1e-07, "f64", "1e-07"),
    (1 + 2j, "c64", "(1, 2)"), (65504, "f16", "65500"),
])
def test_scalar_constants(value, et, text):
    comp = Computation("c")
    b = HloBuilder(comp)
    b.constant(value, et, name="k")
    line = instruction_to_text(comp.instructions[0])
    assert line == f"k = {et}[] constant({text})"
    back = parse_module("ENTRY e {\n  " + line + "\n}\n").entry.root.literal
    assert back.dtype == np.asarray(value, dtype=back.dtype).dtype
    np.testing.assert_array_equal(back, np.asarray(value, dtype=back.dtype))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["f16", "f32", "f64"]), st.data())
def test_float_constants_round_trip_exactly(et, data):
    width = {"f16": 16, "f32": 32, "f64": 64}[et]
    values = data.draw(st.lists(st.floats(width=width), min_size=1, max_size=6))
    arr = np.array(values, dtype={"f16": np.float16, "f32": np.float32, "f64": np.float64}[et])
    comp = Computation("c")
    HloBuilder(comp).constant(arr, name="k")
    back = parse_module("ENTRY e {\n  " + instruction_to_text(comp.root) + "\n}\n").entry.root
    assert back.literal.dtype == arr.dtype
    nan = np.isnan(arr)
    assert (np.isnan(back.literal) == nan).all()
    assert (back.literal[~nan].view(np.uint8) == arr[~nan].view(np.uint8)).all()


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("text,fragment,line", [
    ("ENTRY e {\n  x = f32[] parameter(0)\n  ROOT y = f32[] add(x, zz)\n}", "unknown operand 'zz'",
     3),
    ("ENTRY e {\n  x f32[] parameter(0)\n}", "expected '=' after the instruction name", 2),
    ("ENTRY e {\n  x = f33[4] parameter(0)\n}", "unknown element type 'f33'", 2),
    ("ENTRY e {\n  x = f32[2] constant({1, 2, 3})\n}", "constant has 3 values", 2),
    ("ENTRY e {\n  x = f32[2] parameter(0)\n  ROOT r = f32[] reduce(x, x), dimensions={a}\n}",
     "bad value for attribute dimensions", 3),
    ("ENTRY e {\n  x = f32[] parameter(0)\n  ROOT r = f32[] call(x), to_apply=nope\n}",
     "unknown computation 'nope'", 3),
    ("ENTRY e {\n  x = f32[] parameter(0)\n", "missing '}' closing computation 'e'", 3),
    ("ENTRY e {\n  x = f32[] parameter(0)\n  x = f32[] parameter(1)\n}",
     "duplicate instruction name 'x'", 3),
    ("ENTRY e {\n  x = f32[2]{0,1} parameter(0)\n}", "is not a permutation", 2),
    ("ENTRY e {\n  x = f32[] parameter(0), metadata={op_name=\"a}\n}", "unterminated string",
     2),
    ("ENTRY e {\n  x = pred[] compare(a, b), direction=XX\n}", "direction must be one of", 2),
    ("ENTRY e {\n  x = f32[] parameter(0), window={size=2 stride=1x1}\n}",
     "window stride has 2 entries", 2),
])
def test_parse_errors_name_line_and_problem(text, fragment, line):
    with pytest.raises(HloParseError) as info:
        parse_module(text)
    assert fragment in str(info.value)
    assert info.value.line == line
    assert f"line {line}, column " in str(info.value)


def test_parse_error_column_points_at_token():
    with pytest.raises(HloParseError) as info:
        parse_module("ENTRY e {\n  x = f32[] parameter(0)\n  y = f32[] negate(x]\n}")
    assert info.value.line == 3 and info.value.column == 21
    assert "^" in str(info.value)


def test_verifier_errors_name_instruction_and_computation():
    comp = Computation("main")
    b = HloBuilder(comp)
    x = b.parameter(0, Shape("f32", (4,)), name="x")
    y = b.negate(x, name="y")
    b.set_root(y)
    m = Module("m", [comp], comp)
    verify_module(m)
    y.shape = Shape("f32", (5,))
    with pytest.raises(HloVerificationError, match=r"instruction y \(negate\) in computation "
                                                   r"main: shape f32\[5\] differs"):
        verify_module(m)
    y.shape = Shape("f32", (4,))
    comp.instructions.reverse()
    with pytest.raises(HloVerificationError, match="operand 0 \\(x\\) is not defined before"):
        verify_module(m)
    comp.instructions.reverse()
    x.parameter_number = 1
    with pytest.raises(HloVerificationError, match="parameter numbers \\[1\\]"):
        verify_module(m)
    x.parameter_number = 0
    comp.root = Computation("other", [b.constant(np.float32(1))]).instructions[0]
    comp.instructions.pop()
    with pytest.raises(HloVerificationError, match="root is not an instruction"):
        verify_module(m)


# ----------------------------------------------------------------------------- property

_FLOAT = ["f32", "f64", "f16", "bf16"]
_INT = ["s32", "s8", "u8", "s64", "u32"]


def _shape(draw, et, max_rank=3):
    rank = draw(st.integers(0, max_rank))
    return Shape(et, tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))))


def _literal(draw, shape):
    et = shape.element_type
    n = shape.size
    if et == "pred":
        vals = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    elif et == "c64":
        parts = draw(st.lists(st.floats(width=32), min_size=2 * n, max_size=2 * n))
        vals = [complex(a, b) for a, b in zip(parts[::2], parts[1::2])]
    elif et in _FLOAT:
        width = 16 if et == "f16" else (64 if et == "f64" else 32)
        vals = draw(st.lists(st.floats(width=width), min_size=n, max_size=n))
    else:
        info = np.iinfo(shape.dtype)
        vals = draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=n, max_size=n))
    return np.array(vals, dtype=shape.dtype).reshape(shape.dims)


def _const(draw, b, shape):
    return b.constant(_literal(draw, shape), shape.element_type)


_META = st.fixed_dictionaries({"op_name": st.text(st.characters(codec="ascii"), max_size=12)},
                              optional={"source_file": st.sampled_from(["a.py", "d i r/b.py"]),
                                        "source_line": st.integers(0, 5000)})


def _random_step(draw, b, values, module):  # noqa: C901 - one branch per opcode family
    x = draw(st.sampled_from(values))
    s = x.shape
    et = s.element_type
    kind = draw(st.sampled_from([
        "unary", "binary", "compare", "select", "convert", "broadcast", "reshape", "transpose",
        "slice", "pad", "reverse", "concat", "reduce", "constant", "iota", "tuple", "fusion",
        "dot", "reduce_window", "dynamic_slice", "clamp", "call", "while"]))
    meta = draw(st.one_of(st.just(None), _META))
    kw = {"metadata": meta}
    floaty = et in _FLOAT
    if kind == "unary":
        ops = (["exponential", "negate", "abs", "tanh", "sqrt", "floor", "logistic"] if floaty
               else ["not"] if et == "pred" else ["negate", "abs", "not", "popcnt"])
        return b.unary(draw(st.sampled_from(ops)), x, **kw)
    if kind == "binary":
        ops = (["add", "multiply", "subtract", "maximum", "divide"] if floaty
               else ["and", "or", "xor"] if et == "pred" else ["add", "minimum", "and"])
        y = draw(st.sampled_from([v for v in values if v.shape == s]))
        return b.binary(draw(st.sampled_from(ops)), x, y, **kw)
    if kind in ("compare", "select"):
        c = b.compare(x, x, draw(st.sampled_from(["EQ", "NE", "LT", "LE", "GT", "GE"])),
                      draw(st.sampled_from([None, "TOTALORDER", "FLOAT", "SIGNED"])), **kw)
        return b.select(c, x, x) if kind == "select" else c
    if kind == "clamp":
        lo = _const(draw, b, Shape(et, ()))
        return b.clamp(lo, x, lo, **kw)
    if kind == "convert":
        return b.convert(x, draw(st.sampled_from(_FLOAT + _INT + ["pred"])), **kw)
    if kind == "broadcast":
        n = draw(st.integers(1, 3))
        return b.broadcast(x, (n,) + s.dims, tuple(range(1, s.rank + 1)), **kw)
    if kind == "reshape":
        return b.reshape(x, (s.size,), **kw)
    if kind == "transpose":
        return b.transpose(x, draw(st.permutations(range(s.rank))), **kw)
    if kind == "slice":
        starts = [draw(st.integers(0, d)) for d in s.dims]
        limits = [draw(st.integers(a, d)) for a, d in zip(starts, s.dims)]
        strides = [draw(st.integers(1, 3)) for _ in s.dims]
        return b.slice(x, starts, limits, strides, **kw)
    if kind == "pad":
        pads = [tuple(draw(st.integers(0, 2)) for _ in range(3)) for _ in s.dims]
        return b.pad(x, _const(draw, b, Shape(et, ())), pads, **kw)
    if kind == "reverse":
        return b.reverse(x, sorted(draw(st.sets(st.integers(0, max(s.rank - 1, 0))))
                                   if s.rank else []), **kw)
    if kind == "concat" and s.rank:
        return b.concatenate([x, x], draw(st.integers(0, s.rank - 1)), **kw)
    if kind == "reduce" and et != "pred":
        op = draw(st.sampled_from(["add", "maximum", "multiply"]))
        comp = scalar_computation(f"red.{len(module.computations)}", op, et)
        module.add_computation(comp)
        dims = sorted(draw(st.sets(st.integers(0, max(s.rank - 1, 0)))) if s.rank else [])
        return b.reduce(x, _const(draw, b, Shape(et, ())), dims, comp, **kw)
    if kind == "constant":
        shape = _shape(draw, draw(st.sampled_from(_FLOAT + _INT + ["pred", "c64"])))
        return b.constant(_literal(draw, shape), shape.element_type, **kw)
    if kind == "iota" and s.rank:
        return b.iota(s, draw(st.integers(0, s.rank - 1)), **kw)
    if kind == "tuple":
        t = b.tuple([x, draw(st.sampled_from(values))], **kw)
        return b.get_tuple_element(t, draw(st.integers(0, 1)))
    if kind == "fusion":
        fc = Computation(f"fused.{len(module.computations)}")
        fb = HloBuilder(fc)
        p = fb.parameter(0, s)
        fb.set_root(fb.negate(fb.add(p, p)) if et != "pred" else fb.not_(p))
        module.add_computation(fc)
        return b.fusion([x], fc, draw(st.sampled_from(["kLoop", "kInput", "kOutput"])), **kw)
    if kind == "dot" and s.rank == 2 and floaty:
        return b.dot(x, b.transpose(x, (1, 0)), (1,), (0,), **kw)
    if kind == "dot" and s.rank == 3 and floaty:
        return b.dot(x, x, (2,), (2,), (0,), (0,), **kw)
    if kind == "reduce_window" and et != "pred":
        comp = scalar_computation(f"rw.{len(module.computations)}", "maximum", et)
        module.add_computation(comp)
        window = {"size": [draw(st.integers(1, max(d, 1))) for d in s.dims],
                  "stride": [draw(st.integers(1, 2)) for _ in s.dims],
                  "pad": [(draw(st.integers(0, 1)), draw(st.integers(0, 1))) for _ in s.dims]}
        return b.reduce_window(x, _const(draw, b, Shape(et, ())), window, comp, **kw)
    if kind == "dynamic_slice":
        idx = [b.constant(np.int32(draw(st.integers(-1, 5)))) for _ in s.dims]
        return b.dynamic_slice(x, idx, [draw(st.integers(0, d)) for d in s.dims], **kw)
    if kind == "call":
        callee = Computation(f"callee.{len(module.computations)}")
        cb = HloBuilder(callee)
        cb.tuple([cb.parameter(0, s)])
        module.add_computation(callee)
        return b.get_tuple_element(b.call([x], callee, **kw), 0)
    if kind == "while":
        state = Shape.tuple([Shape("s32", ()), s])
        n = len(module.computations)
        body, cond = Computation(f"body.{n}"), Computation(f"cond.{n}")
        bb, cb = HloBuilder(body), HloBuilder(cond)
        p = bb.parameter(0, state)
        i = bb.add(bb.get_tuple_element(p, 0), bb.constant(np.int32(1)))
        bb.tuple([i, bb.get_tuple_element(p, 1)])
        q = cb.parameter(0, state)
        cb.compare(cb.get_tuple_element(q, 0), cb.constant(np.int32(3)), "LT")
        module.add_computation(body)
        module.add_computation(cond)
        w = b.while_loop(b.tuple([b.constant(np.int32(0)), x]), cond, body, **kw)
        return b.get_tuple_element(w, 1)
    return b.negate(x, **kw) if et not in ("pred",) else b.not_(x, **kw)


@st.composite
def random_modules(draw):
    module = Module("random_module")
    comp = Computation("main")
    module.computations.append(comp)
    module.entry = comp
    b = HloBuilder(comp)
    et = draw(st.sampled_from(_FLOAT + _INT + ["pred"]))
    values = [b.parameter(i, _shape(draw, et), name=f"Arg_{i}")
              for i in range(draw(st.integers(1, 3)))]
    for _ in range(draw(st.integers(1, 10))):
        values.append(_random_step(draw, b, values, module))
        if draw(st.booleans()):
            values[-1].attrs["sharding"] = "{replicated}"
    k = draw(st.integers(1, min(3, len(values))))
    b.set_root(b.tuple(values[-k:]))
    return module


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_modules())
def test_random_modules_print_parse_print_is_identity(module):
    verify_module(module)
    text = module_to_text(module)
    parsed = parse_module(text)
    verify_module(parsed)
    assert module_to_text(parsed) == text
    originals = {i.name: i for c in module.computations for i in c.instructions}
    for comp in parsed.computations:
        for instr in comp.instructions:
            orig = originals[instr.name]
            assert instr.shape.dims == orig.shape.dims
            if instr.opcode == "constant":
                a, b = orig.literal, instr.literal
                assert a.dtype == b.dtype and a.shape == b.shape
                if a.dtype.kind in "fc":
                    nan = np.isnan(a)
                    assert (np.isnan(b) == nan).all()
                    assert (a[~nan].view(np.uint8) == b[~nan].view(np.uint8)).all()
                else:
                    assert (a == b).all()


def test_verifier_checks_called_computation_signatures():
    text = """
fused {
  p = f32[3]{0} parameter(0)
  ROOT n = f32[3]{0} negate(p)
}
ENTRY main {
  x = f32[4]{0} parameter(0)
  ROOT f = f32[3]{0} fusion(x), kind=kLoop, calls=fused
}
"""
    with pytest.raises(HloVerificationError, match="instruction f \\(fusion\\) in computation "
                                                   "main: calls=fused parameter 0 has shape "
                                                   "f32\\[3\\], expected f32\\[4\\]"):
        verify_module(parse_module(text))
    bad_sort = """
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[4]{0} parameter(0)
  y = s32[4]{0} parameter(1)
  ROOT s = (f32[4]{0}, s32[4]{0}) sort(x, y), dimensions={0}, to_apply=lt
}
"""
    with pytest.raises(HloVerificationError, match="to_apply=lt takes 2 parameters, 4 expected"):
        verify_module(parse_module(bad_sort))


def test_elided_constant_is_an_error_not_zeros():
    from minijax.compiler.hlo.parser import HloParseError, parse_module
    text = ("HloModule m\n\nENTRY main {\n  c = f32[4]{0} constant({...})\n"
            "  ROOT t = (f32[4]{0}) tuple(c)\n}\n")
    with pytest.raises(HloParseError, match="elided"):
        parse_module(text)
