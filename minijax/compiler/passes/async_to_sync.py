"""Turn XLA's asynchronous op pairs back into the synchronous ops minijax compiles.

Scheduled XLA modules hold `all-reduce-start`/`-done`, `all-gather-start`/`-done`,
`collective-permute-start`/`-done`, `copy-start`/`-done` and `async-start`/`-update`/`-done`
(a wrapped computation). Each done becomes the synchronous op on the start's operands
(`async-done` a `call` of the wrapped computation, which call inlining then splices in);
the starts and updates are left for DCE. `get-dimension-size` of a static dimension
becomes a constant. Runs first in the pipeline, with layout normalization.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.hlo.ir import Instruction, Module, Shape
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.utils import NameUniquer

_PAIRS = {"all-reduce-done": "all-reduce-start", "all-gather-done": "all-gather-start",
          "collective-permute-done": "collective-permute-start", "copy-done": "copy-start",
          "async-done": "async-start"}


def _start_of(done: Instruction) -> Instruction | None:
    op = done.operands[0] if done.operands else None
    while op is not None and op.opcode == "async-update":
        op = op.operands[0] if op.operands else None
    return op if op is not None and op.opcode == _PAIRS[done.opcode] else None


def _sync(done: Instruction, start: Instruction, name: str) -> Instruction:
    shape = done.shape
    if done.opcode == "copy-done":
        return Instruction("copy", shape, list(start.operands), name=name,
                           metadata=dict(start.metadata))
    if done.opcode == "async-done":
        return Instruction("call", shape, list(start.operands), name=name,
                           called={"to_apply": start.called["calls"]},
                           metadata=dict(start.metadata))
    attrs = {k: v for k, v in start.attrs.items() if k != "backend_config"}
    return Instruction(start.opcode[: -len("-start")], shape, list(start.operands), attrs,
                       {k: v for k, v in start.called.items()}, name=name,
                       metadata=dict(start.metadata))


class AsyncToSync(Pass):
    name = "async-to-sync"

    def run(self, module: Module) -> bool:
        names: NameUniquer | None = None
        changed = False
        for comp in module.reachable_computations():
            for instr in list(comp.instructions):
                if instr.opcode in _PAIRS:
                    start = _start_of(instr)
                    if start is None:
                        continue
                    names = names or NameUniquer(module)
                    new = _sync(instr, start, names.fresh(instr.name + ".sync"))
                elif instr.opcode == "get-dimension-size" and instr.operands:
                    dim = instr.attrs["dimensions"][0]
                    size = instr.operands[0].shape.dims[dim]
                    names = names or NameUniquer(module)
                    new = Instruction("constant", Shape(instr.shape.element_type, ()),
                                      name=names.fresh(instr.name + ".static"),
                                      literal=np.asarray(size, instr.shape.dtype))
                else:
                    continue
                position = comp.instructions.index(instr)
                comp.instructions[position:position + 1] = [new]
                comp.replace_all_uses(instr, new)
                changed = True
            if changed:
                _drop_unused_starts(comp)
        return changed


def _drop_unused_starts(comp) -> None:
    """Remove starts and updates nothing reads any more (collective starts count as side
    effects for DCE, so it would keep them)."""
    starts = set(_PAIRS.values()) | {"async-update"}
    while True:
        used = {id(op) for i in comp.instructions for op in i.operands} | {id(comp.root)}
        dead = [i for i in comp.instructions if i.opcode in starts and id(i) not in used]
        if not dead:
            return
        gone = {id(i) for i in dead}
        comp.instructions = [i for i in comp.instructions if id(i) not in gone]
