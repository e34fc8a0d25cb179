"""GPU kernels for gather and scatter (XLA semantics, as the HLO evaluator computes them).

gather: one thread per output element (grid-stride), computed by the elemental emitter's
gather (codegen/gather.py, shared with the CPU): the element's batch position picks an
index vector, each start index is clamped to [0, operand_dim - slice_size] (as XLA does),
and the element is read from the operand. Operand batching dims are supported.

scatter: deterministic, without atomics (a float sum gives the same bits on every run,
and the evaluator's, which applies updates in order). Two launches: the operands are
copied into the outputs, then
- "window" mode (no scattered dimension has a window wider than 1, the common case:
  `x.at[i].add(v)`, embedding gradients): one thread per position inside the update
  window walks the update windows in order. Two different window positions never reach the
  same output element, so threads never collide and each element sees its updates in
  order;
- "element" mode (overlapping windows): one thread per output element walks every update
  window in order and applies the one update that lands on it, if any.
A window that does not fit inside the operand is dropped whole (XLA's rule). A long chain
of updates into a narrow window runs serially (JAX on a GPU uses atomics there, which is
faster but not deterministic for floats).
"""

from __future__ import annotations

import contextlib
import math

from minijax.compiler.codegen.elemental import Index
from minijax.compiler.codegen.gpu.function import delinearize, stride_loop
from minijax.compiler.codegen.gpu.op_kernel import INDEX_TYPES, OpKernel, all_row_major
from minijax.compiler.codegen.gpu.spec import BLOCK, GpuKernel, Launch, grid_for
from minijax.compiler.codegen.llvm_types import I1, I64, const
from minijax.compiler.hlo.ir import Instruction


def _ints(attrs, key) -> list[int]:
    return [int(d) for d in attrs.get(key, ())]


def _batch_axis(indices_dim: int, ivd: int) -> int:
    return indices_dim - 1 if indices_dim > ivd else indices_dim


class _IndexVectors:
    """Reads the index vectors of indices operand `k_op`, which give the starts of operand
    dims `start_map` (gather's start_index_map, scatter's scatter_dims_to_operand_dims);
    operand batching dim `op_batch[i]` starts at the batch position along indices dim
    `idx_batch[i]`."""

    def __init__(self, kern: OpKernel, k_op: int, ivd: int, start_map, op_batch, idx_batch):
        self.kern, self.k_op, self.ivd = kern, k_op, ivd
        self.start_map, self.op_batch, self.idx_batch = start_map, op_batch, idx_batch
        shape = kern.instr.operands[k_op].shape
        self.dims = shape.dims
        self.has_vector_dim = ivd < shape.rank
        bdims = [d for i, d in enumerate(self.dims) if i != ivd]
        self.batch_dims = tuple(bdims)

    def component(self, batch_multi, k: int):
        multi = list(batch_multi)
        if self.has_vector_dim:
            multi.insert(self.ivd, const(I64, k))
        return self.kern.load_index(self.k_op, self.kern.linear(self.dims, multi))

    def start(self, batch_multi, d: int):
        """Operand dim d's window start (i64, not yet clamped or checked) for the index
        vector at batch position `batch_multi`."""
        if d in self.start_map:
            return self.component(batch_multi, self.start_map.index(d))
        if d in self.op_batch:
            return batch_multi[_batch_axis(self.idx_batch[self.op_batch.index(d)], self.ivd)]
        return const(I64, 0)


def gather_reason(instr: Instruction) -> str | None:
    if not all_row_major(instr):
        return "a non-row-major layout"
    if instr.operands[1].shape.element_type not in INDEX_TYPES:
        return f"indices of type {instr.operands[1].shape.element_type}"
    return None


def emit_gather(module, name: str, instr: Instruction) -> GpuKernel:
    """One thread per output element (grid-stride) computing it with the shared elemental
    gather (codegen/gather.py)."""
    k = OpKernel(module, name, instr)
    b, f = k.b, k.f
    out = instr.shape
    with f.em.scope(), stride_loop(b, f.global_id(), const(I64, out.size), f.grid_size(),
                                   "elem") as i:
        k.store(0, i, f.em.emit(k.comp.root, Index(out, linear=i)))
    k.finish()
    return GpuKernel(k.f.name, "gather", [Launch(k.f.name, grid_for(out.size), BLOCK)],
                     len(instr.operands), k.outs)


def scatter_reason(instr: Instruction) -> str | None:
    n = (len(instr.operands) - 1) // 2
    if not all_row_major(instr):
        return "a non-row-major layout"
    if instr.operands[n].shape.element_type not in INDEX_TYPES:
        return f"indices of type {instr.operands[n].shape.element_type}"
    return None


