"""GPU kernels for sort and topk: a bitonic sorting network per row, one block per row.

A row (the elements along the sort dimension at one position of the other dimensions) is
sorted through a permutation: each block fills P = next power of two >= n slots of its
part of the scratch buffer with 0..P-1, runs the bitonic network over them (log2(P) stages
of compare-exchange steps, a block barrier after each), and finally copies every operand's
elements in the permuted order into the outputs. Slots >= n are padding that compares after
every element. The comparison is "a before c": the sort's comparator computation
(multi-operand, any comparator the CPU's sort takes) on the two elements' values, ties
broken by the original position, so the order is the stable one on every run (a stable
sort is also a valid answer where the HLO does not ask for stability, and it is the one
the evaluator gives).

topk compares the total-order keys of its one operand (as XLA: a positive NaN above
everything, a negative NaN below everything, NaNs of one sign equal to each other, -0 below
+0; larger first unless largest=false) and writes the first k values and their int32
positions.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.gpu import nvvm
from minijax.compiler.codegen.gpu.function import stride_loop
from minijax.compiler.codegen.gpu.op_kernel import OpKernel, all_row_major
from minijax.compiler.codegen.gpu.spec import BLOCK, GpuKernel, Launch, grid_for
from minijax.compiler.codegen.llvm_types import (
    FLOAT_TYPES,
    I1,
    I32,
    I64,
    INT_TYPES,
    const,
    is_signed,
)
from minijax.compiler.hlo.ir import Instruction

_SCRATCH = 256 << 20


def _pow2(n: int) -> tuple[int, int]:
    p, lg = 1, 0
    while p < n:
        p, lg = p * 2, lg + 1
    return p, lg


class _RowSort:
    """The bitonic network over the rows of an operand shape along `dim`."""

    def __init__(self, k: OpKernel, dims, dim: int):
        self.k = k
        self.n = dims[dim]
        self.inner = 1
        for d in dims[dim + 1:]:
            self.inner *= d
        outer = 1
        for d in dims[:dim]:
            outer *= d
        self.rows = outer * self.inner
        self.p, self.log_p = _pow2(self.n)
        # Rows in flight at once: each holds P slots of scratch (at most _SCRATCH bytes).
        self.grid = max(1, min(grid_for(self.rows, 1), _SCRATCH // (4 * self.p)))
        self.block = max(1, min(BLOCK, self.p // 2))
        self.scratch_bytes = self.grid * self.p * 4

    def element(self, base, pos):
        """Linear offset of the row element at `pos` (i64) of the row starting at `base`."""
        b = self.k.b
        return b.add(base, b.mul(pos, const(I64, self.inner)))

    def emit(self, before, write, count: int) -> None:
        """Sort every row by `before(lin_a, lin_c) -> i1`; then `write(row, i, base, src)`
        for the first `count` positions i (src: the row position that sorts there)."""
        k, b, f = self.k, self.k.b, self.k.f
        n, p = self.n, self.p
        with stride_loop(b, f.ctaid, const(I64, self.rows), f.nctaid, "row") as row:
            base = b.add(b.mul(b.udiv(row, const(I64, self.inner)), const(I64, n * self.inner)),
                         b.urem(row, const(I64, self.inner)))
            slots = b.mul(f.ctaid, const(I64, p))

            def slot(i):
                return f.scratch_ptr(0, I32, b.add(slots, i))

            with stride_loop(b, f.tid, const(I64, p), f.ntid, "fill") as i:
                b.store(b.trunc(i, I32), slot(i))
            nvvm.barrier(b)
            last = const(I64, max(n - 1, 0))

            def less(a, c):
                """a before c: padding last, then the comparison, then the position."""
                la = self.element(base, b.select(b.icmp_unsigned("<", a, last), a, last))
                lc = self.element(base, b.select(b.icmp_unsigned("<", c, last), c, last))
                ac, ca = before(la, lc), before(lc, la)
                real = b.or_(ac, b.and_(b.not_(ca), b.icmp_unsigned("<", a, c)))
                a_pad = b.icmp_unsigned(">=", a, const(I64, n))
                c_pad = b.icmp_unsigned(">=", c, const(I64, n))
                return b.select(a_pad, const(I1, 0), b.select(c_pad, const(I1, 1), real))

            with stride_loop(b, const(I64, 1), const(I64, self.log_p + 1), const(I64, 1),
                             "stage") as lk:
                size = b.shl(const(I64, 1), lk)
                with stride_loop(b, const(I64, 0), lk, const(I64, 1), "step") as m:
                    lj = b.sub(b.sub(lk, const(I64, 1)), m)
                    j = b.shl(const(I64, 1), lj)
                    with k.f.em.scope(), stride_loop(b, f.tid, const(I64, p // 2), f.ntid,
                                                     "pair") as t:
                        low = b.and_(t, b.sub(j, const(I64, 1)))
                        i = b.or_(b.shl(b.lshr(t, lj), b.add(lj, const(I64, 1))), low)
                        partner = b.add(i, j)
                        asc = b.icmp_unsigned("==", b.and_(i, size), const(I64, 0))
                        a = b.load(slot(i))
                        c = b.load(slot(partner))
                        a64, c64 = b.zext(a, I64), b.zext(c, I64)
                        swap = b.select(asc, less(c64, a64), less(a64, c64))
                        with b.if_then(swap):
                            b.store(c, slot(i))
                            b.store(a, slot(partner))
                    nvvm.barrier(b)
            with k.f.em.scope(), stride_loop(b, f.tid, const(I64, min(count, n)), f.ntid,
                                             "out") as i:
                src = b.zext(b.load(slot(i)), I64)
                write(row, i, base, src)
            nvvm.barrier(b)      # the next row reuses the slots


def sort_reason(instr: Instruction) -> str | None:
    if not all_row_major(instr):
        return "a non-row-major layout"
    if instr.operands[0].shape.dims and max(instr.operands[0].shape.dims) >= 2 ** 31:
        return "a sort dimension of 2^31 elements or more"
    return None


def emit_sort(module, name: str, instr: Instruction) -> GpuKernel:
    k = OpKernel(module, name, instr)
    nops = len(instr.operands)
    dims = instr.operands[0].shape.dims
    dim = int(instr.attrs.get("dimensions", [0])[0]) if isinstance(
        instr.attrs.get("dimensions"), (list, tuple)) else int(instr.attrs.get("dimensions", 0))
    comparator = instr.called["to_apply"]
    rs = _RowSort(k, dims, dim)

    def before(la, lc):
        args = []
        for m in range(nops):
            args += [k.load(m, la), k.load(m, lc)]
        return k.f.em.emit_scalar_computation(comparator, args)[0]

    def write(row, i, base, src):
        dst, s = rs.element(base, i), rs.element(base, src)
        for m in range(nops):
            k.store_raw(m, dst, k.load_raw(m, s))

    if rs.rows and rs.n:
        rs.emit(before, write, rs.n)
    k.finish()
    return GpuKernel(k.f.name, "sort (bitonic, a block per row)",
                     [Launch(k.f.name, rs.grid, rs.block)], nops, k.outs,
                     scratch_bytes=rs.scratch_bytes)


def topk_reason(instr: Instruction) -> str | None:
    et = instr.operands[0].shape.element_type
    if not all_row_major(instr):
        return "a non-row-major layout"
    if et not in FLOAT_TYPES + INT_TYPES:
        return f"top-k of {et}"
    return None


_FLOAT_BITS = {"f16": (16, 0x7C00), "bf16": (16, 0x7F80), "f32": (32, 0x7F800000),
               "f64": (64, 0x7FF0000000000000)}


def _total_order_key(b, stored, et: str):
    """An integer whose signed order is the total order of a stored float (each NaN made
    the one NaN of its sign: above +inf, or below -inf), or the stored integer itself."""
    if et not in FLOAT_TYPES:
        return stored
    width, exp = _FLOAT_BITS[et]
    ity = ir.IntType(width)
    bits = stored if isinstance(stored.type, ir.IntType) else b.bitcast(stored, ity)
    magnitude = b.and_(bits, const(ity, (1 << (width - 1)) - 1))
    nan = b.icmp_unsigned(">", magnitude, const(ity, exp))
    sign_bit = b.and_(bits, const(ity, 1 << (width - 1)))
    bits = b.select(nan, b.or_(sign_bit, const(ity, exp + 1)), bits)
    sign = b.ashr(bits, const(ity, width - 1))
    return b.xor(bits, b.and_(sign, const(ity, (1 << (width - 1)) - 1)))


def emit_topk(module, name: str, instr: Instruction) -> GpuKernel:
    k = OpKernel(module, name, instr)
    op = instr.operands[0].shape
    et = op.element_type
    count = int(instr.attrs.get("k", 0))
    largest = str(instr.attrs.get("largest", "true")).lower() in ("true", "1")
    rs = _RowSort(k, op.dims, op.rank - 1)
    b = k.b
    signed = et in FLOAT_TYPES or is_signed(et)

    def before(la, lc):
        ka = _total_order_key(b, b.load(b.gep(k.f.param_ptrs[0], [la], inbounds=True)), et)
        kc = _total_order_key(b, b.load(b.gep(k.f.param_ptrs[0], [lc], inbounds=True)), et)
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        return cmp(">" if largest else "<", ka, kc)

    def write(row, i, base, src):
        dst = b.add(b.mul(row, const(I64, count)), i)
        k.store_raw(0, dst, k.load_raw(0, rs.element(base, src)))
        k.store_raw(1, dst, b.trunc(src, I32))

    if rs.rows and rs.n and count:
        rs.emit(before, write, count)
    k.finish()
    return GpuKernel(k.f.name, "topk (bitonic, a block per row)",
                     [Launch(k.f.name, rs.grid, rs.block)], 1, k.outs,
                     scratch_bytes=rs.scratch_bytes)


__all__ = ["emit_sort", "emit_topk", "sort_reason", "topk_reason"]
