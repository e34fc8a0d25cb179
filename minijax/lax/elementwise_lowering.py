"""HLO lowerings for the elementwise ops XLA has no opcode for (asin, acos, atan, sinh,
cosh, asinh, acosh, atanh, erfc, erf_inv, lgamma, digamma, exp2, nextafter), written as
expressions of XLA opcodes so that backends only need XLA's opcode set.

The real expansions are evaluated in the operand's precision (16-bit floats in float32, like
XLA) and keep float32 results within a few ulp of the correctly rounded value: each formula
avoids rounding an argument before an ill-conditioned step (x - log 2 before exp, 1 - x*x
near |x| = 1, 2x / (1 - x) near x = -1). The special functions (erfc, erf_inv, lgamma,
digamma) are in special_lowering.py; `Emit` builds the expressions (lowering_emit.py).
"""

from __future__ import annotations

import math

import numpy as np

from minijax import dtypes
from minijax.lax.lowering_emit import Emit, in_float32_at_least
from minijax.lax.special_lowering import digamma, erf_inv, erfc, lgamma

__all__ = ["Emit", "exp2", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
           "erfc", "erf_inv", "lgamma", "digamma", "nextafter"]


def _is_complex(e: Emit) -> bool:
    return e.dtype.kind == "c"


def exp2(e: Emit, x):
    return e.op("power", e.c(2), x)


# asin, acos and atan end in atan2, well conditioned in any precision, so 16-bit floats stay
# 16-bit there (the CPU backend cannot compile its float64 atan2 followed by a conversion to
# float16: no __truncdfhf2 symbol).


def _one_minus_square(e: Emit, x):
    # (1 - x)(1 + x): one factor is exact wherever 1 - x*x would cancel.
    return e.mul(e.sub(1, x), e.add(1, x))


def asin(e: Emit, x):
    if _is_complex(e):  # -i log(iz + sqrt(1 - z^2))
        iz = e.mul(1j, x)
        return e.mul(-1j, e.log(e.add(iz, e.sqrt(e.sub(1, e.mul(x, x))))))
    return e.atan2(x, e.sqrt(_one_minus_square(e, x)))


def acos(e: Emit, x):
    if _is_complex(e):
        return e.sub(math.pi / 2, asin(e, x))
    return e.atan2(e.sqrt(_one_minus_square(e, x)), x)


def atan(e: Emit, x):
    if _is_complex(e):  # i/2 (log(1 - iz) - log(1 + iz))
        iz = e.mul(1j, x)
        return e.mul(0.5j, e.sub(e.log(e.sub(1, iz)), e.log(e.add(1, iz))))
    return e.atan2(x, e.c(1))


def _exp_limit(e: Emit) -> float:
    """Below this, exp(|x|) does not overflow; above it, exp(-|x|) is negligible."""
    return float(math.floor(math.log(float(dtypes.finfo(e.dtype).max)))) - 1.0


def _exp_big(e: Emit, ax):
    # e^ax / 2 as (e^(ax/2) / 2) e^(ax/2): finite up to the overflow of cosh itself, and
    # ax/2 is exact, unlike ax - log 2.
    h = e.exponential(e.mul(0.5, ax))
    return e.mul(e.mul(0.5, h), h)


@in_float32_at_least
def sinh(e: Emit, x):
    if _is_complex(e):
        return e.mul(0.5, e.sub(e.exponential(x), e.exponential(e.negate(x))))
    ax = e.abs(x)
    em = e.exponential_minus_one(ax)
    # e^a - e^-a = em + em / (em + 1) with em = e^a - 1: no cancellation for small a.
    moderate = e.mul(0.5, e.add(em, e.div(em, e.add(em, 1))))
    mag = e.select(e.lt(ax, _exp_limit(e)), moderate, _exp_big(e, ax))
    return e.mul(e.sign(x), mag)