class _Scatter:
    def __init__(self, instr: Instruction):
        a = instr.attrs
        self.n = n = (len(instr.operands) - 1) // 2
        self.instr = instr
        self.op_dims = instr.operands[0].shape.dims
        self.upd_dims = instr.operands[n + 1].shape.dims
        self.window_dims = _ints(a, "update_window_dims")
        inserted = set(_ints(a, "inserted_window_dims"))
        self.to_operand = _ints(a, "scatter_dims_to_operand_dims")
        self.in_batch = _ints(a, "input_batching_dims")
        self.idx_batch = _ints(a, "scatter_indices_batching_dims")
        ind_rank = instr.operands[n].shape.rank
        self.ivd = int(a.get("index_vector_dim", ind_rank))
        self.scatter_dims = [d for d in range(len(self.upd_dims)) if d not in self.window_dims]
        self.window = [d for d in range(len(self.op_dims))
                       if d not in inserted and d not in self.in_batch]
        self.wsizes = [self.upd_dims[d] for d in self.window_dims]
        self.bdims = [self.upd_dims[d] for d in self.scatter_dims]
        self.extent = [self.wsizes[self.window.index(d)] if d in self.window else 1
                       for d in range(len(self.op_dims))]

    def disjoint_windows(self) -> bool:
        """No scattered dim has a window wider than 1: window positions never collide."""
        return all(self.extent[d] == 1 for d in self.to_operand)

    def starts(self, k: OpKernel, vectors: _IndexVectors, bmulti):
        """Per operand dim: the window's start (i64), and whether the window fits (i1)."""
        b = k.b
        ok = const(I1, 1)
        starts = []
        for d in range(len(self.op_dims)):
            s = vectors.start(bmulti, d)
            ok = b.and_(ok, k.in_range(s, 0, self.op_dims[d] - self.extent[d] + 1))
            starts.append(s)
        return starts, ok

    @contextlib.contextmanager
    def each_window(self, k: OpKernel, vectors: _IndexVectors):
        """A serial loop, in order, over the update windows (the scatter batch positions):
        the body sees (batch position, window starts, whether the window fits)."""
        b = k.b
        with k.f.em.scope(), stride_loop(b, const(I64, 0), const(I64, math.prod(self.bdims)),
                                         const(I64, 1), "u") as u:
            bmulti = delinearize(b, u, self.bdims) if self.bdims else []
            starts, ok = self.starts(k, vectors, bmulti)
            yield bmulti, starts, ok

    def update_offset(self, k: OpKernel, bmulti, wmulti):
        multi = [None] * len(self.upd_dims)
        for j, d in enumerate(self.scatter_dims):
            multi[d] = bmulti[j]
        for j, d in enumerate(self.window_dims):
            multi[d] = wmulti[j]
        return k.linear(self.upd_dims, multi)

    def combine(self, k: OpKernel, target, upd):
        """outputs[target] = to_apply(outputs[target], updates[upd])."""
        n = self.n
        cur = [k.load_out(m, target) for m in range(n)]
        new = [k.load(n + 1 + m, upd) for m in range(n)]
        res = k.f.em.emit_scalar_computation(self.instr.called["to_apply"], cur + new)
        for m in range(n):
            k.store(m, target, res[m])


def emit_scatter(module, name: str, instr: Instruction) -> GpuKernel:
    sc = _Scatter(instr)
    n = sc.n
    op_size = instr.operands[0].shape.size
    copy = OpKernel(module, name, instr, "_init")
    b, f = copy.b, copy.f
    with stride_loop(b, f.global_id(), const(I64, op_size), f.grid_size(), "copy") as i:
        for m in range(n):
            copy.store_raw(m, i, copy.load_raw(m, i))
    copy.finish()

    k = OpKernel(module, name, instr)
    b, f = k.b, k.f
    vectors = _IndexVectors(k, n, sc.ivd, sc.to_operand, sc.in_batch, sc.idx_batch)
    if sc.disjoint_windows():
        mode, work = "window", math.prod(sc.wsizes)
        with stride_loop(b, f.global_id(), const(I64, work), f.grid_size(), "w") as w:
            wmulti = delinearize(b, w, sc.wsizes) if sc.wsizes else []
            with sc.each_window(k, vectors) as (bmulti, starts, ok):
                with b.if_then(ok):
                    target = [b.add(s, wmulti[sc.window.index(d)]) if d in sc.window else s
                              for d, s in enumerate(starts)]
                    sc.combine(k, k.linear(sc.op_dims, target),
                               sc.update_offset(k, bmulti, wmulti))
    else:
        mode, work = "element", op_size
        with stride_loop(b, f.global_id(), const(I64, op_size), f.grid_size(), "t") as t:
            tmulti = delinearize(b, t, sc.op_dims) if sc.op_dims else []
            with sc.each_window(k, vectors) as (bmulti, starts, ok):
                wmulti = [None] * len(sc.window)
                for d, s in enumerate(starts):
                    off = b.sub(tmulti[d], s)
                    ok = b.and_(ok, k.in_range(off, 0, sc.extent[d]))
                    if d in sc.window:
                        wmulti[sc.window.index(d)] = off
                with b.if_then(ok):
                    sc.combine(k, t, sc.update_offset(k, bmulti, wmulti))
    k.finish()
    return GpuKernel(k.f.name, f"scatter ({mode})",
                     [Launch(copy.f.name, grid_for(op_size), BLOCK),
                      Launch(k.f.name, grid_for(work), BLOCK)],
                     len(instr.operands), k.outs)


__all__ = ["emit_gather", "emit_scatter", "gather_reason", "scatter_reason"]
