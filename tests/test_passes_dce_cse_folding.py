"""DCE, CSE and constant folding: structure out, same outputs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from test_passes_common import dims_text, entry_opcodes, hlo, run_pass, shapes

from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.passes.constant_folding import ConstantFolding
from minijax.compiler.passes.cse import CommonSubexpressionElimination
from minijax.compiler.passes.dce import DeadCodeElimination


def test_dce_removes_unused_chain_and_computations():
    entry = """
  x = f32[4] parameter(0)
  unused = f32[4] exponential(x)
  unused2 = f32[4] add(unused, x)
  z = f32[] constant(0)
  dead_reduce = f32[] reduce(x, z), dimensions={0}, to_apply=max_f32
  n = f32[4] negate(x)
  ROOT t = (f32[4]) tuple(n)"""
    module, changed = run_pass(DeadCodeElimination(), hlo(entry))
    assert changed
    assert set(entry_opcodes(module)) == {"parameter", "negate", "tuple"}
    assert [c.name for c in module.computations] == ["main"]


def test_dce_keeps_parameters_and_side_effects():
    entry = """
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  cc = f32[4] custom-call(x), custom_call_target="my_effect"
  ROOT t = (f32[4]) tuple(x)"""
    module = parse_module(hlo(entry))
    DeadCodeElimination().run(module)
    ops = entry_opcodes(module)
    assert ops["parameter"] == 2 and ops["custom-call"] == 1


def test_cse_merges_chains():
    entry = """
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  a1 = f32[4] add(x, y)
  a2 = f32[4] add(y, x)
  e1 = f32[4] exponential(a1)
  e2 = f32[4] exponential(a2)
  c1 = f32[] constant(2)
  c2 = f32[] constant(2)
  b1 = f32[4] broadcast(c1), dimensions={}
  b2 = f32[4] broadcast(c2), dimensions={}
  m1 = f32[4] multiply(e1, b1)
  m2 = f32[4] multiply(e2, b2)
  s = f32[4] subtract(m1, m2)
  ROOT t = (f32[4]) tuple(s)"""
    module, changed = run_pass(CommonSubexpressionElimination(), hlo(entry))
    assert changed
    ops = entry_opcodes(module)
    assert ops["add"] == ops["exponential"] == ops["multiply"] == ops["broadcast"] == 1
    assert ops["constant"] == 1


def test_cse_keeps_different_attributes_and_constants():
    entry = """
  x = f32[2,3] parameter(0)
  c1 = f32[] constant(1)
  c2 = f32[] constant(2)
  a = f32[3,2] transpose(x), dimensions={1,0}
  r = f32[3,2] reshape(x)
  b1 = f32[3,2] broadcast(c1), dimensions={}
  b2 = f32[3,2] broadcast(c2), dimensions={}
  s1 = f32[3,2] add(a, b1)
  s2 = f32[3,2] add(r, b2)
  ROOT t = (f32[3,2], f32[3,2]) tuple(s1, s2)"""
    module, changed = run_pass(CommonSubexpressionElimination(), hlo(entry))
    assert not changed
    assert entry_opcodes(module)["constant"] == 2


def test_constant_folding_folds_chains_and_keeps_scalar_broadcasts():
    entry = """
  x = f32[3] parameter(0)
  c = f32[3] constant({1, 2, 3})
  e = f32[3] exponential(c)
  n = f32[3] negate(e)
  s = f32[] constant(5)
  sb = f32[3] broadcast(s), dimensions={}
  a = f32[3] add(x, n)
  m = f32[3] multiply(a, sb)
  ROOT t = (f32[3]) tuple(m)"""
    module, changed = run_pass(ConstantFolding(), hlo(entry))
    assert changed
    ops = entry_opcodes(module)
    assert ops["exponential"] == 0 and ops["negate"] == 0
    assert ops["broadcast"] == 1  # broadcast of a scalar stays a broadcast
    folded = [i for i in module.entry.instructions
              if i.opcode == "constant" and i.shape.dims == (3,)]
    np.testing.assert_allclose(folded[-1].literal, -np.exp([1, 2, 3]), rtol=1e-6)


def test_constant_folding_skips_huge_results():
    entry = """
  c = f32[2] constant({1, 2})
  b = f32[5000,2] broadcast(c), dimensions={1}
  x = f32[5000,2] parameter(0)
  a = f32[5000,2] add(x, b)
  ROOT t = (f32[5000,2]) tuple(a)"""
    module = parse_module(hlo(entry))
    assert not ConstantFolding().run(module)
    assert entry_opcodes(module)["broadcast"] == 1


def test_constant_folding_reduce_and_iota_untouched():
    entry = """
  c = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  z = f32[] constant(0)
  r = f32[2] reduce(c, z), dimensions={1}, to_apply=add_f32
  i = s32[4] iota(), iota_dimension=0
  ROOT t = (f32[2], s32[4]) tuple(r, i)"""
    module, changed = run_pass(ConstantFolding(), hlo(entry))
    assert changed
    ops = entry_opcodes(module)
    assert ops["reduce"] == 0 and ops["iota"] == 1


@settings(max_examples=8, deadline=None)
@given(dims=shapes())
def test_cse_then_dce_differential(dims):
    d = dims_text(dims)
    entry = f"""
  x = f32[{d}] parameter(0)
  t1 = f32[{d}] tanh(x)
  t2 = f32[{d}] tanh(x)
  a = f32[{d}] add(t1, t2)
  dead = f32[{d}] multiply(a, a)
  ROOT t = (f32[{d}]) tuple(a)"""
    module, _ = run_pass(CommonSubexpressionElimination(), hlo(entry))
    assert entry_opcodes(module)["tanh"] == 1
    module2, _ = run_pass(DeadCodeElimination(), hlo(entry))
    assert entry_opcodes(module2)["multiply"] == 0
