"""Opcode families that the passes reason about (derived from the opcode table,
minijax/compiler/hlo/opcodes.py).

These sets are the passes' vocabulary: which ops are elementwise, which are expensive enough
that fusion must never compute them twice, which can live inside a loop fusion, and which
have side effects (so DCE, CSE and constant folding leave them alone).
"""

from __future__ import annotations

from minijax.compiler.hlo import opcodes

ELEMENTWISE_UNARY = opcodes.select(family="elementwise", arity=1)
ELEMENTWISE_BINARY = opcodes.select(family="elementwise", arity=2)
ELEMENTWISE_TERNARY = opcodes.select(family="elementwise", arity=3)
ELEMENTWISE = ELEMENTWISE_UNARY | ELEMENTWISE_BINARY | ELEMENTWISE_TERNARY

# Ops whose per-element cost is far above a load/store: fusion never duplicates them.
EXPENSIVE = opcodes.select(trait="x")

# Ops that only move or replicate data; each output element reads at most one input element.
# (Dynamic slices read at run-time offsets and iota reads nothing: not listed here.)
DATA_MOVEMENT = opcodes.select(family="data-movement") - {
    "dynamic-slice", "dynamic-update-slice", "iota"}

# Everything a loop fusion may contain (besides parameters and scalar constants).
LOOP_FUSIBLE = ELEMENTWISE | DATA_MOVEMENT | frozenset({"iota"})

# Ops with effects beyond their result: never removed, merged or folded.
SIDE_EFFECTING = opcodes.select(trait="s") | opcodes.UNSUPPORTED

def has_side_effects(instr) -> bool:
    """True for a side-effecting op and for control flow / calls whose computations hold one
    (a while loop running minijax.debug.print stays even when its result is unused)."""
    if instr.opcode in SIDE_EFFECTING:
        return True
    return any(has_side_effects(i) for c in instr.called_computations()
               for i in c.instructions)


COMMUTATIVE = opcodes.select(trait="c")


def is_elementwise(opcode: str) -> bool:
    return opcode in ELEMENTWISE
