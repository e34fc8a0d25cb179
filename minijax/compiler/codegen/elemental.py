"""The elemental emitter: LLVM IR computing one output element of each HLO instruction.

`ElementalEmitter.emit(instr, index)` returns the LLVM value of `instr` at a multi-dimensional
`Index`, recursively emitting its operands at the indices they are read at: elementwise ops
pass the index through, broadcast/transpose/slice/pad/concatenate/reverse/reshape/
dynamic-slice/iota turn into index arithmetic, constants into loads from module globals.
Values are cached per (instruction, index) so a DAG is emitted once per element.

Nothing here knows the target: the loop emitter (CPU) or a grid mapping (GPU) decides which
index each thread computes, and how parameters are read (`load_param`). Code is scalar; the
CPU loop emitter relies on LLVM's loop vectorizer, which the emitted code is written for
(branch-free selects; clamped, always in-bounds loads).
"""

from __future__ import annotations

import contextlib

import llvmlite.ir as ir
import numpy as np

from minijax.compiler.codegen import gather, math_approx, target, windows
from minijax.compiler.codegen.float16 import (
    bf16_bits,
    bf16_from_bits,
    f32_to_f16,
    float_convert,
    round_to_bf16,
)
from minijax.compiler.codegen.index import Index, scalar_index, strides_of  # noqa: F401
from minijax.compiler.codegen.int_arith import int_divide, int_power, pred_op, total_order_key
from minijax.compiler.codegen.llvm_types import (
    F16,
    F32,
    I1,
    I64,
    SUPPORTED_TYPES,
    bit_width,
    call_intrinsic,
    const,
    emit_counted_loop,
    is_float,
    is_signed,
    storage_type,
    value_type,
)
from minijax.compiler.hlo import opcodes
from minijax.compiler.hlo.ir import Computation, Instruction, Shape

# What the emitter generates, from the opcode table (hlo/opcodes.py): every elementwise and
# data-movement opcode except complex numbers and reduce-precision.
_NOT_EMITTED = {"real", "imag", "complex", "reduce-precision"}
ELEMENTWISE_UNARY = set(opcodes.select(family="elementwise", arity=1)) - _NOT_EMITTED
ELEMENTWISE_BINARY = set(opcodes.select(family="elementwise", arity=2)) - _NOT_EMITTED
ELEMENTWISE = ELEMENTWISE_UNARY | ELEMENTWISE_BINARY | {"select", "clamp"}
INDEXING = set(opcodes.select(family="data-movement"))
WINDOWED = {"reduce-window", "select-and-scatter"}
SUPPORTED_OPCODES = ELEMENTWISE | INDEXING | WINDOWED | {"gather", "parameter", "constant",
                                                         "reduce", "tuple"}


def unsupported_reason(comp: Computation, allow_reduce: bool = True) -> str | None:
    """Why `comp` cannot be emitted elementally (None if it can)."""
    for instr in comp.instructions:
        if instr.opcode not in SUPPORTED_OPCODES:
            return f"opcode {instr.opcode}"
        if instr.opcode == "tuple" and instr is not comp.root:
            return "tuple not at the root"
        if (instr.opcode == "reduce" or instr.opcode in WINDOWED) and not allow_reduce:
            return instr.opcode
        if instr.opcode == "reduce" or instr.opcode in WINDOWED:
            for name, body in instr.called.items():
                inner = unsupported_reason(body, allow_reduce=False)
                if inner:
                    return f"{instr.opcode} {name} computation: {inner}"
        if instr.opcode in WINDOWED:
            inner = windows.unsupported_window_reason(instr)
            if inner:
                return inner
        if instr.opcode == "gather":
            inner = gather.unsupported_gather_reason(instr)
            if inner:
                return inner
        for leaf in instr.shape.flat():
            if leaf.element_type not in SUPPORTED_TYPES:
                return f"element type {leaf.element_type}"
        if instr.opcode == "bitcast-convert":
            src, dst = instr.operands[0].shape.element_type, instr.shape.element_type
            if "pred" in (src, dst) or bit_width(
                    storage_type(src)) != bit_width(storage_type(dst)):
                return "bitcast-convert between widths"
    return None


def _intrinsic(b: ir.IRBuilder, name: str, args: list, **kwargs):
    """Call LLVM intrinsic `name` as the current target names it (codegen/target.py)."""
    return call_intrinsic(b, target.current().math_function(name), args, **kwargs)


