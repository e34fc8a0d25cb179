"""Elementwise arithmetic and transcendental functions (NumPy ufuncs) in lax terms, with
JAX's type promotion (weak types for Python scalars) and NumPy broadcasting."""

from __future__ import annotations

import functools

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.custom_derivatives import custom_jvp
from minijax.numpy import util
from minijax.numpy.util import (
    check_arraylike,
    full_like_scalar,
    promote_args,
    promote_args_inexact,
    promote_args_numeric,
    to_array,
)


def _kind(x) -> str:
    return dtypes.kind(get_aval(x).dtype)


def _c(value, like):
    """A 0-d constant of `like`'s dtype (weak if `like` is weak)."""
    return full_like_scalar(value, like)


def _lax(name):
    return getattr(lax, name)


def _bool_or(x, y):
    return util.lax_fn("bitwise_or", "or_")(x, y)


def _bool_and(x, y):
    return util.lax_fn("bitwise_and", "and_")(x, y)


def _select(pred, on_true, on_false):
    """Elementwise pred ? on_true : on_false (operands of equal shape or scalars)."""
    shape = util.broadcast_shapes(*(get_aval(v).shape for v in (pred, on_true, on_false)))
    pred, on_true, on_false = (util.broadcast_to(v, shape) for v in (pred, on_true, on_false))
    return lax.select_n(pred, on_false, on_true)


# --------------------------------------------------------------------------- arithmetic


def add(x1, x2, /):
    """x1 + x2 (logical or for booleans)."""
    x1, x2 = promote_args("add", x1, x2)
    return _bool_or(x1, x2) if _kind(x1) == "b" else lax.add(x1, x2)


def subtract(x1, x2, /):
    """x1 - x2."""
    x1, x2 = promote_args("subtract", x1, x2)
    if _kind(x1) == "b":
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the "
                        "bitwise_xor, the `^` operator, or the logical_xor function instead.")
    return lax.sub(x1, x2)


def multiply(x1, x2, /):
    """x1 * x2 (logical and for booleans)."""
    x1, x2 = promote_args("multiply", x1, x2)
    return _bool_and(x1, x2) if _kind(x1) == "b" else lax.mul(x1, x2)


def true_divide(x1, x2, /):
    """x1 / x2; integers are divided as floats."""
    x1, x2 = promote_args_inexact("true_divide", x1, x2)
    return lax.div(x1, x2)


divide = true_divide


def floor_divide(x1, x2, /):
    """x1 // x2 rounded toward negative infinity.

    Division by zero follows JAX: +-inf (NaN for 0 // 0) for floats; for signed integers
    XLA's x / 0 = -1 corrected by the floor rule (-2 for x != 0, -1 for 0), for unsigned
    integers the type's maximum.
    """
    x1, x2 = promote_args_numeric("floor_divide", x1, x2)
    kind = _kind(x1)
    if kind == "u":
        return lax.div(x1, x2)
    if kind == "i":
        q = lax.div(x1, x2)
        zero = _c(0, x1)
        signs_differ = lax.ne(lax.sign(x1), lax.sign(x2))
        inexact = lax.ne(lax.rem(x1, x2), zero)
        return _select(_bool_and(signs_differ, inexact), lax.sub(q, _c(1, q)), q)
    if kind == "c":
        raise TypeError("floor_divide does not support complex-valued inputs")
    return _float_divmod(x1, x2)[0]


def _float_divmod(x1, x2):
    # CPython's float_divmod, as JAX: x1 is not corrected by a NaN remainder when x2 == 0,
    # so x // 0. is +-inf.
    mod = lax.rem(x1, x2)
    zero = _c(0, mod)
    corrected = _select(lax.eq(x2, _c(0, x2)), x1, lax.sub(x1, mod))
    div = lax.div(corrected, x2)
    ind = _bool_and(lax.ne(mod, zero), lax.ne(lax.sign(x2), lax.sign(mod)))
    mod = _select(ind, lax.add(mod, x2), mod)
    div = _select(ind, lax.sub(div, _c(1, div)), div)
    return lax.round(div), mod


