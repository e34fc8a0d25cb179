"""A whole optimized HLO module as one native entry point, for ahead-of-time export.

`emit_program(module, name, hoisted, align)` returns LLVM IR defining

    void NAME_run(i8 **inputs, i8 **outputs, i8 *temp)
    i64  NAME_temp_size()

The entry computation runs as straight-line calls of generated kernels (the loop emitter's
fusions, `dot` as a loop nest from dot_loops.py) on buffers carved out of `temp` at fixed
offsets; row-major reshapes alias their operand, constants (and the lowering's hoisted
constants) become read-only globals, and results are written straight into `outputs`
where possible, otherwise copied there at the end. Anything else (control flow, library
calls, evaluator-only opcodes) raises NotImplementedError naming the operation.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from minijax.compiler.codegen.cpu.dot_loops import emit_dot_kernel
from minijax.compiler.codegen.cpu.loops import emit_kernel
from minijax.compiler.codegen.elemental import ELEMENTWISE, INDEXING, unsupported_reason
from minijax.compiler.codegen.kernel_plan import split_roots, wrap_instruction
from minijax.compiler.codegen.llvm_types import I8, I64, storage_type, value_type

_KERNEL_OPCODES = (ELEMENTWISE | INDEXING | {"reduce"}) - {"reshape", "bitcast"}
_PASS_THROUGH = ("after-all", "optimization-barrier", "copy-start", "copy-done")
_I8P = I8.as_pointer()


def _unsupported(instr, why: str):
    return NotImplementedError(
        f"minijax.aot.export: cannot export operation '{instr.opcode}' ({instr.name}): {why}. "
        "Only fused elementwise/indexing/reduction kernels and dot can be exported "
        "(no control flow, sort, convolution, gather/scatter library calls or custom calls).")


def _row_major(shape) -> bool:
    return shape.layout is None or shape.minor_to_major == tuple(range(shape.rank - 1, -1, -1))


class _ProgramEmitter:
    def __init__(self, module, name: str, hoisted, align: int):
        self.hlo = module
        self.name = name
        self.hoisted = hoisted
        self.align = align
        self.ir = ir.Module(name=name)
        self.temp_bytes = 0
        self.kernels = 0
        self.globals = 0
        fn_ty = ir.FunctionType(ir.VoidType(), [_I8P.as_pointer(), _I8P.as_pointer(), _I8P])
        self.fn = ir.Function(self.ir, fn_ty, f"{name}_run")
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.inputs, self.outputs, self.temp = self.fn.args

    # ----------------------------------------------------------------- buffers
    def _temp(self, shape):
        off = -(-self.temp_bytes // self.align) * self.align
        self.temp_bytes = off + max(shape.nbytes, 1)
        return self.b.gep(self.temp, [ir.Constant(I64, off)], inbounds=True)

    def _global(self, data: bytes):
        ty = ir.ArrayType(I8, max(len(data), 1))
        g = ir.GlobalVariable(self.ir, ty, name=f"{self.name}_const{self.globals}")
        self.globals += 1
        g.initializer = ir.Constant(ty, bytearray(data or b"\0"))
        g.global_constant = True
        g.linkage = "internal"
        g.align = self.align
        return self.b.bitcast(g, _I8P)

    def _slot(self, array, k):
        return self.b.load(self.b.gep(array, [ir.Constant(I64, k)], inbounds=True))

    def _call_kernel(self, symbol, pointers, outer):
        b = self.b
        arr = b.alloca(ir.ArrayType(_I8P, max(len(pointers), 1)))
        for k, p in enumerate(pointers):
            b.store(p, b.gep(arr, [ir.Constant(I64, 0), ir.Constant(I64, k)]))
        if outer > 0:
            fn = self.ir.get_global(symbol)
            fn.linkage = "internal"
            b.call(fn, [b.bitcast(arr, _I8P.as_pointer()), ir.Constant(I64, 0),
                        ir.Constant(I64, outer)])

    # ----------------------------------------------------------------- program
    def emit(self):
        entry = self.hlo.entry
        root = entry.root
        params = sorted(entry.parameters, key=lambda p: p.parameter_number)
        n_user = len(params) - len(self.hoisted)
        in_shapes = [p.shape for p in params[:n_user]]
        roots = list(root.operands) if root.opcode == "tuple" else [root]
        out_shapes = [r.shape for r in roots]
        if any(s.is_tuple for s in out_shapes):
            raise _unsupported(root, "nested tuple results")
        counts: dict[int, int] = {}
        for r in roots:
            counts[id(r)] = counts.get(id(r), 0) + 1
        direct = {id(r): k for k, r in enumerate(roots) if counts[id(r)] == 1}
        values: dict[int, list] = {}
        written = set()
        for instr in entry.instructions:
            if instr is root and root.opcode == "tuple":
                continue
            values[id(instr)] = self._instruction(instr, values, direct, written)
        b = self.b
        for k, r in enumerate(roots):
            if k in written:
                continue
            memcpy = self.ir.declare_intrinsic("llvm.memcpy", [_I8P, _I8P, I64])
            b.call(memcpy, [self._slot(self.outputs, k), values[id(r)][0],
                            ir.Constant(I64, r.shape.nbytes), ir.Constant(ir.IntType(1), 0)])
        b.ret_void()
        size_fn = ir.Function(self.ir, ir.FunctionType(I64, []), f"{self.name}_temp_size")
        ir.IRBuilder(size_fn.append_basic_block("entry")).ret(
            ir.Constant(I64, self.temp_bytes))
        return str(self.ir), self.temp_bytes, in_shapes, out_shapes

    def _outputs_for(self, instr, direct, written):
        """Output buffers for instr's leaves: the user's output buffer when it is a result."""
        leaves = instr.shape.flat()
        k = direct.get(id(instr))
        if k is not None and not instr.shape.is_tuple:
            written.add(k)
            return [self._slot(self.outputs, k)]
        return [self._temp(s) for s in leaves]

    def _instruction(self, instr, values, direct, written):
        op = instr.opcode
        operands = [values[id(o)] for o in instr.operands]
        if op == "parameter":
            n = instr.parameter_number
            n_user = len(self.hlo.entry.parameters) - len(self.hoisted)
            if n < n_user:
                return [self._slot(self.inputs, n)]
            data = np.ascontiguousarray(self.hoisted[n - n_user], dtype=instr.shape.dtype)
            return [self._global(data.tobytes())]
        if op == "constant":
            if instr.shape.is_tuple:
                raise _unsupported(instr, "tuple constants")
            data = np.ascontiguousarray(np.asarray(instr.literal, dtype=instr.shape.dtype))
            return [self._global(data.tobytes())]
        if op == "tuple":
            return [leaf for vals in operands for leaf in vals]
        if op == "get-tuple-element":
            shapes = instr.operands[0].shape.tuple_shapes
            start = sum(len(s.flat()) for s in shapes[:instr.attrs["index"]])
            return operands[0][start:start + len(instr.shape.flat())]
        if op in ("reshape", "bitcast") and _row_major(instr.shape) and _row_major(
                instr.operands[0].shape) and not instr.shape.is_tuple:
            return operands[0]
        if op in _PASS_THROUGH:
            return operands[0] if operands else []
        if op == "fusion":
            return self._fused(instr, instr.called["calls"], instr.operands, values, direct,
                               written)
        if op in _KERNEL_OPCODES:
            comp, ops = wrap_instruction(instr)
            return self._fused(instr, comp, ops, values, direct, written)
        if op == "dot":
            return self._dot(instr, operands, direct, written)
        raise _unsupported(instr, "it has no generated-code implementation")

    def _fused(self, instr, comp, operands, values, direct, written):
        reason = unsupported_reason(comp)
        if reason is not None:
            raise _unsupported(instr, f"the fused computation needs {reason}")
        ins = [values[id(o)][0] for o in operands]
        outs = self._outputs_for(instr, direct, written)
        k = 0
        for part in split_roots(comp) or [comp]:
            symbol = f"{self.name}_k{self.kernels}"
            self.kernels += 1
            spec = emit_kernel(self.ir, symbol, part)
            n_out = len(spec.output_shapes)
            self._call_kernel(symbol, ins + outs[k:k + n_out], spec.outer)
            k += n_out
        return outs

    def _dot(self, instr, operands, direct, written):
        for s in [instr.shape] + [o.shape for o in instr.operands]:
            et = s.element_type
            if et not in ("f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64") \
                    or storage_type(et) != value_type(et) or not _row_major(s):
                raise _unsupported(instr, f"dot on {et} (or a non-row-major layout)")
        outs = self._outputs_for(instr, direct, written)
        symbol = f"{self.name}_k{self.kernels}"
        self.kernels += 1
        outer = emit_dot_kernel(self.ir, symbol, instr)
        self._call_kernel(symbol, [operands[0][0], operands[1][0], outs[0]], outer)
        return outs


def emit_program(module, name: str, hoisted, align: int = 64):
    """(LLVM IR text, temp bytes, input shapes, output shapes) for an optimized module."""
    return _ProgramEmitter(module, name, hoisted, align).emit()
