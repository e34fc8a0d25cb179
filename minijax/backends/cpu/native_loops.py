"""while loops run as one native call (no Python per iteration) where the body allows.

`plan_native_while(compiler, instr)` reads a while instruction's condition and body and,
when every instruction in them is a generated kernel, a float gemm, a view, plain tuple
plumbing, a conditional or another such while loop (emitted inline), returns a `LoopPlan`
(codegen/cpu/native_loop.py emits its function into the module's LLVM module) and the
kernels it calls; otherwise it returns the reason, and the shared planner's Python driver
runs the loop. Kernels and gemms large enough are split over a team of pool threads lent
to the call (TEAM_MIN_WORK, codegen/cpu/team.py). Bodies with evaluator thunks, host
callbacks, collectives or custom calls stay on the driver. A conditional becomes a branch
of the native code: each branch's ops are planned like the body's, and the chosen branch's
results are copied to the conditional's buffers. A state element whose only update is one
dynamic-update-slice of itself (a scan's stacked outputs) is updated in place on one buffer
instead of being copied.

`NativeWhile` is the step: per call it takes one block from the host cache for the carried
elements' A/B buffers, reuses a per-thread temps block, calls the native loop through
ctypes (the GIL released) and returns the final state: each carried element is a view of
its A or B buffer by the trip count's parity (or the input after zero trips).
"""

from __future__ import annotations

import ctypes
import platform
import threading

import numpy as np

from minijax.backends.cpu import blas as cpu_blas
from minijax.backends.cpu.kernel import _DATA_OFFSET, _row_major
from minijax.backends.cpu.memory import host_memory
from minijax.backends.cpu.runtime import SYMBOL_PLACEHOLDER
from minijax.backends.cpu.thread_pool import get_pool
from minijax.backends.planner import MOVES
from minijax.compiler.cache import clear_caches
from minijax.compiler.codegen.cpu.loops import FULL_CHUNKS, SLOT_BYTES, kernel_unsupported_reason
from minijax.compiler.codegen.cpu.native_loop import (
    Branch,
    CopyCall,
    GemmCall,
    KernelCall,
    Layout,
    LoopPlan,
    NestedLoop,
    Ref,
    UpdateSlice,
    emit_loop,
)
from minijax.compiler.codegen.cpu.spin import spin_hint_for
from minijax.compiler.codegen.cpu.team import TEAM_SIZE, TEAM_SLOTS, TEAM_YIELD
from minijax.compiler.codegen.kernel_plan import wrap_instruction
from minijax.config import config

ALIGN = 64
#: Kernels with at least this much work (elements times work per element, outer range of
#: two or more) and gemms with at least this many multiply-adds and twice this many rows
#: (or a batch) are split over the pool threads lent to the loop (codegen/cpu/team.py):
#: a team's hand-off costs well under a microsecond, a piece of this size a few.
TEAM_MIN_WORK = 1 << 14
TEAM_MIN_GEMM_MNK = 1 << 17
TEAM_MIN_GEMM_ROWS = 8
#: Gemms whose pieces (the rows one thread computes) have at most this many rows and whose
#: B (k x n, not transposed) has at most SMALL_GEMM_MAX_B elements run as generated
#: register-tiled loops (codegen/cpu/small_gemm.py) instead of BLAS calls, which pack both
#: operands first: see use_small_gemm for the measurements.
SMALL_GEMM_MAX_ROWS = 32
SMALL_GEMM_MAX_B = 128 * 256
#: Counters of how while loops were planned (tests and diagnostics).
STATS = {"native": 0, "fallback": 0}


def use_small_gemm(rows: int, n: int, k: int, b_transposed: bool) -> bool:
    """Whether a gemm piece of `rows` x `n` over `k` runs as a generated loop, not BLAS."""
    return not b_transposed and rows <= SMALL_GEMM_MAX_ROWS and k * n <= SMALL_GEMM_MAX_B


