"""Elementwise HLO opcodes for the reference evaluator, with XLA's edge-case semantics.

Integer arithmetic wraps. Integer division follows XLA: `x / 0` is -1 (all ones for unsigned
types), `INT_MIN / -1` is INT_MIN, `x % 0` is x and `INT_MIN % -1` is 0; both truncate toward
zero like C. Shifts by an amount >= the bit width give 0 (logical) or the sign fill
(arithmetic; the top bit is the sign for unsigned types too). Integer power follows XLA:CPU
(see _int_power); arithmetic on pred is done on 0/1 and converted back with != 0 (add is
or). Float maximum/minimum propagate NaN and order -0 below +0; clamp is built from them.
Float-to-integer `convert` truncates and saturates, NaN becomes 0. Float
transcendentals are computed in float64 (complex128) and rounded once to the result type, so
the reference is as accurate as the result type allows.

Every function here takes numpy arrays and returns an array; the caller casts the result to
the instruction's dtype and shape.
"""

from __future__ import annotations

import math

import numpy as np

from minijax import dtypes

__all__ = ["ELEMENTWISE_OPCODES", "UNARY", "BINARY", "clamp", "compare", "complex_sign",
           "convert", "bitcast_convert", "maximum", "minimum", "reduce_precision", "round_to_bf16",
           "total_order_key"]


def _is_int(x) -> bool:
    return x.dtype.kind in "iu"


def _is_float(x) -> bool:
    return x.dtype.kind == "f"


def _wide(x):
    """float16/float32 -> float64 and complex64 -> complex128, for accurate transcendentals."""
    if x.dtype.kind == "f":
        return x.astype(np.float64)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    return x.astype(np.float64)


def _transcendental(fn):
    def apply(x):
        return fn(_wide(x)).astype(x.dtype if x.dtype.kind in "fc" else np.float64)
    return apply


_erf_elementwise = np.frompyfunc(math.erf, 1, 1)


def _erf64(x):
    # math.erf per element: the same answer whether or not scipy is installed.
    return np.asarray(_erf_elementwise(np.asarray(x, np.float64)), dtype=np.float64)


def _logistic64(x):
    # exp(-|x|) never overflows, and the negative tail keeps its relative accuracy (a tanh
    # form cancels to 0 below x = -38, where float32 still has normal values).
    if x.dtype.kind == "c":
        return 1.0 / (1.0 + np.exp(-x))
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _rsqrt64(x):
    return 1.0 / np.sqrt(x)


def _sign(x):
    if _is_int(x) or x.dtype == np.bool_:
        return np.sign(x)
    if x.dtype.kind == "c":
        return complex_sign(x)
    one = np.copysign(np.ones_like(x), x)
    return np.where((x == 0) | np.isnan(x), x, one)


def complex_sign(x):
    """XLA's sign of a complex x: x where |x| is 0 (signed zeros kept), else each part
    divided by the real |x| (no complex division: sign(inf+0j) is nan+0j, sign(-2-0j) is
    -1-0j)."""
    x = np.asarray(x)
    mag = np.abs(x)
    with np.errstate(all="ignore"):
        out = _compose(x.real / mag, x.imag / mag, x.dtype)
    return np.where(mag == 0, x, out).astype(x.dtype)


def _round_afz(x):
    """Round half away from zero, exactly (no `floor(|x| + 0.5)` double rounding)."""
    if not _is_float(x):
        return x
    t = np.trunc(x)
    frac = np.abs(x - t)
    step = np.copysign(np.ones_like(x), x)
    return np.where(frac >= 0.5, t + step, t).astype(x.dtype)


