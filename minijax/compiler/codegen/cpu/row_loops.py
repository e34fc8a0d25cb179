"""Row-fused kernels (KernelSpec mode "row_fused") for the fusions built by
passes/row_fusion.py: several row reductions and their consumers in one kernel.

The outer loop runs over rows (all dims but the minor one; [start, end) splits it across
threads like the other modes). For each row:
  - pass p = 1..P (one per reduction stage of the RowPlan): one loop over the row's columns
    updates the accumulators of that stage's reductions. Float sums add blocks of BLOCK
    elements in the element type (reassociated, so LLVM vectorizes them) and accumulate the
    blocks in float64, as loops.py's row_reduce mode does. After the loop each reduction's
    result, and every per-row value computed from it (mean = sum / n, sqrt(var + eps), ...),
    is computed once and bound in the elemental emitter: a later read through a broadcast
    along the row uses that register instead of recomputing anything;
  - the per-row outputs are stored;
  - one loop over the row stores the row-shaped outputs.
Every pass re-reads the row from cache, so memory sees one read of the inputs and one write
of the outputs, instead of a round trip per reduction and for each intermediate. After the
first pass the next row is prefetched, so its memory reads overlap this row's compute.

An expensive row-shaped value (exp, log, divide, ...) that one loop computes and a later
loop needs again (softmax's exp(x - max): summed in pass 2, divided in the output loop) is
not recomputed: the first loop also stores it into a row-sized stack buffer (at most
MAX_SCRATCH_BYTES in all) and later loops load it from there.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.cpu.blocks import BLOCK, block_bounds, block_partial, reducer_kind
from minijax.compiler.codegen.elemental import ELEMENTWISE, Index
from minijax.compiler.codegen.float16 import float_convert
from minijax.compiler.codegen.llvm_types import (
    F64,
    I64,
    const,
    emit_counted_loop,
    is_float,
    value_type,
)
from minijax.compiler.hlo.ir import Shape
from minijax.compiler.hlo.opcodes import select

#: Stack bytes per kernel call for row values kept between loops instead of recomputed.
MAX_SCRATCH_BYTES = 64 * 1024
_COSTLY = select(trait="x") & ELEMENTWISE


def _reached(roots, stop: set[int]) -> dict[int, object]:
    """The instructions a loop computing `roots` evaluates (not looking past `stop`)."""
    seen: dict[int, object] = {}
    stack = list(roots)
    while stack:
        instr = stack.pop()
        if id(instr) in seen or id(instr) in stop:
            continue
        seen[id(instr)] = instr
        stack.extend(instr.operands)
    return seen


def plan_row_cache(plan, order: dict[int, int]) -> dict[int, tuple]:
    """{id(value): (value, loop that stores it)}: the costly row-shaped values that a loop
    (passes, then the output loop) would compute again after an earlier loop computed them.
    `order` gives each instruction's position (users after operands)."""
    loops = [[r.operands[0] for r in reduces] for reduces in plan.passes]
    loops.append([o for o in plan.outputs if plan.is_full(o)])
    cached: dict[int, tuple] = {}
    first: dict[int, int] = {}
    stop: set[int] = set()
    budget = MAX_SCRATCH_BYTES
    for n, roots in enumerate(loops):
        again = [i for k, i in _reached(roots, stop | set(cached)).items() if k in first]
        # Users before operands: keeping a value makes its operands unnecessary here.
        for instr in sorted(again, key=lambda i: -order[id(i)]):
            if instr.opcode not in _COSTLY or not plan.is_full(instr):
                continue
            size = plan.cols * instr.shape.dtype.itemsize
            if size <= budget and id(instr) in _reached(roots, stop | set(cached)):
                budget -= size
                cached[id(instr)] = (instr, first[id(instr)])
        for k in _reached(roots, stop | set(cached)):
            first.setdefault(k, n)
        if n < len(plan.passes):
            stop |= {id(i) for i in plan.passes[n] + plan.row_values[n]}
    return cached


def _per_row_index(instr, row, row_multi):
    """Where a per-row value (dims rows or rows + (1,)) holds the current row's value."""
    multi = list(row_multi) + [const(I64, 0)] * (instr.shape.rank - len(row_multi))
    return Index(instr.shape, multi=multi, linear=row)


