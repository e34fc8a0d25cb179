"""Integer and bit-level helpers of the elemental emitter (LLVM IR, branch-free): XLA's
integer divide/remainder (no traps on /0 or INT_MIN/-1), integer power, and the integer key
that orders floats by IEEE totalOrder."""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.llvm_types import I1, bit_width, const


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


def int_power(b, x, y, signed):
    """x**y by square-and-multiply over every exponent bit (branch-free)."""
    ty = x.type
    bits = bit_width(ty)
    result = const(ty, 1)
    base = x
    e = y
    for _ in range(bits):
        odd = b.trunc(e, I1)
        result = b.select(odd, b.mul(result, base), result)
        base = b.mul(base, base)
        e = b.lshr(e, const(ty, 1))
    if not signed:
        return result
    neg = b.icmp_signed("<", y, const(ty, 0))
    one = b.icmp_signed("==", x, const(ty, 1))
    minus_one = b.icmp_signed("==", x, const(ty, -1))
    odd_y = b.trunc(y, I1)
    neg_val = b.select(one, const(ty, 1), b.select(
        minus_one, b.select(odd_y, const(ty, -1), const(ty, 1)), const(ty, 0)))
    return b.select(neg, neg_val, result)
