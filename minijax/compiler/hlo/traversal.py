"""Graph orders over HLO: instructions in postorder over their operands, computations
callees first. They need only `operands`, `instructions` and `called_computations()`, not
the IR classes, so that printer.py (which ir.py delegates Module.__str__ to) can use them
without importing ir.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minijax.compiler.hlo.ir import Computation

def postorder(roots, members: set[int], seen: set[int], out: list) -> None:
    """Append to `out` a depth-first postorder over operands (operand 0 first) from each root,
    restricted to instructions whose id is in `members` and skipping ids in `seen`."""
    for root in roots:
        stack = [(root, False)]
        while stack:
            node, done = stack.pop()
            if done:
                out.append(node)
                continue
            if id(node) in seen or id(node) not in members:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for op in reversed(node.operands):
                if id(op) not in seen:
                    stack.append((op, False))


def callees_first(roots) -> list[Computation]:
    """The computations reachable from `roots` (in order), each after all it calls."""
    order: list[Computation] = []
    seen: set[int] = set()

    def visit(comp):
        if id(comp) in seen:
            return
        seen.add(id(comp))
        for instr in comp.instructions:
            for callee in instr.called_computations():
                visit(callee)
        order.append(comp)

    for root in roots:
        visit(root)
    return order
