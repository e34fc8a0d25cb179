"""Vectorizable approximations of transcendental functions, emitted as LLVM IR.

LLVM's `llvm.exp`/`llvm.log`/`llvm.sin`... intrinsics lower to scalar libm calls on the CPU
unless a vector math library is configured, which stops the loop vectorizer. The functions
here use only arithmetic, bit casts, selects and the rounding/fma intrinsics, so loops that
call them vectorize.

Accuracy (tested against float64 NumPy in tests/test_cpu_codegen.py):
- float32 exp: a minimax polynomial after a Cody-Waite range reduction, within 0.86 ulp
  (subnormal results included). log, log1p, expm1: Taylor/atanh series in float32; a few
  ulps over the whole float32 range.
- float32 tanh, logistic: one minimax polynomial (tanh: of expm1) and one division each;
  at most 2.42 and 2.40 ulp over all 2**32 inputs.
- float32 sin, cos, tan, erf, atan2, pow, cbrt: computed in float64 with the float64 routines
  below and rounded once, so within about one ulp. sin/cos/tan reduce the argument exactly
  enough over the whole float32 range (a branch-free Payne-Hanek reduction, _reduce_f32).
- float64 exp, log, log1p, expm1, tanh, logistic: the same series with more terms, within a
  few float64 ulps. The other float64 functions call the C math library (scalar).

Every function takes an `ir.IRBuilder` and a scalar or vector float value and returns a value
of the same type. float16 callers compute in float32.
"""

from __future__ import annotations

import math
from fractions import Fraction

import llvmlite.ir as ir
import numpy as np

from minijax.compiler.codegen import target
from minijax.compiler.codegen.llvm_types import (
    F32,
    F64,
    I32,
    bit_width,
    call_intrinsic,
    const,
    int_type_like,
    libm,
    scalar_of,
    with_scalar,
)


def _half_pi() -> Fraction:
    """pi/2 to about 660 bits (Machin's formula in fixed point with 200 decimal digits)."""
    scale = 10 ** 200

    def arctan_inv(n):
        total, term, k, sign = 0, scale // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k += 2
            sign = -sign
        return total

    pi = 4 * (4 * arctan_inv(5) - arctan_inv(239))
    return Fraction(pi, 2 * scale)


def _two_over_pi_chunks(n: int, width: int) -> list[float]:
    """The first width * n bits of 2/pi as n integers of `width` bits:
    2/pi = sum c[i] * 2**(-width (i + 1))."""
    bits = int(Fraction(1 << (width * n)) / _half_pi())
    mask = (1 << width) - 1
    return [float((bits >> (width * (n - 1 - i))) & mask) for i in range(n)]


#: The float32 Payne-Hanek reduction (_reduce_f32) multiplies a 24-bit mantissa by PH_TERMS
#: chunks of PH_BITS bits of 2/pi (exact float64 products), starting at chunk 0..PH_MAX_I0.
PH_BITS = 29
PH_TERMS = 4
PH_MAX_I0 = 3  # (largest float32 exponent 104 - 2) // PH_BITS
_DIV_PH_BITS = 2260  # (n * _DIV_PH_BITS) >> 16 == n // PH_BITS for 0 <= n <= 102
TWO_OVER_PI_CHUNKS = _two_over_pi_chunks(PH_MAX_I0 + PH_TERMS, PH_BITS)
LN2 = math.log(2.0)
LN2_HI_F32 = 0.693145751953125           # ln2 with its low 11 mantissa bits cleared
LN2_LO_F32 = LN2 - LN2_HI_F32
LN2_HI_F64 = 6.93147180369123816490e-01  # ln2 rounded to 32 significant bits
LN2_LO_F64 = 1.90821492927058770002e-10


def _c(x, value):
    return const(x.type, value)


def _is_f32(x) -> bool:
    return scalar_of(x.type) == F32


