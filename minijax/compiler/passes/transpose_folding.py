"""Transpose folding: absorb a transpose feeding a dot into the dot's dimension numbers.

dot(transpose(a, perm), b) reads a's dims through the permutation: dim j of the transpose is
dim perm[j] of a. So the dot can read `a` directly if its batch and contracting dims are
renamed through perm. The dot's output lists the free (non-batch, non-contracting) dims of
each operand in increasing order, so folding is only done when the renamed free dims stay in
the same relative order; otherwise the result would come out transposed.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Instruction, Module
from minijax.compiler.passes.utils import optimizable_computations, remove_dead


def _fold(dot: Instruction, side: str, index: int) -> bool:
    t = dot.operands[index]
    if t.opcode != "transpose":
        return False
    perm = tuple(t.attrs["dimensions"])
    batch = tuple(dot.attrs.get(f"{side}_batch_dims", ()))
    contracting = tuple(dot.attrs.get(f"{side}_contracting_dims", ()))
    free = [d for d in range(len(perm)) if d not in batch and d not in contracting]
    renamed_free = [perm[d] for d in free]
    if renamed_free != sorted(renamed_free):
        return False
    dot.attrs[f"{side}_batch_dims"] = tuple(perm[d] for d in batch)
    dot.attrs[f"{side}_contracting_dims"] = tuple(perm[d] for d in contracting)
    dot.operands[index] = t.operands[0]
    return True


class TransposeFolding:
    name = "transpose-folding"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in optimizable_computations(module):
            for instr in comp.instructions:
                if instr.opcode == "dot":
                    changed |= _fold(instr, "lhs", 0)
                    changed |= _fold(instr, "rhs", 1)
            if changed:
                remove_dead(comp)
        return changed
