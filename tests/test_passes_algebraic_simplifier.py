"""Algebraic simplifier: each rewrite rule on a small module, with a differential check."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from test_passes_common import dims_text, entry_opcodes, hlo, run_pass, shapes

from minijax.compiler.passes.algebraic_simplifier import (
    RULES,
    AlgebraicSimplifier,
    is_exact_conversion,
)

# (case name, entry body, opcodes that must be gone, opcodes that must remain)
CASES = [
    ("add_zero", """
  x = f32[2,3] parameter(0)
  z = f32[] constant(0)
  zb = f32[2,3] broadcast(z), dimensions={}
  a = f32[2,3] add(zb, x)
  ROOT t = (f32[2,3]) tuple(a)""", {"add"}, set()),
    ("multiply_one", """
  x = f32[4] parameter(0)
  one = f32[4] constant({1, 1, 1, 1})
  m = f32[4] multiply(x, one)
  ROOT t = (f32[4]) tuple(m)""", {"multiply"}, set()),
    ("multiply_zero_int", """
  x = s32[4] parameter(0)
  z = s32[] constant(0)
  zb = s32[4] broadcast(z), dimensions={}
  m = s32[4] multiply(x, zb)
  ROOT t = (s32[4]) tuple(m)""", {"multiply"}, set()),
    ("multiply_zero_float_kept", """
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  zb = f32[4] broadcast(z), dimensions={}
  m = f32[4] multiply(x, zb)
  ROOT t = (f32[4]) tuple(m)""", set(), {"multiply"}),
    ("subtract_self_int", """
  x = s32[3] parameter(0)
  s = s32[3] subtract(x, x)
  ROOT t = (s32[3]) tuple(s)""", {"subtract"}, set()),
    ("subtract_self_float_kept", """
  x = f32[3] parameter(0)
  s = f32[3] subtract(x, x)
  ROOT t = (f32[3]) tuple(s)""", set(), {"subtract"}),
    ("double_negation", """
  x = f32[3] parameter(0)
  n = f32[3] negate(x)
  nn = f32[3] negate(n)
  ROOT t = (f32[3]) tuple(nn)""", {"negate"}, set()),
    ("reshape_of_reshape", """
  x = f32[2,6] parameter(0)
  r1 = f32[3,4] reshape(x)
  r2 = f32[12] reshape(r1)
  ROOT t = (f32[12]) tuple(r2)""", set(), {"reshape"}),
    ("reshape_same_shape", """
  x = f32[2,6] parameter(0)
  r1 = f32[2,6] reshape(x)
  ROOT t = (f32[2,6]) tuple(r1)""", {"reshape"}, set()),
    ("transpose_of_transpose", """
  x = f32[2,3,4] parameter(0)
  t1 = f32[3,4,2] transpose(x), dimensions={1,2,0}
  t2 = f32[2,3,4] transpose(t1), dimensions={2,0,1}
  ROOT t = (f32[2,3,4]) tuple(t2)""", {"transpose"}, set()),
    ("identity_transpose", """
  x = f32[2,3] parameter(0)
  t1 = f32[2,3] transpose(x), dimensions={0,1}
  ROOT t = (f32[2,3]) tuple(t1)""", {"transpose"}, set()),
    ("broadcast_of_broadcast", """
  x = f32[3] parameter(0)
  b1 = f32[2,3] broadcast(x), dimensions={1}
  b2 = f32[2,4,3] broadcast(b1), dimensions={0,2}
  ROOT t = (f32[2,4,3]) tuple(b2)""", set(), {"broadcast"}),
    ("reshape_of_scalar_broadcast", """
  x = f32[] parameter(0)
  b = f32[2,6] broadcast(x), dimensions={}
  r = f32[3,4] reshape(b)
  ROOT t = (f32[3,4]) tuple(r)""", {"reshape"}, {"broadcast"}),
    ("convert_same_type", """
  x = f32[3] parameter(0)
  c = f32[3] convert(x)
  ROOT t = (f32[3]) tuple(c)""", {"convert"}, set()),
    ("convert_exact_round_trip", """
  x = f32[3] parameter(0)
  c1 = f64[3] convert(x)
  c2 = f32[3] convert(c1)
  ROOT t = (f32[3]) tuple(c2)""", {"convert"}, set()),
    ("convert_lossy_chain_kept", """
  x = f32[3] parameter(0)
  c1 = s32[3] convert(x)
  c2 = f32[3] convert(c1)
  ROOT t = (f32[3]) tuple(c2)""", set(), {"convert"}),
    ("slice_of_slice", """
  x = f32[10,6] parameter(0)
  s1 = f32[8,3] slice(x), slice={[1:9], [0:6:2]}
  s2 = f32[3,2] slice(s1), slice={[2:8:2], [1:3]}
  ROOT t = (f32[3,2]) tuple(s2)""", set(), {"slice"}),
    ("full_slice", """
  x = f32[4,5] parameter(0)
  s = f32[4,5] slice(x), slice={[0:4], [0:5]}
  ROOT t = (f32[4,5]) tuple(s)""", {"slice"}, set()),
    ("concat_of_adjacent_slices", """
  x = f32[6,3] parameter(0)
  a = f32[2,3] slice(x), slice={[0:2], [0:3]}
  b = f32[4,3] slice(x), slice={[2:6], [0:3]}
  c = f32[6,3] concatenate(a, b), dimensions={0}
  ROOT t = (f32[6,3]) tuple(c)""", {"concatenate", "slice"}, set()),
    ("reduce_sum_of_broadcast", """
  x = f32[3] parameter(0)
  b = f32[4,3] broadcast(x), dimensions={1}
  z = f32[] constant(0)
  r = f32[3] reduce(b, z), dimensions={0}, to_apply=add_f32
  ROOT t = (f32[3]) tuple(r)""", {"reduce"}, {"multiply"}),
    ("reduce_max_of_broadcast", """
  x = f32[3] parameter(0)
  b = f32[3,4,5] broadcast(x), dimensions={0}
  z = f32[] constant(-inf)
  r = f32[3,5] reduce(b, z), dimensions={1}, to_apply=max_f32
  ROOT t = (f32[3,5]) tuple(r)""", {"reduce"}, {"broadcast"}),
    ("select_constant_predicate", """
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  p = pred[] constant(false)
  pb = pred[3] broadcast(p), dimensions={}
  s = f32[3] select(pb, x, y)
  ROOT t = (f32[3]) tuple(s)""", {"select"}, set()),
    ("pad_nothing", """
  x = f32[3,2] parameter(0)
  z = f32[] constant(0)
  p = f32[3,2] pad(x, z), padding=0_0x0_0
  ROOT t = (f32[3,2]) tuple(p)""", {"pad"}, set()),
    ("tuple_element_of_tuple", """
  x = f32[3] parameter(0)
  y = f32[2] parameter(1)
  tu = (f32[3], f32[2]) tuple(x, y)
  g = f32[2] get-tuple-element(tu), index=1
  ROOT t = (f32[2]) tuple(g)""", {"get-tuple-element"}, set()),
]


@pytest.mark.parametrize("name,entry,gone,kept", CASES, ids=[c[0] for c in CASES])
def test_rule(name, entry, gone, kept):
    module, changed = run_pass(AlgebraicSimplifier(), hlo(entry))
    ops = entry_opcodes(module)
    assert changed == (not name.endswith("_kept"))
    for op in gone:
        assert ops[op] == 0, f"{op} should be gone: {ops}"
    for op in kept:
        assert ops[op] >= 1, f"{op} should remain: {ops}"


def test_chains_collapse_to_one_instruction():
    entry = """
  x = f32[2,3,4] parameter(0)
  r1 = f32[6,4] reshape(x)
  r2 = f32[24] reshape(r1)
  r3 = f32[4,6] reshape(r2)
  t1 = f32[6,4] transpose(r3), dimensions={1,0}
  t2 = f32[4,6] transpose(t1), dimensions={1,0}
  ROOT t = (f32[4,6]) tuple(t2)"""
    module, _ = run_pass(AlgebraicSimplifier(), hlo(entry))
    ops = entry_opcodes(module)
    assert ops["reshape"] == 1 and ops["transpose"] == 0


@settings(max_examples=8, deadline=None)
@given(dims=shapes())
def test_elementwise_identities_any_shape(dims):
    d = dims_text(dims)
    entry = f"""
  x = f32[{d}] parameter(0)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  zb = f32[{d}] broadcast(zero), dimensions={{}}
  ob = f32[{d}] broadcast(one), dimensions={{}}
  a = f32[{d}] add(x, zb)
  m = f32[{d}] multiply(ob, a)
  n1 = f32[{d}] negate(m)
  n2 = f32[{d}] negate(n1)
  dv = f32[{d}] divide(n2, ob)
  ROOT t = (f32[{d}]) tuple(dv)"""
    module, changed = run_pass(AlgebraicSimplifier(), hlo(entry))
    assert changed
    assert set(entry_opcodes(module)) == {"parameter", "tuple"}


@settings(max_examples=8, deadline=None)
@given(dims=shapes(min_rank=2, max_rank=3))
def test_transpose_pairs_any_shape(dims):
    rank = len(dims)
    perm = list(range(1, rank)) + [0]
    inverse = [perm.index(i) for i in range(rank)]
    mid = [dims[p] for p in perm]
    entry = f"""
  x = f32[{dims_text(dims)}] parameter(0)
  t1 = f32[{dims_text(mid)}] transpose(x), dimensions={{{dims_text(perm)}}}
  t2 = f32[{dims_text(dims)}] transpose(t1), dimensions={{{dims_text(inverse)}}}
  e = f32[{dims_text(dims)}] exponential(t2)
  ROOT t = (f32[{dims_text(dims)}]) tuple(e)"""
    module, _ = run_pass(AlgebraicSimplifier(), hlo(entry))
    assert entry_opcodes(module)["transpose"] == 0


def test_exact_conversions():
    assert is_exact_conversion("f32", "f64") and not is_exact_conversion("f64", "f32")
    assert is_exact_conversion("s16", "f32") and not is_exact_conversion("s32", "f32")
    assert is_exact_conversion("u8", "s16") and not is_exact_conversion("u16", "s16")
    assert is_exact_conversion("pred", "s32")


def test_rule_table_has_docstrings():
    for opcode, rules in RULES.items():
        for rule in rules:
            assert rule.__doc__, f"rule {rule.__name__} for {opcode} needs a docstring"
