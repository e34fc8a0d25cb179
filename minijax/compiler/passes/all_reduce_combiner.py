"""All-reduce combiner: independent all-reduces over the same replica groups with the same
reduction become one variadic all-reduce (one rendezvous instead of several), as XLA's
pass of the same name does.

A data-parallel step all-reduces every gradient separately (psum/pmean of a pytree binds
one collective per leaf); each is a meeting of all devices, so merging them removes most of
the waiting. Two all-reduces combine only when neither depends on the other; the combined
instruction takes every operand, returns a tuple, and each former all-reduce becomes a
get-tuple-element of it (the computation is re-sorted so it sits after its operands).
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Instruction, Shape
from minijax.compiler.passes.base import Pass


def _key(instr: Instruction):
    comp = instr.called.get("to_apply")
    root = comp.root if comp is not None else None
    if root is None or len(instr.operands) != 1 or instr.shape.is_tuple:
        return None
    return (str(instr.attrs.get("replica_groups")), str(instr.attrs.get("channel_id")),
            str(instr.attrs.get("use_global_device_ids")), root.opcode,
            root.shape.element_type, instr.shape.element_type)


class AllReduceCombiner(Pass):
    """Merge independent, compatible all-reduces of each computation."""

    name = "all-reduce-combiner"

    def run(self, module) -> bool:
        changed = False
        for comp in module.computations:
            changed |= self._combine(comp)
        return changed

    def _combine(self, comp) -> bool:
        deps: dict = {}
        groups: list = []
        for instr in comp.instructions:
            d = frozenset().union(*[deps[id(o)] for o in instr.operands]) \
                if instr.operands else frozenset()
            if instr.opcode == "all-reduce":
                key = _key(instr)
                if key is not None:
                    for g in groups:
                        if g[0] == key and not (d & g[2]):
                            g[1].append(instr)
                            g[2].add(id(instr))
                            break
                    else:
                        groups.append((key, [instr], {id(instr)}))
                d = d | {id(instr)}
            deps[id(instr)] = d
        changed = False
        for _, members, _ in groups:
            if len(members) < 2:
                continue
            first = members[0]
            combined = Instruction(
                "all-reduce", Shape.tuple([m.shape for m in members]),
                [m.operands[0] for m in members], dict(first.attrs), dict(first.called),
                name=f"{first.name}.combined", metadata=dict(first.metadata))
            comp.add(combined)
            for k, m in enumerate(members):
                gte = comp.add(Instruction("get-tuple-element", m.shape, [combined],
                                           {"index": k}, name=f"{m.name}.gte"))
                comp.replace_all_uses(m, gte)
                comp.instructions.remove(m)
            changed = True
        if changed:
            comp.topological_sort()
        return changed