class ElementalEmitter:
    """Emits per-element LLVM IR for the instructions of one computation.

    load_param(instr, index) -> value reads parameter `instr` at `index`; alternatively
    `param_values` binds parameters to ready values (used for reduce computations).
    `alloca(type)` makes a stack slot (callers put it in the entry block).
    """

    def __init__(self, builder: ir.IRBuilder, comp: Computation, load_param=None,
                 param_values=None, alloca=None):
        self.b = builder
        self.alloca = alloca or builder.alloca
        self.comp = comp
        self.load_param = load_param
        self.param_values = param_values
        self.cache: dict = {}
        self.bound: dict[int, object] = {}  # id(instr) -> its value at every index
        self._globals: dict[int, ir.GlobalVariable] = {}

    # ---------------------------------------------------------------- plumbing
    @contextlib.contextmanager
    def scope(self):
        """Forget values cached while inside (e.g. values computed in a loop body)."""
        before = set(self.cache)
        try:
            yield
        finally:
            for k in [k for k in self.cache if k not in before]:
                del self.cache[k]

    def bind(self, instr: Instruction, value) -> None:
        """Use `value` for `instr` at every index until unbound (a row fusion's values for
        the current row, see cpu/row_loops.py)."""
        self.bound[id(instr)] = value

    def bind_at(self, instr: Instruction, index: Index, value) -> None:
        """Use `value` for `instr` at exactly `index` (that Index object, which operands of the
        same shape share) until the enclosing scope() ends; reads at other positions (through
        reverse, slice, transpose, ...) still compute the value there."""
        self.cache[(instr, index)] = value

    def unbind(self, instrs) -> None:
        """Forget the bound values of the instructions in `instrs`."""
        for instr in instrs:
            self.bound.pop(id(instr), None)

    def emit(self, instr: Instruction, index: Index):
        """The value of `instr` at `index` (a list of values for a tuple-shaped reduce)."""
        if self.bound and id(instr) in self.bound:
            return self.bound[id(instr)]
        # A rank-0 value is the same at every index; keying it by instruction alone keeps
        # shared scalar subexpressions from being re-emitted once per use (exponential).
        key = (instr, None) if instr.shape.rank == 0 and not instr.shape.is_tuple else (
            instr, index)
        hit = self.cache.get(key)
        if hit is None:
            hit = self._emit(instr, index)
            self.cache[key] = hit
        return hit

    def emit_scalar_computation(self, comp: Computation, args: list) -> list:
        """Apply a scalar computation (a reduce's to_apply) to values; returns its outputs."""
        sub = ElementalEmitter(self.b, comp, param_values=args, alloca=self.alloca)
        root = comp.root
        if root.opcode == "tuple":
            return [sub.emit(op, scalar_index(op.shape)) for op in root.operands]
        return [sub.emit(root, scalar_index(root.shape))]

    def _operand(self, instr, i, index: Index):
        op = instr.operands[i]
        if op.shape.rank == 0:
            return self.emit(op, scalar_index(op.shape))
        return self.emit(op, index.for_shape(self.b, op.shape))

    def _emit(self, instr: Instruction, index: Index):
        op = instr.opcode
        b = self.b
        if op == "parameter":
            if self.param_values is not None:
                return self.param_values[instr.parameter_number]
            return self.load_param(instr, index)
        if op == "constant":
            return self._constant(instr, index)
        if op in ELEMENTWISE:
            ops = [self._operand(instr, i, index) for i in range(len(instr.operands))]
            return self._elementwise(instr, ops)
        if op == "reduce":
            return self._inline_reduce(instr, index)
        method = getattr(self, "_" + op.replace("-", "_"), None)
        if method is None:
            raise NotImplementedError(f"elemental emitter: no rule for {op}")
        del b
        return method(instr, index)

    # ---------------------------------------------------------------- leaves
    def _constant(self, instr, index):
        et = instr.shape.element_type
        lit = np.asarray(instr.literal)
        if lit.size == 1:
            return self._scalar_const(et, lit.reshape(()).item())
        gv = self._globals.get(id(instr))
        if gv is None:
            sty = storage_type(et)
            flat = np.ascontiguousarray(
                lit.astype(instr.shape.dtype).reshape(instr.shape.dims)).reshape(-1)
            if et == "bf16":  # stored as its 16 bits
                values = flat.view(np.int16).tolist()
            else:
                values = [self._scalar_const(et, v).constant if et != "pred" else int(bool(v))
                          for v in flat.tolist()]
            arr_ty = ir.ArrayType(sty, len(values))
            module = self.b.module
            gv = ir.GlobalVariable(module, arr_ty, module.get_unique_name("const"))
            gv.global_constant = True
            gv.linkage = "internal"
            gv.initializer = ir.Constant(arr_ty, [ir.Constant(sty, v) for v in values])
            self._globals[id(instr)] = gv
        lin = index.for_shape(self.b, instr.shape).get_linear(self.b)
        ptr = self.b.gep(gv, [const(I64, 0), lin], inbounds=True)
        return self.to_value(self.b.load(ptr), et)

    @staticmethod
    def _scalar_const(et, v):
        ty = value_type(et)
        if et == "pred":
            return ir.Constant(I1, int(bool(v)))
        if is_float(et):
            return ir.Constant(ty, float(np.asarray(v, np.float64)))
        return const(ty, int(v))

    def to_value(self, stored, et):
        """Convert a loaded storage value to its compute type (pred: i8 -> i1)."""
        if et == "pred":
            return self.b.icmp_unsigned("!=", stored, const(stored.type, 0))
        if et == "bf16":
            return bf16_from_bits(self.b, stored)
        return stored

    def to_storage(self, value, et):
        """Convert a computed value to its storage type (pred: i1 -> i8)."""
        if et == "pred":
            return self.b.zext(value, storage_type(et))
        if et == "bf16":
            return bf16_bits(self.b, value)
        return value

    # ---------------------------------------------------------------- elementwise
    def _elementwise(self, instr, ops):
        op = instr.opcode
        src_et = instr.operands[0].shape.element_type
        if op == "select":
            return self.b.select(ops[0], ops[1], ops[2])
        if op == "clamp":
            lo, x, hi = ops
            return self._minmax("minimum", self._minmax("maximum", x, lo, src_et), hi, src_et)
        if op == "compare":
            return self._compare(instr, ops[0], ops[1], src_et)
        if op == "convert":
            return convert(self.b, ops[0], src_et, instr.shape.element_type)
        if op == "bitcast-convert":
            return self._bitcast_convert(ops[0], src_et, instr.shape.element_type)
        if op == "copy":
            return ops[0]
        if is_float(src_et):
            out = self._float_op(op, ops, src_et)
            # bf16 is computed in float: every operation rounds its result (as XLA).
            return round_to_bf16(self.b, out) if instr.shape.element_type == "bf16" else out
        return self._int_op(op, ops, src_et)

    def _bitcast_convert(self, v, src, dst):
        if src == "bf16":
            v = bf16_bits(self.b, v)
        if dst == "bf16":
            return bf16_from_bits(self.b, self.b.bitcast(v, storage_type(dst)))
        return self.b.bitcast(v, value_type(dst))

    def _compare(self, instr, x, y, et):
        direction = instr.attrs.get("direction", "EQ")
        sym = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}[direction]
        if is_float(et):
            if instr.attrs.get("comparison_type") == "TOTALORDER":
                x, y = total_order_key(self.b, x), total_order_key(self.b, y)
                return self.b.icmp_signed(sym, x, y)
            if sym == "!=":
                return self.b.fcmp_unordered("!=", x, y)
            return self.b.fcmp_ordered(sym, x, y)
        if is_signed(et):
            return self.b.icmp_signed(sym, x, y)
        return self.b.icmp_unsigned(sym, x, y)

    def _minmax(self, op, x, y, et):
        b = self.b
        if is_float(et):
            return _intrinsic(b, "llvm." + op, [x, y])
        cmp = b.icmp_signed if is_signed(et) else b.icmp_unsigned
        return b.select(cmp(">" if op == "maximum" else "<", x, y), x, y)

    def _float_op(self, op, ops, et):
        b = self.b
        x = ops[0]
        simple = {"add": b.fadd, "subtract": b.fsub, "multiply": b.fmul, "divide": b.fdiv,
                  "remainder": b.frem}
        if op in simple:
            return simple[op](x, ops[1])
        if op in ("maximum", "minimum"):
            return self._minmax(op, x, ops[1], et)
        if op == "negate":
            return b.fneg(x)
        intrinsics = {"abs": "llvm.fabs", "sqrt": "llvm.sqrt", "floor": "llvm.floor",
                      "ceil": "llvm.ceil", "round-nearest-afz": "llvm.round",
                      "round-nearest-even": "llvm.roundeven"}
        if op in intrinsics:
            return _intrinsic(b, intrinsics[op], [x])
        if op == "rsqrt":
            return b.fdiv(const(x.type, 1.0), _intrinsic(b, "llvm.sqrt", [x]))
        if op == "sign":
            pos = b.select(b.fcmp_ordered(">", x, const(x.type, 0.0)), const(x.type, 1.0), x)
            return b.select(b.fcmp_ordered("<", x, const(x.type, 0.0)), const(x.type, -1.0), pos)
        if op == "is-finite":
            ax = _intrinsic(b, "llvm.fabs", [x])
            return b.fcmp_ordered("<", ax, const(x.type, float("inf")))
        fn = math_approx.UNARY.get(op) or math_approx.BINARY.get(op)
        if fn is None:
            raise NotImplementedError(f"elemental emitter: {op} on {et}")
        if x.type == F16:  # compute half precision math in float32
            args = [b.fpext(v, F32) for v in ops]
            return f32_to_f16(b, fn(b, *args))
        return fn(b, *ops)

    def _int_op(self, op, ops, et):
        b = self.b
        x = ops[0]
        if et == "pred":
            value = pred_op(b, op, ops)
            if value is not None:
                return value
        ty = x.type
        signed = is_signed(et)
        bits = bit_width(ty)
        simple = {"add": b.add, "subtract": b.sub, "multiply": b.mul, "and": b.and_,
                  "or": b.or_, "xor": b.xor}
        if op in simple:
            return simple[op](x, ops[1])
        if op in ("maximum", "minimum"):
            return self._minmax(op, x, ops[1], et)
        if op == "not":
            return b.not_(x)
        if op == "negate":
            return b.neg(x)
        if op == "abs":
            return b.select(b.icmp_signed("<", x, const(ty, 0)), b.neg(x), x) if signed else x
        if op == "sign":
            zero = const(ty, 0)
            if not signed:
                return b.zext(b.icmp_unsigned("!=", x, zero), ty)
            pos = b.zext(b.icmp_signed(">", x, zero), ty)
            return b.select(b.icmp_signed("<", x, zero), const(ty, -1), pos)
        if op == "popcnt":
            return _intrinsic(b, "llvm.ctpop", [x])
        if op == "count-leading-zeros":
            return _intrinsic(b, "llvm.ctlz", [x, ir.Constant(I1, 0)], overloads=[ty])
        if op in ("divide", "remainder"):
            return int_divide(b, op, x, ops[1], signed)
        if op.startswith("shift"):
            amt = ops[1]
            big = b.icmp_unsigned(">=", amt, const(ty, bits))
            safe = b.select(big, const(ty, 0), amt)
            if op == "shift-left":
                return b.select(big, const(ty, 0), b.shl(x, safe))
            if op == "shift-right-logical":
                return b.select(big, const(ty, 0), b.lshr(x, safe))
            # XLA fills with the top bit for unsigned types too.
            return b.ashr(x, b.select(big, const(ty, bits - 1), safe))
        if op == "power":
            return int_power(b, x, ops[1])
        raise NotImplementedError(f"elemental emitter: {op} on {et}")

    # ---------------------------------------------------------------- index arithmetic
    def _reshape(self, instr, index):
        src = instr.operands[0]
        lin = index.get_linear(self.b)
        if src.shape.layout is not None or instr.shape.layout is not None:
            return self.emit(src, Index(src.shape, linear=lin)) if _row_major(
                src.shape) and _row_major(instr.shape) else self._reshape_general(instr, index)
        return self.emit(src, Index(src.shape, linear=lin))

    def _reshape_general(self, instr, index):
        # Reshape is defined on the row-major order; rebuild row-major linear offsets.
        src = instr.operands[0]
        row_out = Shape(instr.shape.element_type, instr.shape.dims)
        lin = Index(row_out, multi=index.get_multi(self.b)).get_linear(self.b)
        multi = Index(Shape(src.shape.element_type, src.shape.dims), linear=lin).get_multi(self.b)
        return self.emit(src, Index(src.shape, multi=multi))

    _bitcast = _reshape

    def _broadcast(self, instr, index):
        src = instr.operands[0]
        if src.shape.rank == 0:
            return self.emit(src, scalar_index(src.shape))
        multi = index.get_multi(self.b)
        dims = instr.attrs.get("dimensions", ())
        return self.emit(src, Index(src.shape, multi=[multi[d] for d in dims]))

    def _transpose(self, instr, index):
        src = instr.operands[0]
        multi = index.get_multi(self.b)
        perm = instr.attrs["dimensions"]
        src_multi = [None] * src.shape.rank
        for k, d in enumerate(perm):
            src_multi[d] = multi[k]
        return self.emit(src, Index(src.shape, multi=src_multi))

    def _slice(self, instr, index):
        src = instr.operands[0]
        b = self.b
        multi = index.get_multi(b)
        out = []
        for m, (start, _limit, stride) in zip(multi, instr.attrs["slice"]):
            v = b.mul(m, const(I64, stride)) if stride != 1 else m
            out.append(b.add(v, const(I64, start)) if start else v)
        return self.emit(src, Index(src.shape, multi=out))

    def _reverse(self, instr, index):
        src = instr.operands[0]
        multi = list(index.get_multi(self.b))
        for d in instr.attrs["dimensions"]:
            multi[d] = self.b.sub(const(I64, src.shape.dims[d] - 1), multi[d])
        return self.emit(src, Index(src.shape, multi=multi))

    def _iota(self, instr, index):
        d = instr.attrs.get("iota_dimension", 0)
        v = index.get_multi(self.b)[d]
        return convert(self.b, v, "s64", instr.shape.element_type)

    def _clamp_index(self, v, size):
        b = self.b
        v = b.select(b.icmp_signed("<", v, const(I64, 0)), const(I64, 0), v)
        hi = const(I64, max(size - 1, 0))
        return b.select(b.icmp_signed(">", v, hi), hi, v)

    def _pad(self, instr, index):
        b = self.b
        src, pad_value = instr.operands
        multi = index.get_multi(b)
        inside = ir.Constant(I1, 1)
        src_multi = []
        for m, (lo, _hi, interior), size in zip(multi, instr.attrs["padding"], src.shape.dims):
            t = b.sub(m, const(I64, lo))
            step = interior + 1
            q = b.sdiv(t, const(I64, step)) if step != 1 else t
            ok = b.and_(b.icmp_signed(">=", t, const(I64, 0)),
                        b.icmp_signed("<", q, const(I64, size)))
            if step != 1:
                ok = b.and_(ok, b.icmp_signed("==", b.srem(t, const(I64, step)), const(I64, 0)))
            inside = b.and_(inside, ok)
            src_multi.append(self._clamp_index(q, size))
        pv = self.emit(pad_value, scalar_index(pad_value.shape))
        if src.shape.size == 0:
            return pv
        v = self.emit(src, Index(src.shape, multi=src_multi))
        return b.select(inside, v, pv)

    def _concatenate(self, instr, index):
        b = self.b
        dim = instr.attrs["dimensions"][0]
        multi = index.get_multi(b)
        # With every piece empty the output is empty and this code never runs, but it must
        # still produce a value: read (clamped) from the first operand.
        pieces = [op for op in instr.operands if op.shape.dims[dim] > 0] or instr.operands[:1]
        offsets, off = [], 0
        for op in pieces:
            offsets.append(off)
            off += op.shape.dims[dim]
        result = None
        for op, start in reversed(list(zip(pieces, offsets))):
            m = list(multi)
            m[dim] = self._clamp_index(b.sub(multi[dim], const(I64, start)), op.shape.dims[dim])
            v = self.emit(op, Index(op.shape, multi=m))
            if result is None:
                result = v
            else:
                end = start + op.shape.dims[dim]
                result = b.select(b.icmp_signed("<", multi[dim], const(I64, end)), v, result)
        return result

    def _start_indices(self, instr, first, sizes, dims):
        """Clamped dynamic start indices (XLA clamps so the window stays in bounds)."""
        starts = []
        for k, (size, dim) in enumerate(zip(sizes, dims)):
            op = instr.operands[first + k]
            s = self.emit(op, scalar_index(op.shape))
            s = convert(self.b, s, op.shape.element_type, "s64")
            b = self.b
            s = b.select(b.icmp_signed("<", s, const(I64, 0)), const(I64, 0), s)
            hi = const(I64, max(dim - size, 0))
            starts.append(b.select(b.icmp_signed(">", s, hi), hi, s))
        return starts

    def _dynamic_slice(self, instr, index):
        src = instr.operands[0]
        sizes = instr.attrs["dynamic_slice_sizes"]
        starts = self._start_indices(instr, 1, sizes, src.shape.dims)
        multi = index.get_multi(self.b)
        return self.emit(src, Index(src.shape, multi=[self.b.add(m, s)
                                                      for m, s in zip(multi, starts)]))

    def _dynamic_update_slice(self, instr, index):
        b = self.b
        src, upd = instr.operands[0], instr.operands[1]
        starts = self._start_indices(instr, 2, upd.shape.dims, src.shape.dims)
        multi = index.get_multi(b)
        inside = ir.Constant(I1, 1)
        upd_multi = []
        for m, s, size in zip(multi, starts, upd.shape.dims):
            t = b.sub(m, s)
            inside = b.and_(inside, b.and_(b.icmp_signed(">=", t, const(I64, 0)),
                                           b.icmp_signed("<", t, const(I64, size))))
            upd_multi.append(self._clamp_index(t, size))
        base = self.emit(src, index.for_shape(b, src.shape))
        if upd.shape.size == 0:
            return base
        return b.select(inside, self.emit(upd, Index(upd.shape, multi=upd_multi)), base)

    def _reduce_window(self, instr, index):
        return windows.reduce_window(self, instr, index)

    def _select_and_scatter(self, instr, index):
        return windows.select_and_scatter(self, instr, index)

    def _gather(self, instr, index):
        return gather.gather(self, instr, index)

    # ---------------------------------------------------------------- reduce (not a root)
    def _inline_reduce(self, instr, index):
        """A reduce used inside a fusion: a scalar loop over the reduced dimensions."""
        b = self.b
        n = len(instr.operands) // 2
        inputs, inits = instr.operands[:n], instr.operands[n:]
        red = tuple(instr.attrs["dimensions"])
        in_shape = inputs[0].shape
        kept = [d for d in range(in_shape.rank) if d not in red]
        out_multi = index.get_multi(b) if instr.shape.rank or not instr.shape.is_tuple else []
        accs = [self.emit(v, scalar_index(v.shape)) for v in inits]
        slots = [self.alloca(a.type) for a in accs]
        for s, a in zip(slots, accs):
            b.store(a, s)
        red_dims = [in_shape.dims[d] for d in red]
        total = int(np.prod(red_dims)) if red_dims else 1
        with self.scope(), emit_counted_loop(b, const(I64, 0), const(I64, total)) as i:
            rmulti = Index(Shape("s64", tuple(red_dims)), linear=i).get_multi(b)
            multi = [None] * in_shape.rank
            for d, m in zip(kept, out_multi):
                multi[d] = m
            for d, m in zip(red, rmulti):
                multi[d] = m
            vals = [self.emit(v, Index(v.shape, multi=multi)) for v in inputs]
            cur = [b.load(s) for s in slots]
            new = self.emit_scalar_computation(instr.called["to_apply"], cur + vals)
            for s, v in zip(slots, new):
                b.store(v, s)
        results = [b.load(s) for s in slots]
        return results if instr.shape.is_tuple else results[0]


