"""A while loop whose condition and body are kernel calls and gemms, as one native function.

The CPU backend plans such a loop into a `LoopPlan` (backends/cpu/native_loops.py) and
`emit_loop` turns it into

    void NAME(i8 **table)

which runs the whole loop: each iteration calls the condition's kernels, reads the predicate,
calls the body's kernels (their `.body` loop-nest functions, over their whole outer range
on the calling thread) and BLAS gemms (through function pointers in the table), and hands
the loop state over by swapping pointers. No Python runs per iteration.

Buffers. A state element the body passes through unchanged (`get-tuple-element(param, i)`
at root position i) stays in the caller's input buffer. Every other ("carried") element
has two buffers A and B in the per-call *carry* block: an iteration reads the current one
(at first the input) and writes the other (`target = current == A ? B : A`), so inputs are
never written and no state is copied. A body value that is exactly one root operand is
computed straight into that element's target; anything else at a root position (a
constant, a view, another element, a value used twice) is copied there at the end of the
iteration. All other intermediate results have fixed offsets in the *temps* block.
After the loop, `table[TRIPS]` holds the number of iterations run: none leaves a carried
element in its input, an odd count in A, an even one in B.

Table layout (`Layout`): n input arrays, the carry block, the temps block, the trip count
(written), sgemm, dgemm, BLAS set/get-num-threads, the team block, then the constants.
Arrays are passed as NumPy array objects (their data pointer read at `data_offset`) when
the caller does so.

Teams. Kernel calls and gemms marked `parallel` are split into pieces over a team of
threads (team.py): the caller runs the loop and publishes each such op; the pool threads
lent to the call run `NAME.worker(team)` and take pieces until the loop ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import llvmlite.ir as ir

from minijax.compiler.codegen.cpu.collectives import (
    CTX_SHARED,
    CollectiveEmitter,
    NativeAllReduce,
    ParticipantId,
)
from minijax.compiler.codegen.cpu.loops import FULL_CHUNKS
from minijax.compiler.codegen.cpu.small_gemm import ROWS as SMALL_GEMM_ROWS
from minijax.compiler.codegen.cpu.team import TeamEmitter, piece_range
from minijax.compiler.codegen.llvm_types import (
    F32,
    F64,
    I8,
    I32,
    I64,
    emit_counted_loop,
    is_signed,
    storage_type,
)

_I8P = I8.as_pointer()
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


@dataclass(frozen=True)
class Ref:
    """Where a value lives: ("cur", i) the current state element i, ("tgt", i) its target
    this iteration, ("temp", offset) in the temps block, ("const", k) constant k."""

    kind: str
    index: int


@dataclass
class KernelCall:
    body: str              # the kernel's loop-nest function (`<name>.body`)
    ins: list
    outs: list
    outer: int
    scratch: Ref | None = None   # full reductions: partials buffer (then two calls)
    parallel: bool = False       # split over the loop's team (see "Teams" above)


@dataclass
class GemmCall:
    dtype: str             # "f32" or "f64"
    form: tuple            # (batch, m, n, k, lhs transposed, rhs transposed)
    a: Ref
    b: Ref
    c: Ref
    parallel: bool = False       # rows (or batches) split over the loop's team
    kernel: str | None = None    # a generated small gemm (small_gemm.py) instead of BLAS


@dataclass
class CopyCall:
    dst: int               # state element whose target receives the bytes
    src: Ref
    nbytes: int


@dataclass
class UpdateSlice:
    """dynamic-update-slice of state element `dst`'s buffer in place (row-major): the
    update's rows are copied to the clamped start indices read from `starts`."""

    dst: int
    update: Ref
    starts: list           # Refs of the scalar start indices
    start_types: list      # their element types ("s32", "u64", ...)
    dims: tuple            # the operand's dims
    update_dims: tuple
    itemsize: int


@dataclass
class CollectiveCall:
    """A collective of a device program's entry (backends/cpu/native_entry.py): the entry
    calls the statics table's callback with `index` and the data pointers of `ins` then
    `outs`; the callback exchanges the contributions and writes the results."""

    index: int
    ins: list
    outs: list
    native: NativeAllReduce | ParticipantId | None = None   # natively, when the run allows


