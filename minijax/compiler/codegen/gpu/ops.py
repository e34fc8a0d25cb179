"""Dedicated GPU kernels for single HLO instructions the elemental emitter does not cover
(gather, scatter, sort, topk, reduce-window, select-and-scatter, convolution).

`op_kernel_reason(instr)` says why `instr` has no such kernel (None when it has);
`emit_op_kernel(module, name, instr)` emits it. The kernels take the instruction's operands
in order (kernel ABI of function.py: operands, flat outputs, scratch) and their launches
run in order on one stream.
"""

from __future__ import annotations

from minijax.compiler.codegen.gpu import nvvm
from minijax.compiler.codegen.gpu.kernels import gpu_unsupported_reason
from minijax.compiler.codegen.gpu.scatter_gather import (
    emit_gather,
    emit_scatter,
    gather_reason,
    scatter_reason,
)
from minijax.compiler.codegen.gpu.sort import emit_sort, emit_topk, sort_reason, topk_reason
from minijax.compiler.codegen.gpu.spec import GpuKernel
from minijax.compiler.codegen.gpu.windows import (
    convolution_reason,
    emit_convolution,
    emit_reduce_window,
    emit_select_and_scatter,
    reduce_window_reason,
    select_and_scatter_reason,
)
from minijax.compiler.codegen.target import generating_for
from minijax.compiler.hlo.ir import Computation, Instruction

_EMITTERS = {
    "gather": (gather_reason, emit_gather),
    "scatter": (scatter_reason, emit_scatter),
    "sort": (sort_reason, emit_sort),
    "topk": (topk_reason, emit_topk),
    "reduce-window": (reduce_window_reason, emit_reduce_window),
    "select-and-scatter": (select_and_scatter_reason, emit_select_and_scatter),
    "convolution": (convolution_reason, emit_convolution),
}
#: The opcodes with a dedicated kernel (when op_kernel_reason allows).
OP_KERNEL_OPCODES = frozenset(_EMITTERS)


def op_kernel_reason(instr: Instruction) -> str | None:
    """Why `instr` cannot run as a dedicated GPU kernel (None if it can)."""
    entry = _EMITTERS.get(instr.opcode)
    if entry is None:
        return f"no GPU kernel for {instr.opcode}"
    if any(op.shape.is_tuple for op in instr.operands):
        return "tuple operands"
    for called in instr.called.values():
        if isinstance(called, Computation):
            why = gpu_unsupported_reason(called)
            if why is not None:
                return why
    return entry[0](instr)


def emit_op_kernel(module, name: str, instr: Instruction) -> GpuKernel:
    """Emit the dedicated kernel of `instr` into `module` (op_kernel_reason must be None)."""
    with generating_for(nvvm.NVPTX):
        return _EMITTERS[instr.opcode][1](module, name, instr)


__all__ = ["OP_KERNEL_OPCODES", "emit_op_kernel", "op_kernel_reason"]