def _row_major(shape: Shape) -> bool:
    return shape.minor_to_major == tuple(range(shape.rank - 1, -1, -1))


def convert(b: ir.IRBuilder, v, src: str, dst: str):
    """Convert a value between element types with XLA's semantics (float->int saturates)."""
    if src == dst or (value_type(src) == value_type(dst) and not is_float(src)
                      and not is_float(dst) and is_signed(src) == is_signed(dst)):
        return v
    dty = value_type(dst)
    if dst == "pred":
        if is_float(src):
            return b.fcmp_unordered("!=", v, const(v.type, 0.0))
        return b.icmp_unsigned("!=", v, const(v.type, 0))
    if src == "pred":
        return b.uitofp(v, dty) if is_float(dst) else b.zext(v, dty)
    if is_float(src) and is_float(dst):
        return float_convert(b, v, src, dst)
    if is_float(src):
        name = "llvm.fptosi.sat" if is_signed(dst) else "llvm.fptoui.sat"
        return _intrinsic(b, name, [v], ret=dty, overloads=[dty, v.type])
    if is_float(dst):
        # Integers reach 16-bit floats through float (as XLA): exact for f16's range.
        via = F32 if dst in ("f16", "bf16") else dty
        f = b.sitofp(v, via) if is_signed(src) else b.uitofp(v, via)
        return float_convert(b, f, "f32", dst) if via != dty or dst == "bf16" else f
    sb, db = bit_width(v.type), bit_width(dty)
    if sb == db:
        return v
    if db < sb:
        return b.trunc(v, dty)
    return b.sext(v, dty) if is_signed(src) else b.zext(v, dty)
