"""A compiled HLO module on a GPU: device buffers and a list of steps over them.

`GpuExecutable(module, runtime)` plans the entry computation once:
- fusions and unfused elementwise/indexing/reduce instructions become generated kernels
  (compiler/codegen/gpu), all in one LLVM module per HLO module, loaded once (PTX/cubin
  cached per architecture, see driver_runtime.py);
- dot in the canonical [B, M, K] x [B, K, N] form (passes/dot_canonicalization.py) runs as
  a GEMM (cuBLAS on a GPU), reading transposed operands through trans flags;
- row-major reshapes/bitcasts and tuples alias their operands' buffers (no copy);
- everything else runs on the host evaluator: its operands are copied to the host and the
  result back (`as_text()` marks each such HOST step; sort, gather, scatter, while, ...
  have no device kernels yet).
Buffers are reference counted: an intermediate goes back to the caching allocator right
after its last reader. `execute` takes and returns numpy arrays (uploading and downloading
them); `execute_buffers` takes and returns device buffers.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from minijax.backends.base import Executable
from minijax.backends.cuda.device_runtime import DeviceBuffer, DeviceRuntime, GemmSpec
from minijax.compiler.codegen.elemental import ELEMENTWISE, INDEXING, unsupported_reason
from minijax.compiler.codegen.gpu import nvvm
from minijax.compiler.codegen.gpu.kernels import emit_gpu_kernel
from minijax.compiler.codegen.kernel_plan import split_roots, wrap_instruction
from minijax.compiler.codegen.target import NVPTX_TARGET
from minijax.compiler.evaluator import evaluate_instruction, flatten_value
from minijax.compiler.hlo.ir import Computation, Instruction

_KERNEL_OPCODES = (ELEMENTWISE | INDEXING | {"reduce"}) - {"reshape", "bitcast"}
_ALIAS = {"reshape", "bitcast"}
_NO_OP = {"after-all", "optimization-barrier"}


def _row_major(shape) -> bool:
    return shape.layout is None or shape.minor_to_major == tuple(range(shape.rank - 1, -1, -1))


def gpu_unsupported_reason(comp: Computation) -> str | None:
    """Why `comp` cannot become GPU kernels (None if it can)."""
    reason = unsupported_reason(comp, target=NVPTX_TARGET)
    if reason is None:
        for instr in comp.instructions:
            if any(leaf.element_type == "bf16" for leaf in instr.shape.flat()):
                return "bf16 (kernels store it as f32)"
    return reason


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
    if et not in ("f16", "bf16", "f32", "f64") or rhs.shape.element_type != et:
        return None
    trans_a, trans_b = lc[0] == nb, rc[0] == nb + 1
    ld, rd = lhs.shape.dims, rhs.shape.dims
    m, k = (ld[nb + 1], ld[nb]) if trans_a else (ld[nb], ld[nb + 1])
    n = rd[nb] if trans_b else rd[nb + 1]
    batch = int(np.prod(ld[:nb])) if nb else 1
    return GemmSpec(batch, m, n, k, trans_a, trans_b, et, instr.shape.element_type)


class GpuExecutable(Executable):
    """The steps of one HLO module's entry computation on one device runtime."""

    def __init__(self, module, runtime: DeviceRuntime, debug: int = 0, device=None,
                 buffer_type=None):
        self.module, self.runtime, self.debug = module, runtime, debug
        self.device, self.buffer_type = device, buffer_type
        self.comp = module.entry
        self.ir = nvvm.new_module(module.name)
        self.kernels: list = []
        self.notes: list[str] = []
        self.steps: list = []
        self.constants: dict[int, object] = {}
        self.slot = {id(i): k for k, i in enumerate(self.comp.instructions)}
        self.kernel_count = 0
        self._plan()
        self.ir_text = str(self.ir)
        names = [launch.function for k in self.kernels for launch in k.launches]
        self.loaded = runtime.load_kernels(self.ir_text, names) if names else None

    # ------------------------------------------------------------------ planning
    def _plan(self) -> None:
        comp = self.comp
        last_use: dict[int, int] = {}
        for k, instr in enumerate(comp.instructions):
            for op in instr.operands:
                last_use[id(op)] = k
        self.dies_after: list[list[int]] = [[] for _ in comp.instructions]
        for k, instr in enumerate(comp.instructions):
            if instr is comp.root or instr.opcode == "parameter":
                continue
            self.dies_after[last_use.get(id(instr), k)].append(k)
        for k, instr in enumerate(comp.instructions):
            self.steps.append(self._step(instr, k))

    def _step(self, instr: Instruction, k: int):
        op = instr.opcode
        ops = [self.slot[id(o)] for o in instr.operands]
        if op == "parameter":
            return None
        if op == "constant":
            arr = np.ascontiguousarray(np.asarray(instr.literal, dtype=instr.shape.dtype)
                                       .reshape(instr.shape.dims))
            buf = self.runtime.upload(arr, f"constant {instr.name}")
            buf.owned = False
            self.constants[k] = buf
            return ("value", buf)
        if op == "tuple":
            return ("tuple", ops)
        if op == "get-tuple-element":
            return ("gte", ops[0], instr.attrs["index"])
        if op in _ALIAS and _row_major(instr.shape) and _row_major(instr.operands[0].shape):
            return ("alias", ops[0])
        if op in _NO_OP:
            return ("alias", ops[0]) if ops else ("value", None)
        if op == "fusion":
            step = self._kernel_step(instr.called["calls"], instr.operands, instr)
            if step is not None:
                return step
        elif op in _KERNEL_OPCODES:
            comp, operands = wrap_instruction(instr)
            step = self._kernel_step(comp, operands, instr)
            if step is not None:
                return step
        if op == "dot":
            spec = _gemm_spec(instr)
            if spec is not None:
                self.kernel_count += 1
                self.notes.append(f"{instr.name}: dot as a GEMM {spec}")
                return ("gemm", spec, ops, instr)
        self.kernel_count += 1
        self.notes.append(f"{instr.name}: HOST evaluator ({op})")
        return ("host", instr, ops)

    def _kernel_step(self, comp, operands, instr):
        reason = gpu_unsupported_reason(comp)
        if reason is not None:
            self.notes.append(f"{instr.name}: no GPU kernel ({reason})")
            return None
        parts = split_roots(comp) or [comp]
        kernels = []
        for n, part in enumerate(parts):
            name = f"k{len(self.kernels)}_{instr.name}".replace("-", "_").replace(".", "_")
            kernel = emit_gpu_kernel(self.ir, name if len(parts) == 1 else f"{name}_{n}", part)
            self.kernels.append(kernel)
            kernels.append(kernel)
        self.kernel_count += sum(len(k.launches) for k in kernels)
        self.notes.append(f"{instr.name}: " + ", ".join(
            f"{k.name} ({k.mode}: " + ", ".join(f"<<<{la.grid}, {la.block}>>>"
                                                 for la in k.launches) + ")" for k in kernels))
        return ("kernel", kernels, [self.slot[id(o)] for o in operands], instr)

    # ------------------------------------------------------------------ running
    def execute(self, args: list) -> list:
        """Run on the backend's buffers (CudaBuffer); returns new buffers of the results."""
        outs = self.execute_buffers([a.dbuf for a in args])
        shapes = self.comp.root.shape.flat()
        results, seen = [], set()
        for b, s in zip(outs, shapes):
            if not b.owned or id(b) in seen:     # a parameter, constant or repeated output
                fresh = self.runtime.allocate(b.nbytes, "output copy")
                self.runtime.copy(fresh, b, b.nbytes)
                b = fresh
            seen.add(id(b))
            results.append(self.buffer_type(self.device, s.dims, s.dtype, b, self.runtime))
        return results

    def execute_host(self, args: list[np.ndarray]) -> list[np.ndarray]:
        """Run on host arrays (uploaded, outputs downloaded)."""
        rt = self.runtime
        bufs = [rt.upload(np.asarray(a), f"argument {n}") for n, a in enumerate(args)]
        try:
            outs = self.execute_buffers(bufs)
            shapes = self.comp.root.shape.flat()
            results = [rt.download(b, s.dims, s.dtype) for b, s in zip(outs, shapes)]
        finally:
            for b in bufs:
                b.release()
        for b in set(outs):
            if b.owned:
                b.release()
        return results

    def execute_buffers(self, args: list[DeviceBuffer]) -> list[DeviceBuffer]:
        """Run on device buffers (one per entry parameter); returns the flat outputs.
        Returned buffers marked `owned` belong to the caller."""
        env: list = [None] * len(self.comp.instructions)
        for p, buf in zip(self.comp.parameters, args):
            buf.refs += 1
            env[self.slot[id(p)]] = buf
        for k, (instr, step) in enumerate(zip(self.comp.instructions, self.steps)):
            if step is not None:
                env[k] = self._run(step, env, instr)
                for leaf in _leaves(env[k]):
                    if isinstance(leaf, DeviceBuffer):
                        leaf.refs += 1
            for dead in self.dies_after[k]:
                self._drop(env[dead])
                env[dead] = None
        root = env[self.slot[id(self.comp.root)]]
        outs = _leaves(root)
        for p in self.comp.parameters:
            buf = env[self.slot[id(p)]]
            if buf is not None:
                buf.refs -= 1
        for b in outs:
            b.refs -= 1
        return outs

    @staticmethod
    def _drop(value) -> None:
        for leaf in _leaves(value):
            if isinstance(leaf, DeviceBuffer):
                leaf.refs -= 1
                if leaf.refs <= 0 and leaf.owned:
                    leaf.release()

    def _run(self, step, env, instr):
        kind = step[0]
        if kind == "value":
            return step[1]
        if kind == "tuple":
            return [env[s] for s in step[1]]
        if kind == "gte":
            return env[step[1]][step[2]]
        if kind == "alias":
            return env[step[1]]
        if kind == "kernel":
            return self._run_kernels(step[1], [env[s] for s in step[2]], instr)
        if kind == "gemm":
            spec, ops = step[1], step[2]
            out = self.runtime.allocate(instr.shape.nbytes, _label(instr))
            if self.runtime.gemm(spec, env[ops[0]], env[ops[1]], out):
                return out
            out.release()
            return self._host(instr, [env[s] for s in ops])
        return self._host(instr, [env[s] for s in step[2]])

    def _run_kernels(self, kernels, inputs, instr):
        rt = self.runtime
        in_ptrs = [b.ptr for b in inputs]
        outs = []
        t0 = time.perf_counter() if self.debug >= 2 else 0.0
        for kernel in kernels:
            bufs = [rt.allocate(s.nbytes, _label(instr)) for s in kernel.output_shapes]
            scratch = rt.allocate(kernel.scratch_bytes, "scratch") if kernel.scratch_bytes \
                else None
            ptrs = in_ptrs + [b.ptr for b in bufs] + [scratch.ptr if scratch else 0]
            if all(s.size for s in kernel.output_shapes):
                for launch in kernel.launches:
                    self.loaded.launch(launch.function, launch.grid, launch.block, ptrs)
            if scratch is not None:
                rt.synchronize()
                scratch.release()
            outs += bufs
        if self.debug >= 2:
            rt.synchronize()
            dt = time.perf_counter() - t0
            nbytes = sum(b.nbytes for b in inputs) + sum(b.nbytes for b in outs)
            print(f"[minijax] {instr.name}: {dt * 1e6:.1f} us, {nbytes / max(dt, 1e-9) / 1e9:.1f}"
                  f" GB/s", file=sys.stderr)
        return outs if instr.shape.is_tuple else outs[0]

    def _host(self, instr, operands):
        rt = self.runtime
        host_ops = [self._to_host(v, op.shape) for v, op in zip(operands, instr.operands)]
        result = evaluate_instruction(instr, host_ops)
        leaves = flatten_value(result)
        bufs = [rt.upload(np.ascontiguousarray(np.asarray(v, dtype=s.dtype).reshape(s.dims)),
                          _label(instr)) for v, s in zip(leaves, instr.shape.flat())]
        if not instr.shape.is_tuple:
            return bufs[0]
        return _nest(bufs, instr.shape)

    def _to_host(self, value, shape):
        if shape.is_tuple:
            return tuple(self._to_host(v, s) for v, s in zip(value, shape.tuple_shapes))
        return self.runtime.download(value, shape.dims, shape.dtype)

    def as_text(self) -> str:
        """The module's HLO and, per instruction, the kernels/GEMM/host step it runs as."""
        from minijax.compiler.hlo.printer import module_to_text
        return module_to_text(self.module) + "\n// GPU steps:\n" + "\n".join(
            "//   " + n for n in self.notes)

    def ptx(self) -> str:
        """The PTX of the module's kernels for the runtime's architecture."""
        from minijax.compiler.codegen.gpu.ptx import compile_ptx
        return compile_ptx(self.ir_text, self.runtime.arch) if self.kernels else ""

    def host_steps(self) -> list[str]:
        """Notes of the steps that run on the host evaluator."""
        return [n for n in self.notes if "HOST" in n]


def _nest(flat: list, shape):
    it = iter(flat)

    def build(s):
        return [build(t) for t in s.tuple_shapes] if s.is_tuple else next(it)
    return build(shape)


def _label(instr) -> str:
    meta = instr.metadata
    where = ""
    if meta.get("source_file"):
        where = f" at {os.path.basename(str(meta['source_file']))}:{meta.get('source_line')}"
    return f"{instr.name} {instr.shape.element_type}{list(instr.shape.dims)}{where}"


__all__ = ["GpuExecutable", "gpu_unsupported_reason"]
