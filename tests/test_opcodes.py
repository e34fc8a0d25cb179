"""The opcode table (compiler/hlo/opcodes.py) is the one list of opcodes: every opcode has a
shape rule and an evaluator implementation, and every layer's opcode sets come from it."""

import os
import pathlib
import subprocess
import sys

import pytest

from minijax.compiler import analysis, evaluator
from minijax.compiler.hlo import opcodes, shape_inference
from minijax.compiler.hlo.ir import Shape
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.passes import opcodes as pass_opcodes

ALL = sorted(opcodes.OPCODES)
ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ALL)
def test_every_opcode_has_a_shape_rule_and_an_evaluator(name):
    op = opcodes.OPCODES[name]
    assert op.shape_rule == "explicit" or op.shape_rule in shape_inference.SHAPE_RULES
    if op.shape_rule != "explicit":
        assert name in shape_inference._RULES
    else:
        assert name in shape_inference.EXPLICIT_SHAPE_OPCODES
    assert evaluator.has_implementation(name), f"{name} has no evaluator implementation"
    assert op.arity is None or op.arity >= 0
    assert set(op.traits) <= set("xtsc")


def test_evaluator_knows_only_table_opcodes_and_aliases():
    extra = set(evaluator.OPCODES) - set(opcodes.OPCODES) - set(opcodes.ALIASES)
    assert extra == set()
    assert set(opcodes.ALIASES.values()) <= set(opcodes.OPCODES)
    assert not opcodes.UNSUPPORTED & set(opcodes.OPCODES)


def test_layer_sets_come_from_the_table():
    known = set(opcodes.OPCODES)
    for name in ("ELEMENTWISE", "EXPENSIVE", "DATA_MOVEMENT", "LOOP_FUSIBLE", "COMMUTATIVE"):
        assert getattr(pass_opcodes, name) <= known, name
    assert pass_opcodes.SIDE_EFFECTING <= known | opcodes.UNSUPPORTED
    assert analysis.TRANSCENDENTAL == opcodes.select(trait="t")
    # The drift the table removed: no stray "atan" opcode, clz is an alias only.
    assert "atan" not in pass_opcodes.EXPENSIVE | pass_opcodes.ELEMENTWISE
    assert "clz" not in pass_opcodes.ELEMENTWISE and opcodes.lookup("clz").name == \
        "count-leading-zeros"


def test_new_shape_rules():
    f32 = Shape("f32", (3, 10))
    out = shape_inference.infer_shape("topk", [f32], {"k": 4})
    assert out == Shape.tuple([Shape("f32", (3, 4)), Shape("s32", (3, 4))])
    with pytest.raises(shape_inference.HloShapeError, match="k=11"):
        shape_inference.infer_shape("topk", [f32], {"k": 11})
    m = Shape("f32", (2, 4, 4))
    assert shape_inference.infer_shape("cholesky", [m]) == m
    b = Shape("f32", (2, 4, 3))
    assert shape_inference.infer_shape("triangular-solve", [m, b], {"left_side": True}) == b
    with pytest.raises(shape_inference.HloShapeError, match="square"):
        shape_inference.infer_shape("cholesky", [b])
    assert shape_inference.infer_shape("all-reduce", [f32, m]) == Shape.tuple([f32, m])
    assert shape_inference.infer_shape("add-dependency", [f32, Shape("token")]) == f32


def test_parser_canonicalizes_aliases():
    m = parse_module("HloModule m\n\nENTRY e {\n  p = s32[4] parameter(0)\n"
                     "  ROOT c = s32[4] clz(p)\n}\n")
    assert m.entry.root.opcode == "count-leading-zeros"


def test_opcode_coverage_tool():
    out = subprocess.run([sys.executable, "-m", "minijax.tools.opcode_coverage",
                          "--backends", "interpreter,cpu"], capture_output=True, text=True,
                         check=True, env=dict(os.environ, PYTHONPATH=str(ROOT))).stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    for name in ALL:
        assert name in rows, name
    assert rows["add"][-2:] == ["thunk", "kernel"]
    assert rows["dot"][-1] == "library" and rows["while"][-1] == "program"
    assert rows["sort"][-1] == "thunk" and rows["reshape"][-1] == "view"
    assert "cpu:" in out and "interpreter:" in out
