"""GPU reduction kernels: row, column and row-fused (softmax / layer norm) reductions.

Every reduction runs in a fixed order given its shapes, so it gives the same result on every
run (no atomics):
- "row_reduce" (the reduced dims include the minor one): a block per output element; each
  thread accumulates a strided part of the reduced elements (coalesced: consecutive threads
  read consecutive elements), then the block combines the threads' values with warp shuffles
  and one shared-memory step (KernelFunction.block_reduce). With few outputs and many
  reduced elements (a full reduction to a scalar is one output), it runs in two stages: the
  first gives each output CHUNK-element chunks, one block each, writing partials to the
  scratch buffer; the second combines each output's partials in one block, in chunk order.
- "col_reduce" (the minor dim is kept): a thread per output element walks the reduced dims
  (consecutive threads read consecutive columns); with many reduced rows it runs in two
  stages too (chunks of COL_CHUNK_ROWS rows, partials combined in chunk order).
- "row_fused" (hlo/row_plan.py's plan): a block per row runs each reduction stage as a
  block reduction, broadcasts the per-row results through shared memory, and stores the
  row-shaped outputs in a last strided loop, as the CPU's row-fused kernels do.
Threads keep a "valid" flag instead of starting from an identity, so any reducer works
(variadic argmax reductions too), and the init value is combined once, at the end.
Elementwise roots beside the reductions (softmax's exp) are stored by the thread that
reads each input element.
"""

from __future__ import annotations

from minijax.compiler.codegen.elemental import Index
from minijax.compiler.codegen.gpu.function import (
    KernelFunction,
    delinearize,
    from_smem,
    reducer_kind,
    smem_type,
    stride_loop,
    to_smem,
)
from minijax.compiler.codegen.gpu.spec import BLOCK, MAX_GRID, GpuKernel, Launch, grid_for
from minijax.compiler.codegen.kernel_plan import (
    mixed_reduce_roots,
    reduce_roots,
    root_output_offsets,
)
from minijax.compiler.codegen.llvm_types import I64, bit_width, const
from minijax.compiler.hlo.ir import Computation, Shape
from minijax.compiler.hlo.row_plan import plan_for

#: A row reduction with fewer outputs than this and at least SPLIT_MIN reduced elements
#: per output runs in two stages.
SPLIT_MAX_OUTPUTS = 256
SPLIT_MIN = 1 << 15
CHUNK = 1 << 13
MAX_CHUNKS = 512
COL_CHUNK_ROWS = 128
MAX_COL_CHUNKS = 128


def block_size(n: int) -> int:
    """Threads per block for `n` elements per block: a power of two in [32, BLOCK]."""
    size = 32
    while size < n and size < BLOCK:
        size *= 2
    return size


