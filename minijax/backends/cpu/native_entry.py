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
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from minijax.backends.cpu import blas as cpu_blas
from minijax.backends.cpu import fastcall
from minijax.backends.cpu.kernel import _DATA_OFFSET
from minijax.backends.cpu.memory import host_memory
from minijax.backends.cpu.native_loops import ALIGN, Ref, _Planner, _Unsupported
from minijax.backends.cpu.runtime import SYMBOL_PLACEHOLDER
from minijax.compiler.codegen.cpu.native_loop import (
    CopyCall,
    EntryLayout,
    GemmCall,
    LoopPlan,
    emit_entry,
)

#: Entries whose temporaries need more than this keep the step program (which reuses
#: large temporaries' memory through buffer assignment).
MAX_TEMP_BYTES = 1 << 20


@dataclass
class EntryPlan:
    n_in: int
    outs: list             # result leaf shapes
    ops: list
    temp_bytes: int
    consts: list
    uses_gemm: bool


class _EntryPlanner(_Planner):
    def __init__(self, compiler, comp):  # noqa: D107 - no loop state: _Planner's fields
        self.compiler, self.instr, self.comp = compiler, None, comp
        self.tuple_state, self.elems = False, []
        self.plan = LoopPlan(n=0, carried=[])   # (its temp_bytes counts the temps block)
        self.root, self.consts, self.kernels = self, [], []
        self._written, self.inplace = {}, {}
        self.allow_control_flow = self.team = False

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
        if self.plan.temp_bytes > MAX_TEMP_BYTES:
            raise _Unsupported("large temporaries")
        return EntryPlan(len(comp.parameters), shapes, ops, self.plan.temp_bytes,
                         self.consts, any(isinstance(op, GemmCall) for op in ops))


def plan_native_entry(compiler, comp):
    """(EntryPlan, None) for entry computation `comp`, or (None, why not)."""
    try:
        return _EntryPlanner(compiler, comp).run_entry(), None
    except _Unsupported as exc:
        return None, str(exc)


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

    def bind_jitted(self, addrs: dict) -> None:
        """Bind the JIT's function: `addrs` maps symbols to addresses."""
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
        self._statics = statics
        self.fast, self._keepalive = fast, keepalive

    def __call__(self, args: list) -> list:
        temps = getattr(self._tls, "temps", None)
        if temps is None:
            temps = self._tls.temps = np.empty(max(self.plan.temp_bytes, ALIGN), np.uint8)
        outs = [make() for make in self._outs]
        self.fast(*args, *outs, temps, self._statics)
        return outs


def native_entry_for(compiler) -> NativeEntry | None:
    """The compiler's entry computation as one native call, its IR emitted into compiler.ir
    (unless the compiler replays a cached plan); None when this platform or an instruction
    does not allow it."""
    if _DATA_OFFSET is None or not fastcall.SUPPORTED:
        return None
    plan, _ = plan_native_entry(compiler, compiler.module.entry)
    if plan is None:
        return None
    entry = NativeEntry(plan, f"{SYMBOL_PLACEHOLDER}entry")
    if compiler.replay is None:
        bits = cpu_blas.find_blas().int_bits if plan.uses_gemm else 64
        n_out = len(plan.outs)
        emit_entry(compiler.ir, entry.symbol, plan.ops, plan.n_in, n_out, len(plan.consts),
                   plan.uses_gemm, bits)
        fastcall.emit_fastcall_entry(compiler.ir, entry.symbol, plan.n_in + n_out + 2, 1,
                                     _DATA_OFFSET)
    return entry