def popcnt(x):
    """XLA's popcnt: set bits of each element's two's complement (bool: itself)."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x
    # np.bitwise_count counts |x| for signed types; count the two's complement bits.
    return np.bitwise_count(_unsigned_view(x)).astype(x.dtype)


def _unsigned_view(x):
    """The same bits as the unsigned integer type of x's width (0-d stays 0-d)."""
    x = np.asarray(x, order="C")
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def count_leading_zeros(x):
    """XLA's count-leading-zeros of each integer element."""
    x = np.asarray(x)
    bits = x.dtype.itemsize * 8
    u = _unsigned_view(x).astype(np.uint64)
    count = np.zeros(u.shape, dtype=np.int64)
    # Binary search for the highest set bit, all lanes at once.
    shift = bits // 2
    while shift >= 1:
        high = (u >> np.uint64(shift)) != 0
        u = np.where(high, u >> np.uint64(shift), u)
        count = np.where(high, count + shift, count)
        shift //= 2
    bit_length = np.where(u != 0, count + 1, 0)
    return (bits - bit_length).astype(x.dtype)


def _not(x):
    return np.invert(x)


def _real(x):
    return np.real(x).copy()


def _imag(x):
    return np.imag(x) if x.dtype.kind == "c" else np.zeros_like(x)


UNARY = {
    "negate": np.negative,
    "abs": np.abs,
    "sign": _sign,
    "floor": np.floor,
    "ceil": np.ceil,
    "round-nearest-afz": _round_afz,
    "round-nearest-even": np.rint,
    "exponential": _transcendental(np.exp),
    "exponential-minus-one": _transcendental(np.expm1),
    "log": _transcendental(np.log),
    "log-plus-one": _transcendental(np.log1p),
    "sqrt": _transcendental(np.sqrt),
    "rsqrt": _transcendental(_rsqrt64),
    "cbrt": _transcendental(np.cbrt),
    "tanh": _transcendental(np.tanh),
    "logistic": _transcendental(_logistic64),
    "sine": _transcendental(np.sin),
    "cosine": _transcendental(np.cos),
    "tan": _transcendental(np.tan),
    "erf": _transcendental(_erf64),
    "not": _not,
    "popcnt": popcnt,
    "is-finite": np.isfinite,
    "real": _real,
    "imag": _imag,
    "clz": count_leading_zeros,
    "count-leading-zeros": count_leading_zeros,
    "copy": np.copy,
}


def _signed_min(dtype):
    return np.iinfo(dtype).min if dtype.kind == "i" else None


def _all_ones(dtype):
    return np.array(-1).astype(dtype) if dtype.kind == "i" else np.array(
        np.iinfo(dtype).max, dtype=dtype)


def _int_div_parts(a, b):
    """Truncating quotient and remainder with XLA's rules for 0 and INT_MIN / -1."""
    a, b = np.broadcast_arrays(a, b)
    zero = b == 0
    smin = _signed_min(a.dtype)
    overflow = (a == smin) & (b == -1) if smin is not None else np.zeros(a.shape, bool)
    safe = np.where(zero | overflow, np.ones_like(b), b)
    rem = np.fmod(a, safe)
    quot = (a - rem) // safe  # exact: a - rem is a multiple of safe
    return a, zero, overflow, quot, rem


