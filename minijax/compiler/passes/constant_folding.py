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

from minijax.compiler.hlo.ir import Instruction, Module
from minijax.compiler.passes.opcodes import SIDE_EFFECTING
from minijax.compiler.passes.utils import (
    NameUniquer,
    make_constant,
    optimizable_computations,
    replace_instruction,
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


class ConstantFolding:
    name = "constant-folding"

    def run(self, module: Module) -> bool:
        from minijax.compiler.evaluator import evaluate_instruction

        names = NameUniquer(module)
        changed = False
        for comp in optimizable_computations(module):
            for instr in list(comp.instructions):
                if not is_foldable(instr):
                    continue
                try:
                    value = evaluate_instruction(instr, [op.literal for op in instr.operands])
                except Exception:  # the evaluator cannot do it: keep the op, never fail
                    continue
                value = np.asarray(value)
                if value.size != instr.shape.size:
                    continue
                folded = make_constant(value.reshape(instr.shape.dims), instr.shape,
                                       names.fresh("constant"))
                folded.metadata = dict(instr.metadata)
                comp.instructions.insert(comp.instructions.index(instr), folded)
                replace_instruction(comp, instr, folded)
                changed = True
        return changed
