"""dot (dot_general) as a generated loop nest, for code that cannot call a BLAS (AOT export).

`emit_dot_kernel(module, name, instr)` emits `void name(void **buffers, int64 start,
int64 end)` (the loop emitter's calling convention: lhs, rhs, then the output) computing
`instr` (an HLO `dot`) for output rows [start, end) of its leading dimension. Loops run
over the output's dimensions (batch, lhs free, rhs free) with the contracting dimensions
innermost, accumulating in a register; float sums may be reassociated so LLVM vectorizes.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.cpu.loops import emit_counted_loop
from minijax.compiler.codegen.elemental import convert, strides_of
from minijax.compiler.codegen.float16 import bf16_bits, bf16_from_bits
from minijax.compiler.codegen.llvm_types import I64, const, is_float, storage_type, value_type


def dot_dims(instr):
    """(batch, lhs free, rhs free, lhs contracting, rhs contracting) dimension lists."""
    lhs, rhs = (o.shape for o in instr.operands)
    a = instr.attrs
    lb, rb = list(a.get("lhs_batch_dims", ())), list(a.get("rhs_batch_dims", ()))
    lc, rc = list(a.get("lhs_contracting_dims", ())), list(a.get("rhs_contracting_dims", ()))
    lfree = [d for d in range(lhs.rank) if d not in lb + lc]
    rfree = [d for d in range(rhs.rank) if d not in rb + rc]
    return (lb, rb), lfree, rfree, lc, rc


def emit_dot_kernel(module: ir.Module, name: str, instr) -> int:
    """Emit the loop nest for `instr`; returns the outer range (the output's first dim)."""
    lhs, rhs = (o.shape for o in instr.operands)
    out = instr.shape
    (lb, rb), lfree, rfree, lc, rc = dot_dims(instr)
    et = out.element_type
    i8pp = ir.IntType(8).as_pointer().as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i8pp, I64, I64]), name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ptrs = []
    for k, shape in enumerate((lhs, rhs, out)):
        raw = b.load(b.gep(fn.args[0], [const(I64, k)], inbounds=True))
        ptrs.append(b.bitcast(raw, storage_type(shape.element_type).as_pointer()))
    # 16-bit floats accumulate in float and round once (as XLA:CPU's upcast dot).
    acc_et = "f32" if et in ("f16", "bf16") else et
    acc_ty = value_type(acc_et)
    acc = b.alloca(acc_ty)
    ls, rs, os_ = strides_of(lhs), strides_of(rhs), strides_of(out)
    # Each output dimension: (size, lhs stride, rhs stride, out stride).
    out_loops = [(lhs.dims[d], ls[d], rs[e]) for d, e in zip(lb, rb)]
    out_loops += [(lhs.dims[d], ls[d], 0) for d in lfree]
    out_loops += [(rhs.dims[d], 0, rs[d]) for d in rfree]
    red_loops = [(lhs.dims[d], ls[d], rs[e]) for d, e in zip(lc, rc)]
    zero = const(I64, 0)

    def load(ptr, off, shape):
        v = b.load(b.gep(ptr, [off], inbounds=True))
        if shape.element_type == "pred":
            v = b.icmp_unsigned("!=", v, const(v.type, 0))
        if shape.element_type == "bf16":
            v = bf16_from_bits(b, v)
        src = shape.element_type
        return convert(b, v, src, acc_et) if src != acc_et else v

    def reduce_nest(level, loff, roff):
        if level == len(red_loops):
            x, y = load(ptrs[0], loff, lhs), load(ptrs[1], roff, rhs)
            cur = b.load(acc)
            if is_float(et):
                b.store(b.fadd(cur, b.fmul(x, y, flags=("reassoc",)), flags=("reassoc",)), acc)
            elif et == "pred":
                b.store(b.or_(cur, b.and_(x, y)), acc)
            else:
                b.store(b.add(cur, b.mul(x, y)), acc)
            return
        size, lst, rst = red_loops[level]
        with emit_counted_loop(b, zero, const(I64, size), f"k{level}") as i:
            reduce_nest(level + 1, b.add(loff, b.mul(i, const(I64, lst))),
                        b.add(roff, b.mul(i, const(I64, rst))))

    def out_nest(level, loff, roff, ooff):
        if level == len(out_loops):
            b.store(ir.Constant(acc_ty, 0), acc)
            reduce_nest(0, loff, roff)
            v = b.load(acc)
            if et == "pred":
                v = b.zext(v, storage_type(et))
            elif et == "bf16":
                v = bf16_bits(b, v)
            elif acc_et != et:
                v = convert(b, v, acc_et, et)
            b.store(v, b.gep(ptrs[2], [ooff], inbounds=True))
            return
        size, lst, rst = out_loops[level]
        lo, hi = (fn.args[1], fn.args[2]) if level == 0 else (zero, const(I64, size))
        with emit_counted_loop(b, lo, hi, f"o{level}") as i:
            out_nest(level + 1, b.add(loff, b.mul(i, const(I64, lst))),
                     b.add(roff, b.mul(i, const(I64, rst))),
                     b.add(ooff, b.mul(i, const(I64, os_[level]))))

    if out.rank == 0:
        with emit_counted_loop(b, fn.args[1], fn.args[2], "scalar"):
            out_nest(0, zero, zero, zero)
        outer = 1
    else:
        out_nest(0, zero, zero, zero)
        outer = out.dims[0]
    b.ret_void()
    return outer
