"""Constant folding: evaluate instructions whose operands are all constants.

Each foldable instruction is run once through the reference evaluator
(`evaluate_instruction`) and replaced by a `constant` holding the result. Folding stays
away from:
  * results larger than MAX_FOLDED_ELEMENTS elements (a big literal costs more memory and
    compile time than the op it replaces),
  * broadcasts of scalars (a broadcast is free inside a fusion; its literal would not be),
  * ops without operands (iota, rng: iota is cheaper to compute than to load),
  * side-effecting ops, control flow, fusions and tuple-shaped results.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.evaluator import evaluate_instruction
from minijax.compiler.hlo.ir import Instruction, Module
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.opcodes import SIDE_EFFECTING
from minijax.compiler.passes.utils import (
    NameUniquer,
    make_constant,
    optimizable_computations,
)

MAX_FOLDED_ELEMENTS = 4096

_NEVER_FOLDED = SIDE_EFFECTING | {
    "parameter", "constant", "while", "conditional", "call", "fusion", "tuple",
    "get-tuple-element", "iota",
}


def is_foldable(instr: Instruction) -> bool:
    """True if constant folding may evaluate `instr` at compile time."""
    if instr.opcode in _NEVER_FOLDED or instr.shape.is_tuple or not instr.operands:
        return False
    if instr.shape.element_type == "token":
        return False
    if not all(op.opcode == "constant" and op.literal is not None for op in instr.operands):
        return False
    if instr.opcode == "broadcast" and instr.operands[0].shape.size == 1:
        return False
    return instr.shape.size <= MAX_FOLDED_ELEMENTS


class ConstantFolding(Pass):
    name = "constant-folding"

    def run(self, module: Module) -> bool:
        names = None
        changed = False
        for comp in optimizable_computations(module):
            folded_for: dict[int, Instruction] = {}
            out: list[Instruction] = []
            for instr in comp.instructions:
                # Users are reached after their operands: redirect them to folded constants
                # here rather than rewriting every instruction once per fold.
                if folded_for:
                    ops = instr.operands
                    if any(id(op) in folded_for for op in ops):
                        instr.operands = [folded_for.get(id(op), op) for op in ops]
                folded = None
                if is_foldable(instr):
                    if names is None:
                        names = NameUniquer(module)
                    folded = _fold(instr, names)
                if folded is None:
                    out.append(instr)
                    continue
                folded_for[id(instr)] = folded
                out.append(folded)
                changed = True
            if folded_for:
                comp.instructions = out
                comp.root = folded_for.get(id(comp.root), comp.root)
        return changed


def _fold(instr: Instruction, names: NameUniquer) -> Instruction | None:
    """A constant with `instr`'s value, or None if the evaluator cannot compute it."""
    try:
        value = evaluate_instruction(instr, [op.literal for op in instr.operands])
    except Exception:  # the evaluator cannot do it: keep the op, never fail
        return None
    value = np.asarray(value)
    if value.size != instr.shape.size:
        return None
    folded = make_constant(value.reshape(instr.shape.dims), instr.shape, names.fresh("constant"))
    folded.metadata = dict(instr.metadata)
    return folded
