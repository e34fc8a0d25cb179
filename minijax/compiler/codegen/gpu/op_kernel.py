"""What the GPU kernels of single HLO instructions (gather, scatter, sort, top-k,
reduce-window, select-and-scatter, convolution) share: the kernel function over the
instruction's operands in order (one pointer per operand, duplicates included, as the
program passes them), typed loads and stores by linear offset, row-major offsets from
multi-indices, and index-operand reads widened to i64.

Shapes are compile-time constants, so every offset is arithmetic on constants and thread
indices; every loop is a counted loop (llvm_types.emit_counted_loop).
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.gpu.function import KernelFunction
from minijax.compiler.codegen.llvm_types import I64, INT_TYPES, const, is_signed
from minijax.compiler.hlo.ir import Computation, Instruction

INDEX_TYPES = INT_TYPES


def row_major(shape) -> bool:
    return shape.layout is None or shape.minor_to_major == tuple(range(shape.rank - 1, -1, -1))


def operand_computation(instr: Instruction) -> Computation:
    """`instr` over one parameter per operand, in operand order (no deduplication)."""
    params = [Instruction("parameter", op.shape, name=f"p{k}", parameter_number=k)
              for k, op in enumerate(instr.operands)]
    root = Instruction(instr.opcode, instr.shape, params, attrs=instr.attrs,
                       called=instr.called, name="root")
    return Computation(f"op_{instr.name}", params + [root], root=root)


def all_row_major(instr: Instruction) -> bool:
    return all(row_major(s) for s in instr.shape.flat()) and all(
        row_major(op.shape) for op in instr.operands)


class OpKernel:
    """A kernel function for one instruction's operands and flat outputs."""

    def __init__(self, module: ir.Module, name: str, instr: Instruction, suffix: str = ""):
        self.instr = instr
        self.comp = operand_computation(instr)
        self.outs = list(instr.shape.flat())
        self.f = KernelFunction(module, name + suffix, self.comp, self.outs)
        self.b = self.f.b

    def operand_type(self, k: int) -> str:
        return self.instr.operands[k].shape.element_type

    def load(self, k: int, lin):
        """Operand `k`'s element at linear offset `lin`, in its value type."""
        b = self.b
        v = b.load(b.gep(self.f.param_ptrs[k], [lin], inbounds=True))
        return self.f.em.to_value(v, self.operand_type(k))

    def load_raw(self, k: int, lin):
        b = self.b
        return b.load(b.gep(self.f.param_ptrs[k], [lin], inbounds=True))

    def store(self, k: int, lin, value) -> None:
        """Output `k`'s element at `lin` = value (in the output's value type)."""
        self.f.store(k, lin, value)

    def store_raw(self, k: int, lin, stored) -> None:
        b = self.b
        b.store(stored, b.gep(self.f.out_ptrs[k], [lin], inbounds=True))

    def load_out(self, k: int, lin):
        b = self.b
        v = b.load(b.gep(self.f.out_ptrs[k], [lin], inbounds=True))
        return self.f.em.to_value(v, self.outs[k].element_type)

    def load_index(self, k: int, lin):
        """Integer operand `k`'s element at `lin` as an i64 (sign- or zero-extended)."""
        b = self.b
        v = self.load_raw(k, lin)
        if v.type.width == 64:
            return v
        return b.sext(v, I64) if is_signed(self.operand_type(k)) else b.zext(v, I64)

    def linear(self, dims, multi):
        """Row-major offset of `multi` (i64 values or ints) within constant `dims`."""
        b = self.b
        lin = const(I64, 0)
        for d, m in zip(dims, multi):
            m = const(I64, m) if isinstance(m, int) else m
            lin = b.add(b.mul(lin, const(I64, d)), m)
        return lin

    def clamp(self, v, lo: int, hi: int):
        """min(max(v, lo), hi) on signed i64 (hi < lo gives lo)."""
        b = self.b
        v = b.select(b.icmp_signed("<", v, const(I64, hi)), v, const(I64, hi))
        return b.select(b.icmp_signed(">", v, const(I64, lo)), v, const(I64, lo))

    def in_range(self, v, lo: int, hi: int):
        """lo <= v < hi on signed i64, as an i1."""
        b = self.b
        return b.and_(b.icmp_signed(">=", v, const(I64, lo)), b.icmp_signed("<", v, const(I64, hi)))

    def finish(self) -> None:
        self.f.finish()


__all__ = ["INDEX_TYPES", "OpKernel", "all_row_major", "operand_computation", "row_major"]