def _poly(b: ir.IRBuilder, x, coeffs):
    """Horner evaluation of sum(coeffs[i] * x**i) with fused multiply-adds where profitable."""
    acc = _c(x, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = call_intrinsic(b, "llvm.fmuladd", [acc, x, _c(x, c)])
    return acc


def _select_nan(b, x, result):
    """Return x where x is NaN, else result."""
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


def _ldexp(b: ir.IRBuilder, p, n):
    """p * 2**n for integer-valued float n in [-2*bias, 2*bias], in two exact steps."""
    ity = int_type_like(p.type)
    bits = bit_width(p.type)
    mant = 23 if bits == 32 else 52
    bias = 127 if bits == 32 else 1023
    ni = b.fptosi(n, ity)
    n1 = b.ashr(ni, const(ity, 1))
    n2 = b.sub(ni, n1)

    def pow2(k):
        return b.bitcast(b.shl(b.add(k, const(ity, bias)), const(ity, mant)), p.type)

    return b.fmul(b.fmul(p, pow2(n1)), pow2(n2))


def exp(b: ir.IRBuilder, x):
    """e**x (float32: see _exp_f32; float64: a Taylor polynomial after a Cody-Waite
    reduction, scaled in two exact steps)."""
    if _is_f32(x):
        return _exp_f32(b, x)
    lo, hi = -760.0, 720.0
    xc = b.select(b.fcmp_ordered("<", x, _c(x, lo)), _c(x, lo), x)
    xc = b.select(b.fcmp_ordered(">", xc, _c(x, hi)), _c(x, hi), xc)
    xc = b.select(b.fcmp_unordered("uno", x, x), _c(x, 0.0), xc)
    n = call_intrinsic(b, "llvm.roundeven", [b.fmul(xc, _c(x, 1.0 / LN2))])
    r = call_intrinsic(b, "llvm.fmuladd", [b.fneg(n), _c(x, LN2_HI_F64), xc])
    r = call_intrinsic(b, "llvm.fmuladd", [b.fneg(n), _c(x, LN2_LO_F64), r])
    p = _poly(b, r, [1.0 / math.factorial(k) for k in range(14)])
    return _select_nan(b, x, _ldexp(b, p, n))


def log(b: ir.IRBuilder, x):
    """Natural logarithm (NaN below zero, -inf at zero)."""
    f32 = _is_f32(x)
    bits = 32 if f32 else 64
    mant = 23 if f32 else 52
    bias = 127 if f32 else 1023
    ity = int_type_like(x.type)
    tiny = b.fcmp_ordered("<", x, _c(x, 2.0 ** (1 - bias)))
    xs = b.select(tiny, b.fmul(x, _c(x, 2.0 ** mant)), x)
    e_adj = b.select(tiny, _c(x, -mant), _c(x, 0.0))
    ib = b.bitcast(xs, ity)
    e = b.sub(b.lshr(ib, const(ity, mant)), const(ity, bias))
    m_bits = b.or_(b.and_(ib, const(ity, (1 << mant) - 1)), const(ity, bias << mant))
    m = b.bitcast(m_bits, x.type)
    big = b.fcmp_ordered(">", m, _c(x, math.sqrt(2.0)))
    m = b.select(big, b.fmul(m, _c(x, 0.5)), m)
    e = b.add(e, b.zext(big, ity))
    ef = b.fadd(b.sitofp(e, x.type), e_adj)
    f = b.fsub(m, _c(x, 1.0))
    s = b.fdiv(f, b.fadd(f, _c(x, 2.0)))
    z = b.fmul(s, s)
    terms = 6 if f32 else 12
    p = _poly(b, z, [1.0 / (2 * k + 3) for k in range(terms)])
    two_s = b.fadd(s, s)
    l1p = call_intrinsic(b, "llvm.fmuladd", [b.fmul(two_s, z), p, two_s])
    ln2_hi, ln2_lo = (LN2_HI_F32, LN2_LO_F32) if f32 else (LN2_HI_F64, LN2_LO_F64)
    res = call_intrinsic(b, "llvm.fmuladd", [ef, _c(x, ln2_lo), l1p])
    res = call_intrinsic(b, "llvm.fmuladd", [ef, _c(x, ln2_hi), res])
    inf = float("inf")
    res = b.select(b.fcmp_ordered("==", x, _c(x, 0.0)), _c(x, -inf), res)
    res = b.select(b.fcmp_ordered("==", x, _c(x, inf)), x, res)
    res = b.select(b.fcmp_unordered("ult", x, _c(x, 0.0)), _c(x, float("nan")), res)
    del bits
    return res


def log1p(b: ir.IRBuilder, x):
    """log(1 + x), accurate near zero."""
    u = b.fadd(x, _c(x, 1.0))
    d = b.fsub(u, _c(x, 1.0))
    res = b.fmul(log(b, u), b.fdiv(x, d))
    res = b.select(b.fcmp_ordered("==", d, _c(x, 0.0)), x, res)
    return b.select(b.fcmp_ordered("==", x, _c(x, float("inf"))), x, res)


def expm1(b: ir.IRBuilder, x):
    """e**x - 1, accurate near zero."""
    degree = 11 if _is_f32(x) else 19
    coeffs = [1.0 / math.factorial(k) for k in range(1, degree + 1)]
    # x * (1 + x/2 + ...), not 0 + x * (...): expm1(-0.0) is -0.0
    small = b.fmul(x, _poly(b, x, coeffs))
    big = b.fsub(exp(b, x), _c(x, 1.0))
    ax = call_intrinsic(b, "llvm.fabs", [x])
    return b.select(b.fcmp_ordered("<", ax, _c(x, 1.0)), small, big)


def tanh(b: ir.IRBuilder, x):
    """Hyperbolic tangent (float32: see _tanh_f32; float64 via expm1(2|x|))."""
    if _is_f32(x):
        return _tanh_f32(b, x)
    ax = call_intrinsic(b, "llvm.fabs", [x])
    e = expm1(b, b.fadd(ax, ax))
    t = b.fdiv(e, b.fadd(e, _c(x, 2.0)))
    t = b.select(b.fcmp_ordered(">", ax, _c(x, 19.5)), _c(x, 1.0), t)
    return call_intrinsic(b, "llvm.copysign", [t, x])


def logistic(b: ir.IRBuilder, x):
    """1 / (1 + e**-x), accurate for large negative x too."""
    if _is_f32(x):
        return _logistic_f32(b, x)
    ax = call_intrinsic(b, "llvm.fabs", [x])
    e = exp(b, b.fneg(ax))
    inv = b.fdiv(_c(x, 1.0), b.fadd(e, _c(x, 1.0)))
    neg = b.fmul(e, inv)
    return b.select(b.fcmp_ordered("<", x, _c(x, 0.0)), neg, inv)


# ---------------------------------------------------------------------- float32 tanh, logistic
#
# Each evaluates one polynomial (expm1's for tanh, exp's for logistic) and one division per
# element and no libm call (the float64
# forms above evaluate expm1's series and exp, or exp with its overflow and NaN handling). The
# polynomial coefficients were fitted at development time in float64 with NumPy: Lawson's
# iteratively reweighted least squares (which converges to the minimax fit) over 4000
# Chebyshev points, minimising the maximum relative error of the approximated function, then
# rounded to float32. tests/test_cpu_tanh_logistic.py re-checks each polynomial's error.

# e**r = 1 + r + r*r*Q(r) on |r| <= ln2/2; relative error 2**-28.3 before rounding.
EXP_F32_COEFFS = (1.0, 1.0, 0.49999994, 0.16666521, 0.04166839, 0.00836871, 0.0013814613)
# expm1(r) = r + r*r*Q(r) on |r| <= ln2/2; relative error of Q 2**-26.5 before rounding.
EXPM1_F32_COEFFS = (0.5, 0.16666667, 0.041666467, 0.008333361, 0.0013933597, 0.00019857796)
# Adding 1.5 * 2**23 rounds a float32 of magnitude below 2**22 to an integer k (to nearest
# even) and leaves k in the low mantissa bits of the sum.
_SHIFTER = 12582912.0


def _exp_f32_parts(b: ir.IRBuilder, y, scale: float, split_ln2: bool):
    """(p, two_k) with e**(scale * y) = p * 2**k, where two_k is the int32 bit pattern k << 23.

    scale is +-2**j, |scale * y| must stay below about 2**21 (callers clamp y first). Taking
    scale out of the reduction costs nothing: r = scale * r', and the polynomial in r' has
    the coefficients times scale**i, exactly, so it rounds exactly as the one in r would.
    split_ln2 subtracts k * ln2 in two parts (needed when k * 2**-23 is not negligible).
    """
    s = call_intrinsic(b, "llvm.fmuladd", [y, _c(y, scale / LN2), _c(y, _SHIFTER)])
    nk = b.fsub(_c(y, _SHIFTER), s)
    if split_ln2:
        r = call_intrinsic(b, "llvm.fmuladd", [nk, _c(y, LN2_HI_F32 / scale), y])
        r = call_intrinsic(b, "llvm.fmuladd", [nk, _c(y, LN2_LO_F32 / scale), r])
    else:
        r = call_intrinsic(b, "llvm.fmuladd", [nk, _c(y, LN2 / scale), y])
    p = _poly(b, r, [c * scale ** i for i, c in enumerate(EXP_F32_COEFFS)])
    ity = int_type_like(y.type)
    return p, b.shl(b.bitcast(s, ity), const(ity, 23))


def _pow2_f32(b: ir.IRBuilder, two_k, like, offset: int = 0):
    """2**(k + offset), of like's type, from k << 23; k + offset must lie in [-126, 127]."""
    return b.bitcast(b.add(two_k, const(two_k.type, (127 + offset) << 23)), like.type)


def _clamp_above(b: ir.IRBuilder, x, limit: float):
    """min(x, limit), NaN kept (one minps on x86)."""
    return b.select(b.fcmp_ordered(">", x, _c(x, limit)), _c(x, limit), x)


def _tanh_f32(b: ir.IRBuilder, x):
    """tanh(|x|) = m / (m + 2) with m = expm1(2|x|), the sign of x put back last.

    m = 2**k * expm1(r) + (2**k - 1) after the reduction 2|x| = k ln2 + r; expm1(r) is
    r + r*r*Q(r), so a small |x| (k = 0) loses nothing to cancellation and tiny inputs come
    back unchanged. One formula for every |x| (no polynomial branch to select from) keeps the
    loop short: tanh-GELU in L3 ran 25% faster than with a separate odd polynomial below
    0.75, at 2.42 ulp instead of 1.07 (XLA's rational approximation: 6.7). |x| is clamped
    to 10 (tanh rounds to 1 from 9.01 on); NaN fails the clamp test and passes through;
    tanh(-0) is -0.
    """
    ity = int_type_like(x.type)
    ax = call_intrinsic(b, "llvm.fabs", [x])
    y = b.fmul(_clamp_above(b, ax, 10.0), _c(x, 2.0))
    s = call_intrinsic(b, "llvm.fmuladd", [y, _c(x, 1.0 / LN2), _c(x, _SHIFTER)])
    # k <= 29, so one float32 ln2 is exact enough: its error times k is damped by 1 - tanh**2
    r = call_intrinsic(b, "llvm.fmuladd", [b.fsub(_c(x, _SHIFTER), s), _c(x, LN2), y])
    em_r = call_intrinsic(b, "llvm.fmuladd", [b.fmul(r, r), _poly(b, r, EXPM1_F32_COEFFS), r])
    scale = _pow2_f32(b, b.shl(b.bitcast(s, ity), const(ity, 23)), x)
    m = call_intrinsic(b, "llvm.fmuladd", [scale, em_r, b.fsub(scale, _c(x, 1.0))])
    t = b.fdiv(m, b.fadd(m, _c(x, 2.0)))
    sign = b.and_(b.bitcast(x, ity), const(ity, 1 << 31))
    return b.bitcast(b.xor(b.bitcast(t, ity), sign), x.type)


def _exp_f32(b: ir.IRBuilder, x):
    """e**x as p * 2**k, scaled in two exact steps 2**(k >> 1) * 2**(k - (k >> 1)) so that
    both ends of the range come out right: k = 128 just below the overflow threshold and the
    subnormal results down to k = -150.

    x is clamped to [-104, 89] (e**-104 rounds to 0 and e**89 to inf). NaN passes both clamps
    and the polynomial, and NaN times the scale is NaN. Against the float64 form this saves
    the NaN select, the rounding and conversion instructions (the shifter leaves k in the
    low mantissa bits) and one Horner step (the minimax polynomial).
    """
    xc = _clamp_above(b, b.select(b.fcmp_ordered("<", x, _c(x, -104.0)), _c(x, -104.0), x),
                      89.0)
    p, two_k = _exp_f32_parts(b, xc, 1.0, split_ln2=True)
    half_k = b.shl(b.ashr(two_k, const(two_k.type, 24)), const(two_k.type, 23))
    scaled = b.fmul(p, _pow2_f32(b, half_k, x))
    return b.fmul(scaled, _pow2_f32(b, b.sub(two_k, half_k), x))


def _logistic_f32(b: ir.IRBuilder, x):
    """logistic as (x < 0 ? e : 1) / (1 + e) with e = e**-|x|, one division.

    e is carried scaled by 2**64 so that it stays a normal number down to e**-104 (below
    which the result rounds to 0); the final scaling rounds once, into the subnormals.
    |x| is clamped to 104; NaN passes through every step.
    """
    ax = call_intrinsic(b, "llvm.fabs", [x])
    p, two_k = _exp_f32_parts(b, _clamp_above(b, ax, 104.0), -1.0, split_ln2=True)
    e_scaled = b.fmul(p, _pow2_f32(b, two_k, x, 64))
    denom = call_intrinsic(b, "llvm.fmuladd", [e_scaled, _c(x, 2.0 ** -64), _c(x, 1.0)])
    num = b.select(b.fcmp_ordered("<", x, _c(x, 0.0)), e_scaled, _c(x, 2.0 ** 64))
    return b.fmul(b.fdiv(num, denom), _c(x, 2.0 ** -64))


# ---------------------------------------------------------------------- float32 via float64

def _to_f64(b, x):
    return b.fpext(x, with_scalar(x.type, F64))


def _from_f64(b, x, ty):
    return b.fptrunc(x, ty)


def _pow2_f64(b, e, like):
    """2.0**e as float64 (vector like `like`) for integer e (i64) in the normal range."""
    ity = e.type
    return b.bitcast(b.shl(b.add(e, const(ity, 1023)), const(ity, 52)), like)


def _floor_mod4(b, v):
    """v mod 4 in [0, 4), exact for a float64 v."""
    return b.fsub(v, b.fmul(call_intrinsic(b, "llvm.floor", [b.fmul(v, _c(v, 0.25))]),
                            _c(v, 4.0)))


def _reduce_f32(b, x):
    """Payne-Hanek reduction of |x| for a float32 x (any finite value) by pi/2, branch-free:
    (y, q) with y in [-pi/4, pi/4] (float64) and |x| = y + q * pi/2 (mod 2 pi), q an i32 in
    0..3.

    |x| = m * 2**e exactly (m a 24-bit integer), so |x| * 2/pi is the sum over the
    PH_BITS-bit chunks c[i] of 2/pi of m * c[i] * 2**(e - PH_BITS (i + 1)); each product is
    exact in float64. Chunks whose term is a multiple of 4 change neither the quadrant nor the
    remainder and are skipped: the first kept chunk is i0 = max(0, (e - 2) // PH_BITS), then
    PH_TERMS are summed, the large ones modulo 4 exactly, and the remainder r keeps float64
    relative precision even next to a multiple of pi/2. What is left out is below 2**-62
    quadrants; the float32 closest to a multiple of pi/2 (16367173 * 2**72) is 2**-29.9
    quadrants from it.
    """
    i32 = with_scalar(x.type, I32)
    i64 = with_scalar(x.type, ir.IntType(64))
    f64 = with_scalar(x.type, F64)
    bits = b.bitcast(x, i32)
    expo = b.and_(b.lshr(bits, const(i32, 23)), const(i32, 0xFF))
    frac = b.and_(bits, const(i32, 0x7FFFFF))
    normal = b.icmp_signed("!=", expo, const(i32, 0))
    mag = b.select(normal, b.or_(frac, const(i32, 0x800000)), frac)
    m = b.sitofp(mag, f64)  # |x| = m * 2**e: all terms >= 0, so "mod 4" loses nothing
    e = b.sub(b.select(normal, expo, const(i32, 1)), const(i32, 150))
    em2 = b.sub(e, const(i32, 2))
    # (e - 2) // 29 for 0 <= e - 2 <= 102 as a multiply and shift (vector division is slow).
    i0 = b.select(b.icmp_signed("<", em2, const(i32, 0)), const(i32, 0),
                  b.lshr(b.mul(em2, const(i32, _DIV_PH_BITS)), const(i32, 16)))
    is_i0 = [b.icmp_signed("==", i0, const(i32, k)) for k in range(PH_MAX_I0)]
    s0 = b.sub(e, b.mul(b.add(i0, const(i32, 1)), const(i32, PH_BITS)))
    scale = _pow2_f64(b, b.sext(s0, i64), f64)  # 2**s0, s0 in [-178, 1]
    terms = []
    for j in range(PH_TERMS):
        chunk = _c(m, TWO_OVER_PI_CHUNKS[PH_MAX_I0 + j])
        for k in reversed(range(PH_MAX_I0)):
            chunk = b.select(is_i0[k], _c(m, TWO_OVER_PI_CHUNKS[k + j]), chunk)
        terms.append(b.fmul(b.fmul(m, chunk), b.fmul(scale, _c(m, 2.0 ** (-PH_BITS * j)))))
    t0, t1 = terms[0], terms[1]
    hi1 = call_intrinsic(b, "llvm.floor", [t1])
    lo1 = b.fsub(t1, hi1)
    whole = _floor_mod4(b, b.fadd(_floor_mod4(b, t0), hi1))  # exact (53 bits at most)
    k = call_intrinsic(b, "llvm.roundeven", [b.fadd(whole, lo1)])
    r = b.fadd(b.fsub(whole, k), lo1)  # one rounding, relative to the result
    for t in terms[2:]:
        r = b.fadd(r, t)
    q = b.and_(b.fptosi(k, i32), const(i32, 3))
    return b.fmul(r, _c(r, math.pi / 2)), q


def _sin_cos_parts(b, x):
    """(sin(y), cos(y), quadrant q as i32) for float32 |x| = y + q * pi/2, in float64."""
    y, q = _reduce_f32(b, x)
    z = b.fmul(y, y)
    sin_c = [(-1) ** k / math.factorial(2 * k + 1) for k in range(7)]
    cos_c = [(-1) ** k / math.factorial(2 * k) for k in range(8)]
    s = b.fmul(y, _poly(b, z, sin_c))
    c = _poly(b, z, cos_c)
    return s, c, q


def _nan_unless_finite(b, x, result):
    """NaN where float32 x is inf or NaN (sin/cos/tan of them), else result."""
    finite = b.fcmp_ordered("<", call_intrinsic(b, "llvm.fabs", [x]), _c(x, math.inf))
    return b.select(finite, result, _c(result, math.nan))


def _quadrant_pick(b, q, values):
    """values[q] for q in 0..3 (elementwise)."""
    out = values[3]
    for i in (2, 1, 0):
        out = b.select(b.icmp_signed("==", q, const(q.type, i)), values[i], out)
    return out


def sin(b: ir.IRBuilder, x):
    """Sine (float32 through float64; float64 calls libm)."""
    if not _is_f32(x):
        return _scalar_libm(b, "llvm.sin", x)
    s, c, q = _sin_cos_parts(b, x)
    out = _from_f64(b, _quadrant_pick(b, q, [s, c, b.fneg(s), b.fneg(c)]), x.type)
    return _nan_unless_finite(b, x, _odd(b, x, out))


def cos(b: ir.IRBuilder, x):
    """Cosine (float32 through float64; float64 calls libm)."""
    if not _is_f32(x):
        return _scalar_libm(b, "llvm.cos", x)
    s, c, q = _sin_cos_parts(b, x)
    out = _from_f64(b, _quadrant_pick(b, q, [c, b.fneg(s), b.fneg(c), s]), x.type)
    return _nan_unless_finite(b, x, out)


def tan(b: ir.IRBuilder, x):
    """Tangent (float32 through float64; float64 calls libm)."""
    if not _is_f32(x):
        return _scalar_libm(b, "tan", x)
    s, c, q = _sin_cos_parts(b, x)
    odd = b.trunc(q, with_scalar(q.type, ir.IntType(1)))
    t = b.fdiv(b.select(odd, b.fneg(c), s), b.select(odd, s, c))  # one division
    return _nan_unless_finite(b, x, _odd(b, x, _from_f64(b, t, x.type)))


def _odd(b, x, result):
    """An odd function's value at x from its value `result` at |x|: x itself at +-0."""
    signed = b.select(b.fcmp_ordered("<", x, _c(x, 0.0)), b.fneg(result), result)
    return b.select(b.fcmp_ordered("==", x, _c(x, 0.0)), x, signed)


def _erf_tail_coeffs() -> list[float]:
    """Polynomial (in a on [1, 4.5]) for erfc(a) * exp(a*a), fitted by Chebyshev least squares."""
    a = 2.75 + 1.75 * np.cos(np.pi * (np.arange(400) + 0.5) / 400)
    g = np.array([math.erfc(v) * math.exp(v * v) for v in a])
    cheb = np.polynomial.chebyshev.Chebyshev.fit(a, g, 16, domain=[1.0, 4.5])
    power = cheb.convert(kind=np.polynomial.Polynomial, domain=[1.0, 4.5])
    return [float(c) for c in power.coef]


_ERF_TAIL = None


def erf(b: ir.IRBuilder, x):
    """Error function (float32 through float64; float64 calls libm)."""
    global _ERF_TAIL
    if not _is_f32(x):
        return _scalar_libm(b, "erf", x)
    if _ERF_TAIL is None:
        _ERF_TAIL = _erf_tail_coeffs()
    xd = _to_f64(b, x)
    a = call_intrinsic(b, "llvm.fabs", [xd])
    z = b.fmul(xd, xd)
    taylor = [2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
              for n in range(16)]
    small = b.fmul(xd, _poly(b, z, taylor))
    ac = b.select(b.fcmp_ordered(">", a, _c(a, 4.5)), _c(a, 4.5), a)
    ac = b.select(b.fcmp_ordered("<", ac, _c(a, 1.0)), _c(a, 1.0), ac)
    # erfc(a) = exp(-a*a) * g(a); g is smooth on [1, 4.5] where the series would cancel.
    tail = b.fmul(exp(b, b.fneg(b.fmul(ac, ac))), _shifted_poly(b, ac, _ERF_TAIL))
    big = call_intrinsic(b, "llvm.copysign", [b.fsub(_c(a, 1.0), tail), xd])
    res = b.select(b.fcmp_ordered("<", a, _c(a, 1.0)), small, big)
    return _from_f64(b, _select_nan(b, xd, res), x.type)


def _shifted_poly(b, a, coeffs):
    """Evaluate a power-basis polynomial fitted on [1, 4.5] (numpy's mapped domain)."""
    t = b.fmul(b.fsub(a, _c(a, 2.75)), _c(a, 1 / 1.75))
    return _poly(b, t, coeffs)


def atan2(b: ir.IRBuilder, y, x):
    """atan2(y, x) with C99 handling of zeros, infinities and NaN."""
    if not _is_f32(x):
        return _scalar_libm(b, "atan2", y, x)
    yd, xd = _to_f64(b, y), _to_f64(b, x)
    ax = call_intrinsic(b, "llvm.fabs", [xd])
    ay = call_intrinsic(b, "llvm.fabs", [yd])
    swap = b.fcmp_ordered(">", ay, ax)
    mx = b.select(swap, ay, ax)
    mn = b.select(swap, ax, ay)
    t = b.fdiv(mn, mx)
    t = b.select(b.fcmp_ordered("==", mx, _c(mx, 0.0)), _c(t, 0.0), t)
    inf = float("inf")
    t = b.select(b.fcmp_ordered("==", mn, _c(mn, inf)), _c(t, 1.0), t)
    red = b.fcmp_ordered(">", t, _c(t, math.sqrt(2.0) - 1.0))
    u = b.select(red, b.fdiv(b.fsub(t, _c(t, 1.0)), b.fadd(t, _c(t, 1.0))), t)
    base = b.select(red, _c(t, math.pi / 4), _c(t, 0.0))
    uu = b.fmul(u, u)
    r = b.fadd(base, b.fmul(u, _poly(b, uu, [(-1) ** k / (2 * k + 1) for k in range(16)])))
    r = b.select(swap, b.fsub(_c(r, math.pi / 2), r), r)
    xneg = b.icmp_signed("<", b.bitcast(xd, int_type_like(xd.type)), const(
        int_type_like(xd.type), 0))
    r = b.select(xneg, b.fsub(_c(r, math.pi), r), r)
    r = call_intrinsic(b, "llvm.copysign", [r, yd])
    nan = b.or_(b.fcmp_unordered("uno", xd, xd), b.fcmp_unordered("uno", yd, yd))
    return _from_f64(b, b.select(nan, _c(r, float("nan")), r), x.type)


def pow(b: ir.IRBuilder, x, y):  # noqa: A001 - the HLO opcode's name
    """x**y with C99 special cases (float32 through float64; float64 calls libm)."""
    if not _is_f32(x):
        return _scalar_libm(b, "llvm.pow", x, y)
    xd, yd = _to_f64(b, x), _to_f64(b, y)
    ax = call_intrinsic(b, "llvm.fabs", [xd])
    r = exp(b, b.fmul(yd, log(b, ax)))
    y_int = b.fcmp_ordered("==", call_intrinsic(b, "llvm.floor", [yd]), yd)
    half = b.fmul(yd, _c(yd, 0.5))
    y_odd = b.and_(y_int, b.fcmp_ordered("!=", call_intrinsic(b, "llvm.floor", [half]), half))
    # The sign bit, not `x < 0`: pow(-0, odd) is -0 (or -inf), pow(-inf, odd) is -inf.
    sign = b.icmp_signed("<", b.bitcast(xd, int_type_like(xd.type)),
                         const(int_type_like(xd.type), 0))
    r = b.select(b.and_(sign, y_odd), b.fneg(r), r)
    # NaN only for finite negative x with a non-integer y (pow(-inf, 0.5) is +inf).
    xneg = b.and_(b.fcmp_ordered("<", xd, _c(xd, 0.0)),
                  b.fcmp_ordered("!=", xd, _c(xd, float("-inf"))))
    r = b.select(b.and_(xneg, b.not_(y_int)), _c(r, float("nan")), r)
    one = b.or_(b.fcmp_ordered("==", yd, _c(yd, 0.0)), b.fcmp_ordered("==", xd, _c(xd, 1.0)))
    y_inf = b.fcmp_ordered("==", call_intrinsic(b, "llvm.fabs", [yd]), _c(yd, float("inf")))
    one = b.or_(one, b.and_(y_inf, b.fcmp_ordered("==", ax, _c(ax, 1.0))))
    r = b.select(one, _c(r, 1.0), r)
    return _from_f64(b, r, x.type)


def cbrt(b: ir.IRBuilder, x):
    """Cube root (float32 through float64; float64 calls libm)."""
    if not _is_f32(x):
        return _scalar_libm(b, "cbrt", x)
    xd = _to_f64(b, x)
    ax = call_intrinsic(b, "llvm.fabs", [xd])
    r = exp(b, b.fmul(log(b, ax), _c(xd, 1.0 / 3.0)))
    r = call_intrinsic(b, "llvm.copysign", [r, xd])
    return _from_f64(b, _select_nan(b, xd, r), x.type)


def _scalar_libm(b: ir.IRBuilder, name: str, *args):
    """Call a libm function or libm-backed intrinsic (float64; scalar only), as the current
    target names it (codegen/target.py)."""
    name = target.current().math_function(name)
    if name.startswith("llvm."):
        return call_intrinsic(b, name, list(args))
    if isinstance(args[0].type, ir.VectorType):
        raise NotImplementedError(f"{name} on vectors needs a vector math library")
    return libm(b, name, list(args), args[0].type)


UNARY = {
    "exponential": exp, "log": log, "log-plus-one": log1p, "exponential-minus-one": expm1,
    "tanh": tanh, "logistic": logistic, "sine": sin, "cosine": cos, "tan": tan, "erf": erf,
    "cbrt": cbrt,
}
BINARY = {"power": pow, "atan2": atan2}
