"""HLO lowerings for the elementwise ops XLA has no opcode for (asin, acos, atan, sinh,
cosh, asinh, acosh, atanh, erfc, erf_inv, lgamma, digamma, exp2, nextafter), written as
expressions of XLA opcodes so that backends only need XLA's opcode set.

`Emit` builds such expressions on values of one shape and dtype (the op's operand).
"""

from __future__ import annotations

import math

import numpy as np

# Lanczos approximation, g = 7 with 9 terms: Gamma(z + 1) = sqrt(2 pi) t^(z + 1/2) e^-t A(z),
# t = z + g + 1/2, A(z) = c0 + sum_i c_i / (z + i).
LANCZOS_G = 7.0
LANCZOS_COEFFS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
                  771.32342877765313, -176.61502916214059, 12.507343278686905,
                  -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


class Emit:
    """Elementwise HLO expression builder for values of `aval`'s shape and dtype."""

    def __init__(self, ctx, aval):
        self.b = ctx.builder
        self.md = ctx.metadata
        self.shape = tuple(aval.shape)
        self.dtype = np.dtype(aval.dtype)

    def c(self, value, dtype=None):
        """A constant broadcast to the shape (of `dtype`, default the values' dtype)."""
        const = self.b.constant(np.asarray(value, dtype or self.dtype), metadata=self.md)
        if self.shape:
            const = self.b.broadcast(const, self.shape, (), metadata=self.md)
        return const

    def op(self, opcode, *xs):
        return self.b.add_instruction(opcode, list(xs), metadata=self.md)

    def _arg(self, x):
        return self.c(x) if isinstance(x, (int, float, complex)) else x

    def add(self, x, y):
        return self.op("add", self._arg(x), self._arg(y))

    def sub(self, x, y):
        return self.op("subtract", self._arg(x), self._arg(y))

    def mul(self, x, y):
        return self.op("multiply", self._arg(x), self._arg(y))

    def div(self, x, y):
        return self.op("divide", self._arg(x), self._arg(y))

    def cmp(self, x, y, direction):
        return self.b.compare(self._arg(x), self._arg(y), direction, metadata=self.md)

    def select(self, pred, x, y):
        return self.b.select(pred, self._arg(x), self._arg(y), metadata=self.md)

    def __getattr__(self, opcode):
        # e.g. e.log(x), e.sqrt(x), e.atan2(x, y), e.round_nearest_even(x)
        name = opcode.replace("_", "-")
        return lambda *xs: self.op(name, *xs)


def _is_complex(e: Emit) -> bool:
    return e.dtype.kind == "c"


def exp2(e: Emit, x):
    return e.op("power", e.c(2), x)


def asin(e: Emit, x):
    if _is_complex(e):  # -i log(iz + sqrt(1 - z^2))
        iz = e.mul(1j, x)
        return e.mul(-1j, e.log(e.add(iz, e.sqrt(e.sub(1, e.mul(x, x))))))
    return e.mul(2, e.atan2(x, e.add(1, e.sqrt(e.sub(1, e.mul(x, x))))))


def acos(e: Emit, x):
    if _is_complex(e):
        return e.sub(math.pi / 2, asin(e, x))
    half = e.atan2(e.sqrt(e.sub(1, e.mul(x, x))), e.add(1, x))
    return e.select(e.cmp(x, -1, "EQ"), math.pi, e.mul(2, half))


def atan(e: Emit, x):
    if _is_complex(e):  # i/2 (log(1 - iz) - log(1 + iz))
        iz = e.mul(1j, x)
        return e.mul(0.5j, e.sub(e.log(e.sub(1, iz)), e.log(e.add(1, iz))))
    return e.atan2(x, e.c(1))


def sinh(e: Emit, x):
    if _is_complex(e):
        return e.mul(0.5, e.sub(e.exponential(x), e.exponential(e.negate(x))))
    small = e.mul(0.5, e.sub(e.exponential_minus_one(x), e.exponential_minus_one(e.negate(x))))
    # exp(x - log 2) avoids overflowing where e^x does but sinh(x) does not.
    big = e.sub(e.exponential(e.sub(x, math.log(2))),
                e.exponential(e.sub(e.negate(x), math.log(2))))
    return e.select(e.cmp(e.abs(x), 1, "LT"), small, big)


