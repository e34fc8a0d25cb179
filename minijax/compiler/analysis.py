"""Cost and memory analysis of (optimized) HLO modules, as Compiled.cost_analysis() and
Compiled.memory_analysis() report them."""

from __future__ import annotations

from dataclasses import dataclass

from minijax.compiler.hlo import opcodes
from minijax.compiler.passes.buffer_assignment import assign_buffers

TRANSCENDENTAL = opcodes.select(trait="t")
FREE = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "reshape",
                  "broadcast", "iota", "transpose", "slice", "concatenate", "pad", "reverse",
                  "copy", "after-all"})


def _instruction_cost(instr) -> tuple[float, float]:
    op = instr.opcode
    size = instr.shape.size if not instr.shape.is_tuple else sum(
        s.size for s in instr.shape.flat())
    if op in FREE:
        return 0.0, 0.0
    if op == "dot":
        lhs = instr.operands[0].shape
        contract = 1
        for d in instr.attrs.get("lhs_contracting_dims", ()):
            contract *= lhs.dims[d]
        return 2.0 * size * contract, 0.0
    if op == "convolution":
        rhs = instr.operands[1].shape
        kernel = rhs.size // max(1, _output_feature_count(instr, rhs))
        return 2.0 * size * kernel, 0.0
    if op in ("reduce", "reduce-window"):
        return float(instr.operands[0].shape.size), 0.0
    if op in ("fusion", "call", "while", "conditional"):
        flops = trans = 0.0
        for comp in instr.called_computations():
            for inner in comp.instructions:
                f, t = _instruction_cost(inner)
                flops += f
                trans += t
        return flops, trans
    if op in TRANSCENDENTAL:
        return float(size), float(size)
    return float(size), 0.0


def _output_feature_count(instr, rhs_shape) -> int:
    labels = instr.attrs.get("dim_labels", "")
    try:
        kernel = labels.split("_")[1].split("->")[0]
        return rhs_shape.dims[kernel.index("o")]
    except (IndexError, ValueError):
        return 1


def cost_analysis(module) -> dict:
    """flops, transcendentals and bytes accessed (operands read + results written, for
    each top-level instruction of the entry computation)."""
    flops = trans = 0.0
    bytes_accessed = 0
    for instr in module.entry.instructions:
        f, t = _instruction_cost(instr)
        flops += f
        trans += t
        if instr.opcode in ("parameter", "constant", "tuple", "get-tuple-element"):
            continue
        bytes_accessed += instr.shape.nbytes + sum(op.shape.nbytes for op in instr.operands)
    return {"flops": flops, "transcendentals": trans, "bytes accessed": float(bytes_accessed)}


@dataclass
class MemoryAnalysis:
    """Byte counts from buffer assignment (never zeros for a non-empty program)."""

    argument_size_in_bytes: int
    output_size_in_bytes: int
    temp_size_in_bytes: int
    alias_size_in_bytes: int
    generated_code_size_in_bytes: int
    peak_memory_in_bytes: int

    def __str__(self) -> str:
        return (f"arguments {self.argument_size_in_bytes} B, outputs "
                f"{self.output_size_in_bytes} B, temporaries {self.temp_size_in_bytes} B, "
                f"peak {self.peak_memory_in_bytes} B")


def memory_analysis(module) -> MemoryAnalysis:
    """Memory use from the module's buffer assignment (computed if missing)."""
    assignment = module.buffer_assignment
    if assignment is None:
        assignment = assign_buffers(module)
    return MemoryAnalysis(
        argument_size_in_bytes=int(assignment.argument_bytes),
        output_size_in_bytes=int(assignment.output_bytes),
        temp_size_in_bytes=int(assignment.temp_bytes),
        alias_size_in_bytes=int(getattr(assignment, "alias_bytes", 0)),
        generated_code_size_in_bytes=0,
        peak_memory_in_bytes=int(assignment.peak_bytes))
