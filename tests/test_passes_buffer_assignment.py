"""Buffer assignment: sizes for a known chain, reuse, aliasing, in-place updates, donation,
and a property test that simulates execution in the assigned slots."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_passes_common import hlo

from minijax.compiler.evaluator import evaluate_instruction, evaluate_module
from minijax.compiler.hlo.ir import Computation, Instruction, Module, Shape
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.passes.buffer_assignment import assign_buffers


def named(module, name):
    return next(i for i in module.entry.instructions if i.name == name)


CHAIN = hlo("""
  p = f32[1024] parameter(0)
  e1 = f32[1024] exponential(p)
  n1 = f32[1024] negate(e1)
  e2 = f32[1024] exponential(n1)
  n2 = f32[1024] negate(e2)
  ROOT t = (f32[1024]) tuple(n2)""")


def test_known_chain_sizes_and_reuse():
    module = parse_module(CHAIN)
    ba = assign_buffers(module)
    kb = 4096
    assert ba.argument_bytes == kb and ba.output_bytes == kb
    assert ba.temp_bytes == 2 * kb  # e1/e2 share one slot, n1 has the other
    assert ba.peak_bytes == 3 * kb  # the argument, one live temp pair at a time
    assert ba.slot_of(named(module, "e2")) == ba.slot_of(named(module, "e1"))
    assert ba.slot_of(named(module, "n1")) != ba.slot_of(named(module, "e1"))
    assert ba.slot_of(module.entry.root) == ba.slot_of(named(module, "n2"))
    text = ba.to_text()
    assert "temp 8192 B" in text and "peak 12288 B" in text


def test_aliasing_ops_share_their_operand_slot():
    module = parse_module(hlo("""
  p = f32[2,6] parameter(0)
  e = f32[2,6] exponential(p)
  r = f32[12] reshape(e)
  b = f32[3,4] bitcast(r)
  tu = (f32[3,4], f32[2,6]) tuple(b, p)
  g = f32[3,4] get-tuple-element(tu), index=0
  n = f32[3,4] negate(g)
  ROOT t = (f32[3,4]) tuple(n)"""))
    ba = assign_buffers(module)
    e = ba.slot_of(named(module, "e"))
    assert ba.slot_of(named(module, "r")) == e == ba.slot_of(named(module, "b"))
    assert ba.slots_of(named(module, "tu")) == (e, ba.slot_of(named(module, "p")))
    assert ba.slot_of(named(module, "g")) == e


def test_best_fit_reuses_a_larger_dead_slot():
    module = parse_module(hlo("""
  p = f32[100] parameter(0)
  a = f32[100] exponential(p)
  s = f32[50] slice(a), slice={[0:50]}
  c = f32[50] negate(s)
  d = f32[50] exponential(c)
  ROOT t = (f32[50]) tuple(d)"""))
    ba = assign_buffers(module)
    assert ba.slot_of(named(module, "c")) == ba.slot_of(named(module, "a"))
    assert ba.temp_bytes == 400 + 200


DUS = """
  p = f32[8] parameter(0)
  u = f32[2] parameter(1)
  i = s32[] parameter(2)
  a = f32[8] exponential(p)
  d = f32[8] dynamic-update-slice(a, u, i)
  {extra}
  ROOT t = ({root_shapes}) tuple({root})"""


def test_dynamic_update_slice_in_place_when_operand_dies():
    module = parse_module(hlo(DUS.format(extra="n = f32[8] negate(d)", root_shapes="f32[8]",
                                         root="n")))
    ba = assign_buffers(module)
    assert ba.slot_of(named(module, "d")) == ba.slot_of(named(module, "a"))


def test_dynamic_update_slice_copies_when_operand_is_read_later():
    module = parse_module(hlo(DUS.format(extra="n = f32[8] negate(a)",
                                         root_shapes="f32[8], f32[8]", root="d, n")))
    ba = assign_buffers(module)
    assert ba.slot_of(named(module, "d")) != ba.slot_of(named(module, "a"))


def test_donated_parameter_holds_the_output():
    text = hlo("""
  p = f32[64] parameter(0)
  e = f32[64] exponential(p)
  n = f32[64] negate(e)
  ROOT t = (f32[64]) tuple(n)""")
    plain = parse_module(text)
    assert assign_buffers(plain).slot_of(named(plain, "n")) != \
        assign_buffers(plain).slot_of(named(plain, "p"))
    module = parse_module(text)
    module.donated_params = {0}
    ba = assign_buffers(module)
    assert ba.slot_of(named(module, "n")) == ba.slot_of(named(module, "p"))


# -- property test: random DAGs executed in their slots ------------------------------------

UNARY = ("exponential", "negate", "tanh")
BINARY = ("add", "multiply", "subtract")
SIZES = (4, 8, 16)


@st.composite
def random_dags(draw):
    """An entry computation of unary/binary/reshape ops over f32 vectors of a few sizes."""
    comp = Computation("main")
    values: list[Instruction] = []
    n_params = draw(st.integers(1, 3))
    for k in range(n_params):
        size = draw(st.sampled_from(SIZES))
        values.append(comp.add(Instruction("parameter", Shape("f32", (size,)), name=f"p{k}",
                                           parameter_number=k)))
    for k in range(draw(st.integers(1, 14))):
        x = draw(st.sampled_from(values))
        kind = draw(st.sampled_from(("unary", "binary", "reshape", "dus")))
        same = [v for v in values if v.shape.dims == x.shape.dims]
        if kind == "binary":
            y = draw(st.sampled_from(same))
            instr = Instruction(draw(st.sampled_from(BINARY)), x.shape, [x, y])
        elif kind == "reshape" and x.shape.rank == 1:
            size = x.shape.dims[0]
            instr = Instruction("reshape", Shape("f32", (2, size // 2)), [x])
        elif kind == "dus" and x.shape.rank == 1:
            index = comp.add(Instruction("constant", Shape("s32", ()), name=f"i{k}",
                                         literal=np.array(1, np.int32)))
            update = draw(st.sampled_from(same))
            piece = comp.add(Instruction("slice", Shape("f32", (2,)), [update],
                                         attrs={"slice": ((0, 2, 1),)}, name=f"s{k}"))
            instr = Instruction("dynamic-update-slice", x.shape, [x, piece, index])
        else:
            instr = Instruction(draw(st.sampled_from(UNARY)), x.shape, [x])
        instr.name = f"v{k}"
        values.append(comp.add(instr))
    outputs = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3, unique=True))
    root = comp.add(Instruction("tuple", Shape.tuple([o.shape for o in outputs]), outputs,
                                name="root"))
    comp.root = root
    module = Module("random", [comp], comp)
    if draw(st.booleans()):
        module.donated_params = {0}
    return module


def run_in_slots(module, ba, args):
    """Execute the entry writing every value into its slot; read operands back from slots."""
    memory = {s.index: np.zeros(max(s.size // 4, 1), np.float32) for s in ba.slots}
    int_values = {}

    def read(instr):
        if instr.shape.element_type != "f32":
            return int_values[instr.name]
        if instr.shape.is_tuple:
            return tuple(read_leaf(instr, k) for k in range(len(instr.shape.flat())))
        return read_leaf(instr, 0)

    def read_leaf(instr, leaf):
        shape = instr.shape.flat()[leaf]
        return memory[ba.slot_of(instr, leaf)][:shape.size].reshape(shape.dims).copy()

    for instr in module.entry.instructions:
        if instr.opcode == "parameter":
            value = args[instr.parameter_number]
        elif instr.opcode == "tuple":
            continue
        else:
            value = evaluate_instruction(instr, [read(op) for op in instr.operands])
        if instr.shape.element_type != "f32":
            int_values[instr.name] = value
        else:
            memory[ba.slot_of(instr)][:instr.shape.size] = np.asarray(value).reshape(-1)
    return [read_leaf(module.entry.root, k) for k in range(len(module.entry.root.operands))]


@settings(max_examples=60, deadline=None)
@given(module=random_dags())
def test_random_dags_never_share_a_slot_while_live(module):
    ba = assign_buffers(module)
    for slot in ba.slots:
        spans = sorted((b.start, b.end) for b in slot.buffers)
        for (_, e1), (s2, _) in zip(spans, spans[1:]):
            assert e1 < s2, f"slot {slot.index} holds overlapping buffers: {spans}"
        assert all(b.size <= slot.size for b in slot.buffers)
    args = [np.random.default_rng(0).standard_normal(p.shape.dims).astype(np.float32) * 0.5
            for p in module.entry.parameters]
    expected = evaluate_module(module, [a.copy() for a in args])
    actual = run_in_slots(module, ba, [a.copy() for a in args])
    for e, a in zip(expected, actual):
        np.testing.assert_allclose(a, e, rtol=1e-6)
    assert ba.peak_bytes <= sum(s.size for s in ba.slots)
