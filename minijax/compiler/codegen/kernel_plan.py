"""How HLO instructions map onto generated kernels (shared by the CPU backend and AOT export).

- `wrap_instruction(instr)`: a lone kernel-able instruction as a one-instruction fused
  computation, plus the operands it takes (small constants are inlined).
- `split_roots(comp)`: per-output computations for a multi-output fusion whose roots need
  different loop shapes (None when one kernel computes all roots).
"""

from __future__ import annotations

from minijax.compiler.codegen.cpu.loops import mixed_reduce_roots, reduce_roots
from minijax.compiler.hlo.ir import Computation, Instruction
from minijax.compiler.hlo.row_plan import row_fusion_plan


def wrap_instruction(instr: Instruction) -> tuple[Computation, list[Instruction]]:
    """A one-instruction fused computation for `instr` and the operands it takes."""
    params: dict[int, Instruction] = {}
    operands: list[Instruction] = []
    body: list[Instruction] = []
    new_ops = []
    for op in instr.operands:
        if id(op) not in params:
            if op.opcode == "constant" and op.shape.size <= 1:
                p = Instruction("constant", op.shape, literal=op.literal, name=f"c{len(body)}")
            else:
                p = Instruction("parameter", op.shape, name=f"p{len(operands)}",
                                parameter_number=len(operands))
                operands.append(op)
            params[id(op)] = p
            body.append(p)
        new_ops.append(params[id(op)])
    new = Instruction(instr.opcode, instr.shape, new_ops, attrs=instr.attrs,
                      called=instr.called, name="root", literal=instr.literal)
    return Computation(f"wrapped_{instr.name}", body + [new], root=new), operands


def split_roots(comp: Computation) -> list[Computation] | None:
    """Per-output computations for a multi-output fusion whose roots need different loops."""
    root = comp.root
    if root.opcode != "tuple":
        return None
    if reduce_roots(comp) is not None or mixed_reduce_roots(comp) is not None:
        return None
    if row_fusion_plan(comp) is not None:  # one "row_fused" kernel computes every root
        return None
    roots = root.operands
    if all(r.opcode != "reduce" for r in roots) and len({r.shape.dims for r in roots}) == 1:
        return None
    return [Computation(f"{comp.name}.{k}", comp.instructions, root=r)
            for k, r in enumerate(roots)]