@dataclass
class LoopPlan:
    """A natively runnable while loop (see the module docstring)."""

    n: int                                   # state elements
    carried: list                            # indices with A/B buffers
    carry_offsets: dict = field(default_factory=dict)   # i -> (offset of A, offset of B)
    inplace: dict = field(default_factory=dict)   # i -> offset of its one buffer
    carry_bytes: int = 0
    temp_bytes: int = 0
    num_consts: int = 0
    cond: list = field(default_factory=list)
    pred: Ref | None = None
    body: list = field(default_factory=list)
    uses_gemm: bool = False
    uses_team: bool = False                  # some op (here or nested) is split


@dataclass
class Branch:
    """A conditional inside a loop body: the branch index (a pred, true -> branch 0, or an
    integer, out of range -> the last branch, as XLA) picks one list of ops, which leaves
    its results at `results[k]`; they are copied to `outputs` (sizes in bytes)."""

    index: Ref
    index_type: str                           # "pred", "s32", ...
    branches: list                            # per branch: its ops
    results: list                             # per branch: the refs of its result leaves
    outputs: list                             # refs the chosen branch's results go to
    sizes: list


@dataclass
class NestedLoop:
    """A while loop inside a loop body: `plan`'s offsets are in the temps block; `inputs`
    are the enclosing scope's refs of its initial state; after it, state element i is
    copied to `dst` for each (i, dst) in `outputs` (its invariant elements need none)."""

    plan: LoopPlan
    inputs: list
    outputs: list
    sizes: list


class Layout:
    """Indices of the table entries of a loop with `n` state elements."""

    def __init__(self, n: int):
        self.carry, self.temps, self.trips = n, n + 1, n + 2
        self.sgemm, self.dgemm, self.set_threads, self.get_threads = range(n + 3, n + 7)
        self.team = n + 7
        self.consts = n + 8

    def size(self, num_consts: int) -> int:
        return self.consts + num_consts


def _batch_element(b: ir.IRBuilder, e, pointers, m: int, n: int, k: int, size: int) -> list:
    """A, B and C of batch element `e` of a batched gemm (m x k by k x n, `size`-byte
    elements), from the batch's base pointers."""
    return [b.gep(p, [b.mul(e, ir.Constant(I64, step))])
            for p, step in zip(pointers, (m * k * size, k * n * size, m * n * size))]


