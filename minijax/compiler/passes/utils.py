"""Small helpers shared by the passes: naming, graph queries and in-place rewrites."""

from __future__ import annotations

import numpy as np

from minijax.compiler.hlo.ir import Computation, Instruction, Module, Shape
from minijax.compiler.passes.opcodes import has_side_effects


class NameUniquer:
    """Hands out instruction and computation names not yet used anywhere in a module."""

    def __init__(self, module: Module):
        self.used: set[str] = set()
        self.counters: dict[str, int] = {}
        for comp in module.computations:
            self.used.add(comp.name)
            self.used.update(i.name for i in comp.instructions)

    def fresh(self, base: str) -> str:
        base = base.replace("-", "_")
        if base not in self.used:
            self.used.add(base)
            return base
        k = self.counters.get(base, 0)
        while True:
            k += 1
            name = f"{base}.{k}"
            if name not in self.used:
                self.counters[base] = k
                self.used.add(name)
                return name


def fused_computations(module: Module) -> set[int]:
    """ids of computations that are the body of a fusion instruction."""
    out: set[int] = set()
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode == "fusion" and "calls" in instr.called:
                out.add(id(instr.called["calls"]))
    return out


def optimizable_computations(module: Module) -> list[Computation]:
    """Reachable computations that passes rewrite: all but fusion bodies."""
    fused = fused_computations(module)
    return [c for c in module.reachable_computations() if id(c) not in fused]


def sequential_computations(module: Module) -> list[Computation]:
    """The entry and the bodies of control flow (while, conditional, call): the computations
    that run as a sequence of kernels, as opposed to reducers and fusion bodies."""
    sequential = {id(module.entry)}
    for comp in module.reachable_computations():
        for instr in comp.instructions:
            if instr.opcode in ("while", "conditional", "call"):
                sequential.update(id(c) for c in instr.called_computations())
    return [c for c in module.reachable_computations() if id(c) in sequential]


def drop_unreachable_computations(module: Module) -> bool:
    """Remove computations no longer called from the entry. Returns True if any went."""
    reachable = module.reachable_computations()
    changed = len(reachable) != len(module.computations)
    module.computations = reachable
    return changed


def remove_dead(comp: Computation, keep=lambda instr: False) -> bool:
    """Delete instructions not reachable (through operands) from the root.

    Parameters always stay (they are the computation's signature), and so does anything for
    which `keep(instr)` is true, and anything with side effects (a custom-call, or a loop
    whose body holds one, e.g. minijax.debug.print).
    """
    live: set[int] = set()
    stack = [comp.root] + [i for i in comp.instructions
                           if i.opcode == "parameter" or keep(i) or has_side_effects(i)]
    while stack:
        instr = stack.pop()
        if id(instr) in live:
            continue
        live.add(id(instr))
        stack.extend(instr.operands)
    before = len(comp.instructions)
    comp.instructions = [i for i in comp.instructions if id(i) in live]
    return len(comp.instructions) != before


def users_of(comp: Computation, instr: Instruction) -> list[Instruction]:
    """Distinct users of `instr` in `comp`, in program order."""
    return [u for u in comp.instructions if any(op is instr for op in u.operands)]


def replace_instruction(comp: Computation, old: Instruction, new: Instruction) -> None:
    """Make every use of `old` (including the root) use `new`, and drop `old` from `comp`."""
    comp.replace_all_uses(old, new)
    comp.instructions = [i for i in comp.instructions if i is not old]


def reaches(source: Instruction, target: Instruction, position: dict | None = None,
            limit: int | None = None) -> bool:
    """True if `target` depends on `source` through a chain of operands. With `position`
    (id -> index in a topologically sorted computation), the search skips everything
    before `source`, which cannot depend on it. With `limit`, a search that would visit
    more instructions than that gives up and answers True (the safe answer for a pass
    asking "may I merge these?")."""
    seen: set[int] = set()
    stack = [target]
    floor = position.get(id(source)) if position is not None else None
    while stack:
        instr = stack.pop()
        if instr is source:
            return True
        if id(instr) in seen:
            continue
        if limit is not None and len(seen) >= limit:
            return True
        seen.add(id(instr))
        if floor is None:
            stack.extend(instr.operands)
        else:
            stack.extend(op for op in instr.operands if position.get(id(op), floor) >= floor)
    return False


def clone(instr: Instruction, operands, name: str) -> Instruction:
    """A copy of `instr` with new operands and name (called computations are shared)."""
    return Instruction(
        opcode=instr.opcode, shape=instr.shape, operands=list(operands),
        attrs=dict(instr.attrs), called=dict(instr.called), name=name,
        literal=instr.literal, parameter_number=instr.parameter_number,
        metadata=dict(instr.metadata))


def same_array_shape(a: Shape, b: Shape) -> bool:
    """Equal element type and dims (layouts ignored)."""
    return a.element_type == b.element_type and tuple(a.dims) == tuple(b.dims)


def scalar_constant_value(instr: Instruction):
    """If `instr` is a constant (or a broadcast of one) whose elements are all equal, return
    that value as a numpy scalar; else None."""
    while instr.opcode in ("broadcast", "reshape", "bitcast") and instr.operands:
        instr = instr.operands[0]
    if instr.opcode != "constant" or instr.literal is None or instr.shape.is_tuple:
        return None
    lit = np.asarray(instr.literal)
    if lit.size == 0:
        return None
    first = lit.reshape(-1)[0]
    if lit.size > 1 and not np.all(lit == first):
        return None
    return first


def is_constant_equal(instr: Instruction, value) -> bool:
    """True if every element of `instr` is a known constant equal to `value`."""
    v = scalar_constant_value(instr)
    if v is None:
        return False
    with np.errstate(invalid="ignore"):
        return bool(v == value)


def reducer_opcode(comp: Computation) -> str | None:
    """The binary opcode of a simple reducer `(a, b) -> op(a, b)`, e.g. "add"; else None."""
    root = comp.root
    params = comp.parameters
    if root is None or len(params) != 2 or len(root.operands) != 2:
        return None
    if {id(o) for o in root.operands} != {id(p) for p in params}:
        return None
    return root.opcode


def make_constant(value, shape: Shape, name: str) -> Instruction:
    """A constant instruction holding `value` (broadcast to `shape`)."""
    literal = np.broadcast_to(np.asarray(value, dtype=shape.dtype), shape.dims).copy()
    return Instruction("constant", Shape(shape.element_type, tuple(shape.dims)),
                       literal=literal, name=name)
