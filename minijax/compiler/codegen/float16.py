"""16-bit float conversions in plain LLVM IR, without runtime-library calls.

LLVM lowers `fptrunc double -> half` (and any conversion to `bfloat` on most x86 CPUs) to
libgcc/compiler-rt routines (`__truncdfhf2`, `__truncsfbf2`) that a JIT session does not
have. Here:

- float16 values are LLVM `half`; they only ever meet `float` (fpext/fptrunc half<->float
  are single instructions with F16C). A double goes to a 16-bit type through float, as
  XLA:CPU and JAX convert it (two roundings: JAX gives f16(1 + 2**-11 + 2**-40) == 1).
- bfloat16 values are kept in `float` registers holding a value exactly representable in
  bfloat16, and stored as i16 (the float's high half). Every operation that produces a
  bf16 value rounds its float result to nearest even with `round_to_bf16`, as XLA does.

All helpers work on scalars and on vectors of the same types.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.llvm_types import (
    F16,
    F32,
    F64,
    call_intrinsic,
    const,
    int_type_like,
    scalar_of,
    with_scalar,
)

I16 = ir.IntType(16)


def f32_to_f16(b: ir.IRBuilder, x):
    """fptrunc float -> half. The fence keeps LLVM's code generator from merging it with a
    preceding double -> float truncation into a double -> half one (a libcall)."""
    fenced = call_intrinsic(b, "llvm.arithmetic.fence", [x])
    return b.fptrunc(fenced, with_scalar(x.type, F16))


def round_to_bf16(b: ir.IRBuilder, x):
    """A float rounded to the nearest bfloat16 (ties to even), still as a float; NaNs stay
    NaN (quietened, sign kept), overflow gives inf."""
    i32 = int_type_like(x.type)
    bits = b.bitcast(x, i32)
    lsb = b.and_(b.lshr(bits, const(i32, 16)), const(i32, 1))
    rounded = b.add(bits, b.add(const(i32, 0x7FFF), lsb))
    nan = b.fcmp_unordered("uno", x, x)
    quiet = b.or_(bits, const(i32, 0x00400000))
    out = b.and_(b.select(nan, quiet, rounded), const(i32, 0xFFFF0000))
    return b.bitcast(out, x.type)


def bf16_bits(b: ir.IRBuilder, x):
    """The i16 storage bits of a float holding a bfloat16 value (rounds first)."""
    i32 = int_type_like(x.type)
    bits = b.bitcast(round_to_bf16(b, x), i32)
    return b.trunc(b.lshr(bits, const(i32, 16)), with_scalar(x.type, I16))


def bf16_from_bits(b: ir.IRBuilder, bits):
    """The float value of bfloat16 storage bits (i16)."""
    i32 = with_scalar(bits.type, ir.IntType(32))
    wide = b.shl(b.zext(bits, i32), const(i32, 16))
    return b.bitcast(wide, with_scalar(bits.type, F32))


def float_convert(b: ir.IRBuilder, v, src: str, dst: str):
    """Convert between float element types (f16, bf16, f32, f64) as XLA does, never through
    a libcall. bf16 values are floats (see the module docstring)."""
    if src == dst:
        return v
    ty = scalar_of(v.type)
    if dst == "f64":
        return b.fpext(v, with_scalar(v.type, F64))
    if ty == F64:
        v = b.fptrunc(v, with_scalar(v.type, F32))
    elif ty == F16:
        v = b.fpext(v, with_scalar(v.type, F32))
    # v is a float now.
    if dst == "f16":
        return f32_to_f16(b, v)
    if dst == "bf16":
        return round_to_bf16(b, v)
    return v
