"""Call inlining: replace each `call` instruction by a copy of the computation it calls.

Nested jit lowers to `call`. Inlining exposes the callee's ops to the rest of the pipeline
(fusion never looks through a call). The callee's parameters become the call's operands,
and the call's users read the copy of the callee's root.

A module read from text may also hold `fusion`s: another compiler's decisions (XLA's kLoop,
kInput, kOutput and kCustom fusions, fusions calling fusions, variadic reduces as roots).
They are inlined the same way, so the backend's own fusion pass decides afresh and sees
only the fusion forms it makes itself.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction, Module
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.utils import (
    NameUniquer,
    clone,
    drop_unreachable_computations,
    optimizable_computations,
)


def inline_call(comp: Computation, call: Instruction, names: NameUniquer) -> None:
    """Splice a copy of `call`'s callee into `comp` in place of `call`."""
    callee = call.called.get("to_apply") or call.called["calls"]
    mapping = {id(p): call.operands[p.parameter_number] for p in callee.parameters}
    copies = []
    for instr in callee.instructions:
        if instr.opcode == "parameter":
            continue
        copy = clone(instr, [mapping[id(op)] for op in instr.operands], names.fresh(instr.name))
        mapping[id(instr)] = copy
        copies.append(copy)
    position = comp.instructions.index(call)
    comp.instructions[position:position + 1] = copies
    comp.replace_all_uses(call, mapping[id(callee.root)])


class CallInliner(Pass):
    name = "call-inliner"

    def run(self, module: Module) -> bool:
        names = NameUniquer(module)
        changed = False
        for comp in optimizable_computations(module):
            pending = [i for i in comp.instructions if i.opcode in ("call", "fusion")]
            while pending:
                instr = pending.pop()
                if not instr.called:
                    continue
                before = len(comp.instructions)
                position = comp.instructions.index(instr)
                inline_call(comp, instr, names)
                added = comp.instructions[position:position + len(comp.instructions) - before + 1]
                pending += [i for i in added if i.opcode in ("call", "fusion")]
                changed = True
        if changed:
            drop_unreachable_computations(module)
        return changed
