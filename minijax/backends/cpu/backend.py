"""The CPU backend: fused kernels generated with llvmlite, JIT-compiled for the host.

`CpuBackend.compile(module)` turns an optimized HLO module into a `CpuExecutable`: a list of
thunks over a per-call list of buffers (numpy arrays, one per instruction result).
- fusions and unfused elementwise/indexing/reduce instructions become LLVM kernels (one LLVM
  module per HLO module, compiled once at -O3 for the host CPU, see cpu/runtime.py). Kernels
  above PARALLEL_THRESHOLD are called through ctypes (which releases the GIL) and split their
  outer loop across the thread pool (thread_pool.py, MINIJAX_NUM_THREADS); smaller ones are
  called as METH_FASTCALL builtins (cpu/fastcall.py, ~0.1 us per call); large reductions
  to scalars ("full_reduce" kernels) reduce fixed chunks in parallel into a scratch buffer,
  then combine the partials in one more call;
- large temporaries of the entry computation are written into per-thread pool buffers (the
  buffer assignment's slots), reused across calls; outputs and other temporaries come from
  the warm host cache (cpu/memory.py: memory kept mapped, no page faults once warm);
- dot calls the gemm of NumPy's BLAS directly (cpu/blas.py: transposed operands read through
  trans flags, large products split over the thread pool; np.matmul when no gemm is found);
  convolution runs as an im2col copy + one gemm per feature/batch group (cpu/library.py);
- reduce-window and select-and-scatter are generated kernels like fusions (each output
  element a gather over its window(s), codegen/windows.py);
- a while loop whose condition and body are single-threaded kernels, small float gemms,
  views and tuple plumbing runs as one native loop (cpu/native_loops.py): one LLVM
  function calls the kernels and BLAS per iteration and swaps the carry buffers, with no
  Python per iteration (option minijax_native_loops); a small entry computation of such
  steps runs as one native call (cpu/native_entry.py);
- other while/conditional/call run their computations as nested programs (a Python loop
  over the iterations, no per-iteration compilation; a tuple loop state is unpacked
  straight into the body's slots);
- everything else runs the evaluator's per-instruction function (EVALUATOR_THUNK_OPCODES
  lists those opcodes; element types the emitter does not support, e.g. complex numbers, and
  integer convolutions run there too); `CpuExecutable.as_text()` marks each thunk.
With MINIJAX_CACHE_DIR set, the object file and a compile plan (kernel specs) are stored, so
a later process rebuilds the executable without emitting IR or running LLVM.
MINIJAX_DEBUG=2 prints each kernel's time and GB/s; MINIJAX_DEBUG=4 prints the LLVM IR.
"""
from __future__ import annotations

import ctypes
import os
import re
import sys
import threading
import time

import llvmlite.ir as ir
import numpy as np

from minijax import trace_events
from minijax.backends.base import Backend, Device, Executable
from minijax.backends.cpu import fastcall
from minijax.backends.cpu.blas import hold_one_blas_thread, release_blas_threads
from minijax.backends.cpu.device_threads import run_prepared
from minijax.backends.cpu.kernel import (
    _DATA_OFFSET,
    PARALLEL_THRESHOLD,
    _Kernel,
    _KernelFn,
    _row_major,
)
from minijax.backends.cpu.library import conv_step, dot_step
from minijax.backends.cpu.llvm_parts import ModuleText
from minijax.backends.cpu.memory import host_memory
from minijax.backends.cpu.native_entry import NativeEntry, native_entry_for
from minijax.backends.cpu.native_loops import NativeWhile, native_while_step
from minijax.backends.cpu.runtime import SYMBOL_PLACEHOLDER, get_jit
from minijax.backends.cpu.thread_pool import (
    default_num_threads,
    device_share,
    set_device_share,
)
from minijax.backends.planner import Program, ProgramPlanner, opcode_support
from minijax.backends.profiled_run import run_profiled
from minijax.backends.transport import cpu_device_id, device_placement
from minijax.compiler.codegen.cpu.loops import (
    KernelSpec,
    emit_kernel,
    kernel_unsupported_reason,
    output_shapes,
)
from minijax.compiler.codegen.cpu.small_gemm import emit_small_gemm
from minijax.compiler.codegen.elemental import (
    ELEMENTWISE,
    INDEXING,
    WINDOWED,
)
from minijax.compiler.codegen.kernel_plan import split_roots
from minijax.compiler.codegen.llvm_types import I64
from minijax.compiler.hlo import opcodes
from minijax.compiler.hlo.ir import Computation, Shape
from minijax.compiler.hlo.printer import module_to_text
from minijax.config import config, debug_level