def cosh(e: Emit, x):
    if _is_complex(e):
        return e.mul(0.5, e.add(e.exponential(x), e.exponential(e.negate(x))))
    return e.add(e.exponential(e.sub(x, math.log(2))),
                 e.exponential(e.sub(e.negate(x), math.log(2))))


def _sqrt_max(e: Emit) -> float:
    return float(np.sqrt(np.finfo(e.dtype).max))


def asinh(e: Emit, x):
    if _is_complex(e):
        return e.log(e.add(x, e.sqrt(e.add(e.mul(x, x), 1))))
    ax = e.abs(x)
    x2 = e.mul(ax, ax)
    moderate = e.log_plus_one(e.add(ax, e.div(x2, e.add(1, e.sqrt(e.add(1, x2))))))
    huge = e.add(e.log(ax), math.log(2))
    mag = e.select(e.cmp(ax, _sqrt_max(e), "GE"), huge, moderate)
    return e.mul(e.sign(x), mag)


def acosh(e: Emit, x):
    if _is_complex(e):
        return e.log(e.add(x, e.mul(e.sqrt(e.add(x, 1)), e.sqrt(e.sub(x, 1)))))
    xm1 = e.sub(x, 1)
    moderate = e.log_plus_one(e.add(xm1, e.sqrt(e.mul(e.add(x, 1), xm1))))
    huge = e.add(e.log(x), math.log(2))
    return e.select(e.cmp(x, _sqrt_max(e), "GE"), huge, moderate)


def atanh(e: Emit, x):
    if _is_complex(e):
        return e.mul(0.5, e.sub(e.log_plus_one(x), e.log_plus_one(e.negate(x))))
    return e.mul(0.5, e.log_plus_one(e.div(e.mul(2, x), e.sub(1, x))))


def _erfc_nonneg(e: Emit, ax):
    """erfc for ax >= 0: 1 - erf below 2, Laplace's continued fraction above."""
    terms = 60 if e.dtype == np.float64 else 20
    safe = e.select(e.cmp(ax, 2, "LT"), 2, ax)
    f = safe
    for k in range(terms, 0, -1):
        f = e.add(safe, e.div(0.5 * k, f))
    tail = e.div(e.exponential(e.negate(e.mul(safe, safe))), e.mul(math.sqrt(math.pi), f))
    return e.select(e.cmp(ax, 2, "LT"), e.sub(1, e.erf(ax)), tail)


def erfc(e: Emit, x):
    pos = _erfc_nonneg(e, e.abs(x))
    return e.select(e.cmp(x, 0, "LT"), e.sub(2, pos), pos)


def erf_inv(e: Emit, y):
    ay = e.abs(y)
    # Winitzki's closed-form guess, refined by Halley steps on erf (erfc near |y| = 1).
    a = 0.147
    ln = e.log_plus_one(e.negate(e.mul(ay, ay)))
    bb = e.add(2 / (math.pi * a), e.mul(0.5, ln))
    x = e.sqrt(e.sub(e.sqrt(e.sub(e.mul(bb, bb), e.div(ln, a))), bb))
    x = e.select(e.cmp(ay, 1, "LT"), x, 0)
    tail = e.cmp(ay, 0.5, "GE")
    target = e.select(tail, e.sub(1, ay), ay)
    for _ in range(4 if e.dtype == np.float64 else 2):
        f = e.select(tail, e.sub(target, _erfc_nonneg(e, x)), e.sub(e.erf(x), target))
        dfdx = e.mul(2 / math.sqrt(math.pi), e.exponential(e.negate(e.mul(x, x))))
        step = e.div(f, dfdx)
        x = e.sub(x, e.div(step, e.add(1, e.mul(x, step))))
    x = e.select(e.cmp(ay, 1, "EQ"), math.inf, x)
    x = e.select(e.cmp(ay, 1, "GT"), math.nan, x)
    x = e.select(e.cmp(y, y, "NE"), math.nan, x)
    return e.mul(e.sign(y), x)