def _nonzero_divisor(x2):
    """Integer divisors with 0 replaced by 1 (JAX: integer x % 0 and fmod(x, 0) are 0)."""
    if _kind(x2) not in "iu":
        return x2
    return _select(lax.eq(x2, _c(0, x2)), _c(1, x2), x2)


def remainder(x1, x2, /):
    """x1 % x2 with the sign of the divisor (NumPy's mod); integer x % 0 is 0 (as JAX)."""
    x1, x2 = promote_args_numeric("remainder", x1, x2)
    if _kind(x1) == "c":
        raise TypeError("remainder does not support complex-valued inputs")
    x2 = _nonzero_divisor(x2)
    trunc = lax.rem(x1, x2)
    if _kind(x1) == "u":
        return trunc
    zero = _c(0, trunc)
    fix = _bool_and(lax.ne(trunc, zero), lax.ne(lax.lt(trunc, zero), lax.lt(x2, zero)))
    return _select(fix, lax.add(trunc, x2), trunc)


mod = remainder


def fmod(x1, x2, /):
    """C-style remainder (sign of the dividend); integer fmod(x, 0) is 0 (as JAX)."""
    x1, x2 = promote_args_numeric("fmod", x1, x2)
    return lax.rem(x1, _nonzero_divisor(x2))


def divmod(x1, x2, /):
    """(floor_divide(x1, x2), remainder(x1, x2))."""
    x1, x2 = promote_args_numeric("divmod", x1, x2)
    if _kind(x1) == "f":
        return _float_divmod(x1, x2)
    return floor_divide(x1, x2), remainder(x1, x2)


def _concrete_int_exponent(x2):
    """x2 as a Python int if it is a concrete integer scalar (JAX's integer_pow case)."""
    if isinstance(x2, (float, complex)):
        return None
    value = util.concrete_or_none(x2)
    if value is None or value.ndim != 0 or value.dtype.kind not in "iub":
        return None
    return int(value)


def power(x1, x2, /):
    """x1 ** x2, with JAX's cases.

    A concrete integer scalar exponent uses lax.integer_pow (integers to a negative power
    raise TypeError, as JAX). Integer bases with array or traced exponents use binary
    exponentiation over the exponent's low 6 bits (JAX's algorithm: a negative exponent gives
    an implementation-defined value, 0 ** n is 0 for n != 0). A float base with an integer
    exponent keeps the exponent's dtype, so the gradient at x == 0 with n == 0 is 0.
    """
    check_arraylike("power", x1, x2)
    exponent = _concrete_int_exponent(x2)
    if exponent is not None:
        (x1,) = util.promote_dtypes_numeric(x1)
        return lax.integer_pow(x1, exponent)
    p1, p2 = promote_args_numeric("power", x1, x2)
    if _kind(p1) in "iub":
        return _pow_int_int(p1, p2)
    a1, a2 = to_array(x1), to_array(x2)
    if _kind(a1) in "fc" and _kind(a2) in "iu" and not get_aval(a1).weak_type:
        shape = util.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
        return lax.pow(util.broadcast_to(a1, shape), util.broadcast_to(a2, shape))
    return lax.pow(p1, p2)


def _pow_int_int(base, exponent):
    """JAX's integer power: binary exponentiation over the exponent's low 6 bits."""
    one, zero = _c(1, exponent), _c(0, exponent)
    shift = util.lax_fn("shift_right_logical")
    band = util.lax_fn("bitwise_and", "and_")
    if _kind(base) == "b":
        base = util.convert(base, dtypes.default_int_dtype())
        exponent = util.convert(exponent, get_aval(base).dtype)
        one, zero = _c(1, exponent), _c(0, exponent)
    shape = get_aval(base).shape
    base_zero = lax.eq(base, _c(0, base))
    acc = _select(_bool_and(base_zero, lax.ne(exponent, zero)),
                  util.broadcast_to(_c(0, base), shape), util.broadcast_to(_c(1, base), shape))
    for i in range(6):
        acc = _select(lax.ne(band(exponent, one), zero), lax.mul(acc, base), acc)
        if i < 5:
            base = lax.mul(base, base)
            exponent = shift(exponent, one)
    return acc


def float_power(x1, x2, /):
    """x1 ** x2 computed in floating point."""
    x1, x2 = promote_args_inexact("float_power", x1, x2)
    return lax.pow(x1, x2)


