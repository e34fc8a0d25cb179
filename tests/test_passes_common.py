"""Helpers shared by the pass tests (tests/test_passes_*.py), and tests of the helpers.

A pass test parses a small HLO module, runs one pass, checks the structure that comes out,
and checks with the reference evaluator that the outputs did not change.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import strategies as st

from minijax.compiler.evaluator import evaluate_module
from minijax.compiler.hlo.ir import Module
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.hlo.verifier import verify_module
from minijax.compiler.passes.opcodes import ELEMENTWISE, EXPENSIVE, LOOP_FUSIBLE

SUM = """
HloModule sum
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
"""


def hlo(entry: str, name: str = "test", reducers: bool = True) -> str:
    """A module text with `entry` as the ENTRY body (and add/max reducers available)."""
    head = SUM.replace("HloModule sum", f"HloModule {name}") if reducers \
        else f"HloModule {name}\n"
    return f"{head}\nENTRY main {{\n{entry.strip()}\n}}\n"


def dims_text(dims) -> str:
    return ",".join(str(d) for d in dims)


def entry_opcodes(module: Module) -> Counter:
    """How many of each opcode the entry holds (parameters included)."""
    return Counter(i.opcode for i in module.entry.instructions)


def random_args(module: Module, seed: int = 0) -> list[np.ndarray]:
    """Random arguments for the entry's parameters (small ints for integer types)."""
    rng = np.random.default_rng(seed)
    args = []
    for p in module.entry.parameters:
        shape = p.shape
        if shape.element_type in ("f16", "bf16", "f32", "f64"):
            args.append(rng.standard_normal(shape.dims).astype(shape.dtype))
        elif shape.element_type == "pred":
            args.append(rng.integers(0, 2, shape.dims).astype(bool))
        else:
            args.append(rng.integers(-5, 6, shape.dims).astype(shape.dtype))
    return args


def run_pass(p, text: str, seed: int = 0, rtol: float = 1e-5) -> tuple[Module, bool]:
    """Parse `text`, run pass `p` on it, verify the result, and check that the evaluator
    gives the same outputs before and after on random arguments. Returns (module,
    changed)."""
    before = parse_module(text)
    after = parse_module(text)
    changed = p.run(after)
    verify_module(after)
    assert_same_outputs(before, after, seed, rtol)
    return after, changed


def assert_same_outputs(before: Module, after: Module, seed: int = 0, rtol: float = 1e-5):
    args = random_args(before, seed)
    expected = evaluate_module(before, [a.copy() for a in args])
    actual = evaluate_module(after, [a.copy() for a in args])
    assert len(expected) == len(actual)
    for e, a in zip(expected, actual):
        assert e.shape == a.shape and e.dtype == a.dtype, (e.shape, a.shape, e.dtype, a.dtype)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol)


def shapes(min_rank: int = 1, max_rank: int = 3, max_dim: int = 4):
    """Hypothesis strategy for small array dims."""
    return st.lists(st.integers(1, max_dim), min_size=min_rank, max_size=max_rank).map(tuple)


def test_opcode_families_are_consistent():
    assert ELEMENTWISE <= LOOP_FUSIBLE
    assert "exponential" in EXPENSIVE and "add" not in EXPENSIVE
    assert {"dot", "reduce"} <= EXPENSIVE


def test_helpers_round_trip_and_evaluate():
    text = hlo("""
  x = f32[3] parameter(0)
  ROOT t = (f32[3]) tuple(x)
""")
    module, changed = run_pass(type("Nop", (), {"name": "nop", "run": lambda s, m: False})(),
                               text)
    assert not changed
    assert entry_opcodes(module) == Counter({"parameter": 1, "tuple": 1})
