"""Common subexpression elimination.

Two instructions compute the same value when they have the same opcode, result shape,
operands (the very same instruction objects), attributes, called computations and, for
constants, the same literal. Walking each computation in program order, CSE keeps the first
of every such group and points the users of the others at it. Because operands are compared
by identity, one walk merges whole chains: once two `a` are merged, the two `exp(a)` that
used them become identical too.

Parameters and side-effecting ops (rng, custom-call, ...) are never merged.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction, Module
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.opcodes import COMMUTATIVE, SIDE_EFFECTING
from minijax.compiler.passes.utils import optimizable_computations


def _freeze(value):
    """A hashable version of an attribute value (dicts and lists become tuples)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def value_key(instr: Instruction):
    """A key equal for two instructions exactly when they compute the same value."""
    operand_ids = [id(op) for op in instr.operands]
    if instr.opcode in COMMUTATIVE and len(operand_ids) == 2:
        operand_ids.sort()
    called = tuple(sorted((k, tuple(id(c) for c in (v if isinstance(v, list) else [v])))
                          for k, v in instr.called.items()))
    literal = None
    if instr.literal is not None:
        literal = (str(instr.literal.dtype), instr.literal.shape, instr.literal.tobytes())
    return (instr.opcode, instr.shape, tuple(operand_ids), _freeze(instr.attrs), called,
            literal)


def eliminate_common_subexpressions(comp: Computation) -> dict[int, Instruction]:
    """Merge instructions of `comp` that compute the same value. Returns {id(removed):
    kept} (empty, so falsy, when nothing merged)."""
    replaced: dict[int, Instruction] = {}
    seen: dict = {}
    kept: list[Instruction] = []
    for instr in comp.instructions:
        # One walk in program order: operands are redirected to the kept copies as each
        # user is reached (replacing every use at once per merge made CSE quadratic).
        if replaced:
            ops = instr.operands
            if any(id(op) in replaced for op in ops):
                instr.operands = [replaced.get(id(op), op) for op in ops]
        if instr.opcode == "parameter" or instr.opcode in SIDE_EFFECTING:
            kept.append(instr)
            continue
        try:
            key = value_key(instr)
            hash(key)
        except TypeError:  # an attribute we cannot hash: leave it alone
            kept.append(instr)
            continue
        first = seen.setdefault(key, instr)
        if first is not instr:
            replaced[id(instr)] = first
        else:
            kept.append(instr)
    if replaced:
        comp.instructions = kept
        comp.root = replaced.get(id(comp.root), comp.root)
    return replaced


class CommonSubexpressionElimination(Pass):
    name = "cse"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in optimizable_computations(module):
            changed |= bool(eliminate_common_subexpressions(comp))
        return changed
