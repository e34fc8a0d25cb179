"""GPU kernels for fused computations: the shared elemental emitter mapped onto a grid.

`emit_gpu_kernel(module, name, comp)` emits one or more NVPTX kernel functions computing a
fused computation (the same computations the CPU backend compiles) and returns a
`GpuKernel`: the launches to make, in order, and the scratch bytes they share.

Kernel shapes (`GpuKernel.mode`):
- "loop": elementwise/indexing fusions (several outputs of one shape too): a grid-stride
  loop over the output's linear offsets; every index is bounds-checked by the loop itself.
  When every buffer is row-major with the same element size and the size is a multiple of
  16 bytes' worth of elements, each thread moves 16-byte vectors (ld/st.global.v4 on sm_80+);
- "transpose": a loop fusion whose one transpose moves the minor dimension of a parameter:
  32x32 tiles go through shared memory (a padded [32][33] array, no bank conflicts), so
  both the reads and the writes are coalesced;
- "row_reduce", "col_reduce", "row_fused": see reductions.py (a block per row with warp
  shuffles, a thread per output column, softmax/layer-norm rows in one kernel); large
  reductions run in two deterministic stages through the scratch buffer.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.elemental import ELEMENTWISE, Index, unsupported_reason
from minijax.compiler.codegen.gpu import nvvm
from minijax.compiler.codegen.gpu.function import KernelFunction, delinearize, stride_loop
from minijax.compiler.codegen.gpu.reductions import emit_reduction
from minijax.compiler.codegen.gpu.spec import BLOCK, MAX_GRID, GpuKernel, Launch, grid_for
from minijax.compiler.codegen.llvm_types import I64, const, storage_type
from minijax.compiler.codegen.target import generating_for
from minijax.compiler.hlo.ir import Computation

TILE = 32
_TILE_ROWS = BLOCK // TILE
_FLAT_OPS = ELEMENTWISE | {"parameter", "constant", "tuple", "reshape", "bitcast"}


def _row_major(shape) -> bool:
    return shape.layout is None or shape.minor_to_major == tuple(range(shape.rank - 1, -1, -1))


def _is_flat(comp: Computation) -> bool:
    for instr in comp.instructions:
        if instr.opcode == "broadcast" and instr.operands[0].shape.rank == 0:
            continue
        if instr.opcode not in _FLAT_OPS:
            return False
        if not all(_row_major(leaf) for leaf in instr.shape.flat()):
            return False
    return True


def _loop_roots(comp: Computation):
    root = comp.root
    return list(root.operands) if root.opcode == "tuple" else [root]


def _vector_lanes(comp: Computation, outs) -> int:
    """Elements per 16-byte vector access for a flat fusion (1: scalar accesses)."""
    if not _is_flat(comp):
        return 1
    n = outs[0].size
    sized = [p.shape for p in comp.parameters if p.shape.size == n] + list(outs)
    widths = {s.dtype.itemsize for s in sized}
    if len(widths) != 1 or any(s.element_type == "bf16" for s in sized):
        return 1
    lanes = nvvm.NVPTX.vector_bytes // widths.pop()
    return lanes if lanes > 1 and n % lanes == 0 and n >= lanes else 1


class _LoopKernel:
    def __init__(self, module, name, comp):
        self.comp = comp
        self.roots = _loop_roots(comp)
        if len({r.shape.dims for r in self.roots}) != 1:
            raise ValueError(f"GPU loop kernel {name}: outputs of different shapes "
                             f"{[r.shape.dims for r in self.roots]} (split the fusion first)")
        self.outs = comp.root.shape.flat()
        self.f = KernelFunction(module, name, comp, self.outs)

    def emit(self) -> GpuKernel:
        f, b = self.f, self.f.b
        shape = self.roots[0].shape
        n = shape.size
        lanes = _vector_lanes(self.comp, self.outs)
        if lanes > 1:
            self._emit_vector(lanes)
            work = n // lanes
        else:
            with f.em.scope(), stride_loop(b, f.global_id(), const(I64, n), f.grid_size(),
                                           "elem") as i:
                idx = Index(shape, linear=i)
                for k, r in enumerate(self.roots):
                    ridx = idx.for_shape(b, r.shape)
                    f.store(k, ridx.get_linear(b), f.em.emit(r, ridx))
            work = n
        f.finish()
        return GpuKernel(f.name, "loop", [Launch(f.name, grid_for(work), BLOCK)],
                         len(self.comp.parameters), self.outs,
                         notes=[f"{lanes}-wide vector accesses"] if lanes > 1 else [])

    def _emit_vector(self, lanes: int) -> None:
        f, b = self.f, self.f.b
        shape = self.roots[0].shape
        n = shape.size
        with f.em.scope(), stride_loop(b, f.global_id(), const(I64, n // lanes), f.grid_size(),
                                       "vec") as v:
            base = b.mul(v, const(I64, lanes))
            lins = [base] + [b.add(base, const(I64, k)) for k in range(1, lanes)]
            lane_of = {id(lin): k for k, lin in enumerate(lins)}
            loaded: dict[int, object] = {}

            def hook(instr, index):
                k = lane_of.get(id(index.linear))
                if k is None or instr.shape.size != n:
                    return None
                vec = loaded.get(id(instr))
                if vec is None:
                    ety = storage_type(instr.shape.element_type)
                    ptr = b.gep(f.param_ptrs[instr.parameter_number], [base], inbounds=True)
                    vptr = b.bitcast(ptr, nvvm.global_pointer(ir.VectorType(ety, lanes)))
                    vec = loaded[id(instr)] = b.load(vptr, align=16)
                return f.em.to_value(b.extract_element(vec, const(I64, k)),
                                     instr.shape.element_type)

            f.param_hook = hook
            for k, r in enumerate(self.roots):
                et = self.outs[k].element_type
                ety = storage_type(et)
                vec = ir.Constant(ir.VectorType(ety, lanes), ir.Undefined)
                for j, lin in enumerate(lins):
                    value = f.em.to_storage(f.em.emit(r, Index(r.shape, linear=lin)), et)
                    vec = b.insert_element(vec, value, const(I64, j))
                ptr = b.gep(f.out_ptrs[k], [base], inbounds=True)
                b.store(vec, b.bitcast(ptr, nvvm.global_pointer(vec.type)), align=16)
            f.param_hook = None


def tile_transpose(comp: Computation):
    """(transpose, parameter) when `comp` is a loop fusion whose one transpose moves the
    minor dimension of a parameter read nowhere else, every other value being elementwise
    over the output (or a scalar); else None."""
    root = comp.root
    if root.opcode == "tuple" or root.shape.rank < 2:
        return None
    transposes = [i for i in comp.instructions if i.opcode == "transpose"]
    if len(transposes) != 1:
        return None
    t = transposes[0]
    src = t.operands[0]
    perm = tuple(t.attrs["dimensions"])
    if src.opcode != "parameter" or perm[-1] == len(perm) - 1 or t.shape.dims != root.shape.dims:
        return None
    if min(t.shape.dims[perm.index(len(perm) - 1)], t.shape.dims[-1]) < 2:
        return None
    for instr in comp.instructions:
        if not all(_row_major(leaf) for leaf in instr.shape.flat()):
            return None
        if instr is t or instr is src or instr.shape.rank == 0:
            continue
        if instr.opcode == "broadcast" and instr.operands[0].shape.rank == 0:
            continue
        if instr.shape.dims != root.shape.dims:
            return None
        if instr.opcode == "parameter":
            if instr is src:
                continue
        elif instr.opcode not in ELEMENTWISE:
            return None
        if any(op is src for op in instr.operands):
            return None
    return t, src


class _TransposeKernel:
    def __init__(self, module, name, comp, t, src):
        self.comp, self.t, self.src = comp, t, src
        self.outs = comp.root.shape.flat()
        self.f = KernelFunction(module, name, comp, self.outs)

    def emit(self) -> GpuKernel:
        f, b, t, src = self.f, self.f.b, self.t, self.src
        dims = t.shape.dims
        rank = len(dims)
        perm = tuple(t.attrs["dimensions"])
        a_out = perm.index(rank - 1)          # the source's minor dim, in output coordinates
        batch = [d for d in range(rank) if d not in (a_out, rank - 1)]
        batch_dims = [dims[d] for d in batch]
        ta_n, tb_n = -(-dims[a_out] // TILE), -(-dims[-1] // TILE)
        n_batch = 1
        for d in batch_dims:
            n_batch *= d
        n_tiles = n_batch * ta_n * tb_n
        ety = storage_type(src.shape.element_type)
        tile = nvvm.shared_array(f.module, ety, TILE * (TILE + 1), "tile")
        tx = b.urem(f.tid, const(I64, TILE))
        ty = b.udiv(f.tid, const(I64, TILE))
        with stride_loop(b, f.ctaid, const(I64, n_tiles), f.nctaid, "tile") as tn:
            tb = b.urem(tn, const(I64, tb_n))
            ta = b.urem(b.udiv(tn, const(I64, tb_n)), const(I64, ta_n))
            bt = b.udiv(tn, const(I64, tb_n * ta_n))
            batch_multi = delinearize(b, bt, batch_dims)
            a0 = b.mul(ta, const(I64, TILE))
            b0 = b.mul(tb, const(I64, TILE))

            def out_multi(oa, ob):
                multi = [None] * rank
                for d, m in zip(batch, batch_multi):
                    multi[d] = m
                multi[a_out], multi[rank - 1] = oa, ob
                return multi

            def in_bounds(oa, ob):
                return b.and_(b.icmp_signed("<", oa, const(I64, dims[a_out])),
                              b.icmp_signed("<", ob, const(I64, dims[-1])))

            def slot(la, lb):
                return nvvm.shared_ptr(b, tile, b.add(b.mul(lb, const(I64, TILE + 1)), la))

            for r in range(TILE // _TILE_ROWS):       # read: coalesced along the source minor
                lb = b.add(ty, const(I64, r * _TILE_ROWS))
                oa, ob = b.add(a0, tx), b.add(b0, lb)
                with f.em.scope(), b.if_then(in_bounds(oa, ob)):
                    multi = out_multi(oa, ob)
                    src_multi = [None] * rank
                    for k, d in enumerate(perm):
                        src_multi[d] = multi[k]
                    lin = Index(src.shape, multi=src_multi).get_linear(b)
                    value = b.load(b.gep(f.param_ptrs[src.parameter_number], [lin],
                                         inbounds=True))
                    b.store(value, slot(tx, lb))
            nvvm.barrier(b)

            def hook(instr, index):
                if instr is not src:
                    return None
                multi = index.get_multi(b)
                la = b.sub(multi[rank - 1], a0)
                lb = b.sub(multi[perm[-1]], b0)
                return f.em.to_value(b.load(slot(la, lb)), src.shape.element_type)

            f.param_hook = hook
            for r in range(TILE // _TILE_ROWS):       # write: coalesced along the output minor
                oa, ob = b.add(a0, b.add(ty, const(I64, r * _TILE_ROWS))), b.add(b0, tx)
                with f.em.scope(), b.if_then(in_bounds(oa, ob)):
                    idx = Index(self.comp.root.shape, multi=out_multi(oa, ob))
                    f.store(0, idx.get_linear(b), f.em.emit(self.comp.root, idx))
            f.param_hook = None
            nvvm.barrier(b)
        f.finish()
        return GpuKernel(f.name, "transpose", [Launch(f.name, grid_for(n_tiles, 1), BLOCK)],
                         len(self.comp.parameters), self.outs)


def emit_gpu_kernel(module: ir.Module, name: str, comp: Computation) -> GpuKernel:
    """Emit the kernel function(s) computing fused computation `comp` into `module`."""
    with generating_for(nvvm.NVPTX):
        kernel = emit_reduction(module, name, comp)
        if kernel is not None:
            return kernel
        tiled = tile_transpose(comp)
        if tiled is not None:
            return _TransposeKernel(module, name, comp, *tiled).emit()
        return _LoopKernel(module, name, comp).emit()


def gpu_unsupported_reason(comp: Computation) -> str | None:
    """Why `comp` cannot become GPU kernels (None if it can)."""
    reason = unsupported_reason(comp)
    if reason is not None:
        return reason
    for instr in comp.instructions:
        for sub in [instr] + [i for c in instr.called.values() if isinstance(c, Computation)
                              for i in c.instructions]:
            src = sub.operands[0].shape.element_type if sub.operands else None
            if sub.opcode in nvvm.HOST_ONLY_F64 and src == "f64":
                return (f"{sub.opcode} on f64 (calls the C math library, absent on "
                        f"{nvvm.NVPTX.name})")
    return None


__all__ = ["BLOCK", "MAX_GRID", "GpuKernel", "Launch", "emit_gpu_kernel",
           "gpu_unsupported_reason", "grid_for",
           "tile_transpose"]