#: Entry temporaries at least this large live in per-thread buffers reused across calls.
REUSE_MIN_BYTES = 1 << 16
_KERNEL_OPCODES = (ELEMENTWISE | INDEXING | WINDOWED | {"gather", "reduce", "scatter"}) - {
    "reshape", "bitcast"}
_REUSE_SAFE_USERS = frozenset({"fusion", "dot"}) | (
    (ELEMENTWISE | INDEXING | {"reduce"}) - {"reshape", "bitcast"})
_NO_OP = {"parameter", "constant", "tuple", "get-tuple-element", "after-all",
          "optimization-barrier"}
_KERNEL_NAME = re.compile(re.escape(SYMBOL_PLACEHOLDER) + r"k\d+")


class _Compiler(ProgramPlanner):
    """Compiles the computations of one HLO module into programs sharing one LLVM module
    (the shared planner decides what runs; this class generates and launches kernels)."""

    kernel_opcodes = _KERNEL_OPCODES

    def __init__(self, module, debug: int, replay: dict | None = None,
                 device_program: bool = False):
        super().__init__(module)
        self.debug = debug
        self.device_program = device_program
        self.ir = ir.Module(name=module.name)
        self.kernels: list[_Kernel] = []
        self.loops: list[NativeWhile] = []
        self._instr_kernels: dict[int, list[_Kernel]] = {}
        self.entry: NativeEntry | None = None
        self.replay = replay
        self.ir_key = None
        self._bodies: dict[tuple, int] = {}
        self._texts: dict[str, str] = {}
        self._small_gemms: dict[tuple, str] = {}
        self.ba = module.buffer_assignment
        self.pool_sizes: dict[int, int] = {}
        self.users: dict[int, list] = {}
        for i in module.entry.instructions:
            for op in i.operands:
                self.users.setdefault(id(op), []).append(i)

    # ------------------------------------------------------------------ kernels
    def _new_kernel(self, comp: Computation, label: str) -> _Kernel:
        name = f"{SYMBOL_PLACEHOLDER}k{len(self.kernels)}"
        if self.replay is not None:
            d = self.replay["kernels"][len(self.kernels)]
            spec = KernelSpec(d["name"], d["mode"], d["outer"], d["work"], d["num_params"],
                              [Shape(et, tuple(dims)) for et, dims in d["outs"]])
            kernel = _Kernel(spec, d["symbol"], label)
            kernel.fast_symbol = d["fast"]
            self.kernels.append(kernel)
            return kernel
        before = set(self.ir.globals)
        spec = emit_kernel(self.ir, name, comp, full_reduce=True)
        twin = self._twin(name, spec, before)
        if twin is not None:
            kernel = _Kernel(spec, twin.symbol, label)
            kernel.fast_symbol = twin.fast_symbol
            kernel.raw = twin.raw
            self.kernels.append(kernel)
            return kernel
        kernel = _Kernel(spec, name, label)
        kernel.raw = name  # `name.body` is its loop nest (native loops call it)
        if _DATA_OFFSET is not None:
            count = spec.num_params + len(spec.output_shapes) + (1 if kernel.full else 0)
            self._emit_pyobject_entry(name, count)
            kernel.symbol = name + "_py"
            if kernel.threads == 1 and kernel.holds_gil_ok and fastcall.SUPPORTED \
                    and not kernel.full:
                kernel.fast_symbol = fastcall.emit_fastcall_entry(self.ir, name, count,
                                                                  spec.outer, _DATA_OFFSET)
        self.kernels.append(kernel)
        return kernel

    def small_gemm(self, dtype: str, m: int, n: int, k: int, a_transposed: bool) -> str:
        """The symbol of a generated gemm of this shape (codegen/cpu/small_gemm.py), emitted
        once per module, for native loops and entries to call."""
        key = (dtype, m, n, k, a_transposed)
        name = self._small_gemms.get(key)
        if name is None:
            name = self._small_gemms[key] = f"{SYMBOL_PLACEHOLDER}gemm{len(self._small_gemms)}"
            self._texts[name] = str(emit_small_gemm(self.ir, name, dtype, m, n, k,
                                                    a_transposed))
        return name

    def _twin(self, name: str, spec, before: set):
        """An earlier kernel whose body IR is identical to kernel `name`'s (then `name`'s
        functions are dropped from the module: LLVM optimizes and emits each body once)."""
        body = str(self.ir.get_global(name + ".body"))
        self._texts[name + ".body"] = body  # printed once: finish() reuses it
        text = _KERNEL_NAME.sub("", body)
        key = (text, spec.mode, spec.outer, spec.work, spec.num_params,
               tuple(spec.output_shapes))
        twin = self._bodies.get(key)
        if twin is None:
            self._bodies[key] = len(self.kernels)
            return None
        for g in set(self.ir.globals) - before:
            del self.ir.globals[g]
        return self.kernels[twin]

    def _emit_pyobject_entry(self, name: str, count: int) -> None:
        """`name_py(PyArrayObject **arrays, start, end)`: reads each array's data pointer."""
        i8p = ir.IntType(8).as_pointer()
        fn = ir.Function(self.ir, ir.FunctionType(ir.VoidType(), [i8p.as_pointer(), I64, I64]),
                         name + "_py")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        arr = b.alloca(ir.ArrayType(i8p, count))
        for k in range(count):
            obj = b.load(b.gep(fn.args[0], [ir.Constant(I64, k)], inbounds=True))
            field = b.bitcast(b.gep(obj, [ir.Constant(I64, _DATA_OFFSET)]), i8p.as_pointer())
            b.store(b.load(field), b.gep(arr, [ir.Constant(I64, 0), ir.Constant(I64, k)]))
        target = self.ir.get_global(name)
        b.call(target, [b.bitcast(arr, i8p.as_pointer()), fn.args[1], fn.args[2]])
        b.ret_void()

    def _kernel_step(self, prog, kernels, in_slots, out_slot, tuple_out, label, reuse=None):
        """A step that allocates outputs and runs one or more kernels (one per output group).

        `reuse` gives, per flat output, None (a fresh array) or the (slot, bytes) of the
        per-thread pool buffer it is written into (see CpuExecutable).
        """
        debug = self.debug >= 2
        groups, first = [], 0
        planned = host_memory().planned
        for kernel, slots in kernels:
            n_out = len(kernel.out_specs)
            allocs = [None if reuse is None else reuse[first + k] for k in range(n_out)]
            for a in allocs:
                if a is not None:
                    self.pool_sizes[a[0]] = a[1]
            specs = [(planned(d, dt), a, int(np.prod(d, dtype=np.int64)) * np.dtype(dt).itemsize,
                      d, dt) for (d, dt), a in zip(kernel.out_specs, allocs)]
            groups.append((kernel, [in_slots[i] for i in slots] if slots else in_slots, specs))
            first += n_out
        prog.kernel_count += len(groups)
        use_ids = _DATA_OFFSET is not None

        def alloc(pool, fresh, where, nbytes, dims, dt):
            if where is None or pool is None:
                return fresh()
            slot, size = where
            raw = pool[slot]
            if raw is None:
                raw = pool[slot] = np.empty(size, np.uint8)
            return raw[:nbytes].view(dt).reshape(dims)

        def run_group(env, kernel, slots, specs):
            ins = [env[s] for s in slots]
            pool = env[-1]
            outs = [alloc(pool, *spec) for spec in specs]
            if kernel.fast is not None and not debug:
                kernel.fast(*ins, *outs)
                return outs
            addrs = ([id(a) for a in ins] + [id(o) for o in outs]) if use_ids else (
                [a.ctypes.data for a in ins] + [o.ctypes.data for o in outs])
            ptrs = (ctypes.c_void_p * len(addrs))(*addrs)
            if debug:
                t0 = time.perf_counter()
                kernel.launch(ptrs)
                dt = time.perf_counter() - t0
                nbytes = kernel.out_bytes + sum(a.nbytes for a in ins)
                print(f"[minijax cpu] {kernel.label} ({kernel.spec.mode}, "
                      f"{kernel.threads} thr): {dt * 1e6:.1f} us, "
                      f"{nbytes / max(dt, 1e-12) / 1e9:.2f} GB/s", file=sys.stderr)
            else:
                kernel.launch(ptrs)
            return outs

        if len(groups) == 1 and not tuple_out:
            kernel, slots, specs = groups[0]
            if kernel.fast_symbol is not None and not debug and len(specs) == 1 \
                    and specs[0][1] is None:
                fresh = specs[0][0]

                def step(env):
                    out = fresh()
                    kernel.fast(*[env[s] for s in slots], out)
                    env[out_slot] = out
                return step

            def step(env):
                env[out_slot] = run_group(env, kernel, slots, specs)[0]
        else:
            def step(env):
                outs = []
                for kernel, slots, specs in groups:
                    outs.extend(run_group(env, kernel, slots, specs))
                env[out_slot] = outs
        return step

    def why_not_kernel(self, comp: Computation) -> str:
        return kernel_unsupported_reason(comp) or "not supported"

    def view_step(self, prog, instr, ops, s) -> bool:
        """Row-major reshapes and bitcasts are NumPy views."""
        if not (_row_major(instr.shape) and _row_major(instr.operands[0].shape)
                and not instr.shape.is_tuple):
            return False
        dims, src = instr.shape.dims, ops[0]
        prog.steps.append(lambda env: env.__setitem__(s, env[src].reshape(dims)))
        return True

    def library_step(self, prog, instr, ops, s) -> bool:
        """dot through BLAS gemm; convolution as im2col + gemm (library.py)."""
        if instr.opcode == "dot":
            prog.kernel_count += 1
            prog.notes.append(f"{instr.name}: dot via BLAS gemm")
            prog.steps.append(dot_step(instr, ops, s))
            return True
        if instr.opcode == "convolution":
            step = conv_step(instr, ops, s)
            if step is not None:
                prog.kernel_count += 1
                prog.notes.append(f"{instr.name}: convolution via im2col + BLAS gemm")
                prog.steps.append(step)
                return True
        return False

    def fused_kernel(self, prog, comp, operands, instr, label) -> bool:
        """Add kernel steps for fused computation `comp`; False if it cannot be generated."""
        if kernel_unsupported_reason(comp) is not None:
            return False
        kernels = [(k, None) for k in self.kernels_for(instr, comp, label)]
        in_slots = [prog.slot[id(op)] for op in operands]
        tuple_out = instr.shape.is_tuple
        reuse = self._reusable_slots(prog, instr, operands)
        prog.steps.append(self._kernel_step(prog, kernels, in_slots, prog.slot[id(instr)],
                                            tuple_out, label, reuse))
        prog.notes.append(f"{instr.name}: kernel{'s' if len(kernels) > 1 else ''} "
                          + ", ".join(k.symbol.replace(SYMBOL_PLACEHOLDER, '') for k, _ in
                                      kernels) + f" ({label})")
        return True

    def kernels_for(self, instr, comp: Computation, label: str) -> list[_Kernel]:
        """The kernels of fused computation `comp` of `instr`, generated once per
        instruction (a native loop's planning and the Python driver share them)."""
        kernels = self._instr_kernels.get(id(instr))
        if kernels is None:
            kernels = self._instr_kernels[id(instr)] = [
                self._new_kernel(part, label) for part in split_roots(comp) or [comp]]
        return kernels

    def _reusable_slots(self, prog, instr, operands):
        """Per flat output of instr's kernels: the pool slot to write into, or None.

        Only large temporaries of the entry computation whose every reader is a kernel or a
        dot (which copy what they read into fresh results) are reused across calls: never
        an output, a parameter, or a slot one of the kernel's own operands lives in.
        """
        ba = self.ba
        if ba is None or prog.comp is not self.module.entry:
            return None
        leaves = instr.shape.flat()
        if instr.shape.is_tuple and any(s.is_tuple for s in instr.shape.tuple_shapes):
            return None
        try:
            bufs = ba.buffers_of(instr)
            op_slots = {b.slot for op in operands for b in ba.buffers_of(op)}
        except (KeyError, IndexError, AttributeError):
            return None
        if len(bufs) != len(leaves):
            return None
        readers: list[list] = [[] for _ in leaves]
        for u in self.users.get(id(instr), []):
            if not instr.shape.is_tuple:
                readers[0].append(u)
            elif u.opcode == "get-tuple-element":
                readers[u.attrs["index"]].extend(self.users.get(id(u), [None]))
            else:
                return None
        out = []
        for leaf, buf, users in zip(leaves, bufs, readers):
            ok = (users and leaf.nbytes >= REUSE_MIN_BYTES and buf.kind == "temp"
                  and buf.slot >= 0 and buf.slot not in op_slots
                  and all(u is not None and u.opcode in _REUSE_SAFE_USERS for u in users))
            out.append((buf.slot, ba.slots[buf.slot].size) if ok else None)
        return out if any(out) else None

    def while_step(self, prog, instr, ops, s) -> bool:
        """A while loop as one native loop (native_loops.py) when its body allows."""
        if self.debug >= 2 or not config._values["minijax_native_loops"]:
            return False
        step = native_while_step(self, prog, instr, ops[0], s)
        if step is None:
            return False
        self.loops.append(step)
        prog.steps.append(step)
        return True

    def plan_entry(self) -> None:
        """The entry computation as one native call too, when it is small and every
        instruction allows it (native_entry.py)."""
        if self.debug >= 2 or not config._values["minijax_native_loops"]:
            return
        self.entry = native_entry_for(self, self.device_program)

    # ------------------------------------------------------------------ JIT
    def plan(self) -> dict:
        """What a later process needs to rebuild this program without emitting IR."""
        return {"ir_key": self.ir_key, "loops": len(self.loops),
                "entry": self.entry is not None, "kernels": [
            {"name": k.spec.name, "mode": k.spec.mode, "outer": k.spec.outer,
             "work": k.spec.work, "num_params": k.spec.num_params,
             "outs": [[s.element_type, list(s.dims)] for s in k.spec.output_shapes],
             "symbol": k.symbol, "fast": k.fast_symbol} for k in self.kernels]}

    def finish(self) -> str:
        """JIT the LLVM module; bind each kernel's function. Returns the IR text."""
        symbols = list(dict.fromkeys([k.symbol for k in self.kernels] + [
            k.fast_symbol for k in self.kernels if k.fast_symbol] + [
            loop.symbol for loop in self.loops] + [
            loop.worker_symbol for loop in self.loops if loop.worker_symbol] + (
            self.entry.symbols if self.entry is not None else [])))
        if self.replay is not None:
            if (len(self.kernels) != len(self.replay["kernels"])
                    or len(self.loops) != self.replay.get("loops", 0)
                    or (self.entry is not None) != self.replay.get("entry", False)):
                raise RuntimeError("compile plan does not match the module")
            addrs = get_jit().load_key(self.replay["ir_key"], symbols) if symbols else {}
            if addrs is None:
                raise RuntimeError("compile plan's object file is missing")
            self._bind(addrs)
            return ""
        module_text = ModuleText(self.ir, self._texts)
        parts = module_text.split(get_jit().parallelism(), hot=list(self._texts))
        text = parts[0][0] if len(parts) == 1 else module_text.whole()
        self.ir_key = get_jit().key(parts)
        if self.debug >= 4:
            print(text.replace(SYMBOL_PLACEHOLDER, ""), file=sys.stderr)
        if symbols:
            self._bind(get_jit().compile(parts, symbols, key=self.ir_key))
        return text

    def _bind(self, addrs) -> None:
        for k in self.kernels:
            k.fn = _KernelFn(addrs[k.symbol])
            if k.fast_symbol:
                k.fast, k._keepalive = fastcall.make_builtin(
                    addrs[k.fast_symbol], k.fast_symbol.replace(SYMBOL_PLACEHOLDER, ""))
        for loop in self.loops:
            loop.bind(addrs[loop.symbol],
                      addrs[loop.worker_symbol] if loop.worker_symbol else None)
        if self.entry is not None:
            self.entry.bind_jitted(addrs)


