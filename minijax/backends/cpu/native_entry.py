"""A small entry computation as one native call (no Python per step).

When every instruction of the entry computation is something a native loop body may hold
(single-threaded kernels, small float gemms, views, tuple plumbing; no while loops: those
are native-loop steps of their own, which release the GIL) and its temporaries are small,
the CPU backend also emits the whole entry as one kernel-ABI function with a METH_FASTCALL
wrapper (codegen/cpu/native_loop.emit_entry). `CpuExecutable.execute` then runs a call as:
convert the arguments, take the outputs from the host cache, one builtin call with the
arguments, outputs, a per-thread temps block and the statics table (constants and BLAS
pointers). Every result is a fresh output buffer (parameters and constants returned as
results are copied into theirs). Profiled runs (trace events) use the step program.

Device programs. A program compiled for devices that each run on one thread
(`CompileOptions.native_device_program`: pmap, shard_map and sharded jit over as many CPU
devices as threads) is planned with its large kernels and gemms run whole on the calling
thread and temporaries up to DEVICE_MAX_TEMP_BYTES, and may hold collectives: each is a
`CollectiveCall`, a call from the native code back into Python (a ctypes callback) that
views the contributions in place, runs the collective through the thread's
`CollectiveContext` and writes the results. Such an entry is called through ctypes, so the
GIL is released for its whole length except inside the collectives (it gets no
METH_FASTCALL wrapper): several devices' programs then run in parallel instead of taking
turns on the GIL between their kernels.
A collective that fails (a timeout, another device's failure) is remembered, the rest of
the call skips its collectives, and the call raises it.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field

import numpy as np

from minijax.backends.cpu import blas as cpu_blas
from minijax.backends.cpu import fastcall
from minijax.backends.cpu.kernel import _DATA_OFFSET, _row_major
from minijax.backends.cpu.memory import host_memory
from minijax.backends.cpu.native_loops import (
    ALIGN,
    CLOCK_GETTIME,
    SCHED_YIELD,
    SPIN_HINT,
    Ref,
    _Planner,
    _Unsupported,
    calls_blas,
)
from minijax.backends.cpu.runtime import SYMBOL_PLACEHOLDER
from minijax.backends.cpu.thread_pool import usable_cores
from minijax.backends.spmd import InProcessTransport, current_context
from minijax.compiler.codegen.cpu import collectives as native_collectives
from minijax.compiler.codegen.cpu.native_loop import (
    CollectiveCall,
    CopyCall,
    EntryLayout,
    LoopPlan,
    emit_entry,
)
from minijax.compiler.evaluator import evaluate_instruction
from minijax.compiler.evaluator.collectives import binary_reduction_opcode, parse_groups

#: Entries whose temporaries need more than this keep the step program (which reuses
#: large temporaries' memory through buffer assignment).
MAX_TEMP_BYTES = 1 << 20
#: ... and device programs (one per device thread) above this.
DEVICE_MAX_TEMP_BYTES = 64 << 20
#: What a device program's entry may call back for.
COLLECTIVE_OPCODES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                      "collective-permute", "replica-id", "partition-id")


@dataclass
class EntryPlan:
    n_in: int
    outs: list             # result leaf shapes
    ops: list
    temp_bytes: int
    consts: list
    uses_gemm: bool
    collectives: list = field(default_factory=list)   # CollectiveCall.index -> instruction


class _EntryPlanner(_Planner):
    def __init__(self, compiler, comp, device_program=False):  # noqa: D107 - _Planner's
        self.compiler, self.instr, self.comp = compiler, None, comp
        self.tuple_state, self.elems = False, []
        self.plan = LoopPlan(n=0, carried=[])   # (its temp_bytes counts the temps block)
        self.root, self.consts, self.kernels = self, [], []
        self._written, self.inplace = {}, {}
        self.allow_control_flow = self.team = False
        self.one_thread = device_program
        self.collectives: list = []

    def _instruction(self, instr, values, ops, direct) -> list:
        if instr.opcode not in COLLECTIVE_OPCODES or not self.one_thread:
            return super()._instruction(instr, values, ops, direct)
        ins = []
        for o in instr.operands:
            v = values[id(o)]
            if len(v) != 1 or o.shape.is_tuple:
                raise _Unsupported(f"{instr.name}: tuple operand")
            ins.append(v[0])
        outs = self._outputs(instr, direct)
        ops.append(CollectiveCall(len(self.collectives), ins, outs, _native_spec(instr)))
        self.collectives.append(instr)
        return outs

    def run_entry(self) -> EntryPlan:
        comp = self.comp
        if any(p.shape.is_tuple for p in comp.parameters):
            raise _Unsupported("tuple parameter")
        root = comp.root
        if root.shape.is_tuple and root.opcode != "tuple":
            raise _Unsupported("the root is a tuple-shaped instruction")
        roots = list(root.operands) if root.shape.is_tuple else [root]
        shapes = [r.shape for r in roots]
        if any(s.is_tuple or s.element_type == "token" for s in shapes):
            raise _Unsupported("nested tuple or token result")
        keys = [self._leaf_key(r) for r in roots]
        direct = {k: i for i, k in enumerate(keys) if k is not None and keys.count(k) == 1}
        ops: list = []
        params = {id(p): [Ref("cur", p.parameter_number)] for p in comp.parameters}
        values = self._computation(comp, ops, direct, root if root.shape.is_tuple else None,
                                   params)
        for i, r in enumerate(roots):
            if not (keys[i] in direct and self._written.get(keys[i])):
                ops.append(CopyCall(i, values[id(r)][0], shapes[i].nbytes))
        limit = DEVICE_MAX_TEMP_BYTES if self.one_thread else MAX_TEMP_BYTES
        if self.plan.temp_bytes > limit:
            raise _Unsupported("large temporaries")
        return EntryPlan(len(comp.parameters), shapes, ops, self.plan.temp_bytes,
                         self.consts, calls_blas(ops),
                         self.collectives)


def _native_spec(instr):
    """How all-reduce `instr` runs in native code between devices of one process
    (codegen/cpu/collectives.py), or None: it calls back into Python."""
    if instr.opcode in ("replica-id", "partition-id"):
        etype = instr.shape.element_type
        return native_collectives.ParticipantId(etype) if etype in ("u32", "s32") else None
    if instr.opcode != "all-reduce":
        return None
    shapes = [o.shape for o in instr.operands]
    if instr.shape.flat() != shapes or not all(_row_major(s) for s in shapes):
        return None
    return native_collectives.native_all_reduce_spec(
        binary_reduction_opcode(instr.called["to_apply"]),
        [(s.element_type, s.size) for s in shapes],
        parse_groups(instr.attrs.get("replica_groups")))


def plan_native_entry(compiler, comp, device_program: bool = False):
    """(EntryPlan, None) for entry computation `comp`, or (None, why not).
    `device_program`: plan it for one of several devices each on one thread (above)."""
    try:
        return _EntryPlanner(compiler, comp, device_program).run_entry(), None
    except _Unsupported as exc:
        return None, str(exc)


#: void callback(i64 index, i8 **pointers): a device program's collective.
_CollectiveFn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p))
#: void entry(i8 **buffers, i64, i64): the kernel ABI, called with the GIL released.
_EntryFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def _shared_block(transport: InProcessTransport, n: int) -> np.ndarray:
    """The run's shared block for native collectives (collectives.py), made by the first
    device thread that needs it (dict.setdefault: one block even if two race)."""
    block = transport.__dict__.get("_native_collectives")
    if block is None:
        C = native_collectives
        fresh = np.zeros(C.SHARED_ARRIVED + n + n * C.MAX_OPERANDS, np.int64)
        fresh[C.SHARED_ABORT] = ctypes.addressof(transport.abort_flag)
        fresh[C.SHARED_TIMEOUT] = int(transport.timeout * 1e9)
        fresh[C.SHARED_CLOCK], fresh[C.SHARED_YIELD] = CLOCK_GETTIME, SCHED_YIELD
        fresh[C.SHARED_SIZE] = n
        block = transport.__dict__.setdefault("_native_collectives", fresh)
    return block


def _data(array: np.ndarray) -> int:
    """The data pointer of an ndarray (read from the object, as the fastcall entry does;
    ndarray.ctypes costs microseconds)."""
    return ctypes.c_void_p.from_address(id(array) + _DATA_OFFSET).value


def _view(address: int, shape):
    """The array of `shape` at `address` (memory the native entry owns for this call)."""
    nbytes = shape.nbytes
    if nbytes == 0:
        return np.empty(shape.dims, shape.dtype)
    raw = (ctypes.c_byte * nbytes).from_address(address)
    return np.frombuffer(raw, dtype=shape.dtype).reshape(shape.dims)


class NativeEntry:
    """Runs a native entry; `bind` hands it the builtin after the JIT."""

    def __init__(self, plan: EntryPlan, symbol: str):
        self.plan, self.symbol = plan, symbol
        self.fast_symbol = symbol + "_fc"
        self.fast = None
        self._keepalive = None
        self._outs = [host_memory().planned(s.dims, s.dtype) for s in plan.outs]
        self._tls = threading.local()
        self._statics = None
        self._callback = _CollectiveFn(self._collective) if plan.collectives else None
        self._collective_specs = [(c, [o.shape for o in c.operands], c.shape.flat())
                                  for c in plan.collectives]
        # The participant count each all-reduce that can meet natively was written for
        # (None: any), one per such all-reduce.
        self.native_all_reduces = [
            op.native.participants for op in plan.ops if isinstance(op, CollectiveCall)
            and isinstance(op.native, native_collectives.NativeAllReduce)]
        # Every collective runs natively (within a process): a device's call then needs no
        # Python, and one thread can prepare every device's call (device_threads.py).
        self.all_native = bool(plan.collectives) and all(
            op.native is not None for op in plan.ops if isinstance(op, CollectiveCall))
        self._entry_fn = None
        self._entry_address = 0
        self._rank_blocks: dict = {}

    @property
    def symbols(self) -> list:
        """The JIT symbols `bind_jitted` needs: the kernel-ABI function for an entry with
        collectives (called through ctypes), else its METH_FASTCALL wrapper."""
        return [self.symbol] if self.plan.collectives else [self.fast_symbol]

    def bind_jitted(self, addrs: dict) -> None:
        """Bind the JIT's function: `addrs` maps symbols to addresses."""
        if self.plan.collectives:
            self._entry_address = addrs[self.symbol]
            self._entry_fn = _EntryFn(self._entry_address)
            self.bind(None, None)
            return
        self.bind(*fastcall.make_builtin(addrs[self.fast_symbol],
                                         self.fast_symbol.replace(SYMBOL_PLACEHOLDER, "")))

    def bind(self, fast, keepalive) -> None:
        plan = self.plan
        layout = EntryLayout(len(plan.consts))
        statics = np.zeros(layout.size(len(plan.consts)), np.int64)
        for k, c in enumerate(plan.consts):
            statics[k] = c.ctypes.data
        if plan.uses_gemm:
            b = cpu_blas.find_blas()
            statics[layout.sgemm], statics[layout.dgemm] = b.sgemm, b.dgemm
            statics[layout.set_threads] = b.set_threads
            statics[layout.get_threads] = b.get_threads
        if self._callback is not None:
            statics[layout.collective] = ctypes.cast(self._callback, ctypes.c_void_p).value
        self._statics = statics
        self.fast, self._keepalive = fast, keepalive

    def __call__(self, args: list) -> list:
        temps = getattr(self._tls, "temps", None)
        if temps is None:
            temps = self._tls.temps = np.empty(max(self.plan.temp_bytes, ALIGN), np.uint8)
        outs = [make() for make in self._outs]
        if self._entry_fn is None:
            self.fast(*args, *outs, temps, self._statics)
            return outs
        tls = self._tls
        device = getattr(tls, "device", None)
        if device is None:
            device = tls.device = np.zeros(native_collectives.CTX_SLOTS, np.int64)
        context = current_context()
        rank = context.rank if context is not None else 0
        shared = self.shared_block(context.transport, context.size) if context else None
        buffers = self._buffers(args, outs, temps, device, rank, shared)
        tls.error = None
        self._entry_fn(buffers, 0, 0)
        error, tls.error = tls.error, None
        if error is None:
            error = self.device_error(device, rank, context and context.transport, shared)
        if error is not None:
            raise error
        return outs

    def _buffers(self, args, outs, temps, device, rank, shared):
        """The entry's buffer table, the device context set for `rank` (collectives.py)."""
        device[native_collectives.CTX_RANK] = rank
        device[native_collectives.CTX_SHARED] = 0 if shared is None else _data(shared)
        device[native_collectives.CTX_ERROR] = 0
        return (ctypes.c_void_p * (len(args) + len(outs) + 3))(
            *[_data(a) for a in args], *[_data(o) for o in outs], _data(temps),
            _data(self._statics), _data(device))

    # ------------------------------------------------ every device's call made on one thread

    def prepare(self, args: list, rank: int, shared):
        """(entry function address, buffer table, outputs, device context) of `rank`'s
        call in a run whose collectives meet natively at `shared`; the temps and context
        blocks are the rank's own, so that one thread can prepare every device's call.
        The caller keeps `args` alive until the call has run."""
        blocks = self._rank_blocks.get(rank)
        if blocks is None:
            blocks = self._rank_blocks[rank] = (
                np.empty(max(self.plan.temp_bytes, ALIGN), np.uint8),
                np.zeros(native_collectives.CTX_SLOTS, np.int64))
        temps, device = blocks
        outs = [make() for make in self._outs]
        return (self._entry_address, self._buffers(args, outs, temps, device, rank, shared),
                outs, device)

    def call_prepared(self, buffers) -> None:
        """Run one prepared call on this thread (the GIL released)."""
        self._entry_fn(buffers, 0, 0)

    def shared_block(self, transport, n: int):
        """The shared block when this run's all-reduces may meet in native code: every
        participant in this process, each with a core of its own (spinning devices that
        share cores would only slow each other down), groups that fit the run, and a
        clock for the wait limit."""
        if not self.native_all_reduces or not CLOCK_GETTIME:
            return None
        if (not isinstance(transport, InProcessTransport) or transport.size != n
                or n > usable_cores()
                or any(p not in (None, n) for p in self.native_all_reduces)):
            return None
        return _shared_block(transport, n)

    @staticmethod
    def device_error(device, rank: int, transport, shared) -> BaseException | None:
        """The exception for the device context's CTX_ERROR after a call, if any."""
        C = native_collectives
        code = int(device[C.CTX_ERROR])
        if code == 0 or code == C.ERROR_CALLBACK:
            return None
        if code == C.ERROR_TIMEOUT:
            n = int(shared[C.SHARED_SIZE])
            arrived = shared[C.SHARED_ARRIVED:C.SHARED_ARRIVED + n]
            return transport.timeout_error(
                rank, range(n), [r for r in range(n) if arrived[r] >= arrived[rank]],
                "all-reduce (native)")
        return transport.aborted_error("all-reduce (native)")

    def _collective(self, index: int, pointers) -> None:
        """The callback of CollectiveCall `index` (on the device's thread, the GIL held):
        never raises into the native code; a failure is kept for __call__ to raise."""
        tls = self._tls
        if getattr(tls, "error", None) is not None:
            return          # an earlier collective of this call failed: finish quickly
        try:
            instr, in_shapes, out_shapes = self._collective_specs[index]
            n_in = len(in_shapes)
            addresses = tuple(pointers[k] for k in range(n_in + len(out_shapes)))
            # The views of a collective's buffers (mostly in this thread's temps block,
            # whose addresses do not change) are made once per thread and address set.
            views = tls.__dict__.setdefault("views", {})
            cached = views.get(index)
            if cached is None or cached[0] != addresses:
                cached = views[index] = (addresses, [
                    _view(a, sh) for a, sh in zip(addresses, in_shapes + out_shapes)])
            ins, outs = cached[1][:n_in], cached[1][n_in:]
            result = evaluate_instruction(instr, ins)
            leaves = list(result) if instr.shape.is_tuple else [result]
            for out, leaf in zip(outs, leaves, strict=True):
                if out.size:
                    np.copyto(out, leaf, casting="no")
        except BaseException as exc:  # noqa: BLE001 - raised by __call__ after the call
            tls.error = exc
            # ... and the call's native collectives return at once from now on.
            tls.device[native_collectives.CTX_ERROR] = native_collectives.ERROR_CALLBACK


def native_entry_for(compiler, device_program: bool = False) -> NativeEntry | None:
    """The compiler's entry computation as one native call, its IR emitted into compiler.ir
    (unless the compiler replays a cached plan); None when this platform or an instruction
    does not allow it. `device_program`: see the module docstring."""
    if _DATA_OFFSET is None or not fastcall.SUPPORTED:
        return None
    plan, _ = plan_native_entry(compiler, compiler.module.entry, device_program)
    if plan is None:
        return None
    entry = NativeEntry(plan, f"{SYMBOL_PLACEHOLDER}entry")
    if compiler.replay is None:
        bits = cpu_blas.find_blas().int_bits if plan.uses_gemm else 64
        n_out = len(plan.outs)
        emit_entry(compiler.ir, entry.symbol, plan.ops, plan.n_in, n_out, len(plan.consts),
                   plan.uses_gemm, bits, SPIN_HINT)
        if not plan.collectives:
            fastcall.emit_fastcall_entry(compiler.ir, entry.symbol, plan.n_in + n_out + 2, 1,
                                         _DATA_OFFSET)
    return entry
