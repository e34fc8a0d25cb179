"""A compiled HLO module on a GPU: the shared program planner (backends/planner.py) with
device buffers and the GPU's hooks.

`GpuExecutable(module, runtime)` plans every computation of the module once:
- fusions and unfused elementwise/indexing/reduce instructions become generated kernels
  (compiler/codegen/gpu), all in one LLVM module per HLO module, loaded once (PTX/cubin
  cached per architecture, see driver_runtime.py);
- dot in the canonical [B, M, K] x [B, K, N] form (passes/dot_canonicalization.py) runs as
  a GEMM (cuBLAS on a GPU), reading transposed operands through trans flags;
- row-major reshapes/bitcasts and tuples alias their operands' buffers (no copy);
- while / conditional / call run as nested programs of device steps; the loop predicate or
  branch index is the only value copied to the host (one scalar per iteration), and a
  counted loop (fori_loop, scan: loops.py) reads its counter, limit and step once;
- gather, scatter, sort, topk, reduce-window, select-and-scatter and convolution run as
  dedicated kernels (compiler/codegen/gpu/ops.py);
- everything else runs on the host evaluator: its operands are copied to the host and the
  result back (`as_text()` marks each such HOST step: fft, linear algebra custom calls,
  complex numbers, rng-bit-generator, collectives, ...; `gpu_opcode_support` says which).
Buffers are DeviceBuffers, freed to the caching allocator when the last reference goes;
the entry program drops each intermediate right after its last reader, so peak memory
follows liveness. Kernels are queued on the device's stream (scratch and intermediates can
be reused by later launches in stream order); only host steps and downloads wait.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from minijax.backends.base import Executable
from minijax.backends.cuda.device_runtime import DeviceBuffer, DeviceRuntime, GemmSpec
from minijax.backends.cuda.loops import counted_loop, counted_loop_step
from minijax.backends.planner import MOVES, Program, ProgramPlanner, opcode_support
from minijax.compiler.codegen.elemental import ELEMENTWISE, INDEXING
from minijax.compiler.codegen.gpu import nvvm
from minijax.compiler.codegen.gpu.gemm import GEMM_TYPES, emit_gemm_kernel
from minijax.compiler.codegen.gpu.kernels import emit_gpu_kernel, gpu_unsupported_reason
from minijax.compiler.codegen.gpu.ops import OP_KERNEL_OPCODES, emit_op_kernel, op_kernel_reason
from minijax.compiler.codegen.kernel_plan import split_roots, wrap_instruction
from minijax.compiler.evaluator import evaluate_instruction, flatten_value
from minijax.compiler.hlo.ir import Computation, Instruction
from minijax.compiler.hlo.printer import module_to_text

_KERNEL_OPCODES = frozenset((ELEMENTWISE | INDEXING | {"reduce"}) - {"reshape", "bitcast"})
_NO_OP = frozenset({"parameter", "constant", "tuple", "get-tuple-element", *MOVES})


def gpu_opcode_support(opcode: str) -> str:
    """How the GPU program runs `opcode` (for its usual element types): "kernel",
    "library", "view", "program", "no-op", "thunk" (the host evaluator) or "unsupported"."""
    return opcode_support(opcode, _KERNEL_OPCODES | OP_KERNEL_OPCODES, ("dot",), _NO_OP)


def _row_major(shape) -> bool:
    return shape.layout is None or shape.minor_to_major == tuple(range(shape.rank - 1, -1, -1))


def _leaves(value) -> list:
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value]


def _gemm_spec(instr: Instruction) -> GemmSpec | None:
    """The GEMM computing a canonical dot (None for any other form or element type)."""
    lhs, rhs = instr.operands
    a = instr.attrs
    lb, rb = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ()))
    lc, rc = tuple(a.get("lhs_contracting_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
    nb = len(lb)
    if lb != tuple(range(nb)) or rb != lb or len(lc) != 1 or len(rc) != 1:
        return None
    if lhs.shape.rank != nb + 2 or rhs.shape.rank != nb + 2 or instr.shape.rank != nb + 2:
        return None
    if not all(_row_major(s) for s in (lhs.shape, rhs.shape, instr.shape)):
        return None
    et = lhs.shape.element_type
    if et not in GEMM_TYPES + ("bf16",) or rhs.shape.element_type != et:
        return None
    trans_a, trans_b = lc[0] == nb, rc[0] == nb + 1
    ld, rd = lhs.shape.dims, rhs.shape.dims
    m, k = (ld[nb + 1], ld[nb]) if trans_a else (ld[nb], ld[nb + 1])
    n = rd[nb] if trans_b else rd[nb + 1]
    batch = int(np.prod(ld[:nb])) if nb else 1
    return GemmSpec(batch, m, n, k, trans_a, trans_b, et, instr.shape.element_type)


def _label(instr) -> str:
    meta = instr.metadata
    where = ""
    if meta.get("source_file"):
        where = f" at {os.path.basename(str(meta['source_file']))}:{meta.get('source_line')}"
    return f"{instr.name} {instr.shape.element_type}{list(instr.shape.dims)}{where}"


class _GpuPlanner(ProgramPlanner):
    """The planner's hooks for a device runtime (see the module docstring)."""

    kernel_opcodes = _KERNEL_OPCODES

    def __init__(self, module, runtime: DeviceRuntime, debug: int):
        super().__init__(module)
        self.runtime, self.debug = runtime, debug
        self.ir = nvvm.new_module(module.name)
        self.kernels: list = []
        self.loaded = None
        self.constant_ids: set[int] = set()
        self.owners: dict[int, list] = {}     # id(program) -> the instruction of each step

    # ------------------------------------------------------------------ buffers
    def upload(self, array: np.ndarray, label: str) -> DeviceBuffer:
        buf = self.runtime.upload(np.asarray(array, order="C"), label)
        buf.dims, buf.dtype = array.shape, array.dtype
        return buf

    def allocate(self, shape, label: str) -> DeviceBuffer:
        buf = self.runtime.allocate(shape.nbytes, label)
        buf.dims, buf.dtype = shape.dims, shape.dtype
        return buf

    def to_host(self, value, shape):
        if shape.is_tuple:
            return tuple(self.to_host(v, s) for v, s in zip(value, shape.tuple_shapes))
        return self.runtime.download(value, shape.dims, shape.dtype)

    def read_scalar(self, value):
        return self.runtime.download(value, (), value.dtype)[()]

    def read_typed(self, value, dtype):
        """A device scalar of element type `dtype` (argument buffers carry no dtype)."""
        return self.runtime.download(value, (), dtype)[()]

    # ------------------------------------------------------------------ hooks
    def constant(self, instr: Instruction):
        value = np.asarray(instr.literal, dtype=instr.shape.dtype).reshape(instr.shape.dims)
        buf = self.upload(value, f"constant {instr.name}")
        self.constant_ids.add(id(buf))
        return buf

    def view_step(self, prog: Program, instr: Instruction, ops: list, s: int) -> bool:
        if instr.shape.is_tuple or not (_row_major(instr.shape)
                                         and _row_major(instr.operands[0].shape)):
            return False
        src = ops[0]
        prog.steps.append(lambda env: env.__setitem__(s, env[src]))
        return True

    def why_not_kernel(self, comp: Computation) -> str:
        return gpu_unsupported_reason(comp) or "not supported by the GPU backend"

    def fused_kernel(self, prog, comp, operands, instr, label) -> bool:
        if gpu_unsupported_reason(comp) is not None:
            return False
        parts = split_roots(comp) or [comp]
        kernels = []
        base = f"k{len(self.kernels)}_{instr.name}".replace("-", "_").replace(".", "_")
        for n, part in enumerate(parts):
            kernel = emit_gpu_kernel(self.ir, base if len(parts) == 1 else f"{base}_{n}", part)
            self.kernels.append(kernel)
            kernels.append(kernel)
        prog.kernel_count += sum(len(k.launches) for k in kernels)
        prog.notes.append(f"{instr.name}: " + ", ".join(
            f"{k.name} ({k.mode}: " + ", ".join(f"<<<{la.grid}, {la.block}>>>"
                                                 for la in k.launches) + ")" for k in kernels))
        in_slots = [prog.slot[id(o)] for o in operands]
        s = prog.slot[id(instr)]
        tuple_out = instr.shape.is_tuple

        def step(env):
            outs = self.run_kernels(kernels, [env[k] for k in in_slots], instr)
            env[s] = outs if tuple_out else outs[0]
        prog.steps.append(step)
        return True

    def op_kernel_step(self, prog, instr, ops, s) -> bool:
        """gather, scatter, sort, ...: a dedicated kernel (ops.py) when there is one."""
        if op_kernel_reason(instr) is not None:
            return False
        name = f"k{len(self.kernels)}_{instr.name}".replace("-", "_").replace(".", "_")
        kernel = emit_op_kernel(self.ir, name, instr)
        self.kernels.append(kernel)
        prog.kernel_count += len(kernel.launches)
        prog.notes.append(f"{instr.name}: {kernel.name} ({kernel.mode}: " + ", ".join(
            f"<<<{la.grid}, {la.block}>>>" for la in kernel.launches) + ")")
        tuple_out = instr.shape.is_tuple

        def step(env):
            outs = self.run_kernels([kernel], [env[k] for k in ops], instr)
            env[s] = outs if tuple_out else outs[0]
        prog.steps.append(step)
        return True

    def library_step(self, prog, instr, ops, s) -> bool:
        if instr.opcode in OP_KERNEL_OPCODES:
            return self.op_kernel_step(prog, instr, ops, s)
        if instr.opcode != "dot":
            return False
        spec = _gemm_spec(instr)
        if spec is None:
            return False
        prog.kernel_count += 1
        kernel = None
        if spec.dtype in GEMM_TYPES and spec.out_dtype == spec.dtype:
            kernel = emit_gemm_kernel(self.ir, f"k{len(self.kernels)}_gemm", spec)
            self.kernels.append(kernel)
        prog.notes.append(f"{instr.name}: dot as a GEMM {spec}"
                          + (f" (generated fallback {kernel.name})" if kernel else ""))
        a, b = ops

        def step(env):
            out = self.allocate(instr.shape, _label(instr))
            if self.runtime.gemm(spec, env[a], env[b], out):
                pass
            elif kernel is not None:
                launch = kernel.launches[0]
                self.loaded.launch(launch.function, launch.grid, launch.block,
                                   [env[a].ptr, env[b].ptr, out.ptr, 0])
            else:
                out = self.host(instr, [env[a], env[b]])
            env[s] = out
        prog.steps.append(step)
        return True

    def fallback_step(self, prog, instr, ops, s) -> None:
        prog.kernel_count += 1
        why = ""
        if instr.opcode in _KERNEL_OPCODES:
            why = f": {gpu_unsupported_reason(wrap_instruction(instr)[0])}"
        elif instr.opcode in OP_KERNEL_OPCODES:
            why = f": {op_kernel_reason(instr)}"
        prog.notes.append(f"{instr.name}: HOST evaluator ({instr.opcode}{why})")
        prog.steps.append(lambda env: env.__setitem__(s, self.host(instr, [env[o] for o in
                                                                          ops])))

    def _instruction(self, prog: Program, instr: Instruction) -> None:
        before = len(prog.steps)
        counted = counted_loop(instr) if instr.opcode == "while" else None
        if counted is not None:
            body = self.program(instr.called["body"])
            prog.steps.append(counted_loop_step(counted, body, prog.slot[id(instr.operands[0])],
                                                prog.slot[id(instr)], self.read_typed))
            prog.notes.append(f"{instr.name}: while (nested programs; counted loop: its "
                              f"counter, limit and step read once, no copy per iteration)")
        else:
            super()._instruction(prog, instr)
        self.owners.setdefault(id(prog), []).extend([instr] * (len(prog.steps) - before))

    # ------------------------------------------------------------------ running
    def run_kernels(self, kernels, inputs, instr) -> list:
        in_ptrs = [b.ptr for b in inputs]
        outs = []
        t0 = self.runtime.start_timer() if self.debug >= 2 else None
        for kernel in kernels:
            bufs = [self.allocate(s, _label(instr)) for s in kernel.output_shapes]
            scratch = self.runtime.allocate(kernel.scratch_bytes, "reduction partials") \
                if kernel.scratch_bytes else None
            ptrs = in_ptrs + [b.ptr for b in bufs] + [scratch.ptr if scratch else 0]
            if all(s.size for s in kernel.output_shapes):
                for launch in kernel.launches:
                    self.loaded.launch(launch.function, launch.grid, launch.block, ptrs)
            outs += bufs
        if t0 is not None:
            dt = self.runtime.stop_timer(t0)
            nbytes = sum(b.nbytes for b in inputs) + sum(b.nbytes for b in outs)
            print(f"[minijax] {instr.name}: {dt * 1e6:.1f} us, "
                  f"{nbytes / max(dt, 1e-9) / 1e9:.1f} GB/s ({self.runtime.timer})",
                  file=sys.stderr)
        return outs

    def host(self, instr, operands):
        host_ops = [self.to_host(v, op.shape) for v, op in zip(operands, instr.operands)]
        leaves = flatten_value(evaluate_instruction(instr, host_ops))
        bufs = [self.upload(np.asarray(v, dtype=s.dtype).reshape(s.dims), _label(instr))
                for v, s in zip(leaves, instr.shape.flat())]
        if not instr.shape.is_tuple:
            return bufs[0]
        it = iter(bufs)

        def build(s):
            return [build(t) for t in s.tuple_shapes] if s.is_tuple else next(it)
        return build(instr.shape)

    def free_after_last_use(self, prog: Program) -> None:
        """Make `prog` drop each intermediate right after its last reader's step."""
        comp = prog.comp
        position = {id(i): k for k, i in enumerate(comp.instructions)}
        last: dict[int, int] = {}
        for k, instr in enumerate(comp.instructions):
            for op in instr.operands:
                last[id(op)] = k
        dead: dict[int, list[int]] = {}
        for instr in comp.instructions:
            if instr is not comp.root and instr.opcode != "parameter":
                k = last.get(id(instr), position[id(instr)])
                dead.setdefault(k, []).append(prog.slot[id(instr)])
        owners = self.owners.get(id(prog), [])
        if len(owners) != len(prog.steps):
            return
        steps = []
        for n, (step, owner) in enumerate(zip(prog.steps, owners)):
            is_last = n + 1 == len(owners) or owners[n + 1] is not owner
            slots = dead.get(position[id(owner)], []) if is_last else []
            steps.append(_clearing(step, slots) if slots else step)
        prog.steps[:] = steps