def negative(x, /):
    """-x."""
    check_arraylike("negative", x)
    x = to_array(x)
    if _kind(x) == "b":
        raise TypeError("The numpy boolean negative, the `-` operator, is not supported, use "
                        "the `~` operator or the logical_not function instead.")
    return lax.neg(x)


def positive(x, /):
    """+x."""
    check_arraylike("positive", x)
    return to_array(x)


def absolute(x, /):
    """|x| (the modulus for complex input)."""
    check_arraylike("absolute", x)
    x = to_array(x)
    return x if _kind(x) in "ub" else lax.abs(x)


abs = absolute


def sign(x, /):
    """-1, 0 or 1 by sign (x/|x| for complex)."""
    check_arraylike("sign", x)
    x = to_array(x)
    kind = _kind(x)
    if kind == "b":
        return x
    if kind == "u":
        return util.convert(lax.gt(x, _c(0, x)), get_aval(x).dtype, get_aval(x).weak_type)
    return lax.sign(x)


def _float_passthrough(name, fn):
    def wrapper(x, /):
        check_arraylike(name, x)
        x = to_array(x)
        if _kind(x) in "iub":
            return x
        return fn(x)
    wrapper.__name__ = name
    wrapper.__doc__ = f"Elementwise {name} (integers are returned unchanged)."
    return wrapper


def _round_even(x):
    method = getattr(lax, "RoundingMethod", None)
    return lax.round(x, method.TO_NEAREST_EVEN if method is not None else 1)


def _trunc(x):
    return _select(lax.lt(x, _c(0, x)), lax.ceil(x), lax.floor(x))


floor = _float_passthrough("floor", lambda x: lax.floor(x))
ceil = _float_passthrough("ceil", lambda x: lax.ceil(x))
trunc = _float_passthrough("trunc", _trunc)
fix = _float_passthrough("fix", _trunc)


def rint(x, /):
    """Round to the nearest integer (ties to even); integers become floats."""
    check_arraylike("rint", x)
    x = to_array(x)
    if _kind(x) in "iub":
        return util.convert(x, dtypes.default_float_dtype(), get_aval(x).weak_type)
    if _kind(x) == "c":
        return lax.complex(_round_even(lax.real(x)), _round_even(lax.imag(x)))
    return _round_even(x)


