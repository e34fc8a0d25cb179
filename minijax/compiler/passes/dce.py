"""Dead code elimination.

An instruction is dead when nothing on a path to its computation's root uses it. DCE deletes
dead instructions in every computation (parameters and side-effecting ops stay), then drops
computations that are no longer called from the entry.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Module
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.opcodes import has_side_effects
from minijax.compiler.passes.utils import drop_unreachable_computations, remove_dead


class DeadCodeElimination(Pass):
    name = "dce"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.reachable_computations():
            changed |= remove_dead(comp, keep=has_side_effects)
        changed |= drop_unreachable_computations(module)
        return changed
