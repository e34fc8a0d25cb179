"""Blocked float reductions shared by the CPU loop emitters (loops.py, row_loops.py): the
block size, a block's bounds and partial-sum slot, and which binary op a reducer is."""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.llvm_types import F32, I64, const, value_type

BLOCK = 2048
_FULL_KINDS = ("add", "multiply", "maximum", "minimum", "and", "or", "xor")


def block_bounds(b: ir.IRBuilder, blk, length: int):
    """[lo, hi) of block `blk` of BLOCK elements within [0, length)."""
    lo = b.mul(blk, const(I64, BLOCK))
    hi = b.add(lo, const(I64, BLOCK))
    return lo, b.select(b.icmp_signed("<", hi, const(I64, length)), hi, const(I64, length))


def block_type(et: str) -> ir.Type:
    """The type of a block's partial float sum: the element's type, float for f16 (whose
    11 bits would lose the sum after 2048 terms)."""
    return F32 if et == "f16" else value_type(et)


def block_partial(b: ir.IRBuilder, alloca, reduce):
    """A fresh slot, set to -0.0, for one block's float sum (float for 16-bit types)."""
    ty = block_type(reduce.shape.element_type)
    p = alloca(ty)
    b.store(ir.Constant(ty, -0.0), p)
    return p


def reducer_kind(r):
    """'add'/'multiply'/... if reduce r's to_apply is one binary op of its two parameters."""
    body = r.called["to_apply"]
    root = body.root
    if len(r.operands) != 2 or len(root.operands) != 2:
        return None
    if {op.opcode for op in root.operands} != {"parameter"}:
        return None
    if {op.parameter_number for op in root.operands} != {0, 1}:
        return None
    return root.opcode if root.opcode in _FULL_KINDS else None