def round(a, decimals=0, out=None):
    """Round to `decimals` decimal places (ties to even), as numpy.round."""
    check_arraylike("round", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
    a = to_array(a)
    decimals = util.concrete_int(decimals, "round: decimals")
    kind = _kind(a)
    if kind in "iub":
        if decimals >= 0 or kind == "b":
            return a
        factor = _c(10 ** (-decimals), a)
        q = floor_divide(a, factor)
        twice_r = lax.mul(lax.sub(a, lax.mul(q, factor)), _c(2, a))
        q_odd = lax.ne(remainder(q, _c(2, q)), _c(0, q))
        up = _bool_or(lax.gt(twice_r, factor), _bool_and(lax.eq(twice_r, factor), q_odd))
        return lax.mul(_select(up, lax.add(q, _c(1, q)), q), factor)
    if kind == "c":
        return lax.complex(round(lax.real(a), decimals), round(lax.imag(a), decimals))
    if decimals == 0:
        return _round_even(a)
    # float16 scales in float32 (as JAX), so that x * 10**decimals does not overflow
    dtype = get_aval(a).dtype
    wide = util.convert(a, np.float32) if dtype == np.float16 else a
    factor = _c(10.0 ** decimals, wide)
    out = lax.div(_round_even(lax.mul(wide, factor)), factor)
    return util.convert(out, dtype) if dtype == np.float16 else out


around = round
round_ = round


# --------------------------------------------------------------------------- transcendental


def _unary_inexact(name, compute):
    def wrapper(x, /):
        check_arraylike(name, x)
        (x,) = util.promote_dtypes_inexact(x)
        return compute(x)
    wrapper.__name__ = name
    wrapper.__doc__ = f"Elementwise {name} (integer inputs are promoted to float)."
    return wrapper


def _log_base(x, base):
    return lax.div(lax.log(x), _c(np.log(base), x))


def _exp2(x):
    fn = getattr(lax, "exp2", None)
    return fn(x) if fn is not None else lax.exp(lax.mul(x, _c(np.log(2), x)))


exp = _unary_inexact("exp", lambda x: lax.exp(x))
exp2 = _unary_inexact("exp2", _exp2)
expm1 = _unary_inexact("expm1", lambda x: lax.expm1(x))
log = _unary_inexact("log", lambda x: lax.log(x))
log2 = _unary_inexact("log2", lambda x: _log_base(x, 2))
log10 = _unary_inexact("log10", lambda x: _log_base(x, 10))
log1p = _unary_inexact("log1p", lambda x: lax.log1p(x))
sqrt = _unary_inexact("sqrt", lambda x: lax.sqrt(x))
cbrt = _unary_inexact("cbrt", lambda x: lax.cbrt(x))
sin = _unary_inexact("sin", lambda x: lax.sin(x))
cos = _unary_inexact("cos", lambda x: lax.cos(x))
tan = _unary_inexact("tan", lambda x: lax.tan(x))
arcsin = _unary_inexact("arcsin", lambda x: lax.asin(x))
arccos = _unary_inexact("arccos", lambda x: lax.acos(x))
arctan = _unary_inexact("arctan", lambda x: lax.atan(x))
sinh = _unary_inexact("sinh", lambda x: lax.sinh(x))
cosh = _unary_inexact("cosh", lambda x: lax.cosh(x))
tanh = _unary_inexact("tanh", lambda x: lax.tanh(x))
arcsinh = _unary_inexact("arcsinh", lambda x: lax.asinh(x))
arccosh = _unary_inexact("arccosh", lambda x: lax.acosh(x))
arctanh = _unary_inexact("arctanh", lambda x: lax.atanh(x))
deg2rad = _unary_inexact("deg2rad", lambda x: lax.mul(x, _c(np.pi / 180, x)))
rad2deg = _unary_inexact("rad2deg", lambda x: lax.mul(x, _c(180 / np.pi, x)))
radians, degrees = deg2rad, rad2deg
asin, acos, atan = arcsin, arccos, arctan
asinh, acosh, atanh = arcsinh, arccosh, arctanh


def _sinc(x):
    zero = lax.eq(x, _c(0, x))
    pix = lax.mul(x, _c(np.pi, x))
    safe = _select(zero, util.broadcast_to(_c(1, x), get_aval(x).shape), pix)
    return _select(zero, _sinc_series(0)(pix), lax.div(lax.sin(safe), safe))


@functools.cache
def _sinc_series(k):
    """The k-th derivative of sin(y)/y at y = 0 as a function of y (used only where y == 0),
    differentiable to any order as in JAX: its derivative is the (k+1)-th term times the
    tangent, so hessian(sinc)(0) = -pi**2 / 3. The value is y * 0 (+ the term): the sign
    of a zero derivative follows y's, as in JAX."""
    term = 0.0 if k % 2 else (-1.0) ** (k // 2) / (k + 1)

    def value(y):
        zero = lax.mul(y, _c(0, y))
        return zero if k % 2 else lax.add(zero, _c(term, y))

    fn = custom_jvp(value)

    def jvp(primals, tangents):
        (y,), (t,) = primals, tangents
        return fn(y), lax.mul(_sinc_series(k + 1)(y), t)

    fn.defjvp(jvp)
    return fn


sinc = _unary_inexact("sinc", _sinc)


def square(x, /):
    """x * x."""
    check_arraylike("square", x)
    (x,) = util.promote_dtypes_numeric(x)
    return lax.mul(x, x)


def reciprocal(x, /):
    """1 / x; integer and boolean input promotes to the default float type (as JAX)."""
    check_arraylike("reciprocal", x)
    (x,) = util.promote_dtypes_inexact(x)
    return lax.div(_c(1, x), x)


def arctan2(x1, x2, /):
    """Elementwise arctan(x1 / x2) choosing the quadrant."""
    x1, x2 = promote_args_inexact("arctan2", x1, x2)
    return lax.atan2(x1, x2)


atan2 = arctan2


def hypot(x1, x2, /):
    """sqrt(x1**2 + x2**2) without intermediate overflow."""
    x1, x2 = promote_args_inexact("hypot", x1, x2)
    util.check_no_complex("hypot", x1)
    x1, x2 = lax.abs(x1), lax.abs(x2)
    inf = _c(np.inf, x1)
    any_inf = _bool_or(lax.eq(x1, inf), lax.eq(x2, inf))
    big, small = lax.max(x1, x2), lax.min(x1, x2)
    zero = lax.eq(big, _c(0, big))
    safe = _select(zero, util.broadcast_to(_c(1, big), get_aval(big).shape), big)
    ratio = lax.div(small, safe)
    out = lax.mul(big, lax.sqrt(lax.add(_c(1, ratio), lax.mul(ratio, ratio))))
    out = _select(zero, big, out)
    return _select(any_inf, util.broadcast_to(inf, get_aval(out).shape), out)


def logaddexp(x1, x2, /):
    """log(exp(x1) + exp(x2)) computed stably (at x1 == x2 each gradient is 1/2, as JAX)."""
    x1, x2 = promote_args_inexact("logaddexp", x1, x2)
    return _logaddexp(x1, x2)


def logaddexp2(x1, x2, /):
    """log2(2**x1 + 2**x2) computed stably (at x1 == x2 each gradient is 1/2, as JAX)."""
    x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
    return _logaddexp2(x1, x2)


def _logaddexp_value(x1, x2, base2):
    amax = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    if base2:
        tail = lax.div(lax.log1p(_exp2(lax.neg(lax.abs(delta)))), _c(np.log(2), x1))
    else:
        tail = lax.log1p(lax.exp(lax.neg(lax.abs(delta))))
    # NaN delta: a NaN operand or infinities of the same sign.
    return _select(lax.ne(delta, delta), lax.add(x1, x2), lax.add(amax, tail))


def _replace_inf(x):
    """+inf replaced by 0 (JAX's rule; -inf stays, so a tie at -inf has NaN gradients)."""
    return _select(lax.eq(x, _c(np.inf, x)), util.broadcast_to(_c(0, x), get_aval(x).shape), x)


def _logaddexp_jvp_for(base2):
    def jvp(primals, tangents):
        x1, x2 = primals
        t1, t2 = tangents
        # The primal through the custom_jvp function itself, so that higher derivatives
        # recurse through this rule (through the raw value they split max's tie instead:
        # softplus''(0) came out 0.5, not 1/4).
        out = (_logaddexp2 if base2 else _logaddexp)(x1, x2)
        power = _exp2 if base2 else lax.exp
        # The weights exp(x - out) of the two operands: 1/2 each at a tie.
        w1 = power(lax.sub(_replace_inf(x1), _replace_inf(out)))
        w2 = power(lax.sub(_replace_inf(x2), _replace_inf(out)))
        return out, lax.add(lax.mul(t1, w1), lax.mul(t2, w2))
    return jvp


_logaddexp = custom_jvp(lambda x1, x2: _logaddexp_value(x1, x2, False))
_logaddexp.defjvp(_logaddexp_jvp_for(False))
_logaddexp2 = custom_jvp(lambda x1, x2: _logaddexp_value(x1, x2, True))
_logaddexp2.defjvp(_logaddexp_jvp_for(True))


def signbit(x, /):
    """True where the sign bit is set (including -0.0 and negative NaNs)."""
    check_arraylike("signbit", x)
    x = to_array(x)
    kind = _kind(x)
    if kind in "ub":
        return util.broadcast_to(util.convert(False, dtypes.bool_), get_aval(x).shape)
    if kind == "i":
        return lax.lt(x, _c(0, x))
    if kind == "c":
        raise TypeError("signbit does not support complex-valued inputs")
    itemsize = get_aval(x).dtype.itemsize
    int_dtype = np.dtype(f"int{itemsize * 8}")
    bits = lax.bitcast_convert_type(x, int_dtype)
    return lax.lt(bits, util.convert(0, int_dtype))


def copysign(x1, x2, /):
    """|x1| with the sign of x2."""
    x1, x2 = promote_args_inexact("copysign", x1, x2)
    util.check_no_complex("copysign", x1)
    mag = lax.abs(x1)
    return _select(signbit(x2), lax.neg(mag), mag)


def heaviside(x1, x2, /):
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0."""
    x1, x2 = promote_args_inexact("heaviside", x1, x2)
    zero, one = _c(0, x1), _c(1, x1)
    shape = get_aval(x1).shape or get_aval(x2).shape
    out = _select(lax.lt(x1, zero), util.broadcast_to(zero, shape),
                  _select(lax.gt(x1, zero), util.broadcast_to(one, shape), x2))
    return _select(lax.ne(x1, x1), x1, out)


def nextafter(x1, x2, /):
    """The next representable float after x1 toward x2."""
    x1, x2 = promote_args_inexact("nextafter", x1, x2)
    return lax.nextafter(x1, x2)


def modf(x, /):
    """(fractional part, integral part), both with the sign of x."""
    check_arraylike("modf", x)
    (x,) = util.promote_dtypes_inexact(x)
    whole = _trunc(x)
    return lax.sub(x, whole), whole


# --------------------------------------------------------------------------- complex parts


def conjugate(x, /):
    """Complex conjugate (identity for real input)."""
    check_arraylike("conjugate", x)
    x = to_array(x)
    return lax.conj(x) if _kind(x) == "c" else x


conj = conjugate


def real(val, /):
    """The real part."""
    check_arraylike("real", val)
    val = to_array(val)
    return lax.real(val) if _kind(val) == "c" else val


def imag(val, /):
    """The imaginary part (zeros for real input)."""
    check_arraylike("imag", val)
    val = to_array(val)
    if _kind(val) == "c":
        return lax.imag(val)
    return util.broadcast_to(_c(0, val), get_aval(val).shape)


def angle(z, deg=False):
    """The argument of a complex number (radians, or degrees with deg=True)."""
    check_arraylike("angle", z)
    z = to_array(z)
    if _kind(z) == "c":
        re, im = lax.real(z), lax.imag(z)
    else:
        (re,) = util.promote_dtypes_inexact(z)
        im = util.broadcast_to(_c(0, re), get_aval(re).shape)
    out = lax.atan2(im, re)
    return rad2deg(out) if deg else out


# --------------------------------------------------------------------------- max / min


def maximum(x1, x2, /):
    """Elementwise maximum (NaNs propagate)."""
    x1, x2 = promote_args("maximum", x1, x2)
    return _bool_or(x1, x2) if _kind(x1) == "b" else lax.max(x1, x2)


def minimum(x1, x2, /):
    """Elementwise minimum (NaNs propagate)."""
    x1, x2 = promote_args("minimum", x1, x2)
    return _bool_and(x1, x2) if _kind(x1) == "b" else lax.min(x1, x2)


def fmax(x1, x2, /):
    """Elementwise maximum ignoring NaNs: where(x1 > x2 or isnan(x2), x1, x2), as JAX (so a
    tie, +-0 included, gives x2 and its gradient)."""
    x1, x2 = promote_args("fmax", x1, x2)
    return _select(_bool_or(lax.gt(x1, x2), lax.ne(x2, x2)), x1, x2)


def fmin(x1, x2, /):
    """Elementwise minimum ignoring NaNs: where(x1 < x2 or isnan(x2), x1, x2), as JAX."""
    x1, x2 = promote_args("fmin", x1, x2)
    return _select(_bool_or(lax.lt(x1, x2), lax.ne(x2, x2)), x1, x2)


def clip(arr=None, /, min=None, max=None, *, a=None, a_min=None, a_max=None):
    """Limit values to [min, max] (either bound may be None)."""
    if arr is None:
        arr = a
    if min is None:
        min = a_min
    if max is None:
        max = a_max
    if arr is None:
        raise TypeError("clip() missing the array argument")
    check_arraylike("clip", arr)
    out = to_array(arr)
    if any(v is not None and dtypes.is_complex(get_aval(to_array(v)).dtype)
           for v in (out, min, max)):
        raise ValueError("clip: complex values have no ordering and cannot be clipped (got "
                         f"a complex input or bound; input dtype {get_aval(out).dtype}); "
                         "clip the real and imaginary parts separately")
    if min is not None:
        out = maximum(min, out)
    if max is not None:
        out = minimum(max, out)
    return out
