"""The loop emitter: wraps a fused computation in loops over its output.

Every kernel has the C signature `void kernel(void **buffers, int64 start, int64 end)`:
`buffers` holds the parameters' then the outputs' base addresses, and [start, end) is the
part of the outer loop to run, so a runtime can split the outer loop across threads.

Kernel shapes (`KernelSpec.mode`):
- "flat": only elementwise ops and row-major reshapes: one loop over linear offsets.
- "rows": any loop fusion: the outer loop runs over rows (all dims but the last), the inner,
  contiguous loop over the last dimension.
- "row_reduce": a reduce whose reduced dims include the minor one: the outer loop runs over
  output elements, the inner loop over the contiguous reduced elements. Float sums add
  blocks of BLOCK elements in the element type (vectorized, reassociated into several
  vector accumulators that LLVM combines pairwise) and accumulate the blocks in float64.
- "col_reduce": a reduce that keeps the minor dimension: the outer loop runs over output
  rows, then over reduced positions, and the inner loop updates a whole output row at once.
- "row_fused": a row fusion (passes/row_fusion.py), see row_loops.py.
- "full_reduce" (only with emit_kernel(full_reduce=True)): a large reduction of every dim to
  scalars: [start, end) runs over FULL_CHUNKS fixed chunks whose partials go to a scratch
  buffer; a last call combines them in a fixed pairwise tree (deterministic, any threads).
The inner loops are plain counted loops with no cross-iteration dependences except the
reduction accumulators, written for LLVM's loop vectorizer (the target decides the width).
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from minijax.compiler.codegen.cpu.blocks import (
    BLOCK,
    block_bounds,
    block_partial,
    block_type,
    reducer_kind,
)
from minijax.compiler.codegen.cpu.row_loops import emit_row_fused
from minijax.compiler.codegen.cpu.scatter_loop import emit_scatter, unsupported_scatter_reason
from minijax.compiler.codegen.elemental import (
    ELEMENTWISE,
    ElementalEmitter,
    Index,
    convert,
    scalar_index,
    unsupported_reason,
)
from minijax.compiler.codegen.float16 import float_convert, round_to_bf16
from minijax.compiler.codegen.kernel_plan import (
    mixed_reduce_roots,
    reduce_roots,
    root_output_offsets,
)
from minijax.compiler.codegen.llvm_types import (
    F64,
    I64,
    INT_TYPES,
    const,
    emit_counted_loop,
    is_float,
    is_signed,
    storage_type,
    value_type,
)
from minijax.compiler.hlo.ir import Computation, Shape
from minijax.compiler.hlo.row_plan import plan_for

#: Full reductions of at least this many elements split into FULL_CHUNKS partials.
FULL_REDUCE_MIN = 1 << 20
#: Fixed partial count (independent of the thread count, so results are reproducible).
FULL_CHUNKS = 64
#: Bytes per partial slot in a full reduction's scratch buffer (any accumulator fits).
SLOT_BYTES = 16
FLAT_OPS = ELEMENTWISE | {"parameter", "constant", "tuple", "reshape", "bitcast"}


@dataclass
class KernelSpec:
    """What the runtime needs to call a generated kernel."""

    name: str
    mode: str
    outer: int             # the [0, outer) range the kernel's start/end split
    work: int              # elements touched per outer iteration (for threading decisions)
    num_params: int
    output_shapes: list


def _is_flat(comp: Computation) -> bool:
    for instr in comp.instructions:
        if instr.opcode == "broadcast" and instr.operands[0].shape.rank == 0:
            continue
        if instr.opcode not in FLAT_OPS:
            return False
        for leaf in instr.shape.flat():
            if leaf.layout is not None and leaf.minor_to_major != tuple(
                    range(leaf.rank - 1, -1, -1)):
                return False
    return True


def _delinearize(b, value, dims):
    """Row-major multi-index (list of i64) of `value` within `dims`."""
    return Index(Shape("s64", tuple(dims)), linear=value).get_multi(b)


def _full_reduce_roots(comp: Computation):
    """The reduce roots of `comp` if it is a large reduction of every dimension to scalars
    by known float/integer reducers (run as FULL_CHUNKS partials, see _emit_full_reduce)."""
    roots = reduce_roots(comp)
    if roots is None:
        return None
    in_shape = roots[0].operands[0].shape
    if in_shape.rank == 0 or in_shape.size < FULL_REDUCE_MIN:
        return None
    if set(roots[0].attrs["dimensions"]) != set(range(in_shape.rank)):
        return None
    for r in roots:
        kind, et = reducer_kind(r), r.shape.element_type
        if kind is None or r.shape.is_tuple:
            return None
        if not (is_float(et) and kind in ("add", "multiply", "maximum", "minimum")
                or et in INT_TYPES):
            return None
    return roots


def _identity(ty, kind: str, et: str):
    """The identity of reducer `kind` as an LLVM constant of accumulator type `ty`."""
    if isinstance(ty, ir.IntType):
        w = ty.width
        signed = is_signed(et)
        value = {"add": 0, "or": 0, "xor": 0, "multiply": 1, "and": -1,
                 "maximum": -(1 << (w - 1)) if signed else 0,
                 "minimum": (1 << (w - 1)) - 1 if signed else -1}[kind]
        return ir.Constant(ty, value)
    value = {"add": -0.0, "multiply": 1.0, "maximum": float("-inf"),
             "minimum": float("inf")}[kind]
    return ir.Constant(ty, value)


def output_shapes(comp: Computation) -> list[Shape]:
    return comp.root.shape.flat()


class KernelEmitter:
    """Emits one kernel for a fused computation into an llvmlite module."""

    def __init__(self, module: ir.Module, name: str, comp: Computation, noalias: bool = True,
                 full_reduce: bool = False):
        self.module = module
        self.name = name
        self.comp = comp
        self.params = comp.parameters
        self.outs = output_shapes(comp)
        ptr_types = ([storage_type(p.shape.element_type).as_pointer() for p in self.params]
                     + [storage_type(s.element_type).as_pointer() for s in self.outs])
        self.full = _full_reduce_roots(comp) if full_reduce else None
        if self.full is not None:
            ptr_types.append(ir.IntType(8).as_pointer())   # the partials' scratch buffer
        body_ty = ir.FunctionType(ir.VoidType(), ptr_types + [I64, I64])
        self.body_fn = ir.Function(module, body_ty, name + ".body")
        self.body_fn.linkage = "internal"
        # The wrapper and the _py/_fc entries all call the body: inlined, LLVM would
        # optimize, vectorize and emit the loop nest once per caller (3x the compile time).
        self.body_fn.attributes.add("noinline")
        for arg in self.body_fn.args[:len(ptr_types)]:
            if noalias:
                arg.add_attribute("noalias")
        self._emit_wrapper(ptr_types)
        entry = self.body_fn.append_basic_block("entry")
        start = self.body_fn.append_basic_block("start")
        ir.IRBuilder(entry).branch(start)
        self._entry_builder = ir.IRBuilder(entry)
        self.b = ir.IRBuilder(start)
        args = self.body_fn.args
        self.param_ptrs = list(args[:len(self.params)])
        self.out_ptrs = list(args[len(self.params):len(self.params) + len(self.outs)])
        self.start, self.end = args[-2], args[-1]
        self.em = ElementalEmitter(self.b, comp, load_param=self._load_param,
                                   alloca=self.alloca)

    def alloca(self, ty):
        """A stack slot in the entry block (so it is promoted to a register)."""
        self._entry_builder.position_at_start(self._entry_builder.block)
        return self._entry_builder.alloca(ty)

    def _emit_wrapper(self, ptr_types):
        i8pp = ir.IntType(8).as_pointer().as_pointer()
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [i8pp, I64, I64]),
                         self.name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ptrs = []
        for k, ty in enumerate(ptr_types):
            raw = b.load(b.gep(fn.args[0], [const(I64, k)], inbounds=True))
            ptrs.append(b.bitcast(raw, ty))
        b.call(self.body_fn, ptrs + [fn.args[1], fn.args[2]])
        b.ret_void()

    def _load_param(self, instr, index: Index):
        b = self.b
        ptr = self.param_ptrs[instr.parameter_number]
        lin = index.for_shape(b, instr.shape).get_linear(b)
        v = b.load(b.gep(ptr, [lin], inbounds=True))
        return self.em.to_value(v, instr.shape.element_type)

    def _store(self, k, lin, value):
        b = self.b
        et = self.outs[k].element_type
        b.store(self.em.to_storage(value, et), b.gep(self.out_ptrs[k], [lin], inbounds=True))

    # ------------------------------------------------------------------ kernels
    def emit(self) -> KernelSpec:
        self.extras = []
        if self.comp.root.opcode == "scatter":
            spec = emit_scatter(self, self.comp)
            self.b.ret_void()
            return spec
        plan = plan_for(self.comp)
        if plan is not None:
            spec = emit_row_fused(self, plan)
            self.b.ret_void()
            return spec
        roots = reduce_roots(self.comp)
        mixed = None if roots is not None else mixed_reduce_roots(self.comp)
        if mixed is not None:
            roots, self.extras = mixed
        if self.full is not None:
            spec = self._emit_full_reduce(self.full)
        elif roots is not None:
            spec = self._emit_reduce(roots)
        else:
            spec = self._emit_loop()
        self.b.ret_void()
        return spec

    def _loop_roots(self):
        root = self.comp.root
        return list(root.operands) if root.opcode == "tuple" else [root]

    def _emit_loop(self) -> KernelSpec:
        roots = self._loop_roots()
        shape = roots[0].shape
        b = self.b
        size = shape.size
        if _is_flat(self.comp) or shape.rank <= 1:
            with self.em.scope(), emit_counted_loop(b, self.start, self.end, "flat",
                                                    interleave=True) as i:
                for k, r in enumerate(roots):
                    idx = Index(r.shape, linear=i)
                    self._store(k, i, self.em.emit(r, idx))
            return self._spec("flat", size, 1)
        inner = shape.dims[-1]
        rows = size // inner if inner else 0
        with self.em.scope(), emit_counted_loop(b, self.start, self.end, "row") as row:
            outer = _delinearize(b, row, shape.dims[:-1])
            base = b.mul(row, const(I64, inner))
            with emit_counted_loop(b, const(I64, 0), const(I64, inner), "col",
                                   interleave=True) as j:
                lin = b.add(base, j)
                for k, r in enumerate(roots):
                    idx = Index(r.shape, multi=outer + [j], linear=lin)
                    self._store(k, lin, self.em.emit(r, idx))
        return self._spec("rows", rows, inner)

    def _spec(self, mode, outer, work):
        return KernelSpec(self.name, mode, outer, work, len(self.params), self.outs)

    # ------------------------------------------------------------------ reductions
    def _emit_reduce(self, roots) -> KernelSpec:
        first = roots[0]
        in_shape = first.operands[0].shape
        red = sorted(first.attrs["dimensions"])
        if in_shape.rank and (in_shape.rank - 1) not in red:
            return self._emit_col_reduce(roots, in_shape, red)
        return self._emit_row_reduce(roots, in_shape, red)

    def _reducer_kind(self, r):
        return reducer_kind(r)

    def _combine(self, r, kind, acc, value, reassoc=True):
        """acc (+) value for reduce r; generic reducers go through the elemental emitter."""
        b = self.b
        if kind is None:
            return self.em.emit_scalar_computation(r.called["to_apply"], acc + value)
        a, v = acc[0], value[0]
        et = r.operands[0].shape.element_type
        if v.type != a.type:
            v = b.fpext(v, a.type)
        # reassoc lets LLVM vectorize the sum; never nsz: with it LLVM folds acc + (x - x)
        # to acc, dropping the NaN of inf - inf (found by tests/test_differential.py).
        flags = ("reassoc",) if reassoc else ()
        if is_float(et):
            if kind == "add":
                return [b.fadd(a, v, flags=flags)]
            if kind == "multiply":
                out = b.fmul(a, v, flags=flags)
                return [round_to_bf16(b, out) if et == "bf16" else out]
        return [self.em._float_op(kind, [a, v], et) if is_float(et)
                else self.em._int_op(kind, [a, v], et)]

    def _inits(self, r):
        n = len(r.operands) // 2
        return [self.em.emit(v, scalar_index(v.shape)) for v in r.operands[n:]]

    def _input_values(self, r, multi):
        n = len(r.operands) // 2
        return [self.em.emit(v, Index(v.shape, multi=multi)) for v in r.operands[:n]]

    def _store_extras(self, multi, in_shape):
        """Store the elementwise roots at the input element `multi` (mixed fusions)."""
        if not self.extras:
            return
        lin = Index(in_shape, multi=multi).get_linear(self.b)
        for off, e in zip(root_output_offsets(self.comp, self.extras), self.extras):
            idx = Index(e.shape, multi=multi, linear=lin)
            self._store(off, lin, self.em.emit(e, idx))

    def _emit_row_reduce(self, roots, in_shape, red) -> KernelSpec:
        b = self.b
        kept = [d for d in range(in_shape.rank) if d not in red]
        kept_dims = [in_shape.dims[d] for d in kept]
        n_out = int(np.prod(kept_dims)) if kept_dims else 1
        last = in_shape.dims[-1] if in_shape.rank else 1
        red_outer = [in_shape.dims[d] for d in red[:-1]]
        n_red_outer = int(np.prod(red_outer)) if red_outer else 1
        kinds = [self._reducer_kind(r) for r in roots]
        offsets = root_output_offsets(self.comp, roots)
        with emit_counted_loop(b, self.start, self.end, "out") as o:
            out_multi = _delinearize(b, o, kept_dims)
            slots = []
            for r, kind in zip(roots, kinds):
                inits = self._inits(r)
                blocked = kind == "add" and is_float(r.shape.element_type)
                accs = [b.fpext(v, F64) if blocked and v.type != F64 else v for v in inits]
                slot = [self.alloca(a.type) for a in accs]
                for s, a in zip(slot, accs):
                    b.store(a, s)
                slots.append((slot, blocked))
            with self.em.scope(), emit_counted_loop(
                    b, const(I64, 0), const(I64, n_red_outer), "red") as ro:
                ro_multi = _delinearize(b, ro, red_outer)
                n_blocks = (last + BLOCK - 1) // BLOCK
                with emit_counted_loop(b, const(I64, 0), const(I64, n_blocks), "blk") as blk:
                    lo, hi = block_bounds(b, blk, last)
                    partial = []
                    for r, (slot, blocked) in zip(roots, slots):
                        partial.append([block_partial(b, self.alloca, r)] if blocked
                                       else slot)
                    with self.em.scope(), emit_counted_loop(b, lo, hi, "inner") as j:
                        multi = [None] * in_shape.rank
                        for d, m in zip(kept, out_multi):
                            multi[d] = m
                        for d, m in zip(red[:-1], ro_multi):
                            multi[d] = m
                        if in_shape.rank:
                            multi[in_shape.rank - 1] = j
                        for r, kind, slot in zip(roots, kinds, partial):
                            vals = self._input_values(r, multi)
                            new = self._combine(r, kind, [b.load(s) for s in slot], vals)
                            for s, v in zip(slot, new):
                                b.store(v, s)
                        self._store_extras(multi, in_shape)
                    for (slot, blocked), p in zip(slots, partial):
                        if blocked:
                            acc = b.load(slot[0])
                            b.store(b.fadd(acc, b.fpext(b.load(p[0]), F64)), slot[0])
            for r, (slot, blocked), off in zip(roots, slots, offsets):
                for k, s in enumerate(slot):
                    v = b.load(s)
                    if blocked and v.type != value_type(r.shape.element_type):
                        v = float_convert(b, v, "f64", r.shape.element_type)
                    self._store(off + k, o, v)
        return self._spec("row_reduce", n_out, int(in_shape.size // max(n_out, 1)))

    def _emit_col_reduce(self, roots, in_shape, red) -> KernelSpec:
        b = self.b
        kept = [d for d in range(in_shape.rank) if d not in red]
        inner = in_shape.dims[-1]
        outer_dims = [in_shape.dims[d] for d in kept[:-1]]
        n_rows = int(np.prod(outer_dims)) if outer_dims else 1
        red_dims = [in_shape.dims[d] for d in red]
        n_red = int(np.prod(red_dims)) if red_dims else 1
        kinds = [self._reducer_kind(r) for r in roots]
        offsets = root_output_offsets(self.comp, roots)
        with emit_counted_loop(b, self.start, self.end, "row") as row:
            outer_multi = _delinearize(b, row, outer_dims)
            base = b.mul(row, const(I64, inner))
            with self.em.scope(), emit_counted_loop(b, const(I64, 0), const(I64, inner),
                                                    "init") as j:
                lin = b.add(base, j)
                for r, off in zip(roots, offsets):
                    for k, v in enumerate(self._inits(r)):
                        self._store(off + k, lin, v)
            with self.em.scope(), emit_counted_loop(b, const(I64, 0), const(I64, n_red),
                                                    "red") as ri:
                red_multi = _delinearize(b, ri, red_dims)
                with self.em.scope(), emit_counted_loop(b, const(I64, 0), const(I64, inner),
                                                        "col") as j:
                    lin = b.add(base, j)
                    multi = [None] * in_shape.rank
                    for d, m in zip(kept, outer_multi + [j]):
                        multi[d] = m
                    for d, m in zip(red, red_multi):
                        multi[d] = m
                    for r, kind, off in zip(roots, kinds, offsets):
                        leaves = r.shape.flat()
                        cur = []
                        for k, leaf in enumerate(leaves):
                            ptr = b.gep(self.out_ptrs[off + k], [lin], inbounds=True)
                            cur.append(self.em.to_value(b.load(ptr), leaf.element_type))
                        new = self._combine(r, kind, cur, self._input_values(r, multi),
                                            reassoc=False)
                        for k, v in enumerate(new):
                            self._store(off + k, lin, v)
                    self._store_extras(multi, in_shape)
        return self._spec("col_reduce", n_rows, n_red * inner)


    def _emit_full_reduce(self, roots) -> KernelSpec:
        """A reduction of all dims, as FULL_CHUNKS contiguous chunks of whole BLOCKs.

        Calls with [start, end) inside [0, FULL_CHUNKS) reduce those chunks (from the
        reducer's identity) into the scratch buffer (the last kernel argument); a call with
        start >= FULL_CHUNKS, made once all chunks are done, combines the partials pairwise
        in a fixed tree, then with the init value, and stores the results.
        """
        b, fn = self.b, self.body_fn
        in_shape = roots[0].operands[0].shape
        size = in_shape.size
        n_blocks = (size + BLOCK - 1) // BLOCK
        kinds = [reducer_kind(r) for r in roots]
        ets = [r.shape.element_type for r in roots]
        blocked = [k == "add" and is_float(et) for k, et in zip(kinds, ets)]
        acc_types = [F64 if bl else value_type(et) for bl, et in zip(blocked, ets)]
        scratch = fn.args[len(self.params) + len(self.outs)]
        offsets = root_output_offsets(self.comp, roots)

        def slot_ptr(k, c):
            off = b.mul(b.add(const(I64, k * FULL_CHUNKS), c), const(I64, SLOT_BYTES))
            return b.bitcast(b.gep(scratch, [off], inbounds=True), acc_types[k].as_pointer())

        combine_bb = fn.append_basic_block("combine")
        chunks_bb = fn.append_basic_block("chunks")
        done_bb = fn.append_basic_block("done")
        b.cbranch(b.icmp_signed(">=", self.start, const(I64, FULL_CHUNKS)), combine_bb,
                  chunks_bb)
        b.position_at_end(chunks_bb)
        with emit_counted_loop(b, self.start, self.end, "chunk") as c:
            lo_blk = b.sdiv(b.mul(c, const(I64, n_blocks)), const(I64, FULL_CHUNKS))
            hi_blk = b.sdiv(b.mul(b.add(c, const(I64, 1)), const(I64, n_blocks)),
                            const(I64, FULL_CHUNKS))
            slots = []
            for ty, kind, et in zip(acc_types, kinds, ets):
                s = self.alloca(ty)
                b.store(_identity(ty, kind, et), s)
                slots.append(s)
            with self.em.scope(), emit_counted_loop(b, lo_blk, hi_blk, "blk") as blk:
                lo, hi = block_bounds(b, blk, size)
                partial = []
                for s, bl, et in zip(slots, blocked, ets):
                    if bl:
                        p = self.alloca(block_type(et))
                        b.store(ir.Constant(block_type(et), -0.0), p)
                        partial.append(p)
                    else:
                        partial.append(s)
                with self.em.scope(), emit_counted_loop(b, lo, hi, "inner") as j:
                    for r, kind, p in zip(roots, kinds, partial):
                        v = r.operands[0]
                        val = self.em.emit(v, Index(v.shape, linear=j))
                        b.store(self._combine(r, kind, [b.load(p)], [val])[0], p)
                for s, p, bl in zip(slots, partial, blocked):
                    if bl:
                        b.store(b.fadd(b.load(s), b.fpext(b.load(p), F64)), s)
            for k, s in enumerate(slots):
                b.store(b.load(s), slot_ptr(k, c))
        b.branch(done_bb)
        b.position_at_end(combine_bb)
        with self.em.scope():
            for k, (r, kind) in enumerate(zip(roots, kinds)):
                vals = [b.load(slot_ptr(k, const(I64, c))) for c in range(FULL_CHUNKS)]
                while len(vals) > 1:
                    vals = [self._combine(r, kind, [vals[i]], [vals[i + 1]], reassoc=False)[0]
                            if i + 1 < len(vals) else vals[i] for i in range(0, len(vals), 2)]
                init = self._inits(r)[0]
                if init.type != acc_types[k]:
                    init = b.fpext(init, acc_types[k])
                total = self._combine(r, kind, [init], vals, reassoc=False)[0]
                if total.type != value_type(ets[k]) or ets[k] == "bf16":
                    total = float_convert(b, total, "f64", ets[k])
                self._store(offsets[k], const(I64, 0), total)
        b.branch(done_bb)
        b.position_at_end(done_bb)
        return self._spec("full_reduce", FULL_CHUNKS, size // FULL_CHUNKS)


def kernel_unsupported_reason(comp: Computation) -> str | None:
    """Why `comp` cannot be a generated CPU kernel (None if it can): the elemental
    emitter's rules, and a standalone scatter's (scatter_loop.py)."""
    if comp.root.opcode == "scatter":
        return unsupported_scatter_reason(comp) or unsupported_reason(
            comp.root.called["to_apply"], allow_reduce=False)
    return unsupported_reason(comp)


def emit_kernel(module: ir.Module, name: str, comp: Computation,
                noalias: bool = True, full_reduce: bool = False) -> KernelSpec:
    """Emit `name` computing `comp` (a fused computation) into `module`.

    With `full_reduce`, a large reduction of all dims may become a "full_reduce" kernel,
    which takes a scratch buffer after the outputs and a combining call (see
    KernelEmitter._emit_full_reduce); callers that run kernels as one (0, outer) call
    leave it off.
    """
    return KernelEmitter(module, name, comp, noalias, full_reduce).emit()


__all__ = ["BLOCK", "FULL_CHUNKS", "FULL_REDUCE_MIN", "SLOT_BYTES", "reducer_kind",
           "KernelSpec", "emit_counted_loop", "emit_kernel", "kernel_unsupported_reason",
           "mixed_reduce_roots", "reduce_roots",
           "output_shapes", "convert", "is_signed"]