def complex_divide(a, b):
    """XLA's complex division: Smith's algorithm in the component type, then, where both
    parts came out NaN, C99-style results for a zero denominator (inf with the signs of
    the numerator), an infinite numerator over a finite denominator (inf) and a finite
    numerator over an infinite denominator (zero)."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    part = ar.dtype.type
    zero, one, inf = part(0), part(1), part(np.inf)
    ratio_ri, ratio_ir = br / bi, bi / br
    denom_ri, denom_ir = bi + ratio_ri * br, br + ratio_ir * bi
    r_lt_i = np.abs(br) < np.abs(bi)
    cr = np.where(r_lt_i, (ratio_ri * ar + ai) / denom_ri, (ratio_ir * ai + ar) / denom_ir)
    ci = np.where(r_lt_i, (ratio_ri * ai - ar) / denom_ri, (ai - ratio_ir * ar) / denom_ir)
    zero_den = (br == 0) & (bi == 0) & (~np.isnan(ar) | ~np.isnan(ai))
    signed_inf = np.copysign(inf, br)
    a_inf = np.isinf(ar) | np.isinf(ai)
    b_finite = np.isfinite(br) & np.isfinite(bi)
    inf_num = a_inf & b_finite
    ar1 = np.copysign(np.where(np.isinf(ar), one, zero), ar)
    ai1 = np.copysign(np.where(np.isinf(ai), one, zero), ai)
    b_inf = np.isinf(br) | np.isinf(bi)
    a_finite = np.isfinite(ar) & np.isfinite(ai)
    inf_den = b_inf & a_finite
    br1 = np.copysign(np.where(np.isinf(br), one, zero), br)
    bi1 = np.copysign(np.where(np.isinf(bi), one, zero), bi)
    both_nan = np.isnan(cr) & np.isnan(ci)
    out_r = np.select([both_nan & zero_den, both_nan & inf_num, both_nan & inf_den],
                      [signed_inf * ar, inf * (ar1 * br + ai1 * bi),
                       zero * (ar * br1 + ai * bi1)], cr)
    out_i = np.select([both_nan & zero_den, both_nan & inf_num, both_nan & inf_den],
                      [signed_inf * ai, inf * (ai1 * br - ar1 * bi),
                       zero * (ai * br1 - ar * bi1)], ci)
    return _compose(out_r, out_i, a.dtype)


def _compose(re, im, dtype):
    out = np.empty(np.shape(re), dtype)
    out.real, out.imag = re, im
    return out


def _divide(a, b):
    if a.dtype.kind == "c":
        return complex_divide(a, b)
    if not _is_int(a):
        return np.true_divide(a, b)
    a, zero, overflow, quot, _ = _int_div_parts(a, b)
    quot = np.where(overflow, a, quot)  # a is INT_MIN there
    return np.where(zero, _all_ones(a.dtype), quot)


def _remainder(a, b):
    if not _is_int(a):
        return np.fmod(a, b)
    a, zero, overflow, _, rem = _int_div_parts(a, b)
    rem = np.where(overflow, np.zeros_like(rem), rem)
    return np.where(zero, a, rem)


#: Exponent bits XLA:CPU's integer power uses: a non-negative exponent's higher bits are
#: ignored (codegen/int_arith.py emits the same).
POWER_EXPONENT_BITS = 6


def _int_power(base, exp):
    """XLA:CPU's integer power: the exponent is read as signed (also for unsigned types); a
    negative one gives 1 for base 1, +-1 for base -1 (all ones), else 0; a non-negative one
    contributes only its low POWER_EXPONENT_BITS bits. Wraps like the other integer ops."""
    base, exp = np.broadcast_arrays(base, exp)
    signed_exp = np.ascontiguousarray(exp).view(np.dtype(f"i{exp.dtype.itemsize}"))
    negative = signed_exp < 0
    ubase = _unsigned_view(np.ascontiguousarray(base))
    e = _unsigned_view(np.ascontiguousarray(exp))
    acc = np.ones_like(ubase)
    b = ubase.copy()
    one = np.array(1, ubase.dtype)
    for _ in range(POWER_EXPONENT_BITS):
        acc = np.where((e & one) == one, acc * b, acc)
        b = b * b
        e = e >> one
    acc = acc.view(base.dtype)
    if not negative.any():
        return acc
    all_ones = ubase == np.iinfo(ubase.dtype).max
    odd = (signed_exp & 1) == 1
    neg_case = np.where(ubase == 1, one, np.where(
        all_ones, np.where(odd, ~np.zeros_like(ubase), one), np.zeros_like(ubase)))
    return np.where(negative, neg_case.view(base.dtype), acc)


def _power(a, b):
    if _is_int(a):
        return _int_power(a, b)
    if a.dtype.kind == "c":
        return np.power(a.astype(np.complex128), b.astype(np.complex128)).astype(a.dtype)
    return np.power(_wide(a), _wide(b)).astype(a.dtype)


def _atan2(a, b):
    if a.dtype.kind == "c":
        # XLA: atan2(y, x) = -i * log((x + i*y) / sqrt(x*x + y*y)), with its complex divide.
        y, x = _wide(a), _wide(b)
        quotient = complex_divide(x + 1j * y, np.sqrt(x * x + y * y))
        return (-1j * np.log(quotient)).astype(a.dtype)
    return np.arctan2(_wide(a), _wide(b)).astype(a.dtype)


def _shift(kind):
    def apply(x, amount):
        x, amount = np.broadcast_arrays(x, amount)
        bits = x.dtype.itemsize * 8
        amt_u = _unsigned_view(np.ascontiguousarray(amount))
        too_far = amt_u >= bits
        safe = np.where(too_far, 0, amt_u).astype(x.dtype)
        if kind == "left":
            out = np.left_shift(x, safe)
            return np.where(too_far, np.zeros_like(x), out)
        if kind == "logical":
            u = _unsigned_view(np.ascontiguousarray(x))
            out = np.right_shift(u, safe.astype(u.dtype)).view(x.dtype)
            return np.where(too_far, np.zeros_like(x), out)
        # Arithmetic: XLA fills with the top bit for unsigned types too.
        sx = np.ascontiguousarray(x).view(np.dtype(f"i{x.dtype.itemsize}"))
        out = np.right_shift(sx, safe.astype(sx.dtype))
        fill = np.where(sx < 0, np.array(-1, sx.dtype), np.zeros_like(sx))
        return np.where(too_far, fill, out).view(x.dtype)
    return apply


def _complex(re, im):
    re, im = np.broadcast_arrays(re, im)
    ctype = np.complex64 if re.dtype == np.float32 else np.complex128
    out = np.empty(re.shape, dtype=ctype)
    out.real = re
    out.imag = im
    return out


def _logical_or_bitwise(fn):
    def apply(a, b):
        return fn(a, b)
    return apply


def maximum(a, b):
    """XLA maximum: NaN propagates and +0 > -0 (NumPy returns the first of two zeros)."""
    out = np.maximum(a, b)
    if out.dtype.kind == "f" or out.dtype.name == "bfloat16":
        out = np.where((a == 0) & (b == 0), a + b, out)  # -0 only if both are -0
    return out


def minimum(a, b):
    """XLA minimum: NaN propagates and -0 < +0."""
    out = np.minimum(a, b)
    if out.dtype.kind == "f" or out.dtype.name == "bfloat16":
        out = np.where((a == 0) & (b == 0), -(-a - b), out)  # +0 only if both are +0
    return out


BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": _divide,
    "remainder": _remainder,
    "power": _power,
    "maximum": maximum,
    "minimum": minimum,
    "atan2": _atan2,
    "and": _logical_or_bitwise(np.bitwise_and),
    "or": _logical_or_bitwise(np.bitwise_or),
    "xor": _logical_or_bitwise(np.bitwise_xor),
    "shift-left": _shift("left"),
    "shift-right-logical": _shift("logical"),
    "shift-right-arithmetic": _shift("arithmetic"),
    "complex": _complex,
}



def _a_or_not_b(a, b):
    return a | ~b


def _a_and_not_b(a, b):
    return a & ~b


def _first(a, b):
    return np.broadcast_arrays(a, b)[0].copy()


# Arithmetic on pred is done on the integers 0/1 and converted back with != 0, as XLA does
# (XLA:CPU: add(true, true) is true): add is or, subtract xor, multiply and; x / 0 is all ones
# (true), x % 0 is x; a right shift by 1 gives 0. `not` stays logical and clz counts the
# zeros of a wider integer (always true).
_PRED_UNARY = {"negate": np.copy, "abs": np.copy, "sign": np.copy, "popcnt": np.copy,
               "clz": np.ones_like, "count-leading-zeros": np.ones_like}
_PRED_BINARY = {"add": np.logical_or, "subtract": np.logical_xor, "multiply": np.logical_and,
                "divide": _a_or_not_b, "power": _a_or_not_b, "remainder": _a_and_not_b,
                "shift-left": _first, "shift-right-logical": _a_and_not_b,
                "shift-right-arithmetic": _a_and_not_b}


def _pred_aware(fn, pred_fn):
    def apply(*args):
        return pred_fn(*args) if args[0].dtype == np.bool_ else fn(*args)
    return apply


UNARY = {k: _pred_aware(fn, _PRED_UNARY[k]) if k in _PRED_UNARY else fn
         for k, fn in UNARY.items()}
BINARY = {k: _pred_aware(fn, _PRED_BINARY[k]) if k in _PRED_BINARY else fn
          for k, fn in BINARY.items()}


def clamp(lo, x, hi):
    """minimum(maximum(x, lo), hi), with XLA's float maximum/minimum (NaN propagates)."""
    return BINARY["minimum"](BINARY["maximum"](x, lo), hi)


