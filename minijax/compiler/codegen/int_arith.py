"""Integer and bit-level helpers of the elemental emitter (LLVM IR, branch-free): XLA's
integer divide/remainder (no traps on /0 or INT_MIN/-1), integer power, arithmetic on pred,
and the integer key that orders floats by IEEE totalOrder."""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.llvm_types import I1, bit_width, const

#: Exponent bits XLA:CPU's integer power uses (higher bits of a non-negative exponent are
#: ignored).
POWER_EXPONENT_BITS = 6


def total_order_key(b, x):
    """Map a float to an integer whose signed order is IEEE totalOrder."""
    ity = ir.IntType(bit_width(x.type))
    i = b.bitcast(x, ity)
    flip = b.lshr(b.ashr(i, const(ity, bit_width(x.type) - 1)), const(ity, 1))
    return b.xor(i, flip)


def int_divide(b, op, x, y, signed):
    """Integer divide/remainder with XLA's results for /0 and INT_MIN/-1 (no traps)."""
    ty = x.type
    zero = b.icmp_signed("==", y, const(ty, 0))
    bad = zero
    if signed:
        overflow = b.and_(b.icmp_signed("==", x, const(ty, 1 << (bit_width(ty) - 1))),
                          b.icmp_signed("==", y, const(ty, -1)))
        bad = b.or_(zero, overflow)
    safe = b.select(bad, const(ty, 1), y)
    if op == "divide":
        q = b.sdiv(x, safe) if signed else b.udiv(x, safe)
        if signed:
            q = b.select(overflow, x, q)
        return b.select(zero, const(ty, -1), q)
    r = b.srem(x, safe) if signed else b.urem(x, safe)
    if signed:
        r = b.select(overflow, const(ty, 0), r)
    return b.select(zero, x, r)


def int_power(b, x, y):
    """x**y with XLA:CPU's semantics: the exponent is read as a signed integer (also for
    unsigned types); a negative one gives 1 for x == 1, +-1 for x == -1 (all ones) and 0
    otherwise; a non-negative one contributes only its low 6 bits (square-and-multiply over
    6 bits, enough for any base other than +-1 not to overflow to 0 or wrap to 1 in 64
    bits), branch-free."""
    ty = x.type
    result = const(ty, 1)
    base = x
    e = y
    for _ in range(POWER_EXPONENT_BITS):
        odd = b.trunc(e, I1)
        result = b.select(odd, b.mul(result, base), result)
        base = b.mul(base, base)
        e = b.lshr(e, const(ty, 1))
    neg = b.icmp_signed("<", y, const(ty, 0))
    one = b.icmp_signed("==", x, const(ty, 1))
    minus_one = b.icmp_signed("==", x, const(ty, -1))
    odd_y = b.trunc(y, I1)
    neg_val = b.select(one, const(ty, 1), b.select(
        minus_one, b.select(odd_y, const(ty, -1), const(ty, 1)), const(ty, 0)))
    return b.select(neg, neg_val, result)


def pred_op(b, op, ops):
    """`op` on pred (i1) values, or None where the integer rule already is right.

    XLA computes arithmetic on pred as on the integers 0/1 and converts the result back with
    != 0 (XLA:CPU gives add(true, true) = true): add is or, subtract xor, multiply and;
    x / 0 is all ones (true) and x % 0 is x; power is x or not y; shift-left keeps x;
    negate, abs and sign keep x; a right shift by 1 gives 0; clz counts the zeros of a wider
    integer (true). `not`, and, or, xor, maximum and minimum act on the bit.
    """
    x = ops[0]
    if op == "add":
        return b.or_(x, ops[1])
    if op == "subtract":
        return b.xor(x, ops[1])
    if op == "multiply":
        return b.and_(x, ops[1])
    if op in ("divide", "power"):
        return b.or_(x, b.not_(ops[1]))
    if op in ("remainder", "shift-right-logical", "shift-right-arithmetic"):
        return b.and_(x, b.not_(ops[1]))
    if op in ("negate", "abs", "sign", "popcnt", "shift-left"):
        return x
    if op in ("clz", "count-leading-zeros"):
        return ir.Constant(I1, 1)
    return None