@in_float32_at_least
def cosh(e: Emit, x):
    if _is_complex(e):
        return e.mul(0.5, e.add(e.exponential(x), e.exponential(e.negate(x))))
    ax = e.abs(x)
    ex = e.exponential(ax)
    moderate = e.add(e.mul(0.5, ex), e.div(0.5, ex))
    return e.select(e.lt(ax, _exp_limit(e)), moderate, _exp_big(e, ax))


def _sqrt_max(e: Emit) -> float:
    return float(np.sqrt(dtypes.finfo(e.dtype).max))


@in_float32_at_least
def asinh(e: Emit, x):
    if _is_complex(e):
        return e.log(e.add(x, e.sqrt(e.add(e.mul(x, x), 1))))
    ax = e.abs(x)
    x2 = e.mul(ax, ax)
    moderate = e.log_plus_one(e.add(ax, e.div(x2, e.add(1, e.sqrt(e.add(1, x2))))))
    huge = e.add(e.log(ax), math.log(2))
    mag = e.select(e.cmp(ax, _sqrt_max(e), "GE"), huge, moderate)
    return e.mul(e.sign(x), mag)


@in_float32_at_least
def acosh(e: Emit, x):
    if _is_complex(e):
        return e.log(e.add(x, e.mul(e.sqrt(e.add(x, 1)), e.sqrt(e.sub(x, 1)))))
    xm1 = e.sub(x, 1)
    moderate = e.log_plus_one(e.add(xm1, e.sqrt(e.mul(e.add(x, 1), xm1))))
    huge = e.add(e.log(x), math.log(2))
    out = e.select(e.cmp(x, _sqrt_max(e), "GE"), huge, moderate)
    # (x+1)(x-1) is positive again for x < -1: acosh is NaN below 1.
    return e.select(e.cmp(x, 1, "LT"), math.nan, out)


@in_float32_at_least
def atanh(e: Emit, x):
    if _is_complex(e):
        return e.mul(0.5, e.sub(e.log_plus_one(x), e.log_plus_one(e.negate(x))))
    # On |x|: 1 - |x| is exact near 1, where 1 - x for x near -1 is not.
    ax = e.abs(x)
    mag = e.mul(0.5, e.log_plus_one(e.div(e.mul(2, ax), e.sub(1, ax))))
    return e.mul(e.sign(x), mag)


def nextafter(e: Emit, x, y):
    itype = np.dtype(f"i{e.dtype.itemsize}")
    et = {1: "s8", 2: "s16", 4: "s32", 8: "s64"}[itype.itemsize]
    ix = e.b.bitcast_convert(x, et, metadata=e.md)
    one = e.c(1, itype)
    if e.dtype == dtypes.float8_e8m0fnu:
        # No sign and no zero (0 converts to NaN): the bits count up with the value.
        stepped = e.select(e.cmp(y, x, "GT"), e.add(ix, one), e.sub(ix, one))
        out = e.b.bitcast_convert(stepped, x.shape.element_type, metadata=e.md)
        out = e.select(e.cmp(x, y, "EQ"), y, out)
        return e.select(e.op("or", e.cmp(x, x, "NE"), e.cmp(y, y, "NE")), e.add(x, y), out)
    away = e.cmp(e.cmp(x, 0, "GT"), e.cmp(y, x, "GT"), "EQ")
    stepped = e.select(away, e.add(ix, one), e.sub(ix, one))
    out = e.b.bitcast_convert(stepped, x.shape.element_type, metadata=e.md)
    tiny = float(np.nextafter(np.zeros((), e.dtype), np.ones((), e.dtype)))
    out = e.select(e.cmp(x, 0, "EQ"), e.select(e.cmp(y, 0, "GT"), tiny, -tiny), out)
    out = e.select(e.cmp(x, y, "EQ"), y, out)
    return e.select(e.op("or", e.cmp(x, x, "NE"), e.cmp(y, y, "NE")), e.add(x, y), out)