ELEMENTWISE_OPCODES = frozenset(UNARY) | frozenset(BINARY) | {
    "compare", "select", "clamp", "convert", "bitcast-convert", "reduce-precision"}


def total_order_key(x):
    """Integers that order floats as XLA's TOTALORDER: -NaN < -inf < ... < -0 < 0 < ... < NaN."""
    x = np.ascontiguousarray(x)
    signed = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    bits = x.dtype.itemsize * 8
    mask = np.array((1 << (bits - 1)) - 1).astype(signed.dtype)
    return np.where(signed < 0, signed ^ mask, signed)


_DIRECTIONS = {
    "EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
    "GT": np.greater, "GE": np.greater_equal,
}


def compare(a, b, direction: str, comparison_type: str | None = None):
    """XLA compare: FLOAT (IEEE, NaN unordered), TOTALORDER, SIGNED or UNSIGNED."""
    fn = _DIRECTIONS[direction]
    a, b = np.asarray(a), np.asarray(b)
    if comparison_type == "TOTALORDER" and a.dtype.kind == "f":
        a, b = np.broadcast_arrays(a, b)
        return fn(total_order_key(a), total_order_key(b))
    if comparison_type == "UNSIGNED" and a.dtype.kind == "i":
        a, b = (_unsigned_view(np.ascontiguousarray(v)) for v in np.broadcast_arrays(a, b))
    elif comparison_type == "SIGNED" and a.dtype.kind == "u":
        a, b = (np.ascontiguousarray(v).view(np.dtype(f"i{v.dtype.itemsize}"))
                for v in np.broadcast_arrays(a, b))
    return fn(a, b)