class CpuExecutable(Executable):
    """A compiled module: thunks over per-call numpy buffers."""

    def __init__(self, module, program: Program, ir_text: str, compiler: _Compiler):
        self.module = module
        self.program = program
        self._ir_text = ir_text
        self.kernel_count = program.kernel_count
        self.kernels = compiler.kernels
        self._native = compiler.entry
        self._notes = [n for p in compiler.programs.values() for n in p.notes]
        params = module.entry.parameters
        self._arg_dtypes = [p.shape.dtype for p in params]
        root = module.entry.root
        self._flatten = root.shape.is_tuple and any(s.is_tuple for s in root.shape.tuple_shapes)
        self._tuple_root = root.shape.is_tuple
        # Per-thread temp pools (slot -> raw bytes) for kernels writing reused temps; a
        # thread never shares its pool, so concurrent calls of one executable are safe.
        self._pool_size = (max(compiler.pool_sizes) + 1) if compiler.pool_sizes else 0
        self._tls = threading.local()
        # Flat tuple root: run the entry's steps without building the tuple.
        self._out_slots = None
        steps = program.steps
        if (self._tuple_root and not self._flatten and program.root_operand_slots is not None
                and steps and getattr(steps[-1], "root_tuple", False)):
            self._out_slots = list(program.root_operand_slots)
            self._steps = steps[:-1]
            self._template = program.template
            self._param_slots = program.param_slots

    def convert_args(self, args) -> list:
        """The flat arguments as C-contiguous arrays of the parameters' dtypes."""
        dtypes = self._arg_dtypes
        if len(args) != len(dtypes):
            raise TypeError(f"{self.module.name} takes {len(dtypes)} arguments, "
                            f"got {len(args)}")
        asarray = np.asarray
        return [asarray(a, dtype=dt, order="C") for a, dt in zip(args, dtypes)]

    def execute(self, args):
        """Run on flat arguments; returns the entry result's leaves."""
        args = self.convert_args(args)
        if self._native is not None and not trace_events.ACTIVE:
            return self._native(args)
        out_slots = self._out_slots
        if out_slots is None or trace_events.ACTIVE:
            out = self.program.run(args) if not trace_events.ACTIVE else run_profiled(
                self.program, args, self.module.name, "cpu")
            if not self._tuple_root:
                return [out]
            if self._flatten:
                return _flatten(out)
            return list(out)
        env = self._template.copy()
        for s, a in zip(self._param_slots, args):
            env[s] = a
        pool = None
        if self._pool_size:
            tls = self._tls
            pool = getattr(tls, "pool", None)
            if pool is None:
                pool = tls.pool = [None] * self._pool_size
            if getattr(tls, "busy", False):
                pool = None  # a nested call on this thread: allocate instead
            else:
                tls.busy = True
        env[-1] = pool
        try:
            for step in self._steps:
                step(env)
        finally:
            if pool is not None:
                self._tls.busy = False
        return [env[s] for s in out_slots]

    def as_text(self) -> str:
        """The HLO text, then what runs for each instruction (kernels, library calls, thunks)."""
        native = self._native
        notes = list(self._notes)
        if native is not None:
            count = len(native.plan.collectives)
            meeting = len(native.native_all_reduces)
            generated = sum(getattr(op, "kernel", None) is not None for op in native.plan.ops)
            notes.append("entry: one native call (native_entry.py)" + (
                f", {count} collective(s) called back" if count else "") + (
                f", {generated} dot(s) as generated small gemms" if generated else "") + (
                f" ({meeting} all-reduce(s) meet natively within a process)"
                if meeting else ""))
        return module_to_text(self.module) + "\n// CPU execution plan:\n" + "\n".join(
            "//   " + n for n in notes) + "\n"

    def llvm_ir(self) -> str:
        """The generated LLVM IR (before optimization)."""
        return self._ir_text.replace(SYMBOL_PLACEHOLDER, "")

    def evaluator_thunks(self) -> list[str]:
        """Notes for the instructions that run on the evaluator instead of generated code."""
        return [n for n in self._notes if "EVALUATOR" in n]