class _RowKernel:
    """Emits the row loop of one row_fused kernel into a loops.KernelEmitter `ke`."""

    def __init__(self, ke, plan):
        self.ke, self.plan = ke, plan
        self.b, self.em = ke.b, ke.em
        order = {id(i): k for k, i in enumerate(ke.comp.instructions)}
        self.cached = plan_row_cache(plan, order)
        self.scratch = {k: ke.alloca(ir.ArrayType(value_type(v.shape.element_type), plan.cols))
                        for k, (v, _) in self.cached.items()}

    def _scratch_ptr(self, value, j):
        return self.b.gep(self.scratch[id(value)], [const(I64, 0), j], inbounds=True)

    def _column_loop(self, n, lo, hi, body):
        """Loop j over [lo, hi) of the current row as loop number `n`; `body(index, lin)`
        emits the work, with cached values loaded or stored around it."""
        b, em = self.b, self.em
        with em.scope(), emit_counted_loop(b, lo, hi, f"cols{n}", interleave=True) as j:
            lin = b.add(self.base, j)
            index = Index(Shape("s64", self.plan.rows + (self.plan.cols,)),
                          multi=list(self.row_multi) + [j], linear=lin)
            # Bound at this column's index only: a read of the value at another column of
            # the row (reverse, slice, ... of a value that depends on no reduction) must
            # compute it there.
            for v, first in self.cached.values():
                if first < n:
                    em.bind_at(v, index, b.load(self._scratch_ptr(v, j)))
            body(index, lin)
            for v, first in self.cached.values():
                if first == n:
                    b.store(em.emit(v, index), self._scratch_ptr(v, j))

    def _pass(self, n, reduces) -> None:
        """Loop `n`: accumulate `reduces` over the current row; bind their results."""
        b, ke = self.b, self.ke
        kinds = [reducer_kind(r) for r in reduces]
        accs = []
        for r, kind in zip(reduces, kinds):
            init = ke._inits(r)[0]
            blocked = kind == "add" and is_float(r.shape.element_type)
            if blocked and init.type != F64:
                init = b.fpext(init, F64)
            slot = ke.alloca(init.type)
            b.store(init, slot)
            accs.append((slot, blocked))
        cols = self.plan.cols
        n_blocks = (cols + BLOCK - 1) // BLOCK
        with self.em.scope(), emit_counted_loop(b, const(I64, 0), const(I64, n_blocks),
                                                f"blk{n}") as blk:
            lo, hi = block_bounds(b, blk, cols)
            partial = []
            for r, (slot, blocked) in zip(reduces, accs):
                partial.append(block_partial(b, ke.alloca, r) if blocked else slot)

            def body(index, lin):
                for r, kind, p in zip(reduces, kinds, partial):
                    value = self.em.emit(r.operands[0], index)
                    b.store(ke._combine(r, kind, [b.load(p)], [value])[0], p)

            self._column_loop(n, lo, hi, body)
            for (slot, blocked), p in zip(accs, partial):
                if blocked:
                    b.store(b.fadd(b.load(slot), b.fpext(b.load(p), F64)), slot)
        for r, (slot, blocked) in zip(reduces, accs):
            value = b.load(slot)
            if blocked and value.type != value_type(r.shape.element_type):
                value = float_convert(b, value, "f64", r.shape.element_type)
            self.em.bind(r, value)

    def _prefetch_next_row(self, row) -> None:
        """Prefetch the next row of every row-shaped parameter (one request per 64-byte line)
        once this row is in cache: the later passes are compute, and the hardware prefetcher
        only runs ahead of demand reads (~7% less time for softmax 16384x1024)."""
        b, ke, plan = self.b, self.ke, self.plan
        full = plan.rows + (plan.cols,)
        params = [p for p in ke.params if tuple(p.shape.dims) == full]
        if not params:
            return
        i8p = ir.IntType(8).as_pointer()
        fn = ke.module.globals.get("llvm.prefetch.p0") or ir.Function(
            ke.module, ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32),
                                                       ir.IntType(32)]), "llvm.prefetch.p0")
        nxt = b.add(row, const(I64, 1))
        has_next = b.icmp_signed("<", nxt, ke.end)
        with b.if_then(has_next):
            for p in params:
                size = plan.cols * p.shape.dtype.itemsize
                base = b.bitcast(b.gep(ke.param_ptrs[p.parameter_number],
                                       [b.mul(nxt, const(I64, plan.cols))], inbounds=True), i8p)
                with emit_counted_loop(b, const(I64, 0), const(I64, (size + 63) // 64),
                                       "prefetch") as k:
                    addr = b.gep(base, [b.mul(k, const(I64, 64))], inbounds=True)
                    i32 = ir.IntType(32)
                    b.call(fn, [addr, ir.Constant(i32, 0), ir.Constant(i32, 3),
                                ir.Constant(i32, 1)])

    def emit(self):
        b, em, ke, plan = self.b, self.em, self.ke, self.plan
        n_rows = 1
        for d in plan.rows:
            n_rows *= d
        with em.scope(), emit_counted_loop(b, ke.start, ke.end, "row") as row:
            self.row_multi = Index(Shape("s64", plan.rows), linear=row).get_multi(b)
            self.base = b.mul(row, const(I64, plan.cols))
            for n, (reduces, values) in enumerate(zip(plan.passes, plan.row_values)):
                self._pass(n, reduces)
                if n == 0:
                    self._prefetch_next_row(row)
                for v in values:
                    em.bind(v, em.emit(v, _per_row_index(v, row, self.row_multi)))
            full = []
            for k, out in enumerate(plan.outputs):
                if plan.is_full(out):
                    full.append((k, out))
                else:
                    ke._store(k, row, em.emit(out, _per_row_index(out, row, self.row_multi)))

            def store_outputs(index, lin):
                for k, out in full:
                    ke._store(k, lin, em.emit(out, index))

            if full:
                self._column_loop(len(plan.passes), const(I64, 0), const(I64, plan.cols),
                                  store_outputs)
            em.bound.clear()
        return ke._spec("row_fused", n_rows, plan.cols * (len(plan.passes) + 1))


def emit_row_fused(ke, plan):
    """Emit the body of kernel emitter `ke` (loops.KernelEmitter) for a row fusion with
    RowPlan `plan` (hlo/row_plan.py); returns its KernelSpec."""
    return _RowKernel(ke, plan).emit()


__all__ = ["MAX_SCRATCH_BYTES", "emit_row_fused", "plan_row_cache"]