def _lanczos_parts(e: Emit, xp):
    """(z, t, A(z), A'(z)) for z = xp - 1."""
    z = e.sub(xp, 1)
    a = e.c(LANCZOS_COEFFS[0])
    da = e.c(0)
    for i, coeff in enumerate(LANCZOS_COEFFS[1:], start=1):
        zi = e.add(z, float(i))
        a = e.add(a, e.div(coeff, zi))
        da = e.sub(da, e.div(coeff, e.mul(zi, zi)))
    t = e.add(z, LANCZOS_G + 0.5)
    return z, t, a, da


def _reflection(e: Emit, x):
    """(x < 1/2, the reflected argument max(x, 1 - x), pi * (x - round(x)))."""
    reflect = e.cmp(x, 0.5, "LT")
    xp = e.select(reflect, e.sub(1, x), x)
    r = e.mul(math.pi, e.sub(x, e.round_nearest_even(x)))
    return reflect, xp, r


def _log_t(e: Emit, z):
    # log(z + g + 1/2) = log(g + 1/2) + log1p(z / (g + 1/2)), accurate for small z.
    return e.add(math.log(LANCZOS_G + 0.5), e.log_plus_one(e.div(z, LANCZOS_G + 0.5)))


def _is_pole(e: Emit, x):
    return e.op("and", e.cmp(x, 0, "LE"), e.cmp(x, e.floor(x), "EQ"))


def lgamma(e: Emit, x):
    reflect, xp, r = _reflection(e, x)
    z, t, a, _ = _lanczos_parts(e, xp)
    lg = e.add(e.sub(e.mul(e.add(z, 0.5), _log_t(e, z)), t),
               e.add(0.5 * math.log(2 * math.pi), e.log(a)))
    refl = e.sub(e.sub(math.log(math.pi), e.log(e.abs(e.sine(r)))), lg)
    out = e.select(reflect, refl, lg)
    out = e.select(_is_pole(e, x), math.inf, out)
    return e.select(e.cmp(e.abs(x), math.inf, "EQ"), math.inf, out)


def digamma(e: Emit, x):
    reflect, xp, r = _reflection(e, x)
    z, t, a, da = _lanczos_parts(e, xp)
    dg = e.sub(e.add(_log_t(e, z), e.div(da, a)), e.div(LANCZOS_G, t))
    refl = e.sub(dg, e.div(math.pi, e.tan(r)))
    out = e.select(reflect, refl, dg)
    out = e.select(_is_pole(e, x), math.nan, out)
    out = e.select(e.cmp(x, -math.inf, "EQ"), math.nan, out)
    return e.select(e.cmp(x, math.inf, "EQ"), math.inf, out)


def nextafter(e: Emit, x, y):
    itype = np.dtype(f"i{e.dtype.itemsize}")
    et = {1: "s8", 2: "s16", 4: "s32", 8: "s64"}[itype.itemsize]
    ix = e.b.bitcast_convert(x, et, metadata=e.md)
    one = e.c(1, itype)
    away = e.cmp(e.cmp(x, 0, "GT"), e.cmp(y, x, "GT"), "EQ")
    stepped = e.select(away, e.add(ix, one), e.sub(ix, one))
    out = e.b.bitcast_convert(stepped, x.shape.element_type, metadata=e.md)
    tiny = float(np.nextafter(np.zeros((), e.dtype), np.ones((), e.dtype)))
    out = e.select(e.cmp(x, 0, "EQ"), e.select(e.cmp(y, 0, "GT"), tiny, -tiny), out)
    out = e.select(e.cmp(x, y, "EQ"), y, out)
    return e.select(e.op("or", e.cmp(x, x, "NE"), e.cmp(y, y, "NE")), e.add(x, y), out)