def _flatten(value) -> list:
    if isinstance(value, list):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


class CpuBackend(Backend):
    """Backend "cpu": llvmlite-generated, vectorized, multithreaded kernels."""

    name = "cpu"
    platform = "cpu"

    def compile(self, module, options=None) -> CpuExecutable:
        """Compile an optimized HLO module (one LLVM module, JIT-compiled once)."""
        debug = debug_level()
        dump_to = getattr(options, "dump_to", None) if options is not None else None
        device_program = bool(getattr(options, "native_device_program", False))
        plan_key = None
        if config._values["minijax_cache_dir"] and debug < 4 and not dump_to:
            # A warm disk cache skips IR emission too: the plan lists the kernels' specs
            # and the object file holding them. It is keyed on the persistent cache's
            # digest of this exact module when there is one (printing it costs more).
            digest = module.cache_digest
            if digest is None:
                digest = module_to_text(module)
            plan_key = get_jit().key(f"plan-v2|{_DATA_OFFSET}|{fastcall.SUPPORTED}|"
                                     f"{'device|' if device_program else ''}{digest}")
            plan = get_jit().read_plan(plan_key)
            if plan is not None:
                try:
                    compiler = _Compiler(module, debug, replay=plan,
                                         device_program=device_program)
                    program = compiler.program(module.entry)
                    compiler.plan_entry()
                    text = compiler.finish()
                    return CpuExecutable(module, program, text, compiler)
                except (RuntimeError, KeyError, IndexError, TypeError, ValueError):
                    pass  # stale or corrupt plan: compile normally (and rewrite it)
        compiler = _Compiler(module, debug, device_program=device_program)
        program = compiler.program(module.entry)
        compiler.plan_entry()
        text = compiler.finish()
        if plan_key is not None and compiler.ir_key is not None:
            get_jit().write_plan(plan_key, compiler.plan())
        if dump_to:
            os.makedirs(dump_to, exist_ok=True)
            with open(os.path.join(dump_to, f"{module.name}.ll"), "w") as f:
                f.write(text.replace(SYMBOL_PLACEHOLDER, ""))
        return CpuExecutable(module, program, text, compiler)

    def opcode_support(self, opcode: str) -> str:
        """How the CPU backend runs `opcode` (for its usual element types)."""
        return cpu_opcode_support(opcode)

    def devices(self) -> list[Device]:
        """The host CPU as `jax_num_cpu_devices` devices (MINIJAX_NUM_CPU_DEVICES; fixed
        from the first call on), each running on its share of the thread pool. In a
        multi-process run their ids are global (backends.transport.cpu_device_id)."""
        devices = self.__dict__.get("_devices")
        if devices is None:
            count = config._values["jax_num_cpu_devices"]
            kind = get_jit().cpu
            process = device_placement()  # global ids in a multi-process run
            devices = self._devices = [
                Device("cpu", cpu_device_id(process, i), kind, process_index=process)
                for i in range(count)]
            config.freeze("jax_num_cpu_devices", "jax_num_cpu_devices must be set before the "
                          f"CPU backend is initialized (it has {count} devices already); set "
                          "MINIJAX_NUM_CPU_DEVICES or call config.update first")
        return devices

    def device_program_options(self, count: int) -> dict:
        """Devices that each get one thread of the pool (as many devices as threads, or one
        thread per process under MPI) run their programs as one native call holding the
        collectives (native_entry.py); devices with several threads keep the step program,
        whose kernels split over the device's threads."""
        return {"native_device_program": default_num_threads() // max(count, 1) <= 1}

    def run_all_devices(self, executable, per_device_args, transport):
        """A device program whose collectives all meet natively runs every device's call
        from this thread and the device threads' mailboxes (device_threads.py)."""
        native = getattr(executable, "_native", None)
        if native is None or not native.all_native or trace_events.ACTIVE:
            return None
        return run_prepared(native, executable, per_device_args, transport)

    def run_on_device(self, device: Device, count: int, fn):
        """Call `fn()` as device `device` of `count` devices running at once: its kernels
        use that device's share of the thread pool (see thread_pool.device_share)."""
        if count == 1:
            return fn()
        set_device_share(device_share(device.id % count, count))
        hold_one_blas_thread()
        try:
            return fn()
        finally:
            release_blas_threads()
            set_device_share(None)


def cpu_opcode_support(opcode: str) -> str:
    """"kernel", "view", "library", "program", "no-op", "thunk" or "unsupported"."""
    return opcode_support(opcode, _KERNEL_OPCODES, ("dot", "convolution"), _NO_OP)


#: Opcodes of the table that run through the evaluator's instruction (not compiled).
EVALUATOR_THUNK_OPCODES = tuple(sorted(
    op for op in opcodes.OPCODES if cpu_opcode_support(op) == "thunk"))


def create_backend() -> CpuBackend:
    """The factory minijax.backends.get_backend("cpu") calls."""
    return CpuBackend()


__all__ = ["CpuBackend", "CpuExecutable", "EVALUATOR_THUNK_OPCODES", "PARALLEL_THRESHOLD",
           "create_backend", "output_shapes"]
