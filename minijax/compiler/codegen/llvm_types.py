"""LLVM types, constants and intrinsic declarations for HLO element types (llvmlite.ir).

Shared by the elemental emitter, the math approximations and the loop emitter. Nothing
here is specific to a target: the CPU and GPU backends both use it.
"""

from __future__ import annotations

import contextlib

import llvmlite.ir as ir

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()

FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
SIGNED_TYPES = ("s8", "s16", "s32", "s64")
UNSIGNED_TYPES = ("u8", "u16", "u32", "u64")
INT_TYPES = SIGNED_TYPES + UNSIGNED_TYPES
SUPPORTED_TYPES = FLOAT_TYPES + INT_TYPES + ("pred",)

_VALUE_TYPES = {
    "pred": I1, "s8": I8, "u8": I8, "s16": I16, "u16": I16,
    "s32": I32, "u32": I32, "s64": I64, "u64": I64,
    "f16": F16, "bf16": F32, "f32": F32, "f64": F64,
}


def value_type(element_type: str) -> ir.Type:
    """The LLVM type an element is computed in (pred is i1)."""
    return _VALUE_TYPES[element_type]


def storage_type(element_type: str) -> ir.Type:
    """The LLVM type an element is stored as in memory (pred is one byte; bf16, computed
    in float, is stored as its 16 bits, see float16.py)."""
    if element_type == "pred":
        return I8
    if element_type == "bf16":
        return I16
    return _VALUE_TYPES[element_type]


def is_float(element_type: str) -> bool:
    return element_type in FLOAT_TYPES


def is_signed(element_type: str) -> bool:
    return element_type in SIGNED_TYPES


def bit_width(ty: ir.Type) -> int:
    """Bits of an integer or float LLVM type (scalar or vector element)."""
    ty = scalar_of(ty)
    if isinstance(ty, ir.IntType):
        return ty.width
    return {F16: 16, F32: 32, F64: 64}[ty]


def scalar_of(ty: ir.Type) -> ir.Type:
    """The element type of a vector type, or the type itself."""
    return ty.element if isinstance(ty, ir.VectorType) else ty


def const(ty: ir.Type, value) -> ir.Constant:
    """A constant of scalar or vector type `ty` (vectors are splats)."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [const(ty.element, value)] * ty.count)
    if isinstance(ty, ir.IntType):
        value = int(value) & ((1 << ty.width) - 1)
        if value >= 1 << (ty.width - 1):
            value -= 1 << ty.width
        return ir.Constant(ty, value)
    return ir.Constant(ty, float(value))


def int_type_like(ty: ir.Type) -> ir.Type:
    """The integer type of the same bit width (and vector count) as float type `ty`."""
    it = ir.IntType(bit_width(ty))
    return ir.VectorType(it, ty.count) if isinstance(ty, ir.VectorType) else it


def with_scalar(ty: ir.Type, scalar: ir.Type) -> ir.Type:
    """`scalar`, or a vector of it with as many lanes as `ty` has."""
    return ir.VectorType(scalar, ty.count) if isinstance(ty, ir.VectorType) else scalar


def _mangle(ty: ir.Type) -> str:
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_mangle(ty.element)}"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    return {F16: "f16", F32: "f32", F64: "f64"}[ty]


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type],
              overloads: list[ir.Type] | None = None) -> ir.Function:
    """Declare (once) an LLVM intrinsic such as `llvm.maximum` with mangled overload types."""
    overloads = overloads if overloads is not None else [ret]
    full = name + "".join("." + _mangle(t) for t in overloads)
    try:
        return module.get_global(full)
    except KeyError:
        return ir.Function(module, ir.FunctionType(ret, args), full)


def call_intrinsic(builder: ir.IRBuilder, name: str, args: list, ret: ir.Type | None = None,
                   overloads: list[ir.Type] | None = None):
    """Call intrinsic `name` on values `args` (overloaded on the first argument's type)."""
    ret = ret if ret is not None else args[0].type
    fn = intrinsic(builder.module, name, ret, [a.type for a in args],
                   overloads if overloads is not None else [ret])
    return builder.call(fn, args)


def libm(builder: ir.IRBuilder, name: str, args: list, ty: ir.Type):
    """Call a C math library function (double precision, scalar only)."""
    module = builder.module
    try:
        fn = module.get_global(name)
    except KeyError:
        fn = ir.Function(module, ir.FunctionType(ty, [ty] * len(args)), name)
    return builder.call(fn, args)


#: A vectorized loop body of at least this many IR instructions is interleaved twice when its
#: emitter asks (emit_counted_loop's `interleave`): LLVM's loop vectorizer interleaves only
#: small bodies, and a long one (tanh, exp, erf) then runs one latency-bound dependency chain
#: per iteration. Two independent chains made a tanh-GELU loop 12-17% faster in L2.
HEAVY_LOOP_BODY = 24


def _interleave_twice(module: ir.Module):
    """A fresh `llvm.loop` node (its first operand is itself, as LLVM requires) asking the
    loop vectorizer for an interleave count of 2."""
    count = module.add_metadata([ir.MetaDataString(module, "llvm.loop.interleave.count"),
                                 ir.Constant(ir.IntType(32), 2)])
    node = ir.values.MDValue(module, [count], name=str(len(module.metadata)))  # registers itself
    node.operands = (node, count)
    return node


@contextlib.contextmanager
def emit_counted_loop(b: ir.IRBuilder, start, end, name: str = "loop", step=None,
                      interleave: bool = False):
    """`for (i = start; i < end; i += step) { body }` over i64 values (step 1 by default);
    yields i; the builder ends after the loop. With `interleave`, a body of HEAVY_LOOP_BODY
    or more instructions is marked for an interleave count of 2 (an innermost loop only)."""
    pre = b.block
    fn = pre.function
    body = fn.append_basic_block(name + ".body")
    exit_ = fn.append_basic_block(name + ".exit")
    b.cbranch(b.icmp_signed("<", start, end), body, exit_)
    b.position_at_end(body)
    i = b.phi(I64, name=name + ".i")
    i.add_incoming(start, pre)
    yield i
    nxt = b.add(i, const(I64, 1) if step is None else step, flags=["nsw"])
    i.add_incoming(nxt, b.block)
    back = b.cbranch(b.icmp_signed("<", nxt, end), body, exit_)
    if interleave:
        blocks = fn.blocks[fn.blocks.index(body):]
        if sum(len(blk.instructions) for blk in blocks) >= HEAVY_LOOP_BODY:
            back.set_metadata("llvm.loop", _interleave_twice(b.module))
    b.position_at_end(exit_)