class _LoopEmitter:
    team = None            # the i64* team block while emitting a loop that uses a team

    def __init__(self, module: ir.Module, name: str, plan: LoopPlan, blas_int_bits: int,
                 data_offset: int | None, sizes: list, spin_hint: str = ""):
        self.module, self.plan, self.sizes = module, plan, sizes
        self.name, self.spin_hint = name, spin_hint
        self.layout = Layout(plan.n)
        self.ity = I64 if blas_int_bits == 64 else I32
        self.data_offset = data_offset
        self.fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_I8P.as_pointer()]),
                              name)
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.table = self.fn.args[0]

    def _entry(self, k):
        return self.b.load(self.b.gep(self.table, [ir.Constant(I64, k)], inbounds=True))

    def _array(self, k):
        """The data pointer of table entry k (an array object or a raw pointer)."""
        raw = self._entry(k)
        if self.data_offset is None:
            return raw
        b = self.b
        field_ = b.gep(raw, [ir.Constant(I64, self.data_offset)], inbounds=True)
        return b.load(b.bitcast(field_, _I8P.as_pointer()))

    def _ptr(self, ref: Ref):
        b = self.b
        if ref.kind == "cur":
            return self.cur[ref.index]
        if ref.kind == "tgt":
            return self.tgt[ref.index]
        if ref.kind == "temp":
            return b.gep(self.temps, [ir.Constant(I64, ref.index)], inbounds=True)
        return self.consts[ref.index]

    def emit(self) -> None:
        plan, lay, b = self.plan, self.layout, self.b
        inputs = [self._array(i) for i in range(plan.n)]
        carry = self._array(lay.carry)
        self.temps = self._array(lay.temps)
        self.consts = [self._entry(lay.consts + k) for k in range(plan.num_consts)]
        if plan.uses_team:
            self.team_fns = TeamEmitter(self.module, self.name, self.spin_hint)
            self.team = b.bitcast(self._entry(lay.team), I64.as_pointer())
            self.team_args = b.alloca(_I8P, ir.Constant(I64, _max_args(plan)), name="args")
        restore = self._single_blas_thread() if plan.uses_gemm else None
        _, trips = self._loop(plan, inputs, carry, self.sizes)
        if restore is not None:
            restore()
        if plan.uses_team:
            self.team_fns.emit_stop(b, self.team)
        b.store(b.inttoptr(trips, _I8P), b.gep(self.table, [ir.Constant(I64, lay.trips)],
                                               inbounds=True))
        b.ret_void()

    def _loop(self, plan: LoopPlan, inputs: list, carry, sizes: list):
        """Emit `plan`'s loop over state buffers `inputs`, its A/B (and in-place) buffers
        at its offsets from `carry`; returns (final state pointers, trip count) with the
        builder after the loop."""
        b = self.b
        outer_scope = getattr(self, "cur", None), getattr(self, "tgt", None)
        bufs = {i: tuple(b.gep(carry, [ir.Constant(I64, off)], inbounds=True)
                         for off in plan.carry_offsets[i]) for i in plan.carried}
        own = {}
        for i, off in plan.inplace.items():
            # Updated in place: one buffer, holding a copy of the input from the start.
            own[i] = b.gep(carry, [ir.Constant(I64, off)], inbounds=True)
            self._memcpy(own[i], inputs[i], sizes[i])
        entry = b.block
        header = self.fn.append_basic_block("cond")
        body = self.fn.append_basic_block("body")
        done = self.fn.append_basic_block("done")
        b.branch(header)
        b.position_at_end(header)
        trips = b.phi(I64, name="trips")
        trips.add_incoming(ir.Constant(I64, 0), entry)
        phis = {}
        self.cur = list(inputs)
        for i, p in own.items():
            self.cur[i] = p
        for i in plan.carried:
            phis[i] = self.cur[i] = b.phi(_I8P, name=f"cur{i}")
            phis[i].add_incoming(inputs[i], entry)
        self.tgt = dict(own)
        for op in plan.cond:
            self._op(op)
        pred = b.load(self._ptr(plan.pred))
        b.cbranch(b.icmp_unsigned("!=", pred, ir.Constant(I8, 0)), body, done)
        b.position_at_end(body)
        for i in plan.carried:
            a_buf, b_buf = bufs[i]
            self.tgt[i] = b.select(b.icmp_unsigned("==", self.cur[i], a_buf), b_buf, a_buf)
        for op in plan.body:
            self._op(op)
        latch = b.block
        trips.add_incoming(b.add(trips, ir.Constant(I64, 1)), latch)
        for i in plan.carried:
            phis[i].add_incoming(self.tgt[i], latch)
        b.branch(header)
        b.position_at_end(done)
        final = list(self.cur)
        self.cur, self.tgt = outer_scope
        return final, trips

    def _nested(self, op: NestedLoop) -> None:
        """An inner while loop: its buffers sit in the temps block; its carried results
        are copied to their places in the enclosing scope after it."""
        inputs = [self._ptr(r) for r in op.inputs]
        final, _ = self._loop(op.plan, inputs, self.temps, op.sizes)
        for i, dst in op.outputs:
            self._memcpy(self._ptr(dst), final[i], op.sizes[i])

    def _branch(self, op: Branch) -> None:
        """Jump to the chosen branch's ops, copy its results out, and meet after."""
        b = self.b
        ty = storage_type(op.index_type)
        v = b.load(b.bitcast(self._ptr(op.index), ty.as_pointer()))
        last = len(op.branches) - 1
        if op.index_type == "pred":
            chosen = b.select(b.icmp_unsigned("!=", v, ir.Constant(ty, 0)),
                              ir.Constant(I64, 0), ir.Constant(I64, 1))
        else:
            v = b.sext(v, I64) if is_signed(op.index_type) and ty.width < 64 else (
                b.zext(v, I64) if ty.width < 64 else v)
            inside = b.icmp_unsigned("<", v, ir.Constant(I64, last))   # negative: huge
            chosen = b.select(inside, v, ir.Constant(I64, last))
        after = self.fn.append_basic_block("branch_done")
        blocks = [self.fn.append_basic_block(f"branch{k}") for k in range(len(op.branches))]
        switch = b.switch(chosen, blocks[-1])
        for k, block in enumerate(blocks[:-1]):
            switch.add_case(ir.Constant(I64, k), block)
        for ops, results, block in zip(op.branches, op.results, blocks):
            b.position_at_end(block)
            for inner in ops:
                self._op(inner)
            for src, dst, nbytes in zip(results, op.outputs, op.sizes):
                if src != dst:
                    self._memcpy(self._ptr(dst), self._ptr(src), nbytes)
            b.branch(after)
        b.position_at_end(after)

    def _single_blas_thread(self):
        """Run the loop's gemms on one BLAS thread (they are small); returns the emitter
        of the restoring code for the loop's exit."""
        b, lay = self.b, self.layout
        set_ty = ir.FunctionType(ir.VoidType(), [I32]).as_pointer()
        get_ty = ir.FunctionType(I32, []).as_pointer()
        set_p, get_p = self._entry(lay.set_threads), self._entry(lay.get_threads)
        have = b.icmp_unsigned("!=", b.ptrtoint(set_p, I64), ir.Constant(I64, 0))
        start = b.block
        with b.if_then(have):
            got = b.call(b.bitcast(get_p, get_ty), [])
            with b.if_then(b.icmp_signed(">", got, ir.Constant(I32, 1))):
                b.call(b.bitcast(set_p, set_ty), [ir.Constant(I32, 1)])
            then = b.block
        prev = b.phi(I32)
        prev.add_incoming(ir.Constant(I32, 1), start)
        prev.add_incoming(got, then)

        def restore():
            with b.if_then(b.icmp_signed(">", prev, ir.Constant(I32, 1))):
                b.call(b.bitcast(set_p, set_ty), [prev])
        return restore

    def _op(self, op) -> None:
        if isinstance(op, KernelCall):
            self._kernel(op)
        elif isinstance(op, GemmCall):
            self._gemm(op)
        elif isinstance(op, UpdateSlice):
            self._update_slice(op)
        elif isinstance(op, NestedLoop):
            self._nested(op)
        elif isinstance(op, Branch):
            self._branch(op)
        else:
            self._memcpy(self.tgt[op.dst], self._ptr(op.src), op.nbytes)

    def _kernel(self, op: KernelCall) -> None:
        b = self.b
        fn = self.module.get_global(op.body)
        refs = op.ins + op.outs + ([op.scratch] if op.scratch is not None else [])
        args = [b.bitcast(self._ptr(r), t) for r, t in zip(refs, fn.function_type.args)]
        if op.parallel and self.team is not None and op.outer > 0:
            total = FULL_CHUNKS if op.scratch is not None else op.outer
            self._publish(args, lambda ib, vals, start, end: ib.call(
                fn, [ib.bitcast(v, t) for v, t in zip(vals, fn.function_type.args)]
                + [start, end]), total)
            if op.scratch is not None:
                b.call(fn, args + [ir.Constant(I64, FULL_CHUNKS),
                                   ir.Constant(I64, FULL_CHUNKS + 1)])
            return
        if op.scratch is not None:
            b.call(fn, args + [ir.Constant(I64, 0), ir.Constant(I64, FULL_CHUNKS)])
            b.call(fn, args + [ir.Constant(I64, FULL_CHUNKS), ir.Constant(I64, FULL_CHUNKS + 1)])
        elif op.outer > 0:
            b.call(fn, args + [ir.Constant(I64, 0), ir.Constant(I64, op.outer)])

    def _gemm(self, op: GemmCall) -> None:
        if op.kernel is not None:
            self._small_gemm(op)
            return
        b, ity = self.b, self.ity
        batch, m, n, k, ta, tb = op.form
        fty, size = (F32, 4) if op.dtype == "f32" else (F64, 8)
        fp = fty.as_pointer()
        gemm_ty = ir.FunctionType(ir.VoidType(), [I32, I32, I32, ity, ity, ity, fty, fp, ity,
                                                  fp, ity, fty, fp, ity])
        slot = self.layout.sgemm if op.dtype == "f32" else self.layout.dgemm
        gemm = b.bitcast(self._entry(slot), gemm_ty.as_pointer())
        a, bb, c = (self._ptr(r) for r in (op.a, op.b, op.c))

        def i(v):
            return ir.Constant(ity, v)

        def t(flag):
            return ir.Constant(I32, _TRANS if flag else _NO_TRANS)

        lda, ldb = (m if ta else k), (k if tb else n)

        def call(cb, fn, pa, pb, pc, rows=None):
            rows = i(m) if rows is None else cb.trunc(rows, ity) if ity is I32 else rows
            cb.call(fn, [ir.Constant(I32, _ROW_MAJOR), t(ta), t(tb), rows, i(n), i(k),
                         ir.Constant(fty, 1.0), cb.bitcast(pa, fp), i(lda),
                         cb.bitcast(pb, fp), i(ldb), ir.Constant(fty, 0.0),
                         cb.bitcast(pc, fp), i(n)])

        def batches(cb, fn, pa, pb, pc, first, last):
            with emit_counted_loop(cb, first, last, "batch") as e:
                call(cb, fn, *_batch_element(cb, e, (pa, pb, pc), m, n, k, size))

        if op.parallel and self.team is not None:
            def piece(ib, vals, start, end):
                pa, pb, pc, fn = vals
                fn = ib.bitcast(fn, gemm_ty.as_pointer())
                if batch > 1:
                    batches(ib, fn, pa, pb, pc, start, end)
                    return
                with ib.if_then(ib.icmp_unsigned("<", start, end)):
                    # Rows [start, end) of C: op(A)'s rows, a column offset of A stored
                    # transposed.
                    a_step = size if ta else k * size
                    call(ib, fn, ib.gep(pa, [ib.mul(start, ir.Constant(I64, a_step))]), pb,
                         ib.gep(pc, [ib.mul(start, ir.Constant(I64, n * size))]),
                         ib.sub(end, start))
            self._publish([a, bb, c, b.bitcast(gemm, _I8P)], piece, batch if batch > 1 else m)
            return
        if batch == 1:
            call(b, gemm, a, bb, c)
            return
        batches(b, gemm, a, bb, c, ir.Constant(I64, 0), ir.Constant(I64, batch))

    def _small_gemm(self, op: GemmCall) -> None:
        """A generated gemm `kernel(a, b, c, first row, end row)` per batch element; split
        over the team by batch elements, or by rows in whole tiles of SMALL_GEMM_ROWS."""
        b = self.b
        batch, m, n, k = op.form[:4]
        size = 4 if op.dtype == "f32" else 8
        fn = self.module.get_global(op.kernel)
        a, bb, c = (self._ptr(r) for r in (op.a, op.b, op.c))

        def call(cb, pa, pb, pc, start, end):
            cb.call(fn, [cb.bitcast(p, t) for p, t in zip((pa, pb, pc), fn.function_type.args)]
                    + [start, end])

        def batches(cb, pa, pb, pc, first, last):
            with emit_counted_loop(cb, first, last, "batch") as e:
                call(cb, *_batch_element(cb, e, (pa, pb, pc), m, n, k, size),
                     ir.Constant(I64, 0), ir.Constant(I64, m))

        if op.parallel and self.team is not None:
            tiles = -(-m // SMALL_GEMM_ROWS)

            def piece(ib, vals, start, end):
                pa, pb, pc = vals
                if batch > 1:
                    batches(ib, pa, pb, pc, start, end)
                    return
                rows = ir.Constant(I64, SMALL_GEMM_ROWS)
                last = ir.Constant(I64, m)
                first = ib.mul(start, rows)
                stop = ib.mul(end, rows)
                stop = ib.select(ib.icmp_unsigned(">", stop, last), last, stop)
                with ib.if_then(ib.icmp_unsigned("<", first, stop)):
                    call(ib, pa, pb, pc, first, stop)
            self._publish([a, bb, c], piece, batch if batch > 1 else tiles)
            return
        if batch == 1:
            call(b, a, bb, c, ir.Constant(I64, 0), ir.Constant(I64, m))
            return
        batches(b, a, bb, c, ir.Constant(I64, 0), ir.Constant(I64, batch))

    def _publish(self, values: list, emit_piece, total: int) -> None:
        """Run an op split over the team: `emit_piece(builder, values, start, end)` emits
        one piece's work on rows [start, end) of range(total), inside a new item function
        that reads `values` (i8* each) back from the team's argument array."""
        b = self.b
        for k, v in enumerate(values):
            b.store(b.bitcast(v, _I8P), b.gep(self.team_args, [ir.Constant(I64, k)]))
        fn, ib = self.team_fns.item_function()
        args, piece, pieces = fn.args
        vals = [ib.load(ib.gep(args, [ir.Constant(I64, k)])) for k in range(len(values))]
        start, end = piece_range(ib, ir.Constant(I64, total), piece, pieces)
        emit_piece(ib, vals, start, end)
        ib.ret_void()
        b.call(self.team_fns.dispatch, [self.team, fn, self.team_args])


    def _update_slice(self, op: UpdateSlice) -> None:
        b = self.b
        dims, upd = op.dims, op.update_dims
        starts = []
        for ref, et, n, u in zip(op.starts, op.start_types, dims, upd):
            ty = storage_type(et)
            v = b.load(b.bitcast(self._ptr(ref), ty.as_pointer()))
            if ty.width < 64:
                v = b.sext(v, I64) if is_signed(et) else b.zext(v, I64)
            # XLA clamps the start into [0, dim - update dim].
            hi = ir.Constant(I64, n - u)
            if is_signed(et):
                v = b.select(b.icmp_signed("<", v, ir.Constant(I64, 0)), ir.Constant(I64, 0), v)
                v = b.select(b.icmp_signed(">", v, hi), hi, v)
            else:
                v = b.select(b.icmp_unsigned(">", v, hi), hi, v)
            starts.append(v)
        rank = len(dims)
        if rank == 0 or 0 in upd:
            if rank == 0:
                self._memcpy(self.tgt[op.dst], self._ptr(op.update), op.itemsize)
            return
        strides = [1] * rank
        for d in range(rank - 2, -1, -1):
            strides[d] = strides[d + 1] * dims[d + 1]
        row_bytes = upd[-1] * op.itemsize
        rows = 1
        for u in upd[:-1]:
            rows *= u
        dst, src = self.tgt[op.dst], self._ptr(op.update)
        with emit_counted_loop(b, ir.Constant(I64, 0), ir.Constant(I64, rows), "dus") as r:
            # The update row r's multi-index (all dims but the last) -> destination offset.
            off = b.mul(starts[-1], ir.Constant(I64, strides[-1]))
            rest = r
            for d in range(rank - 2, -1, -1):
                idx = b.urem(rest, ir.Constant(I64, upd[d])) if d else rest
                rest = b.udiv(rest, ir.Constant(I64, upd[d])) if d else rest
                off = b.add(off, b.mul(b.add(idx, starts[d]), ir.Constant(I64, strides[d])))
            to = b.gep(dst, [b.mul(off, ir.Constant(I64, op.itemsize))], inbounds=True)
            frm = b.gep(src, [b.mul(r, ir.Constant(I64, row_bytes))], inbounds=True)
            self._memcpy(to, frm, row_bytes)

    def _memcpy(self, dst, src, nbytes: int) -> None:
        memcpy = self.module.declare_intrinsic("llvm.memcpy", [_I8P, _I8P, I64])
        self.b.call(memcpy, [dst, src, ir.Constant(I64, nbytes), ir.Constant(ir.IntType(1), 0)])


def _max_args(plan: LoopPlan) -> int:
    """The most values any split op of `plan` (nested loops included) publishes."""
    most = 4                                  # a gemm: A, B, C and the gemm function
    for op in plan.cond + plan.body:
        if isinstance(op, KernelCall):
            most = max(most, len(op.ins) + len(op.outs) + 1)
        elif isinstance(op, NestedLoop):
            most = max(most, _max_args(op.plan))
        elif isinstance(op, Branch):
            for ops in op.branches:
                most = max(most, _max_args(LoopPlan(n=0, carried=[], body=ops)))
    return most


def emit_loop(module: ir.Module, name: str, plan: LoopPlan, blas_int_bits: int,
              data_offset: int | None, sizes: list, spin_hint: str = "") -> None:
    """Emit `void name(i8 **table)` running `plan` into `module` (which defines the
    kernels' `.body` functions the plan calls); `sizes` are the state elements' bytes.
    A plan that uses a team also gets `name.worker(i8 *team)` for the lent threads, which
    pause with the `spin_hint` instruction while they wait (team.py)."""
    _LoopEmitter(module, name, plan, blas_int_bits, data_offset, sizes, spin_hint).emit()




class EntryLayout:
    """Entries of an entry program's statics table: constants, the BLAS pointers, then the
    collective callback `void (i64 index, i8 **pointers)`."""

    def __init__(self, num_consts: int):
        self.consts = 0
        self.sgemm, self.dgemm, self.set_threads, self.get_threads = range(
            num_consts, num_consts + 4)
        self.collective = num_consts + 4

    def size(self, num_consts: int) -> int:
        return num_consts + 5


class _EntryEmitter(_LoopEmitter):
    """Straight-line ops as `void name(i8 **bufs, i64, i64)` (the kernel ABI): bufs holds
    the inputs, the outputs, the temps block and the statics table (EntryLayout), then, in
    an entry with collectives, the device context (collectives.py)."""

    def __init__(self, module, name, ops, n_in, n_out, num_consts, uses_gemm, blas_int_bits,
                 spin_hint=""):
        self.module, self.plan, self.sizes = module, None, []
        self.name, self.spin_hint = name, spin_hint
        self.ops, self.n_in, self.n_out = ops, n_in, n_out
        self.num_consts, self.uses_gemm = num_consts, uses_gemm
        self.layout = EntryLayout(num_consts)
        self.ity = I64 if blas_int_bits == 64 else I32
        self.data_offset = None
        self.fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_I8P.as_pointer(), I64,
                                                                      I64]), name)
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))

    def emit(self) -> None:
        b, bufs = self.b, self.fn.args[0]

        def arg(k):
            return b.load(b.gep(bufs, [ir.Constant(I64, k)], inbounds=True))

        n_in, n_out = self.n_in, self.n_out
        self.cur = [arg(k) for k in range(n_in)]
        self.tgt = {i: arg(n_in + i) for i in range(n_out)}
        self.temps = arg(n_in + n_out)
        self.table = b.bitcast(arg(n_in + n_out + 1), _I8P.as_pointer())
        self.consts = [self._entry(k) for k in range(self.num_consts)]
        if any(isinstance(op, CollectiveCall) for op in self.ops):
            self.ctx = b.bitcast(arg(n_in + n_out + 2), I64.as_pointer())
            self.native_collectives = CollectiveEmitter(self.module, self.name,
                                                        self.spin_hint)
        restore = self._single_blas_thread() if self.uses_gemm else None
        for op in self.ops:
            if isinstance(op, CollectiveCall):
                self._collective(op)
            else:
                self._op(op)
        if restore is not None:
            restore()
        b.ret_void()

    def _collective(self, op: CollectiveCall) -> None:
        b = self.b
        if isinstance(op.native, ParticipantId):
            self.native_collectives.participant_id(b, self.ctx, op.native, self._ptr(op.outs[0]))
            return
        refs = op.ins + op.outs
        ptrs = b.alloca(_I8P, ir.Constant(I64, max(len(refs), 1)), name="collective_args")
        for k, ref in enumerate(refs):
            b.store(self._ptr(ref), b.gep(ptrs, [ir.Constant(I64, k)], inbounds=True))
        callback_ty = ir.FunctionType(ir.VoidType(), [I64, _I8P.as_pointer()]).as_pointer()
        if op.native is None:
            callback = b.bitcast(self._entry(self.layout.collective), callback_ty)
            b.call(callback, [ir.Constant(I64, op.index), ptrs])
            return
        native = self.native_collectives.all_reduce(op.native)
        shared = b.load(b.gep(self.ctx, [ir.Constant(I64, CTX_SHARED)], inbounds=True))
        with b.if_else(b.icmp_unsigned("!=", shared, ir.Constant(I64, 0))) as (here, back):
            with here:
                b.call(native, [self.ctx, ptrs])
            with back:
                callback = b.bitcast(self._entry(self.layout.collective), callback_ty)
                b.call(callback, [ir.Constant(I64, op.index), ptrs])


def emit_entry(module: ir.Module, name: str, ops: list, n_in: int, n_out: int,
               num_consts: int, uses_gemm: bool, blas_int_bits: int,
               spin_hint: str = "") -> None:
    """Emit straight-line `ops` (no loops) as kernel-ABI function `name` (_EntryEmitter);
    native collectives wait with the `spin_hint` instruction (spin.spin_hint_for)."""
    _EntryEmitter(module, name, ops, n_in, n_out, num_consts, uses_gemm,
                  blas_int_bits, spin_hint).emit()


__all__ = ["Branch", "CollectiveCall", "CopyCall", "EntryLayout", "GemmCall", "KernelCall",
           "Layout", "LoopPlan", "NestedLoop", "Ref", "UpdateSlice", "emit_entry", "emit_loop"]