def _clearing(step, slots):
    def run(env):
        step(env)
        for d in slots:
            env[d] = None
    return run


class GpuExecutable(Executable):
    """One HLO module planned for a device runtime (see the module docstring)."""

    def __init__(self, module, runtime: DeviceRuntime, debug: int = 0, device=None,
                 buffer_type=None):
        self.module, self.runtime = module, runtime
        self.device, self.buffer_type = device, buffer_type
        self.comp = module.entry
        self.planner = _GpuPlanner(module, runtime, debug)
        self.program = self.planner.program(module.entry)
        self.planner.free_after_last_use(self.program)
        self.kernels = self.planner.kernels
        self.kernel_count = self.program.kernel_count
        self.ir_text = str(self.planner.ir)
        names = [launch.function for k in self.kernels for launch in k.launches]
        if names:
            self.planner.loaded = runtime.load_kernels(self.ir_text, names)

    @property
    def notes(self) -> list[str]:
        """Per instruction of every planned computation: what it runs as."""
        return [n for prog in self.planner.programs.values() for n in prog.notes]

    def execute_buffers(self, args: list[DeviceBuffer]) -> list[DeviceBuffer]:
        """Run on device buffers (one per entry parameter); returns the flat outputs."""
        return _leaves(self.program.run(list(args)))

    def execute(self, args: list) -> list:
        """Run on the backend's buffers (CudaBuffer); returns new buffers of the results."""
        dbufs = [a.dbuf for a in args]
        taken = {id(b) for b in dbufs} | self.planner.constant_ids
        results = []
        for b, s in zip(self.execute_buffers(dbufs), self.comp.root.shape.flat()):
            if id(b) in taken:       # a parameter, a constant or a repeated output: copy
                fresh = self.runtime.allocate(b.nbytes, "output copy")
                self.runtime.copy(fresh, b, b.nbytes)
                b = fresh
            taken.add(id(b))
            results.append(self.buffer_type(self.device, s.dims, s.dtype, b, self.runtime))
        return results

    def execute_host(self, args: list[np.ndarray]) -> list[np.ndarray]:
        """Run on host arrays (uploaded, outputs downloaded)."""
        bufs = [self.planner.upload(np.asarray(a), f"argument {n}") for n, a in enumerate(args)]
        outs = self.execute_buffers(bufs)
        return [self.runtime.download(b, s.dims, s.dtype)
                for b, s in zip(outs, self.comp.root.shape.flat())]

    def as_text(self) -> str:
        """The module's HLO and, per instruction, the kernels/GEMM/host step it runs as."""
        return module_to_text(self.module) + "\n// GPU steps:\n" + "\n".join(
            "//   " + n for n in self.notes)

    def ptx(self) -> str:
        """The PTX of the module's kernels for the runtime's architecture."""
        # Lazy: llvmlite.binding and ptxas load only when PTX text is asked for.
        from minijax.compiler.codegen.gpu.ptx import compile_ptx
        return compile_ptx(self.ir_text, self.runtime.arch) if self.kernels else ""

    def host_steps(self) -> list[str]:
        """Notes of the steps that run on the host evaluator."""
        return [n for n in self.notes if "HOST" in n]


__all__ = ["GpuExecutable", "gpu_opcode_support", "gpu_unsupported_reason"]