class _Reduction:
    """Shared state of the row and column reduction kernels of one fused computation."""

    def __init__(self, module, name, comp, roots, extras):
        self.module, self.name, self.comp = module, name, comp
        self.roots, self.extras = roots, extras
        self.kinds = [reducer_kind(r) for r in roots]
        self.outs = comp.root.shape.flat()
        self.offsets = root_output_offsets(comp, roots)
        self.extra_offsets = root_output_offsets(comp, extras) if extras else []
        self.in_shape = roots[0].operands[0].shape
        rank = self.in_shape.rank
        self.red = sorted(roots[0].attrs["dimensions"])
        self.kept = [d for d in range(rank) if d not in self.red]
        self.kept_dims = [self.in_shape.dims[d] for d in self.kept]
        self.red_dims = [self.in_shape.dims[d] for d in self.red]
        self.n_out = _prod(self.kept_dims)
        self.n_red = _prod(self.red_dims)
        self.scratch_layout: list[tuple[int, object]] = []
        self.scratch_bytes = 0

    def new_function(self, suffix: str = "") -> KernelFunction:
        return KernelFunction(self.module, self.name + suffix, self.comp, self.outs)

    def multi(self, f, out_multi, red_multi):
        m = [None] * self.in_shape.rank
        for d, v in zip(self.kept, out_multi):
            m[d] = v
        for d, v in zip(self.red, red_multi):
            m[d] = v
        return m

    def input_values(self, f, multi):
        vals = []
        for r in self.roots:
            n = len(r.operands) // 2
            vals.append([f.em.emit(v, Index(v.shape, multi=multi)) for v in r.operands[:n]])
        return vals

    def store_extras(self, f, multi) -> None:
        b = f.b
        for off, e in zip(self.extra_offsets, self.extras):
            idx = Index(e.shape, multi=multi)
            f.store(off, idx.get_linear(b), f.em.emit(e, idx))

    def store_results(self, f, out_multi, accs, valid) -> None:
        b = f.b
        for r, kind, acc, off in zip(self.roots, self.kinds, accs, self.offsets):
            values = f.finalize(r, kind, acc, valid)
            for k, (leaf, v) in enumerate(zip(r.shape.flat(), values)):
                lin = Index(leaf, multi=list(out_multi)).get_linear(b)
                f.store(off + k, lin, v)

    def plan_scratch(self, f, count: int) -> None:
        """Lay out `count` partials per accumulator in the scratch buffer."""
        offset = 0
        self.scratch_layout = []
        for r, kind in zip(self.roots, self.kinds):
            for ty in f.acc_types(r, kind):
                self.scratch_layout.append((offset, ty))
                nbytes = count * max(1, _type_bytes(ty))
                offset += -(-nbytes // 16) * 16
        self.scratch_bytes = offset

    def scratch_slots(self, f, index):
        """Per root, the scratch pointers of its accumulators' partial `index`."""
        out, k = [], 0
        for r, kind in zip(self.roots, self.kinds):
            ptrs = []
            for _ in f.acc_types(r, kind):
                off, ty = self.scratch_layout[k]
                ptrs.append(f.scratch_ptr(off, smem_type(ty), index))
                k += 1
            out.append(ptrs)
        return out

    def store_partials(self, f, index, accs) -> None:
        """Write one partial (every root's accumulators) to scratch slot `index`."""
        for ptrs, acc in zip(self.scratch_slots(f, index), accs):
            for p, v in zip(ptrs, acc):
                f.b.store(to_smem(f.b, v), p)

    def load_partials(self, f, index):
        """Every root's accumulators of the partial in scratch slot `index`."""
        return [[from_smem(f.b, f.b.load(p), ty) for p, ty in zip(ptrs, f.acc_types(r, k))]
                for ptrs, r, k in zip(self.scratch_slots(f, index), self.roots, self.kinds)]

    def load_accs(self, f, slots, valid_slot):
        b = f.b
        return [[b.load(s) for s in rs] for rs in slots], b.load(valid_slot)


class _RowReduce(_Reduction):
    def emit(self) -> GpuKernel:
        chunks = 1
        if self.n_out < SPLIT_MAX_OUTPUTS and self.n_red >= SPLIT_MIN:
            chunks = max(2, min(MAX_CHUNKS, self.n_red // CHUNK))
        block = block_size(-(-self.n_red // chunks))
        if chunks == 1:
            f = self.new_function()
            self._stage(f, 1, block, final=True)
            launches = [Launch(f.name, min(self.n_out, MAX_GRID) or 1, block)]
            return GpuKernel(self.name, "row_reduce", launches, len(self.comp.parameters),
                             self.outs)
        f1 = self.new_function("_partial")
        self.plan_scratch(f1, self.n_out * chunks)
        self._stage(f1, chunks, block, final=False)
        f2 = self.new_function("_combine")
        block2 = block_size(chunks)
        self._combine(f2, chunks, block2)
        launches = [Launch(f1.name, min(self.n_out * chunks, MAX_GRID), block),
                    Launch(f2.name, min(self.n_out, MAX_GRID) or 1, block2)]
        return GpuKernel(self.name, "row_reduce", launches, len(self.comp.parameters),
                         self.outs, self.scratch_bytes, [f"two stages, {chunks} chunks"])

    def _stage(self, f, chunks: int, block: int, final: bool) -> None:
        b = f.b
        n_red = self.n_red
        with stride_loop(b, f.ctaid, const(I64, self.n_out * chunks), f.nctaid, "row") as t:
            o = b.udiv(t, const(I64, chunks)) if chunks > 1 else t
            g = b.urem(t, const(I64, chunks)) if chunks > 1 else const(I64, 0)
            lo = b.udiv(b.mul(g, const(I64, n_red)), const(I64, chunks))
            hi = b.udiv(b.mul(b.add(g, const(I64, 1)), const(I64, n_red)), const(I64, chunks))
            out_multi = delinearize(b, o, self.kept_dims)
            slots, valid_slot = f.new_accumulators(self.roots, self.kinds)
            with f.em.scope(), stride_loop(b, b.add(lo, f.tid), hi, f.ntid, "red") as j:
                multi = self.multi(f, out_multi, delinearize(b, j, self.red_dims))
                f.accumulate(self.roots, self.kinds, slots, valid_slot,
                             self.input_values(f, multi))
                self.store_extras(f, multi)
            accs, valid = self.load_accs(f, slots, valid_slot)
            accs, valid = f.block_reduce(self.roots, self.kinds, accs, valid, block)
            with f.em.scope(), b.if_then(b.icmp_unsigned("==", f.tid, const(I64, 0))):
                if final:
                    self.store_results(f, out_multi, accs, valid)
                else:
                    self.store_partials(f, t, accs)
        f.finish()

    def _combine(self, f, chunks: int, block: int) -> None:
        b = f.b
        with stride_loop(b, f.ctaid, const(I64, self.n_out), f.nctaid, "row") as o:
            out_multi = delinearize(b, o, self.kept_dims)
            slots, valid_slot = f.new_accumulators(self.roots, self.kinds)
            with f.em.scope(), stride_loop(b, f.tid, const(I64, chunks), f.ntid, "part") as j:
                idx = b.add(b.mul(o, const(I64, chunks)), j)
                f.accumulate(self.roots, self.kinds, slots, valid_slot,
                             self.load_partials(f, idx))
            accs, valid = self.load_accs(f, slots, valid_slot)
            accs, valid = f.block_reduce(self.roots, self.kinds, accs, valid, block)
            with f.em.scope(), b.if_then(b.icmp_unsigned("==", f.tid, const(I64, 0))):
                self.store_results(f, out_multi, accs, valid)
        f.finish()


class _ColReduce(_Reduction):
    def emit(self) -> GpuKernel:
        chunks = 1
        if self.n_red >= 2 * COL_CHUNK_ROWS and self.n_out < (1 << 16):
            chunks = max(2, min(MAX_COL_CHUNKS, self.n_red // COL_CHUNK_ROWS))
        if chunks == 1:
            f = self.new_function()
            self._stage(f, 1)
            launches = [Launch(f.name, grid_for(self.n_out), BLOCK)]
            return GpuKernel(self.name, "col_reduce", launches, len(self.comp.parameters),
                             self.outs)
        f1 = self.new_function("_partial")
        self.plan_scratch(f1, self.n_out * chunks)
        self._stage(f1, chunks)
        f2 = self.new_function("_combine")
        self._combine(f2, chunks)
        launches = [Launch(f1.name, grid_for(self.n_out * chunks), BLOCK),
                    Launch(f2.name, grid_for(self.n_out), BLOCK)]
        return GpuKernel(self.name, "col_reduce", launches, len(self.comp.parameters),
                         self.outs, self.scratch_bytes, [f"two stages, {chunks} chunks"])

    def _stage(self, f, chunks: int) -> None:
        b = f.b
        n_out, n_red = self.n_out, self.n_red
        with stride_loop(b, f.global_id(), const(I64, n_out * chunks), f.grid_size(),
                         "out") as t:
            o = b.urem(t, const(I64, n_out))
            s = b.udiv(t, const(I64, n_out))
            lo = b.udiv(b.mul(s, const(I64, n_red)), const(I64, chunks))
            hi = b.udiv(b.mul(b.add(s, const(I64, 1)), const(I64, n_red)), const(I64, chunks))
            out_multi = delinearize(b, o, self.kept_dims)
            slots, valid_slot = f.new_accumulators(self.roots, self.kinds)
            with f.em.scope(), stride_loop(b, lo, hi, const(I64, 1), "red") as j:
                multi = self.multi(f, out_multi, delinearize(b, j, self.red_dims))
                f.accumulate(self.roots, self.kinds, slots, valid_slot,
                             self.input_values(f, multi))
                self.store_extras(f, multi)
            accs, valid = self.load_accs(f, slots, valid_slot)
            with f.em.scope():
                if chunks == 1:
                    self.store_results(f, out_multi, accs, valid)
                else:
                    self.store_partials(f, t, accs)
        f.finish()

    def _combine(self, f, chunks: int) -> None:
        b = f.b
        n_out = self.n_out
        with stride_loop(b, f.global_id(), const(I64, n_out), f.grid_size(), "out") as o:
            out_multi = delinearize(b, o, self.kept_dims)
            slots, valid_slot = f.new_accumulators(self.roots, self.kinds)
            with f.em.scope(), stride_loop(b, const(I64, 0), const(I64, chunks),
                                           const(I64, 1), "part") as s:
                idx = b.add(b.mul(s, const(I64, n_out)), o)
                f.accumulate(self.roots, self.kinds, slots, valid_slot,
                             self.load_partials(f, idx))
            accs, valid = self.load_accs(f, slots, valid_slot)
            with f.em.scope():
                self.store_results(f, out_multi, accs, valid)
        f.finish()


def _per_row_index(instr, row, row_multi):
    multi = list(row_multi) + [const(I64, 0)] * (instr.shape.rank - len(row_multi))
    return Index(instr.shape, multi=multi, linear=row)


def _emit_row_fused(module, name, comp, plan) -> GpuKernel:
    outs = comp.root.shape.flat()
    f = KernelFunction(module, name, comp, outs)
    b, em = f.b, f.em
    n_rows = _prod(plan.rows)
    cols = plan.cols
    block = block_size(cols)
    full_shape = Shape("s64", tuple(plan.rows) + (cols,))
    zero = const(I64, 0)
    with em.scope(), stride_loop(b, f.ctaid, const(I64, n_rows), f.nctaid, "row") as row:
        row_multi = delinearize(b, row, plan.rows)
        base = b.mul(row, const(I64, cols))

        def index_at(j):
            return Index(full_shape, multi=list(row_multi) + [j], linear=b.add(base, j))

        for reduces, values in zip(plan.passes, plan.row_values):
            kinds = [reducer_kind(r) for r in reduces]
            slots, valid_slot = f.new_accumulators(reduces, kinds)
            with em.scope(), stride_loop(b, f.tid, const(I64, cols), f.ntid, "cols") as j:
                idx = index_at(j)
                f.accumulate(reduces, kinds, slots, valid_slot,
                             [[em.emit(r.operands[0], idx)] for r in reduces])
            accs = [[b.load(s) for s in rs] for rs in slots]
            accs, valid = f.block_reduce(reduces, kinds, accs, b.load(valid_slot), block)
            finals = [f.finalize(r, k, acc, valid)[0] for r, k, acc in zip(reduces, kinds, accs)]
            for r, v in zip(reduces, f.broadcast(finals)):
                em.bind(r, v)
            for v in values:
                em.bind(v, em.emit(v, _per_row_index(v, row, row_multi)))
        full = []
        for k, out in enumerate(plan.outputs):
            if plan.is_full(out):
                full.append((k, out))
                continue
            with em.scope(), b.if_then(b.icmp_unsigned("==", f.tid, zero)):
                f.store(k, row, em.emit(out, _per_row_index(out, row, row_multi)))
        if full:
            with em.scope(), stride_loop(b, f.tid, const(I64, cols), f.ntid, "out") as j:
                idx = index_at(j)
                for k, out in full:
                    f.store(k, idx.linear, em.emit(out, idx))
        em.bound.clear()
    f.finish()
    return GpuKernel(name, "row_fused", [Launch(name, min(n_rows, MAX_GRID) or 1, block)],
                     len(comp.parameters), outs)


def emit_reduction(module, name: str, comp: Computation) -> GpuKernel | None:
    """The reduction kernel(s) for `comp`, or None when it is not a reduction fusion."""
    plan = plan_for(comp)
    if plan is not None:
        return _emit_row_fused(module, name, comp, plan)
    roots, extras = reduce_roots(comp), []
    if roots is None:
        mixed = mixed_reduce_roots(comp)
        if mixed is None:
            return None
        roots, extras = mixed
    in_shape = roots[0].operands[0].shape
    red = roots[0].attrs["dimensions"]
    if in_shape.rank and (in_shape.rank - 1) not in red:
        return _ColReduce(module, name, comp, roots, extras).emit()
    return _RowReduce(module, name, comp, roots, extras).emit()


def _prod(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _type_bytes(ty) -> int:
    return max(1, bit_width(ty) // 8)
