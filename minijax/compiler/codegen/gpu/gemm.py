"""A generated tiled GEMM kernel: the dot fallback where cuBLAS is missing or has no routine
for the element type (integers).

Row-major C[b] = op(A[b]) @ op(B[b]) (op: transposed when the operand is stored [K, M] /
[N, K]). A block of 16x16 threads computes one 16x16 tile of C; for each 16-wide slice of
K it stages a tile of A and of B in shared memory (padded to 17 columns), waits at a
barrier, and every thread accumulates its dot product of a row and a column in a fixed
order (deterministic). Out-of-range rows/columns load zeros and store nothing. Tiles are
visited with a grid-stride loop. float16 accumulates in float32; integers wrap.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.gpu import nvvm
from minijax.compiler.codegen.gpu.function import stride_loop
from minijax.compiler.codegen.gpu.spec import GpuKernel, Launch, grid_for
from minijax.compiler.codegen.llvm_types import (
    F16,
    F32,
    I8,
    I64,
    const,
    is_float,
    storage_type,
)
from minijax.compiler.hlo.ir import Shape

TILE = 16
GEMM_TYPES = ("f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64")


def emit_gemm_kernel(module, name: str, spec) -> GpuKernel:
    """Emit the tiled GEMM for `spec` (backends/cuda/device_runtime.GemmSpec)."""
    et = spec.dtype
    if et not in GEMM_TYPES or spec.out_dtype != et:
        raise ValueError(f"generated GEMM: unsupported element types {et} -> {spec.out_dtype}")
    sty = storage_type(et)
    acc_ty = F32 if sty == F16 else sty
    ptr = nvvm.global_pointer(sty)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr,
                                                             nvvm.global_pointer(I8)]), name)
    for arg in fn.args:
        arg.add_attribute("noalias")
    nvvm.mark_kernel(module, fn)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    a_ptr, b_ptr, c_ptr = fn.args[:3]
    tid, ctaid, nctaid = (nvvm.sreg(b, r) for r in ("tid", "ctaid", "nctaid"))
    tx = b.urem(tid, const(I64, TILE))
    ty = b.udiv(tid, const(I64, TILE))
    m, n, k = spec.m, spec.n, spec.k
    tm, tn = -(-m // TILE), -(-n // TILE)
    n_tiles = spec.batch * tm * tn
    a_tile = nvvm.shared_array(module, acc_ty, TILE * (TILE + 1), "gemm_a")
    b_tile = nvvm.shared_array(module, acc_ty, TILE * (TILE + 1), "gemm_b")
    floating = is_float(et)
    zero = const(acc_ty, 0)

    def widen(v):
        return b.fpext(v, acc_ty) if v.type != acc_ty else v

    def load(base, batch_off, row, col, rows, cols, trans):
        """Element (row, col) of a [rows, cols] operand stored [cols, rows] when `trans`;
        zero outside."""
        inside = b.and_(b.icmp_signed("<", row, const(I64, rows)),
                        b.icmp_signed("<", col, const(I64, cols)))
        r = b.select(inside, row, const(I64, 0))
        c = b.select(inside, col, const(I64, 0))
        off = b.add(b.mul(c, const(I64, rows)), r) if trans else b.add(
            b.mul(r, const(I64, cols)), c)
        v = widen(b.load(b.gep(base, [b.add(batch_off, off)], inbounds=True)))
        return b.select(inside, v, zero)

    def slot(tile, row, col):
        return nvvm.shared_ptr(b, tile, b.add(b.mul(row, const(I64, TILE + 1)), col))

    acc = b.alloca(acc_ty)       # in the entry block: promoted to a register
    with stride_loop(b, ctaid, const(I64, n_tiles), nctaid, "tile") as t:
        bt = b.udiv(t, const(I64, tm * tn))
        rest = b.urem(t, const(I64, tm * tn))
        row = b.add(b.mul(b.udiv(rest, const(I64, tn)), const(I64, TILE)), ty)
        col = b.add(b.mul(b.urem(rest, const(I64, tn)), const(I64, TILE)), tx)
        a_off = b.mul(bt, const(I64, m * k))
        b_off = b.mul(bt, const(I64, k * n))
        b.store(zero, acc)
        k_tiles = -(-k // TILE)
        with stride_loop(b, const(I64, 0), const(I64, k_tiles), const(I64, 1), "kt") as kt:
            k0 = b.mul(kt, const(I64, TILE))
            b.store(load(a_ptr, a_off, row, b.add(k0, tx), m, k, spec.trans_a),
                    slot(a_tile, ty, tx))
            b.store(load(b_ptr, b_off, b.add(k0, ty), col, k, n, spec.trans_b),
                    slot(b_tile, ty, tx))
            nvvm.barrier(b)
            total = b.load(acc)
            for kk in range(TILE):
                x = b.load(slot(a_tile, ty, const(I64, kk)))
                y = b.load(slot(b_tile, const(I64, kk), tx))
                total = b.fadd(total, b.fmul(x, y)) if floating else b.add(total, b.mul(x, y))
            b.store(total, acc)
            nvvm.barrier(b)
        inside = b.and_(b.icmp_signed("<", row, const(I64, m)),
                        b.icmp_signed("<", col, const(I64, n)))
        with b.if_then(inside):
            v = b.load(acc)
            v = b.fptrunc(v, sty) if v.type != sty else v
            c_off = b.add(b.mul(bt, const(I64, m * n)), b.add(b.mul(row, const(I64, n)), col))
            b.store(v, b.gep(c_ptr, [c_off], inbounds=True))
    b.ret_void()
    out = Shape(et, (spec.batch, m, n))
    return GpuKernel(name, "gemm", [Launch(name, grid_for(n_tiles, 1), TILE * TILE)], 2, [out])


__all__ = ["GEMM_TYPES", "TILE", "emit_gemm_kernel"]
