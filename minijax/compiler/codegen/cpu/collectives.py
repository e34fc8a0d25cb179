"""All-reduces of a device program that meet in native code, between devices of one process
(and its replica-id / partition-id, read from the device context).

A device program's entry (native_loop.emit_entry) runs on one thread per device. Its
collectives are normally calls back into Python (a ctypes callback per `CollectiveCall`),
which take the GIL and wait on a condition variable: two wake-ups of a sleeping thread per
collective, tens of microseconds each on a busy machine. When every participant of the run
lives in this process, an all-reduce whose computation is one binary op (add, multiply,
maximum, minimum) of a float or integer type instead runs here, without the GIL:

1. each device publishes its operands' addresses in the run's *shared block*;
2. a barrier: it counts itself in and spins until every participant has (the CPU's pause
   hint; every _SPINS_BEFORE_YIELD rounds it yields its core, so that a participant the
   OS has not scheduled can run on a busy machine, and checks the wait limit);
3. it reduces its group's contributions into its outputs, in group order (out = v0, then
   out = out op v1, ...: the evaluator's order, so the bits equal the callback's);
4. a second barrier, so no contribution is overwritten while another device reads it.

The shared block (int64 words, one per run, zeroed, filled by the backend):
SHARED_COUNTER (arrivals so far, atomic), SHARED_ABORT (address of an int64 that becomes
nonzero when a participant fails), SHARED_TIMEOUT (the wait limit in ns), SHARED_CLOCK
(address of `clock_gettime`), SHARED_YIELD (address of `sched_yield`), SHARED_SIZE (n),
then from SHARED_ARRIVED n words (the barriers each participant has reached: barrier b
is passed once SHARED_COUNTER reaches b * n), then n * MAX_OPERANDS operand addresses.

The device context (int64 words, one per device thread and call): CTX_RANK, CTX_SHARED
(the shared block's address; 0: use the callbacks), CTX_ERROR (ERROR_TIMEOUT,
ERROR_ABORTED, ERROR_CALLBACK: once set, every later collective of the call returns at
once, and the caller raises).
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from minijax.compiler.codegen.cpu import spin
from minijax.compiler.codegen.llvm_types import F32, F64, I8, I32, I64

SHARED_COUNTER, SHARED_ABORT, SHARED_TIMEOUT, SHARED_CLOCK, SHARED_YIELD, SHARED_SIZE = range(6)
SHARED_ARRIVED = 8
#: The most operands (after all-reduce combining) of a natively run all-reduce.
MAX_OPERANDS = 64
CTX_RANK, CTX_SHARED, CTX_ERROR = range(3)
CTX_SLOTS = 4
ERROR_TIMEOUT, ERROR_ABORTED, ERROR_CALLBACK = 1, 2, 3
_SPINS_BEFORE_YIELD = 1 << 8

_I8P = I8.as_pointer()
_I64P = I64.as_pointer()
_TYPES = {"f32": F32, "f64": F64, "s32": I32, "u32": I32, "s64": I64, "u64": I64}
_OPS = ("add", "multiply", "maximum", "minimum")


@dataclass(frozen=True)
class NativeAllReduce:
    """What an all-reduce needs to run natively: its binary op, each operand's element type
    and count, and its replica groups (() when all participants form one group; else equal
    groups covering 0 .. participants - 1)."""

    op: str
    operands: tuple          # ((element_type, elements), ...)
    groups: tuple

    @property
    def participants(self) -> int | None:
        """The participant count the groups were written for (None: any)."""
        return sum(len(g) for g in self.groups) if self.groups else None


@dataclass(frozen=True)
class ParticipantId:
    """replica-id / partition-id: the device context's CTX_RANK, stored as `element_type`
    (always native: it needs no other participant)."""

    element_type: str


def native_all_reduce_spec(op: str | None, operands: list, groups: tuple):
    """A NativeAllReduce for an all-reduce of binary `op` (None: another computation) over
    `operands` [(element_type, elements)] and `groups`, or None when it must call back."""
    if op not in _OPS or not 1 <= len(operands) <= MAX_OPERANDS:
        return None
    if any(t not in _TYPES for t, _ in operands):
        return None
    if groups:
        members = sorted(m for g in groups for m in g)
        if members != list(range(len(members))) or len({len(g) for g in groups}) != 1:
            return None
    return NativeAllReduce(op, tuple(operands), tuple(tuple(g) for g in groups))


class CollectiveEmitter:
    """Emits a device entry's native all-reduces (and their shared barrier) into `module`."""

    def __init__(self, module: ir.Module, prefix: str, spin_hint: str):
        self.module, self.prefix, self.spin_hint = module, prefix, spin_hint
        self._count = 0
        self._barrier = None

    @property
    def barrier(self) -> ir.Function:
        """The barrier, emitted with the first all-reduce (an entry whose collectives are
        only participant ids or callbacks needs none)."""
        if self._barrier is None:
            self._barrier = self._emit_barrier()
        return self._barrier

    _slot = staticmethod(spin.slot)

    # ------------------------------------------------------------------ barrier
    def _emit_barrier(self) -> ir.Function:
        """`i1 barrier(i64 *ctx, i64 *shared)`: 1 once all participants arrived, 0 when a
        participant failed (CTX_ERROR = ERROR_ABORTED) or the wait limit passed
        (ERROR_TIMEOUT)."""
        fnty = ir.FunctionType(ir.IntType(1), [_I64P, _I64P])
        fn = ir.Function(self.module, fnty, f"{self.prefix}.barrier")
        fn.linkage = "internal"
        ctx, shared = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        spec = spin.timespec(b)
        n = b.load(self._slot(b, shared, SHARED_SIZE))
        rank = b.load(self._slot(b, ctx, CTX_RANK))
        mine = self._slot(b, shared, b.add(rank, ir.Constant(I64, SHARED_ARRIVED)))
        passed = b.add(b.load_atomic(mine, "monotonic", 8), ir.Constant(I64, 1))
        b.store_atomic(passed, mine, "monotonic", 8)
        b.atomic_rmw("add", self._slot(b, shared, SHARED_COUNTER), ir.Constant(I64, 1),
                     "seq_cst")
        target = b.mul(passed, n)
        abort_word = b.inttoptr(b.load(self._slot(b, shared, SHARED_ABORT)), _I64P)
        entry = b.block
        top = fn.append_basic_block("top")
        arrived = fn.append_basic_block("arrived")
        check_abort = fn.append_basic_block("check_abort")
        aborted = fn.append_basic_block("aborted")
        spinning = fn.append_basic_block("spin")
        yield_ = fn.append_basic_block("yield")
        timed_out = fn.append_basic_block("timed_out")
        b.branch(top)

        b.position_at_end(top)
        spins = b.phi(I64, name="spins")
        deadline = b.phi(I64, name="deadline")       # 0 until the first yield
        spins.add_incoming(ir.Constant(I64, 0), entry)
        deadline.add_incoming(ir.Constant(I64, 0), entry)
        count = b.load_atomic(self._slot(b, shared, SHARED_COUNTER), "seq_cst", 8)
        b.cbranch(b.icmp_unsigned(">=", count, target), arrived, check_abort)

        b.position_at_end(arrived)
        b.ret(ir.Constant(ir.IntType(1), 1))

        b.position_at_end(check_abort)
        failed = b.load_atomic(abort_word, "monotonic", 8)
        b.cbranch(b.icmp_unsigned("!=", failed, ir.Constant(I64, 0)), aborted, spinning)

        b.position_at_end(aborted)
        b.store(ir.Constant(I64, ERROR_ABORTED), self._slot(b, ctx, CTX_ERROR))
        b.ret(ir.Constant(ir.IntType(1), 0))

        b.position_at_end(spinning)
        spin.pause(b, self.spin_hint)
        more = b.add(spins, ir.Constant(I64, 1))
        spins.add_incoming(more, spinning)
        deadline.add_incoming(deadline, spinning)
        b.cbranch(b.icmp_unsigned("<", more, ir.Constant(I64, _SPINS_BEFORE_YIELD)), top,
                  yield_)

        b.position_at_end(yield_)
        spin.yield_core(b, b.load(self._slot(b, shared, SHARED_YIELD)))
        now = spin.monotonic_ns(b, b.load(self._slot(b, shared, SHARED_CLOCK)), spec)
        limit = b.select(b.icmp_unsigned("==", deadline, ir.Constant(I64, 0)),
                         b.add(now, b.load(self._slot(b, shared, SHARED_TIMEOUT))), deadline)
        spins.add_incoming(ir.Constant(I64, 0), b.block)
        deadline.add_incoming(limit, b.block)
        b.cbranch(b.icmp_signed(">", now, limit), timed_out, top)

        b.position_at_end(timed_out)
        b.store(ir.Constant(I64, ERROR_TIMEOUT), self._slot(b, ctx, CTX_ERROR))
        # The others stop waiting too (the caller also aborts the transport, with the
        # error, once the call returns).
        b.store_atomic(ir.Constant(I64, 1), abort_word, "seq_cst", 8)
        b.ret(ir.Constant(ir.IntType(1), 0))
        return fn

    # ------------------------------------------------------------------ participant id
    def participant_id(self, b: ir.IRBuilder, ctx, spec: ParticipantId, out) -> None:
        """Store this device's rank at `out` (an i8 pointer) as spec.element_type."""
        ty = _TYPES[spec.element_type]
        rank = b.trunc(b.load(self._slot(b, ctx, CTX_RANK)), ty) if ty != I64 else \
            b.load(self._slot(b, ctx, CTX_RANK))
        b.store(rank, b.bitcast(out, ty.as_pointer()))

    # ------------------------------------------------------------------ all-reduce
    def all_reduce(self, spec: NativeAllReduce) -> ir.Function:
        """`void all_reduce(i64 *ctx, i8 **pointers)` for `spec`: pointers holds the
        operands' then the results' addresses (as the callback gets them)."""
        fnty = ir.FunctionType(ir.VoidType(), [_I64P, _I8P.as_pointer()])
        fn = ir.Function(self.module, fnty, f"{self.prefix}.all_reduce{self._count}")
        self._count += 1
        fn.linkage = "internal"
        ctx, pointers = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        go = fn.append_basic_block("go")
        done = fn.append_basic_block("done")
        b.cbranch(b.icmp_unsigned("==", b.load(self._slot(b, ctx, CTX_ERROR)),
                                  ir.Constant(I64, 0)), go, done)
        b.position_at_end(go)
        shared = b.inttoptr(b.load(self._slot(b, ctx, CTX_SHARED)), _I64P)
        n = b.load(self._slot(b, shared, SHARED_SIZE))
        rank = b.load(self._slot(b, ctx, CTX_RANK))
        k_ops = len(spec.operands)
        slots = self._slot(b, shared, b.add(n, ir.Constant(I64, SHARED_ARRIVED)))
        mine = b.mul(rank, ir.Constant(I64, MAX_OPERANDS))
        for k in range(k_ops):
            address = b.ptrtoint(b.load(self._slot(b, pointers, k)), I64)
            b.store(address, self._slot(b, slots, b.add(mine, ir.Constant(I64, k))))
        reduce_ = fn.append_basic_block("reduce")
        b.cbranch(b.call(self.barrier, [ctx, shared]), reduce_, done)

        b.position_at_end(reduce_)
        members, size = self._group(b, spec, rank, n)
        for k, (etype, count) in enumerate(spec.operands):
            ty = _TYPES[etype]
            out = b.bitcast(b.load(self._slot(b, pointers, k_ops + k)), ty.as_pointer())

            def contribution(j, k=k, ty=ty):
                member = members(j)
                slot = b.add(b.mul(member, ir.Constant(I64, MAX_OPERANDS)),
                             ir.Constant(I64, k))
                return b.inttoptr(b.load(self._slot(b, slots, slot)), ty.as_pointer())
            self._reduce_into(b, out, contribution, size, spec.op, etype, count)
        b.call(self.barrier, [ctx, shared])
        b.branch(done)
        b.position_at_end(done)
        b.ret_void()
        return fn

    def _group(self, b, spec: NativeAllReduce, rank, n):
        """(member(j) -> participant id, group size) of `rank`'s group."""
        if not spec.groups:
            return (lambda j: j), n
        size = len(spec.groups[0])
        table = [0] * (len(spec.groups) * size)
        for g in spec.groups:
            for m in g:
                table[m * size:(m + 1) * size] = list(g)
        arr_ty = ir.ArrayType(I64, len(table))
        glob = ir.GlobalVariable(self.module, arr_ty, f"{self.prefix}.groups{self._count}")
        glob.linkage, glob.global_constant = "internal", True
        glob.initializer = ir.Constant(arr_ty, table)
        row = b.mul(rank, ir.Constant(I64, size))

        def member(j):
            return b.load(b.gep(glob, [ir.Constant(I64, 0), b.add(row, j)], inbounds=True))
        return member, ir.Constant(I64, size)

    def _reduce_into(self, b, out, contribution, size, op, etype, count) -> None:
        """out = contribution(0) op contribution(1) op ... (left to right), elementwise."""
        if count == 0:
            return
        fn = b.function
        ty = _TYPES[etype]
        nbytes = count * (ty.width // 8 if isinstance(ty, ir.IntType)
                          else (4 if ty == F32 else 8))
        memcpy = self.module.declare_intrinsic("llvm.memcpy", [_I8P, _I8P, I64])
        b.call(memcpy, [b.bitcast(out, _I8P), b.bitcast(contribution(ir.Constant(I64, 0)),
                                                        _I8P),
                        ir.Constant(I64, nbytes), ir.Constant(ir.IntType(1), 0)])
        pre = b.block
        member_top = fn.append_basic_block("member")
        member_end = fn.append_basic_block("member.end")
        one = ir.Constant(I64, 1)
        b.cbranch(b.icmp_signed("<", one, size), member_top, member_end)
        b.position_at_end(member_top)
        j = b.phi(I64, name="j")
        j.add_incoming(one, pre)
        src = contribution(j)
        elem_pre = b.block
        elem = fn.append_basic_block("elem")
        elem_end = fn.append_basic_block("elem.end")
        b.branch(elem)
        b.position_at_end(elem)
        e = b.phi(I64, name="e")
        e.add_incoming(ir.Constant(I64, 0), elem_pre)
        dst = b.gep(out, [e], inbounds=True)
        acc, value = b.load(dst), b.load(b.gep(src, [e], inbounds=True))
        b.store(self._combine(b, op, etype, acc, value), dst)
        e_next = b.add(e, one, flags=["nsw"])
        e.add_incoming(e_next, elem)
        b.cbranch(b.icmp_signed("<", e_next, ir.Constant(I64, count)), elem, elem_end)
        b.position_at_end(elem_end)
        j_next = b.add(j, one)
        j.add_incoming(j_next, elem_end)
        b.cbranch(b.icmp_signed("<", j_next, size), member_top, member_end)
        b.position_at_end(member_end)

    @staticmethod
    def _combine(b, op, etype, acc, value):
        """acc op value with NumPy's ufunc semantics (the evaluator's): maximum/minimum
        return a NaN operand, the first operand on ties."""
        is_float = etype in ("f32", "f64")
        if op == "add":
            return b.fadd(acc, value) if is_float else b.add(acc, value)
        if op == "multiply":
            return b.fmul(acc, value) if is_float else b.mul(acc, value)
        if is_float:
            keep = b.or_(b.fcmp_ordered(">=" if op == "maximum" else "<=", acc, value),
                         b.fcmp_unordered("uno", acc, acc))
            return b.select(keep, acc, value)
        compare = b.icmp_signed if etype.startswith("s") else b.icmp_unsigned
        keep = compare(">=" if op == "maximum" else "<=", acc, value)
        return b.select(keep, acc, value)


__all__ = ["CTX_ERROR", "CTX_RANK", "CTX_SHARED", "CTX_SLOTS",
           "CollectiveEmitter", "ERROR_ABORTED", "ERROR_CALLBACK", "ERROR_TIMEOUT",
           "MAX_OPERANDS", "NativeAllReduce", "ParticipantId", "SHARED_ABORT", "SHARED_ARRIVED",
           "SHARED_CLOCK", "SHARED_COUNTER", "SHARED_SIZE", "SHARED_TIMEOUT", "SHARED_YIELD",
           "native_all_reduce_spec"]