class _Unsupported(Exception):
    """The loop cannot run natively (the message says why)."""


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


class _Planner:
    """Builds the LoopPlan of one while instruction."""

    #: A device program's entry whose device runs on one thread (native_entry.py): its
    #: large kernels and gemms run whole on the calling thread, as the driver would run them.
    one_thread = False

    def __init__(self, compiler, instr, root: _Planner | None = None):
        self.compiler = compiler
        self.instr = instr
        shape = instr.shape
        self.tuple_state = shape.is_tuple
        self.elems = list(shape.tuple_shapes) if shape.is_tuple else [shape]
        self.plan = LoopPlan(n=len(self.elems), carried=[])
        # A nested loop shares the outermost loop's constants, kernels and temps block
        # (its own A/B buffers are carved out of that block too).
        self.root = root if root is not None else self
        self.consts: list = self.root.consts if root is not None else []
        self.kernels: list = self.root.kernels if root is not None else []
        self._written: dict = {}
        self.inplace: dict = {}
        self.allow_control_flow = True
        # Loops split large kernels and gemms over a team; without one (a native entry),
        # work that size stays on the Python driver, which splits it over the pool.
        self.team = True

    # ------------------------------------------------------------------ buffers
    def _temp(self, nbytes: int) -> Ref:
        top = self.root.plan
        off = top.temp_bytes
        top.temp_bytes = off + _align(max(nbytes, 1))
        return Ref("temp", off)

    def _carry(self, nbytes: int) -> int:
        """Offset of a new state buffer: in the carry block (the outermost loop) or in the
        temps block (a nested loop)."""
        if self.root is not self:
            return self._temp(nbytes).index
        plan = self.plan
        off = plan.carry_bytes
        plan.carry_bytes += _align(max(nbytes, 1))
        return off

    def _const(self, instr) -> Ref:
        if instr.shape.is_tuple:
            raise _Unsupported("tuple constant")
        self.consts.append(self.compiler.constant(instr))
        return Ref("const", len(self.consts) - 1)

    # ------------------------------------------------------------------ planning
    def run(self) -> LoopPlan:
        if any(e.is_tuple for e in self.elems):
            raise _Unsupported("nested tuple loop state")
        if any(e.element_type == "token" for e in self.elems):
            raise _Unsupported("token in the loop state")
        cond, body = self.instr.called["condition"], self.instr.called["body"]
        root = body.root
        param = body.parameters[0] if len(body.parameters) == 1 else None
        if param is None or len(cond.parameters) != 1:
            raise _Unsupported("condition/body do not take one parameter")
        if self.tuple_state:
            if root.opcode != "tuple":
                raise _Unsupported("the body's root is not a tuple")
            roots = list(root.operands)
        else:
            roots = [root]
        plan = self.plan
        invariant = [self.tuple_state and r.opcode == "get-tuple-element" and r.operands[0]
                     is param and r.attrs["index"] == i for i, r in enumerate(roots)]
        self.inplace = self._inplace_updates(body, param, roots, invariant)
        plan.carried = [i for i, inv in enumerate(invariant)
                        if not inv and i not in self.inplace.values()]
        for i in self.inplace.values():
            plan.inplace[i] = self._carry(self.elems[i].nbytes)
        for i in plan.carried:
            plan.carry_offsets[i] = (self._carry(self.elems[i].nbytes),
                                     self._carry(self.elems[i].nbytes))
        # Body values computed straight into a target: (producer, leaf) -> state element.
        keys = [self._leaf_key(r) for r in roots]
        direct = {}
        for i in plan.carried:
            if keys[i] is not None and keys.count(keys[i]) == 1:
                direct[keys[i]] = i
        values = self._computation(cond, plan.cond, {})
        pred = cond.root
        if pred.shape.is_tuple or pred.shape.element_type != "pred" or pred.shape.rank != 0:
            raise _Unsupported("the condition does not return a scalar pred")
        plan.pred = values[id(pred)][0]
        values = self._computation(body, plan.body, direct, skip=root if self.tuple_state
                                   else None)
        for i in plan.carried:
            if keys[i] in direct and self._written.get(keys[i]):
                continue
            ref = values[id(roots[i])]
            if len(ref) != 1:
                raise _Unsupported("a tuple-shaped loop state element")
            plan.body.append(CopyCall(i, ref[0], self.elems[i].nbytes))
        plan.num_consts = len(self.consts)
        plan.uses_gemm = calls_blas(plan.cond + plan.body)
        plan.uses_team = _uses_team(plan)
        return plan

    def _inplace_updates(self, body, param, roots, invariant) -> dict:
        """{id(dynamic-update-slice): i} for root operands i that update state element i
        and are its only reader in the body: they run in place on one buffer (a scan's
        stacked outputs) instead of copying the element every iteration."""
        if not self.tuple_state:
            return {}
        users: dict[int, list] = {}
        for instr in body.instructions:
            for o in instr.operands:
                users.setdefault(id(o), []).append(instr)
        found = {}
        for i, r in enumerate(roots):
            if invariant[i] or r.opcode != "dynamic-update-slice" or sum(
                    x is r for x in roots) != 1 or users.get(id(r), []) != [body.root]:
                continue
            base = r.operands[0]
            if not (base.opcode == "get-tuple-element" and base.operands[0] is param
                    and base.attrs["index"] == i and _row_major(r.shape)
                    and _row_major(r.operands[1].shape)
                    and r.operands[1].shape.dtype == r.shape.dtype):
                continue
            readers = [u for g in body.instructions if g.opcode == "get-tuple-element"
                       and g.operands[0] is param and g.attrs["index"] == i
                       for u in users.get(id(g), [])]
            if all(u is r for u in readers) and all(o is not base for o in r.operands[1:]):
                found[id(r)] = i
        return found

    @staticmethod
    def _leaf_key(r):
        if r.opcode == "get-tuple-element" and r.operands[0].opcode in ("fusion", "while"):
            return (id(r.operands[0]), r.attrs["index"])
        if r.shape.is_tuple:
            return None
        return (id(r), 0)

    def _computation(self, comp, ops: list, direct: dict, skip=None, params=None) -> dict:
        """Plan `comp`'s instructions into `ops`; {id(instr): refs of its leaves}.
        `params` maps parameters to refs (default: the loop state as `cur`)."""
        self._written = {}
        if params is None:
            params = {id(comp.parameters[0]): [Ref("cur", i) for i in range(len(self.elems))]}
        values: dict[int, list] = dict(params)
        for instr in comp.instructions:
            if instr is skip or id(instr) in params:
                continue
            if instr.opcode == "parameter":
                raise _Unsupported(f"{instr.name}: unexpected parameter")
            values[id(instr)] = self._instruction(instr, values, ops, direct)
        return values

    def _outputs(self, instr, direct) -> list:
        leaves = instr.shape.flat()
        if instr.shape.is_tuple and any(s.is_tuple for s in instr.shape.tuple_shapes):
            raise _Unsupported(f"{instr.name}: nested tuple result")
        out = []
        for k, leaf in enumerate(leaves):
            i = direct.get((id(instr), k))
            if i is not None:
                self._written[(id(instr), k)] = True
                out.append(Ref("tgt", i))
            else:
                out.append(self._temp(leaf.nbytes))
        return out

    def _instruction(self, instr, values, ops, direct) -> list:
        op = instr.opcode
        operands = [values[id(o)] for o in instr.operands]
        if op == "constant":
            return [self._const(instr)]
        if op == "get-tuple-element":
            src = operands[0]
            if len(src) != len(instr.operands[0].shape.tuple_shapes):
                raise _Unsupported(f"{instr.name}: nested tuple")
            return [src[instr.attrs["index"]]]
        if op == "tuple":
            if any(len(v) != 1 for v in operands):
                raise _Unsupported(f"{instr.name}: nested tuple")
            return [v[0] for v in operands]
        if op in ("reshape", "bitcast"):
            if not (_row_major(instr.shape) and _row_major(instr.operands[0].shape)):
                raise _Unsupported(f"{instr.name}: {op} of a non-row-major layout")
            return operands[0]
        if op in MOVES and op != "after-all":
            return operands[0]
        k = self.inplace.get(id(instr))
        if k is not None:
            if any(len(v) != 1 for v in operands):
                raise _Unsupported(f"{instr.name}: tuple operand")
            ops.append(UpdateSlice(
                k, operands[1][0], [v[0] for v in operands[2:]],
                [o.shape.element_type for o in instr.operands[2:]], instr.shape.dims,
                instr.operands[1].shape.dims, np.dtype(instr.shape.dtype).itemsize))
            return [Ref("tgt", k)]
        if op == "fusion":
            return self._fused(instr, instr.called["calls"], instr.operands, values, ops,
                               direct)
        if op in self.compiler.kernel_opcodes and not any(
                o.shape.is_tuple for o in instr.operands):
            comp, kernel_operands = wrap_instruction(instr)
            return self._fused(instr, comp, kernel_operands, values, ops, direct)
        if op == "dot":
            return self._dot(instr, operands, ops, direct)
        if op == "while" and self.allow_control_flow:
            return self._while(instr, operands, ops, direct)
        if op == "conditional" and self.allow_control_flow:
            return self._conditional(instr, operands, ops, direct)
        raise _Unsupported(f"{instr.name}: {op} has no native implementation")

    def _fused(self, instr, comp, operands, values, ops, direct) -> list:
        reason = kernel_unsupported_reason(comp)
        if reason is not None:
            raise _Unsupported(f"{instr.name}: {reason}")
        ins = []
        for o in operands:
            v = values[id(o)]
            if len(v) != 1:
                raise _Unsupported(f"{instr.name}: tuple operand")
            ins.append(v[0])
        outs = self._outputs(instr, direct)
        first = 0
        for kernel in self.compiler.kernels_for(instr, comp, f"fusion {instr.name}"):
            self.kernels.append(kernel)
            n_out = len(kernel.out_specs)
            scratch = self._temp(FULL_CHUNKS * SLOT_BYTES * n_out) if kernel.full else None
            if kernel.threads != 1 and not (self.team or self.one_thread):
                raise _Unsupported(f"{instr.name}: kernel large enough for the thread pool")
            spec = kernel.spec
            parallel = self.team and spec.outer >= 2 and spec.outer * spec.work >= TEAM_MIN_WORK
            ops.append(KernelCall(getattr(kernel, "raw", "") + ".body", ins,
                                  outs[first:first + n_out], spec.outer, scratch, parallel))
            first += n_out
        return outs

    def _while(self, instr, operands, ops, direct) -> list:
        inner = _Planner(self.compiler, instr, root=self.root)
        plan = inner.run()
        src = operands[0]
        if len(src) != plan.n:
            raise _Unsupported(f"{instr.name}: nested tuple loop state")
        sizes = [e.nbytes for e in inner.elems]
        outs, result = [], []
        for i in range(plan.n):
            if i not in plan.carried and i not in plan.inplace:
                result.append(src[i])      # passed through: the input itself
                continue
            key = (id(instr), i) if instr.shape.is_tuple else (id(instr), 0)
            j = direct.get(key)
            if j is not None:
                self._written[key] = True
                dst = Ref("tgt", j)
            else:
                dst = self._temp(sizes[i])
            outs.append((i, dst))
            result.append(dst)
        ops.append(NestedLoop(plan, src, outs, sizes))
        return result

    def _conditional(self, instr, operands, ops, direct) -> list:
        """Each branch planned into its own op list; the chosen one runs (Branch)."""
        called = instr.called
        branches = list(called["branch_computations"]) if "branch_computations" in called \
            else [called["true_computation"], called["false_computation"]]
        if len(operands[0]) != 1 or instr.operands[0].shape.rank != 0:
            raise _Unsupported(f"{instr.name}: branch index is not a scalar")
        leaves = instr.shape.flat()
        if instr.shape.is_tuple and any(s.is_tuple for s in instr.shape.tuple_shapes):
            raise _Unsupported(f"{instr.name}: nested tuple result")
        written = self._written
        plans, results = [], []
        for k, comp in enumerate(branches):
            if len(comp.parameters) != 1:
                raise _Unsupported(f"{instr.name}: branch {k} does not take one parameter")
            branch_ops: list = []
            root = comp.root
            tuple_root = root.opcode == "tuple" and instr.shape.is_tuple
            values = self._computation(comp, branch_ops, {}, skip=root if tuple_root
                                       else None,
                                       params={id(comp.parameters[0]): operands[1 + k]})
            refs = [values[id(o)] for o in root.operands] if tuple_root else [values[id(root)]]
            if not tuple_root and instr.shape.is_tuple:
                refs = [[r] for r in refs[0]]
            if any(len(r) != 1 for r in refs) or len(refs) != len(leaves):
                raise _Unsupported(f"{instr.name}: branch {k} result is nested")
            plans.append(branch_ops)
            results.append([r[0] for r in refs])
        self._written = written
        outs = self._outputs(instr, direct)
        ops.append(Branch(operands[0][0], instr.operands[0].shape.element_type, plans, results,
                          outs, [leaf.nbytes for leaf in leaves]))
        return outs

    def _dot(self, instr, operands, ops, direct) -> list:
        dtype = instr.shape.dtype
        if dtype not in (np.float32, np.float64) or any(
                o.shape.dtype != dtype for o in instr.operands):
            raise _Unsupported(f"{instr.name}: dot on {dtype} (not a float gemm)")
        if not all(_row_major(s) for s in [instr.shape] + [o.shape for o in instr.operands]):
            raise _Unsupported(f"{instr.name}: dot of a non-row-major layout")
        form = cpu_blas.gemm_form(instr)
        if form is None:
            raise _Unsupported(f"{instr.name}: dot is not one gemm")
        batch, m, n, k, ta, tb = form
        if batch * m * n == 0 or k == 0:
            raise _Unsupported(f"{instr.name}: empty dot")
        if batch * m * n * k >= cpu_blas.SMALL_GEMM_MNK and not (self.team or self.one_thread):
            raise _Unsupported(f"{instr.name}: gemm large enough for the thread pool")
        parallel = self.team and (batch > 1 or m >= 2 * TEAM_MIN_GEMM_ROWS) and (
            batch * m * n * k >= TEAM_MIN_GEMM_MNK)
        et = "f32" if dtype == np.float32 else "f64"
        kernel = None
        rows = -(-m // get_pool().num_threads) if parallel and batch == 1 else m
        if use_small_gemm(rows, n, k, tb):
            kernel = self.compiler.small_gemm(et, m, n, k, ta)
        elif cpu_blas.find_blas() is None:
            raise _Unsupported(f"{instr.name}: no BLAS for a gemm of this size")
        out = self._outputs(instr, direct)
        ops.append(GemmCall(et, form, operands[0][0], operands[1][0], out[0], parallel, kernel))
        return out


def _ops_of(plan: LoopPlan):
    """Every op of `plan`, those inside nested loops and branches included."""
    for op in plan.cond + plan.body:
        yield op
        if isinstance(op, NestedLoop):
            yield from _ops_of(op.plan)
        elif isinstance(op, Branch):
            for ops in op.branches:
                yield from _ops_of(LoopPlan(n=0, carried=[], body=ops))


def calls_blas(ops: list) -> bool:
    """Whether `ops` (nested loops and branches included) call BLAS: generated small gemms
    do not."""
    return any(isinstance(op, GemmCall) and op.kernel is None
               for op in _ops_of(LoopPlan(n=0, carried=[], body=ops)))


def _uses_team(plan: LoopPlan) -> bool:
    return any(getattr(op, "parallel", False) for op in _ops_of(plan))


def plan_native_while(compiler, instr):
    """(LoopPlan, constants, kernels) for `instr`, or (None, reason, kernels)."""
    planner = _Planner(compiler, instr)
    try:
        plan = planner.run()
    except _Unsupported as exc:
        STATS["fallback"] += 1
        return None, str(exc), planner.kernels
    STATS["native"] += 1
    return plan, planner.consts, planner.kernels


def state_shapes(instr) -> tuple[list, bool]:
    """The loop state's element shapes and whether the state is a tuple."""
    shape = instr.shape
    return (list(shape.tuple_shapes) if shape.is_tuple else [shape]), shape.is_tuple


_LoopFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
#: The CPU's spin-wait hint, for the native code that waits (teams, collectives, mailboxes).
SPIN_HINT = spin_hint_for(platform.machine())


def _libc_address(name: str) -> int:
    """The address of C function `name` in this process, or 0 where there is none."""
    try:
        return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value or 0
    except (AttributeError, OSError):
        return 0


#: What native waits call through addresses (0: not available here).
SCHED_YIELD = _libc_address("sched_yield")
CLOCK_GETTIME = _libc_address("clock_gettime")


class NativeWhile:
    """The step running one natively compiled while loop (fn bound after the JIT)."""

    def __init__(self, plan: LoopPlan, consts: list, elems: list, tuple_state: bool,
                 src: int, s: int, symbol: str):
        self.plan, self.consts, self.symbol = plan, consts, symbol
        self.src, self.s = src, s
        self.fn = None
        self.worker = None
        layout = Layout(plan.n)
        self.layout = layout
        self.size = layout.size(plan.num_consts)
        self.elems = elems
        self.tuple_state = tuple_state
        self._tls = threading.local()
        self._base: list | None = None

    @property
    def worker_symbol(self) -> str | None:
        """The symbol of the function lent threads run, for a loop that uses a team."""
        return self.symbol + ".worker" if self.plan.uses_team else None

    def bind(self, address: int, worker_address: int | None = None) -> None:
        self.fn = _LoopFn(address)
        if worker_address is not None:
            self.worker = _LoopFn(worker_address)
        lay, plan = self.layout, self.plan
        base = [0] * self.size
        if plan.uses_gemm:
            b = cpu_blas.find_blas()
            base[lay.sgemm], base[lay.dgemm] = b.sgemm, b.dgemm
            base[lay.set_threads], base[lay.get_threads] = b.set_threads, b.get_threads
        for k, c in enumerate(self.consts):
            base[lay.consts + k] = c.ctypes.data
        self._base = base
        # Views of the carry block per state element: (offset of A, offset of B, dims, dtype).
        self._views = {i: (plan.carry_offsets[i], self.elems[i].dims, self.elems[i].dtype,
                           self.elems[i].nbytes) for i in plan.carried}
        # Elements updated in place live in their one buffer whatever the trip count.
        self._inplace = [(plan.inplace[i], self.elems[i].dims, self.elems[i].dtype,
                          self.elems[i].nbytes, i) for i in plan.inplace]

    def _run_on_team(self, table) -> None:
        """Call the loop with the threads of this thread's pool lent to it (team.py)."""
        pool = get_pool()
        raw = np.zeros(TEAM_SLOTS + ALIGN // 8, np.int64)
        skip = (-raw.ctypes.data % ALIGN) // 8           # the word on its own cache line
        team = raw[skip:skip + TEAM_SLOTS]
        team[TEAM_SIZE] = pool.num_threads
        team[TEAM_YIELD] = SCHED_YIELD
        address = team.ctypes.data
        table[self.layout.team] = address
        if pool.num_threads > 1:
            # The job keeps `raw` alive until every lent thread has returned.
            pool.lend(self.worker, address, pool.num_threads - 1, keepalive=raw)
        self.fn(table)

    def _temps(self):
        temps = getattr(self._tls, "temps", None)
        if temps is None:
            temps = self._tls.temps = np.empty(max(self.plan.temp_bytes, ALIGN), np.uint8)
        return temps

    def __call__(self, env) -> None:
        state = env[self.src]
        if not self.tuple_state:
            state = [state]
        plan, lay = self.plan, self.layout
        carry = host_memory().empty((max(plan.carry_bytes, ALIGN),), np.uint8)
        temps = self._temps()
        table = (ctypes.c_void_p * self.size)(*self._base)
        if _DATA_OFFSET is not None:
            for i, a in enumerate(state):
                table[i] = id(a)
            table[lay.carry], table[lay.temps] = id(carry), id(temps)
        else:
            for i, a in enumerate(state):
                table[i] = a.ctypes.data
            table[lay.carry], table[lay.temps] = carry.ctypes.data, temps.ctypes.data
        if self.worker is not None:
            self._run_on_team(table)
        else:
            self.fn(table)
        trips = table[lay.trips] or 0
        out = list(state)
        if trips:
            which = 0 if trips % 2 else 1
            for i, (offs, dims, dtype, nbytes) in self._views.items():
                off = offs[which]
                out[i] = carry[off:off + nbytes].view(dtype).reshape(dims)
        for off, dims, dtype, nbytes, i in self._inplace:
            out[i] = carry[off:off + nbytes].view(dtype).reshape(dims)
        env[self.s] = out if self.tuple_state else out[0]


def native_while_step(compiler, prog, instr, src: int, s: int) -> NativeWhile | None:
    """The step running while loop `instr` (state in slot `src`, result in slot `s`) as one
    native loop: plans it, emits its IR into compiler.ir (unless the compiler replays a
    cached plan) and notes it in `prog`. None, with a note saying why, when its body does
    not allow it. The caller appends the step to compiler.loops and prog.steps."""
    plan, info, kernels = plan_native_while(compiler, instr)
    if plan is None:
        prog.notes.append(f"{instr.name}: while on the Python driver ({info})")
        return None
    symbol = f"{SYMBOL_PLACEHOLDER}loop{len(compiler.loops)}"
    bits = cpu_blas.find_blas().int_bits if plan.uses_gemm else 64
    elems, tuple_state = state_shapes(instr)
    if compiler.replay is None:
        emit_loop(compiler.ir, symbol, plan, bits, _DATA_OFFSET, [e.nbytes for e in elems],
                  SPIN_HINT)
    step = NativeWhile(plan, info, elems, tuple_state, src, s, symbol)
    prog.kernel_count += len(kernels)
    calls = list(_ops_of(plan))
    counts = [(sum(isinstance(c, KernelCall) for c in calls), "kernel calls"),
              (sum(isinstance(c, GemmCall) for c in calls), "gemms"),
              (sum(getattr(c, "parallel", False) for c in calls), "split over the thread team"),
              (sum(getattr(c, "kernel", None) is not None for c in calls),
               "generated small gemms"),
              (sum(isinstance(c, Branch) for c in calls), "conditionals"),
              (sum(isinstance(c, NestedLoop) for c in calls), "nested loops")]
    prog.notes.append(
        f"{instr.name}: while as one native loop {symbol.replace(SYMBOL_PLACEHOLDER, '')} "
        f"({counts[0][0]} kernel calls, {counts[1][0]} gemms per iteration"
        + (f", {len(plan.inplace)} state elements updated in place" if plan.inplace
           else "")
        + "".join(f", {n} {what}" for n, what in counts[2:] if n) + ")")
    return step


def _native_loops_changed(_value) -> None:
    # Loops are planned when a program is compiled: recompile with the new setting.
    clear_caches()


config.on_change("minijax_native_loops", _native_loops_changed)
