"""One GPU kernel function being emitted: its arguments, builders, thread indices and the
elemental emitter that reads its parameters, plus the loop and reduction helpers every GPU
kernel shape shares (grid-stride loops, per-thread accumulation, warp/block reductions).

Kernel ABI: `void fn(P0 addrspace(1)* p0, ..., O0 addrspace(1)* o0, ..., i8 addrspace(1)*
scratch)`: the fused computation's parameters, then its flat outputs, then a scratch buffer
(for two-stage reductions; any pointer when the kernel needs none). Shapes are compile-time
constants; the launch configuration (grid, block) comes from the kernel's `Launch` list.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.elemental import ElementalEmitter, Index
from minijax.compiler.codegen.gpu import nvvm
from minijax.compiler.codegen.llvm_types import (
    F16,
    F32,
    I1,
    I8,
    I32,
    I64,
    const,
    emit_counted_loop,
    is_float,
    storage_type,
    value_type,
)
from minijax.compiler.hlo.ir import Computation, Shape


def stride_loop(b: ir.IRBuilder, start, end, step, name: str = "loop"):
    """`for (i = start; i < end; i += step) { body }` over i64 values; yields i."""
    return emit_counted_loop(b, start, end, name, step)


def delinearize(b, value, dims):
    """Row-major multi-index (i64 values) of linear `value` within `dims`."""
    return Index(Shape("s64", tuple(dims)), linear=value).get_multi(b)


def reducer_kind(r) -> str | None:
    """'add', 'maximum', ... when reduce `r` applies one binary op to its two parameters."""
    root = r.called["to_apply"].root
    if len(r.operands) != 2 or len(root.operands) != 2:
        return None
    if [op.opcode for op in root.operands] != ["parameter", "parameter"]:
        return None
    return root.opcode


class KernelFunction:
    """An NVPTX kernel entry for fused computation `comp` (see the module docstring)."""

    def __init__(self, module: ir.Module, name: str, comp: Computation, out_shapes):
        self.module, self.name, self.comp = module, name, comp
        self.params = comp.parameters
        self.outs = list(out_shapes)
        types = ([nvvm.global_pointer(storage_type(p.shape.element_type)) for p in self.params]
                 + [nvvm.global_pointer(storage_type(s.element_type)) for s in self.outs]
                 + [nvvm.global_pointer(I8)])
        self.fn = ir.Function(module, ir.FunctionType(ir.VoidType(), types), name)
        for arg in self.fn.args:
            arg.add_attribute("noalias")
        nvvm.mark_kernel(module, self.fn)
        entry = self.fn.append_basic_block("entry")
        start = self.fn.append_basic_block("start")
        ir.IRBuilder(entry).branch(start)
        self._entry = ir.IRBuilder(entry)
        self.b = ir.IRBuilder(start)
        args = list(self.fn.args)
        self.param_ptrs = args[:len(self.params)]
        self.out_ptrs = args[len(self.params):len(self.params) + len(self.outs)]
        self.scratch = args[-1]
        self.tid = nvvm.sreg(self.b, "tid")
        self.ntid = nvvm.sreg(self.b, "ntid")
        self.ctaid = nvvm.sreg(self.b, "ctaid")
        self.nctaid = nvvm.sreg(self.b, "nctaid")
        self.param_hook = None   # (instr, index) -> value or None: tiles, vector lanes
        self.em = ElementalEmitter(self.b, comp, load_param=self._load_param,
                                   alloca=self.alloca)

    # ------------------------------------------------------------------ plumbing
    def alloca(self, ty):
        """A slot in the entry block (promoted to a register)."""
        self._entry.position_at_start(self._entry.block)
        return self._entry.alloca(ty)

    def global_id(self):
        b = self.b
        return b.add(b.mul(self.ctaid, self.ntid), self.tid)

    def grid_size(self):
        return self.b.mul(self.ntid, self.nctaid)

    def _load_param(self, instr, index: Index):
        if self.param_hook is not None:
            hit = self.param_hook(instr, index)
            if hit is not None:
                return hit
        b = self.b
        lin = index.for_shape(b, instr.shape).get_linear(b)
        v = b.load(b.gep(self.param_ptrs[instr.parameter_number], [lin], inbounds=True))
        return self.em.to_value(v, instr.shape.element_type)

    def store(self, k: int, lin, value) -> None:
        """Store `value` as element `lin` of output `k`."""
        b = self.b
        et = self.outs[k].element_type
        b.store(self.em.to_storage(value, et), b.gep(self.out_ptrs[k], [lin], inbounds=True))

    def scratch_ptr(self, offset_bytes: int, ty, index):
        """Element `index` of a `ty` array at byte `offset_bytes` of the scratch buffer."""
        b = self.b
        base = b.gep(self.scratch, [const(I64, offset_bytes)], inbounds=True)
        typed = b.bitcast(base, nvvm.global_pointer(ty))
        return b.gep(typed, [index], inbounds=True)

    def finish(self) -> None:
        self.b.ret_void()

    # ------------------------------------------------------------------ reductions
    def acc_types(self, r, kind):
        """Accumulator types of reduce `r`: float16 sums accumulate in float32."""
        n = len(r.operands) // 2
        types = [value_type(op.shape.element_type) for op in r.operands[:n]]
        if kind == "add" and types[0] == F16:
            return [F32]
        return types

    def combine(self, r, kind, acc, vals):
        """acc (+) vals for reduce `r` (lists of values in accumulator types)."""
        b = self.b
        if kind == "add" and is_float(r.shape.element_type):
            v = vals[0]
            if v.type != acc[0].type:
                v = b.fpext(v, acc[0].type)
            return [b.fadd(acc[0], v)]
        return self.em.emit_scalar_computation(r.called["to_apply"], list(acc) + list(vals))

    def finalize(self, r, kind, acc, valid):
        """init (+) acc when `valid`, else init; in the output's value types."""
        b = self.b
        n = len(r.operands) // 2
        inits = [self.em.emit(v, Index(v.shape, multi=[], linear=const(I64, 0)))
                 for v in r.operands[n:]]
        inits_acc = [b.fpext(i, a.type) if i.type != a.type else i for i, a in zip(inits, acc)]
        total = self.combine(r, kind, inits_acc, acc)
        out = [b.select(valid, t, i) for t, i in zip(total, inits_acc)]
        return [b.fptrunc(v, i.type) if v.type != i.type else v for v, i in zip(out, inits)]

    def accumulate(self, reduces, kinds, slots, valid_slot, values) -> None:
        """slots (+)= values (first value where the valid flag is still clear)."""
        b = self.b
        valid = b.load(valid_slot)
        for r, kind, rs, vals in zip(reduces, kinds, slots, values):
            acc = [b.load(s) for s in rs]
            vals = [b.fpext(v, a.type) if v.type != a.type else v for v, a in zip(vals, acc)]
            new = self.combine(r, kind, acc, vals)
            for s, n, v in zip(rs, new, vals):
                b.store(b.select(valid, n, v), s)
        b.store(ir.Constant(I1, 1), valid_slot)

    def new_accumulators(self, reduces, kinds):
        """Fresh (slots, valid_slot) with the valid flag clear."""
        b = self.b
        slots = []
        for r, kind in zip(reduces, kinds):
            rs = []
            for ty in self.acc_types(r, kind):
                s = self.alloca(ty)
                b.store(const(ty, 0), s)
                rs.append(s)
            slots.append(rs)
        valid = self.alloca(I1)
        b.store(ir.Constant(I1, 0), valid)
        return slots, valid

    def warp_reduce(self, reduces, kinds, accs, valid, lane):
        """Tree-combine each warp's values into its lane 0 (fixed order: deterministic)."""
        b = self.b
        for delta in (16, 8, 4, 2, 1):
            other = [[nvvm.shfl_down(b, v, delta) for v in acc] for acc in accs]
            ov = nvvm.shfl_down(b, b.zext(valid, I32), delta)
            ov = b.and_(b.icmp_unsigned("!=", ov, const(I32, 0)),
                        b.icmp_unsigned("<", b.add(lane, const(I64, delta)),
                                        const(I64, nvvm.WARP)))
            both = b.and_(valid, ov)
            new = []
            for r, kind, acc, oth in zip(reduces, kinds, accs, other):
                comb = self.combine(r, kind, acc, oth)
                new.append([b.select(both, c, b.select(valid, a, o))
                            for c, a, o in zip(comb, acc, oth)])
            accs, valid = new, b.or_(valid, ov)
        return accs, valid

    def block_reduce(self, reduces, kinds, accs, valid, block: int):
        """Combine every thread's (accs, valid) into thread 0's; all threads must call it."""
        b = self.b
        lane = b.urem(self.tid, const(I64, nvvm.WARP))
        accs, valid = self.warp_reduce(reduces, kinds, accs, valid, lane)
        if block <= nvvm.WARP:
            return accs, valid
        warps = block // nvvm.WARP
        warp = b.udiv(self.tid, const(I64, nvvm.WARP))
        arrays = [[nvvm.shared_array(self.module, smem_type(v.type), warps, "red")
                   for v in acc] for acc in accs]
        valid_arr = nvvm.shared_array(self.module, I32, warps, "valid")
        with b.if_then(b.icmp_unsigned("==", lane, const(I64, 0))):
            for acc, arrs in zip(accs, arrays):
                for v, arr in zip(acc, arrs):
                    b.store(to_smem(b, v), nvvm.shared_ptr(b, arr, warp))
            b.store(b.zext(valid, I32), nvvm.shared_ptr(b, valid_arr, warp))
        nvvm.barrier(b)
        in_range = b.icmp_unsigned("<", self.tid, const(I64, warps))
        slot = b.select(in_range, self.tid, const(I64, 0))
        accs = [[from_smem(b, b.load(nvvm.shared_ptr(b, arr, slot)), v.type)
                 for v, arr in zip(acc, arrs)] for acc, arrs in zip(accs, arrays)]
        loaded = b.load(nvvm.shared_ptr(b, valid_arr, slot))
        valid = b.and_(in_range, b.icmp_unsigned("!=", loaded, const(I32, 0)))
        accs, valid = self.warp_reduce(reduces, kinds, accs, valid, lane)
        nvvm.barrier(b)   # the shared arrays are reused by the next row
        return accs, valid

    def broadcast(self, values):
        """Thread 0's `values` in every thread of the block (through shared memory)."""
        b = self.b
        arrays = [nvvm.shared_array(self.module, smem_type(v.type), 1, "bcast") for v in values]
        zero = const(I64, 0)
        with b.if_then(b.icmp_unsigned("==", self.tid, zero)):
            for v, arr in zip(values, arrays):
                b.store(to_smem(b, v), nvvm.shared_ptr(b, arr, zero))
        nvvm.barrier(b)
        out = [from_smem(b, b.load(nvvm.shared_ptr(b, arr, zero)), v.type)
               for v, arr in zip(values, arrays)]
        nvvm.barrier(b)
        return out


def smem_type(ty):
    """How a value of `ty` is kept in shared or scratch memory (i1 as a byte)."""
    return I8 if ty == I1 else ty


def to_smem(b, v):
    return b.zext(v, I8) if v.type == I1 else v


def from_smem(b, v, ty):
    return b.icmp_unsigned("!=", v, const(I8, 0)) if ty == I1 else v


__all__ = ["KernelFunction", "delinearize", "from_smem", "reducer_kind", "smem_type",
           "stride_loop", "to_smem"]
