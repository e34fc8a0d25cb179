"""Row plans: the structure of a row fusion (see passes/row_fusion.py), shared by the pass
that builds row fusions and the code generators that run them.

`analyze_row_fusion(comp)` checks a fused computation's row structure and returns its
RowPlan (or the reason it has none). The row-fusion pass records its decision on each fused
computation (`record_row_plan`, stored in `Computation.row_plan`); `plan_for(comp)` is what
backends call: the recorded plan, None for every fusion that is no row fusion. A
computation nobody decided for (parsed from HLO text, built by a test) is decided there,
from its structure, once. This module lives with the HLO so that codegen reads the decision
the pass made without depending on the pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from minijax.compiler.hlo import opcodes
from minijax.compiler.hlo.ir import Computation, Instruction, Shape

ELEMENTWISE = opcodes.select(family="elementwise")

#: Largest row (bytes of one row of every row-shaped parameter) kept in cache across stages.
MAX_ROW_BYTES = 64 * 1024
#: Most reduction stages (inner loops before the output loop) one row fusion may have.
MAX_PASSES = 8


@dataclass
class RowPlan:
    """How a row fusion runs: per row, pass p (1-based) computes the reductions in
    passes[p-1], then the per-row values in row_values[p-1] (which depend on them); a last
    loop over the row stores the row-shaped outputs."""

    rows: tuple[int, ...]                  # the leading dims (one row per index)
    cols: int                              # the reduced minor dim
    passes: list[list[Instruction]]        # reductions, grouped by stage
    row_values: list[list[Instruction]]    # dependent per-row values ready after each stage
    outputs: list[Instruction]             # the computation's outputs, in root order

    def is_full(self, instr: Instruction) -> bool:
        """True for a row-shaped value (dims rows + (cols,))."""
        return tuple(instr.shape.dims) == self.rows + (self.cols,)


def _row_major(shape: Shape) -> bool:
    return all(leaf.layout is None or leaf.minor_to_major == tuple(
        range(leaf.rank - 1, -1, -1)) for leaf in shape.flat())


def _check_reduce(r: Instruction, full: tuple) -> str | None:
    if len(r.operands) != 2 or r.shape.is_tuple:
        return f"{r.name} is a variadic reduction"
    data, init = r.operands
    if tuple(data.shape.dims) != full:
        return f"{r.name} reduces dims {data.shape.dims}, not {full}"
    if tuple(r.attrs.get("dimensions", ())) != (len(full) - 1,):
        return f"{r.name} does not reduce exactly the minor dimension"
    if init.shape.rank != 0:
        return f"{r.name} has a non-scalar init value"
    return None


def _check_dependent(instr: Instruction, rows: tuple, full: tuple, root) -> str | None:
    """Why `instr`, which depends on a reduction, breaks the row structure (None if not)."""
    op = instr.opcode
    dims = tuple(instr.shape.dims)
    per_row = (rows, rows + (1,))
    if op == "tuple":
        return None if instr is root else f"{instr.name}: tuple inside the computation"
    if op in ELEMENTWISE:
        if dims != full and dims not in per_row:
            return f"{instr.name} ({op}) has dims {dims}, neither a row nor a per-row value"
        if any(o.shape.rank and tuple(o.shape.dims) != dims for o in instr.operands):
            return f"{instr.name} ({op}) mixes operand dims"
        return None
    src = tuple(instr.operands[0].shape.dims) if instr.operands else None
    if op == "broadcast":
        if (src == rows and tuple(instr.attrs.get("dimensions", ())) == tuple(range(len(rows)))
                and (dims == full or dims in per_row)):
            return None
    elif op in ("reshape", "bitcast"):
        if src in per_row and dims in per_row:
            return None
    return (f"{instr.name} ({op}) reads a row reduction's result at positions other than "
            "its own row")


def _outputs(comp: Computation) -> list[Instruction]:
    root = comp.root
    return list(root.operands) if root.opcode == "tuple" else [root]


def analyze_row_fusion(comp: Computation, max_row_bytes: int = MAX_ROW_BYTES) -> RowPlan | str:
    """The RowPlan of fused computation `comp`, or the reason it lacks the row structure."""
    reduces = [i for i in comp.instructions if i.opcode == "reduce"]
    if not reduces:
        return "no reduction"
    data = reduces[0].operands[0]
    if data.shape.rank == 0:
        return "reduction of a scalar"
    full = tuple(data.shape.dims)
    rows, cols = full[:-1], full[-1]
    if cols < 2:
        return f"rows of {cols} element(s)"
    root = comp.root
    stage: dict[int, int] = {}  # id -> reduction stages needed before it can be computed
    for instr in comp.instructions:
        if not _row_major(instr.shape):
            return f"{instr.name} has a non-row-major layout"
        if instr.opcode == "reduce":
            reason = _check_reduce(instr, full)
            if reason is None and id(instr.operands[1]) in stage:
                reason = f"{instr.name}'s init value depends on a reduction"
            if reason:
                return reason
            stage[id(instr)] = stage.get(id(instr.operands[0]), 0) + 1
            continue
        deps = [stage[id(o)] for o in instr.operands if id(o) in stage]
        if not deps:
            continue
        reason = _check_dependent(instr, rows, full, root)
        if reason:
            return reason
        stage[id(instr)] = max(deps)
    outputs = _outputs(comp)
    for out in outputs:
        dims = tuple(out.shape.dims) if not out.shape.is_tuple else None
        if dims not in (full, rows, rows + (1,)):
            return f"output {out.name} is neither a row nor a per-row value"
    n_passes = max(stage[id(r)] for r in reduces)
    if n_passes > MAX_PASSES:
        return f"{n_passes} reduction stages (at most {MAX_PASSES})"
    row_bytes = sum(cols * p.shape.dtype.itemsize for p in comp.parameters
                    if tuple(p.shape.dims) == full)
    if row_bytes > max_row_bytes:
        return f"rows of {row_bytes} bytes do not stay in cache (limit {max_row_bytes})"
    passes: list[list[Instruction]] = [[] for _ in range(n_passes)]
    row_values: list[list[Instruction]] = [[] for _ in range(n_passes)]
    for instr in comp.instructions:
        s = stage.get(id(instr))
        if s is None:
            continue
        if instr.opcode == "reduce":
            passes[s - 1].append(instr)
        elif instr.opcode != "tuple" and tuple(instr.shape.dims) in (rows, rows + (1,)):
            row_values[s - 1].append(instr)
    return RowPlan(rows, cols, passes, row_values, outputs)


def _uses_reduction_inside(comp: Computation) -> bool:
    root = comp.root
    return any(op.opcode == "reduce" for i in comp.instructions
               if not (i is root and i.opcode == "tuple") for op in i.operands)


def _decide(comp: Computation, plan: RowPlan | str | None = None) -> RowPlan | str:
    if not _uses_reduction_inside(comp):
        return "no reduction's result is used inside it"
    return analyze_row_fusion(comp) if plan is None else plan


def row_fusion_plan(comp: Computation) -> RowPlan | None:
    """The plan a row fusion of fused computation `comp` would have (a reduction's result is
    used inside it and it has the row structure), else None, derived from its structure
    without reading or recording `comp.row_plan` (backends call `plan_for`)."""
    plan = _decide(comp)
    return plan if isinstance(plan, RowPlan) else None


def record_row_plan(comp: Computation, plan: RowPlan | str | None = None) -> None:
    """Record on fused computation `comp` its row-fusion decision: `plan` (a RowPlan the
    row-fusion pass accepted, or why it has none), or when None the decision derived from
    its structure. A computation whose reductions' results are all only outputs (not used
    inside it) is never a row fusion: its reductions have kernels of their own."""
    comp.row_plan = _decide(comp, plan)


def plan_for(comp: Computation) -> RowPlan | None:
    """The RowPlan a backend runs fused computation `comp` with, None for every other fusion:
    the decision the row-fusion pass recorded on it; a computation the pass never saw
    (parsed from HLO text, built by hand, compiled without fusion) is decided here, once."""
    if comp.row_plan is None:
        record_row_plan(comp)
    return comp.row_plan if isinstance(comp.row_plan, RowPlan) else None