def _float_to_int(x, dtype):
    info = np.iinfo(dtype)
    t = np.trunc(x.astype(np.float64))
    nan = np.isnan(t)
    hi = t >= float(info.max)
    lo = t <= float(info.min)
    mid = ~(nan | hi | lo)
    out = np.zeros(x.shape, dtype=dtype)
    out[hi] = info.max
    out[lo] = info.min
    out[mid] = t[mid].astype(dtype)
    return out


def convert(x, dtype):
    """XLA convert: wrap int->int, saturating float->int (NaN -> 0), x != 0 for -> pred."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return x != 0
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = np.real(x)
    if dtype.kind in "iu" and dtypes.kind(x.dtype) == "f":
        # bfloat16 and the 8-bit floats (NumPy kind "V") too: a bare astype would wrap them
        return _float_to_int(x, dtype)
    if dtype.itemsize == 2 and dtype.kind in "fV" and x.dtype.itemsize > 4:
        x = x.astype(np.float32)  # to 16-bit floats through float32, as XLA
    elif dtype == dtypes.float8_e8m0fnu and x.dtype == np.float64:
        # XLA converts float64 directly: below the smallest power 2**-127 is NaN (from
        # float32 such values round up to 2**-127).
        with np.errstate(invalid="ignore"):
            x = np.where(np.abs(x) < 2.0 ** -127, np.nan, x)
    elif (dtype.itemsize == 1 and x.dtype.itemsize == 1 and dtype != x.dtype
          and dtypes.kind(x.dtype) == "f"):
        # ml_dtypes casts only some 8-bit float pairs directly; float32 holds each exactly.
        x = x.astype(np.float32)
    return x.astype(dtype)


def bitcast_convert(x, dtype):
    """Reinterpret the bits; a narrower result gains a minor dimension, a wider one loses it."""
    dtype = np.dtype(dtype)
    x = np.asarray(x, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    if dtype.itemsize == x.dtype.itemsize:
        return x.view(dtype)
    if dtype.itemsize < x.dtype.itemsize:
        ratio = x.dtype.itemsize // dtype.itemsize
        return x.reshape(x.shape + (1,)).view(dtype).reshape(x.shape + (ratio,))
    return x.view(dtype).reshape(x.shape[:-1])


_UINT_OF_SIZE = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def reduce_precision(x, exponent_bits: int, mantissa_bits: int):
    """Round to a float format with the given exponent/mantissa bits (XLA reduce-precision).

    Mantissas round to nearest even; exponents above the reduced range become infinity,
    those at or below its smallest normal exponent become (signed) zero; NaN stays NaN.
    """
    if dtypes.kind(x.dtype) != "f":
        return x
    if x.dtype.itemsize == 1:
        # As XLA does, 8-bit floats are rounded in float16 and converted back: the reduced
        # format is IEEE-like (an all-ones exponent is inf/NaN, denormals below its smallest
        # normal flush to zero) whatever the storage format (e4m3fn has no inf: 448 -> NaN).
        # float8_e8m0fnu's powers 2**-127..2**127 need float32's range.
        wide = np.float32 if x.dtype == dtypes.float8_e8m0fnu else np.float16
        return reduce_precision(x.astype(wide), exponent_bits, mantissa_bits).astype(x.dtype)
    # The layout comes from finfo, not the item size: bfloat16 and float16 are both 2 bytes.
    info = dtypes.finfo(x.dtype)
    utype, ebits, mbits = _UINT_OF_SIZE[x.dtype.itemsize], int(info.nexp), int(info.nmant)
    u = np.array(x, order="C").view(utype)  # np.array keeps 0-d (ascontiguousarray does not)
    one = utype(1)
    if mantissa_bits < mbits:
        drop = mbits - mantissa_bits
        last_bit = (u >> utype(drop)) & one
        bias = (utype(1) << utype(drop - 1)) - one + last_bit
        u = (u + bias) & ~((utype(1) << utype(drop)) - one)
    if exponent_bits < ebits:
        exp_mask = ((utype(1) << utype(ebits)) - one) << utype(mbits)
        sign_mask = utype(1) << utype(ebits + mbits)
        full_bias = (1 << (ebits - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        max_exp = utype(full_bias + reduced_bias) << utype(mbits)
        min_exp = utype(full_bias - reduced_bias) << utype(mbits)
        exponent = u & exp_mask
        signed_zero = u & sign_mask
        u = np.where(exponent > max_exp, signed_zero | exp_mask, u)
        u = np.where(exponent <= min_exp, signed_zero, u)
    # NaN stays NaN, also with mantissa_bits=0 (JAX 0.10.2 on XLA:CPU).
    return np.where(np.isnan(x), x, u.view(x.dtype))


def round_to_bf16(x):
    """Round float32 values to the nearest bfloat16 (kept in float32 storage)."""
    return reduce_precision(np.asarray(x, np.float32), 8, 7)
