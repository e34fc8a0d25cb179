"""Small gemms as register-tiled loops, without BLAS's packing.

A BLAS gemm copies ("packs") panels of both operands before multiplying. For the dots of a
training step's inner loop (a scan RNN's 32x128 by 128x128, once per step) that copy is a
sizeable part of the call, and when a call is split over threads every thread packs all of
B again. The loops emitted here read the operands where they are.

`emit_small_gemm(module, name, dtype, m, n, k, a_transposed)` emits

    void name(T *a, T *b, T *c, int64 start, int64 end)

computing rows [start, end) of C = op(A) @ B for row-major C[m, n] and B[k, n], with A
stored [m, k] (or [k, m] when `a_transposed`). Every shape is static; only the row range is
an argument, so a team of threads can split the rows.

The output is covered by tiles of ROWS rows by two vectors of columns (the last tile of a
row narrower, down to a vector of the remaining width, so no load or store passes the end of
a row), and a single-row tile for the rows left over. A tile keeps its ROWS x 2 sums in
vector registers over the whole of k: per k it loads two vectors of B's row k, broadcasts
A's ROWS values and issues 2 * ROWS fused multiply-adds, so the multiply-adds, not the
loads, bound it (on AVX2: 8 FMAs to 6 loads). Each sum adds its k products in order, with
one rounding per multiply-add, as a BLAS microkernel does.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.cpu.loops import emit_counted_loop
from minijax.compiler.codegen.llvm_types import F32, F64, I32, I64, call_intrinsic, const

#: Rows per tile; each holds 2 vectors of sums (8 registers of 16 on AVX2).
ROWS = 4
#: Bytes per vector: AVX2's ymm (a 128-bit target splits each into two registers).
VECTOR_BYTES = 32


def _loop_with_sums(b: ir.IRBuilder, trip: int, sums: list, body):
    """`for i in range(trip)` (trip >= 1) carrying `sums`: body(i, sums) returns the next
    sums; returns the final ones (defined in the latch, which dominates the exit)."""
    pre = b.block
    loop = b.append_basic_block("k.body")
    done = b.append_basic_block("k.exit")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64, name="k")
    i.add_incoming(const(I64, 0), pre)
    phis = []
    for s in sums:
        p = b.phi(s.type)
        p.add_incoming(s, pre)
        phis.append(p)
    new = body(i, phis)
    nxt = b.add(i, const(I64, 1), flags=["nsw"])
    i.add_incoming(nxt, b.block)
    for p, v in zip(phis, new):
        p.add_incoming(v, b.block)
    b.cbranch(b.icmp_signed("<", nxt, const(I64, trip)), loop, done)
    b.position_at_end(done)
    return new


def emit_small_gemm(module: ir.Module, name: str, dtype: str, m: int, n: int, k: int,
                    a_transposed: bool) -> ir.Function:
    """Emit `name` (see the module docstring) for a float32 or float64 gemm."""
    scalar = {"f32": F32, "f64": F64}[dtype]
    size = 4 if dtype == "f32" else 8
    lanes = VECTOR_BYTES // size
    ptr = scalar.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr, I64, I64]), name)
    a, bmat, c, start, end = fn.args
    for p in (a, bmat, c):
        p.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def vector_widths(cols: int) -> list[int]:
        """The vectors covering `cols` (<= 2 * lanes) columns: full ones, then the rest."""
        return [lanes] * (cols // lanes) + ([cols % lanes] if cols % lanes else [])

    def element(base, index):
        return b.gep(base, [index], inbounds=True)

    def vector_at(base, index, width):
        return b.bitcast(element(base, index), ir.VectorType(scalar, width).as_pointer())

    def splat(value, width):
        vty = ir.VectorType(scalar, width)
        one = b.insert_element(ir.Constant(vty, ir.Undefined), value, const(I32, 0))
        return b.shuffle_vector(one, ir.Constant(vty, ir.Undefined),
                                ir.Constant(ir.VectorType(I32, width), [0] * width))

    def tile(row, col, rows: int, widths: list[int]):
        """C[row:row+rows, col:col+sum(widths)] = op(A)[rows] @ B[:, cols]."""
        offsets = [sum(widths[:v]) for v in range(len(widths))]
        zeros = [ir.Constant(ir.VectorType(scalar, w), None) for w in widths] * rows

        def step(kk, sums):
            brow = b.add(b.mul(kk, const(I64, n)), col)
            bvecs = [b.load(vector_at(bmat, b.add(brow, const(I64, off)), w), align=size)
                     for off, w in zip(offsets, widths)]
            out = []
            for r in range(rows):
                i = b.add(row, const(I64, r))
                index = b.add(b.mul(kk, const(I64, m)), i) if a_transposed else \
                    b.add(b.mul(i, const(I64, k)), kk)
                av = b.load(element(a, index), align=size)
                for v, w in enumerate(widths):
                    out.append(call_intrinsic(b, "llvm.fma", [splat(av, w), bvecs[v],
                                                              sums[r * len(widths) + v]]))
            return out

        sums = _loop_with_sums(b, k, zeros, step)
        for r in range(rows):
            crow = b.add(b.mul(b.add(row, const(I64, r)), const(I64, n)), col)
            for v, (off, w) in enumerate(zip(offsets, widths)):
                b.store(sums[r * len(widths) + v],
                        vector_at(c, b.add(crow, const(I64, off)), w), align=size)

    def rows_of(col, widths):
        """Every row of [start, end) for the columns at `col`: ROWS at a time, then one."""
        full = b.add(start, b.mul(b.sdiv(b.sub(end, start), const(I64, ROWS)),
                                  const(I64, ROWS)))
        with emit_counted_loop(b, start, full, "rows", step=const(I64, ROWS)) as row:
            tile(row, col, ROWS, widths)
        with emit_counted_loop(b, full, end, "row") as row:
            tile(row, col, 1, widths)

    panel = 2 * lanes
    whole = n // panel
    if whole:
        with emit_counted_loop(b, const(I64, 0), const(I64, whole), "cols") as j:
            rows_of(b.mul(j, const(I64, panel)), [lanes, lanes])
    if n % panel:
        rows_of(const(I64, whole * panel), vector_widths(n % panel))
    b.ret_void()
    return fn


__all__ = ["ROWS", "emit_small_gemm"]
