"""How HLO instructions map onto generated kernels (target-neutral: shared by the CPU and GPU
code generators, the CPU backend and AOT export).

- `wrap_instruction(instr)`: a lone kernel-able instruction as a one-instruction fused
  computation, plus the operands it takes (small constants are inlined).
- `split_roots(comp)`: per-output computations for a multi-output fusion whose roots need
  different loop shapes (None when one kernel computes all roots).
- `reduce_roots(comp)` / `mixed_reduce_roots(comp)`: whether a fused computation is a
  reduction kernel (every root a reduce over one index space), or reductions plus
  elementwise roots over the reduce input's index space.
- Row fusions (hlo/row_plan.py) run as one "row_fused" kernel: `plan_for(comp)`.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction, Shape
from minijax.compiler.hlo.row_plan import plan_for


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
    if plan_for(comp) is not None:  # one "row_fused" kernel computes every root
        return None
    roots = root.operands
    if all(r.opcode != "reduce" for r in roots) and len({r.shape.dims for r in roots}) == 1:
        return None
    return [Computation(f"{comp.name}.{k}", comp.instructions, root=r)
            for k, r in enumerate(roots)]


def reduce_roots(comp: Computation):
    """The reduce instructions at the root of `comp`, or None if it is not a reduce fusion."""
    root = comp.root
    roots = root.operands if root.opcode == "tuple" else [root]
    if not roots or any(r.opcode != "reduce" for r in roots):
        return None
    first = roots[0]
    key = (first.operands[0].shape.dims, tuple(sorted(first.attrs["dimensions"])))
    for r in roots:
        n = len(r.operands) // 2
        if any((op.shape.dims, tuple(sorted(r.attrs["dimensions"]))) != key
               for op in r.operands[:n]):
            return None
    return roots


def mixed_reduce_roots(comp: Computation):
    """(reduces, extras) for a multi-output fusion of reduces plus elementwise roots over the
    reduce input's index space (softmax's sum and exp), else None. Both reduce loops visit
    every input element once, so they also store the extra roots at that element."""
    root = comp.root
    if root.opcode != "tuple":
        return None
    reduces = [r for r in root.operands if r.opcode == "reduce"]
    extras = [r for r in root.operands if r.opcode != "reduce"]
    if not reduces or not extras or reduce_roots(
            Computation(comp.name, comp.instructions, root=_tuple_of(reduces))) is None:
        return None
    dims = reduces[0].operands[0].shape.dims
    for e in extras:
        if e.shape.is_tuple or e.shape.dims != dims or not _row_major_shape(e.shape):
            return None
    return reduces, extras


def _tuple_of(instrs):
    return Instruction("tuple", Shape.tuple([i.shape for i in instrs]), list(instrs),
                       name="mixed.roots")


def _row_major_shape(shape) -> bool:
    return shape.layout is None or shape.minor_to_major == tuple(range(shape.rank - 1, -1, -1))


def root_output_offsets(comp: Computation, roots) -> list[int]:
    """Each root's first output index in the flat order of `comp`'s root tuple."""
    root = comp.root
    if root.opcode != "tuple":
        return [0]
    where, k = {}, 0
    for r in root.operands:
        where.setdefault(id(r), k)
        k += len(r.shape.flat())
    return [where[id(r)] for r in roots]
