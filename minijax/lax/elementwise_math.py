"""Transcendental elementwise primitives: exp2, log, log1p, expm1, tanh, logistic, tan,
asin, acos, atan, atan2, sinh, cosh, asinh, acosh, atanh, sqrt, rsqrt, cbrt, erf, erfc,
erf_inv, lgamma, digamma, is_finite, nextafter, and reduce_precision (sin, cos, exp are
in elementwise.py).

Each block: the public wrapper, the primitive with abstract eval and NumPy impl, the JVP,
the batching rule and the HLO lowering (an XLA opcode, or an expression of XLA opcodes
from elementwise_lowering.py). Special functions NumPy lacks come from special_math.py,
evaluated in float64 and rounded once to the result dtype.
"""

from __future__ import annotations

import math

import numpy as np

from minijax import dispatch, dtypes
from minijax.compiler.evaluator import elementwise as evaluator_ew
from minijax.compiler.lowering_registry import register_lowering
from minijax.dispatch import compile_when_large
from minijax.interpreters import ad, batching
from minijax.lax import elementwise_lowering as el
from minijax.lax import special_math
from minijax.lax.accuracy import check_accuracy
from minijax.lax.elementwise import (
    _binary,
    _brcast,
    _const,
    _typed_unary,
    _unary,
    add,
    div,
    elementwise_batcher,
    exp,
    integer_pow,
    mul,
    neg,
    out_aval,
    round,
    sin,
    square,
    sub,
)
from minijax.lax.elementwise_int import lt, select
from minijax.lax.utils import promote_scalars, same_shape_dtype_rule, standard_primitive


def _composite(fn):
    """A lowering rule emitting the expression fn(Emit, *operands)."""
    def rule(ctx, *operands, **_):
        operands = ctx.broadcast_scalars(operands)
        return fn(el.Emit(ctx, out_aval(ctx).update(dtype=ctx.avals_in[0].dtype)),
                  *operands)
    return rule


def _via_float64(fn):
    """A NumPy impl computing fn in float64 and rounding to the input dtype."""
    def impl(x):
        x = np.asarray(x)
        return np.asarray(fn(x.astype(np.float64))).astype(x.dtype)
    return impl


# --------------------------------------------------------------------------- exp / log family


def exp2(x, *, accuracy=None):
    """Elementwise 2**x (`accuracy`: see lax.accuracy)."""
    if accuracy is not None:
        check_accuracy(accuracy)
    return exp2_p.bind(x)


def log(x, *, accuracy=None):
    """Elementwise natural logarithm (`accuracy`: see lax.accuracy)."""
    if accuracy is not None:
        check_accuracy(accuracy)
    return log_p.bind(x)


def log1p(x, *, accuracy=None):
    """Elementwise log(1 + x), accurate for small x (`accuracy`: see lax.accuracy)."""
    if accuracy is not None:
        check_accuracy(accuracy)
    return log1p_p.bind(x)


def expm1(x, *, accuracy=None):
    """Elementwise e**x - 1, accurate for small x (`accuracy`: see lax.accuracy)."""
    if accuracy is not None:
        check_accuracy(accuracy)
    return expm1_p.bind(x)


exp2_p = _unary("exp2", np.exp2, None, kinds="fc", lowering=_composite(el.exp2))
log_p = _unary("log", np.log, "log", kinds="fc")
log1p_p = _unary("log1p", np.log1p, "log-plus-one", kinds="fc")
expm1_p = _unary("expm1", np.expm1, "exponential-minus-one", kinds="fc")
ad.defjvp2(exp2_p, lambda t, ans, x: mul(t, mul(_const(x, math.log(2)), ans)))
ad.defjvp(log_p, lambda t, x: div(t, x))
ad.defjvp(log1p_p, lambda t, x: div(t, add(x, _const(x, 1))))
ad.defjvp2(expm1_p, lambda t, ans, x: mul(t, add(ans, _const(x, 1))))

# --------------------------------------------------------------------------- tanh / logistic


def tanh(x, *, accuracy=None):
    """Elementwise hyperbolic tangent (`accuracy`: see lax.accuracy)."""
    if accuracy is not None:
        check_accuracy(accuracy)
    return tanh_p.bind(x)


def logistic(x, *, accuracy=None):
    """Elementwise sigmoid 1 / (1 + e**-x) (`accuracy`: see lax.accuracy)."""
    if accuracy is not None:
        check_accuracy(accuracy)
    return logistic_p.bind(x)


def _logistic_impl(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


tanh_p = _unary("tanh", np.tanh, "tanh", kinds="fc")
logistic_p = _unary("logistic", _logistic_impl, "logistic", kinds="fc")
ad.defjvp2(tanh_p, lambda t, ans, x: mul(t, sub(_const(x, 1), square(ans))))
ad.defjvp2(logistic_p, lambda t, ans, x: mul(t, mul(ans, sub(_const(x, 1), ans))))

# --------------------------------------------------------------------------- trigonometric


def tan(x, *, accuracy=None):
    """Elementwise tangent (`accuracy`: see lax.accuracy)."""
    if accuracy is not None:
        check_accuracy(accuracy)
    return tan_p.bind(x)


def asin(x):
    """Elementwise arcsine."""
    return asin_p.bind(x)


def acos(x):
    """Elementwise arccosine."""
    return acos_p.bind(x)


def atan(x):
    """Elementwise arctangent."""
    return atan_p.bind(x)


def atan2(x, y):
    """Elementwise arctangent of x / y with the quadrant from the signs of x and y."""
    x, y = promote_scalars("atan2", x, y)
    return atan2_p.bind(x, y)


tan_p = _unary("tan", np.tan, "tan", kinds="fc")
asin_p = _unary("asin", np.arcsin, None, kinds="fc", lowering=_composite(el.asin))
acos_p = _unary("acos", np.arccos, None, kinds="fc", lowering=_composite(el.acos))
atan_p = _unary("atan", np.arctan, None, kinds="fc", lowering=_composite(el.atan))
atan2_p = _binary("atan2", np.arctan2, "atan2", kinds="f")


def _rsqrt_one_minus_sq(x):
    return rsqrt(sub(_const(x, 1), square(x)))


ad.defjvp2(tan_p, lambda t, ans, x: mul(t, add(_const(x, 1), square(ans))))
ad.defjvp(asin_p, lambda t, x: mul(t, _rsqrt_one_minus_sq(x)))
ad.defjvp(acos_p, lambda t, x: neg(mul(t, _rsqrt_one_minus_sq(x))))
ad.defjvp(atan_p, lambda t, x: div(t, add(_const(x, 1), square(x))))
ad.defjvp(atan2_p,
          lambda t, x, y: mul(_brcast(t, y), div(y, add(square(x), square(y)))),
          lambda t, x, y: mul(_brcast(t, x), div(neg(x), add(square(x), square(y)))))

# --------------------------------------------------------------------------- hyperbolic


def sinh(x):
    """Elementwise hyperbolic sine."""
    return sinh_p.bind(x)


def cosh(x):
    """Elementwise hyperbolic cosine."""
    return cosh_p.bind(x)


def asinh(x):
    """Elementwise inverse hyperbolic sine."""
    return asinh_p.bind(x)


def acosh(x):
    """Elementwise inverse hyperbolic cosine."""
    return acosh_p.bind(x)


def atanh(x):
    """Elementwise inverse hyperbolic tangent."""
    return atanh_p.bind(x)


sinh_p = _unary("sinh", np.sinh, None, kinds="fc", lowering=_composite(el.sinh))
cosh_p = _unary("cosh", np.cosh, None, kinds="fc", lowering=_composite(el.cosh))
asinh_p = _unary("asinh", np.arcsinh, None, kinds="fc", lowering=_composite(el.asinh))
acosh_p = _unary("acosh", np.arccosh, None, kinds="fc", lowering=_composite(el.acosh))
atanh_p = _unary("atanh", np.arctanh, None, kinds="fc", lowering=_composite(el.atanh))
ad.defjvp(sinh_p, lambda t, x: mul(t, cosh(x)))
ad.defjvp(cosh_p, lambda t, x: mul(t, sinh(x)))
ad.defjvp(asinh_p, lambda t, x: mul(t, rsqrt(add(square(x), _const(x, 1)))))
# x^2 - 1 as JAX (not (x-1)(x+1), whose -0 at x = -1 would give -inf).
ad.defjvp(acosh_p, lambda t, x: mul(t, rsqrt(sub(mul(x, x), _const(x, 1)))))
ad.defjvp(atanh_p, lambda t, x: div(div(t, sub(_const(x, 1), x)), add(_const(x, 1), x)))

# --------------------------------------------------------------------------- roots


def sqrt(x, *, accuracy=None):
    """Elementwise square root (`accuracy`: see lax.accuracy)."""
    if accuracy is not None:
        check_accuracy(accuracy)
    return sqrt_p.bind(x)


def rsqrt(x, *, accuracy=None):
    """Elementwise 1 / sqrt(x) (`accuracy`: see lax.accuracy)."""
    if accuracy is not None:
        check_accuracy(accuracy)
    return rsqrt_p.bind(x)


def cbrt(x, *, accuracy=None):
    """Elementwise real cube root (`accuracy`: see lax.accuracy)."""
    if accuracy is not None:
        check_accuracy(accuracy)
    return cbrt_p.bind(x)


def _rsqrt_impl(x):
    x = np.asarray(x)
    wide = np.complex128 if x.dtype.kind == "c" else np.float64
    return (1 / np.sqrt(x.astype(wide))).astype(x.dtype)


sqrt_p = _unary("sqrt", np.sqrt, "sqrt", kinds="fc")
rsqrt_p = _unary("rsqrt", _rsqrt_impl, "rsqrt", kinds="fc")
cbrt_p = _unary("cbrt", np.cbrt, "cbrt", kinds="f")
ad.defjvp2(sqrt_p, lambda t, ans, x: div(t, mul(_const(x, 2), ans)))
ad.defjvp2(rsqrt_p, lambda t, ans, x: mul(t, mul(_const(x, -0.5), div(ans, x))))
ad.defjvp2(cbrt_p, lambda t, ans, x: mul(t, mul(_const(x, 1 / 3), integer_pow(ans, -2))))

# --------------------------------------------------------------------------- error function


def erf(x):
    """Elementwise error function."""
    return erf_p.bind(x)


def erfc(x):
    """Elementwise complementary error function 1 - erf(x)."""
    return erfc_p.bind(x)


def erf_inv(x):
    """Elementwise inverse error function."""
    return erf_inv_p.bind(x)


_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)

erf_p = _unary("erf", _via_float64(special_math.erf), "erf", kinds="f")
erfc_p = _unary("erfc", _via_float64(special_math.erfc), None, kinds="f",
                lowering=_composite(el.erfc))
erf_inv_p = _unary("erf_inv", _via_float64(special_math.erf_inv), None, kinds="f",
                   lowering=_composite(el.erf_inv))
ad.defjvp(erf_p, lambda t, x: mul(t, mul(_const(x, _TWO_OVER_SQRT_PI), exp(neg(square(x))))))
ad.defjvp(erfc_p, lambda t, x: mul(t, mul(_const(x, -_TWO_OVER_SQRT_PI),
                                           exp(neg(square(x))))))
ad.defjvp2(erf_inv_p, lambda t, ans, x: mul(t, mul(_const(x, 1 / _TWO_OVER_SQRT_PI),
                                                   exp(square(ans)))))

# --------------------------------------------------------------------------- gamma family


def lgamma(x):
    """Elementwise log |Gamma(x)|."""
    return lgamma_p.bind(x)


def digamma(x):
    """Elementwise digamma function psi(x), the derivative of lgamma."""
    return digamma_p.bind(x)


lgamma_p = _unary("lgamma", _via_float64(special_math.lgamma), None, kinds="f",
                  lowering=_composite(el.lgamma))
digamma_p = _unary("digamma", _via_float64(special_math.digamma), None, kinds="f",
                   lowering=_composite(el.digamma))
# Their NumPy references are float64 series, ~100x slower than a kernel: large eager
# inputs run compiled.
for _slow in (erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p):
    compile_when_large(_slow)

_TRIGAMMA_SHIFT = 10
# Asymptotic series psi1(z) ~ 1/z + 1/(2 z^2) + sum_k B_2k / z^(2k+1).
_TRIGAMMA_ASYM = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730)


def _trigamma(x):
    """psi'(x) from lax ops (the derivative of digamma; itself differentiable)."""
    reflect = lt(x, _const(x, 0.5))
    xp = select(reflect, sub(_const(x, 1), x), x)
    total = None
    for j in range(_TRIGAMMA_SHIFT):
        term = integer_pow(add(xp, _const(x, j)), -2)
        total = term if total is None else add(total, term)
    z = add(xp, _const(x, _TRIGAMMA_SHIFT))
    zi = integer_pow(z, -1)
    zi2 = square(zi)
    series = _const(x, _TRIGAMMA_ASYM[-1])
    for c in reversed(_TRIGAMMA_ASYM[:-1]):
        series = add(mul(series, zi2), _const(x, c))
    asym = add(add(zi, mul(_const(x, 0.5), zi2)), mul(series, mul(zi2, zi)))
    val = add(total, asym)
    # psi1(1 - x) + psi1(x) = pi^2 / sin^2(pi x)
    s = sin(mul(_const(x, math.pi), sub(x, round(x, 1))))
    reflected = sub(div(_const(x, math.pi ** 2), square(s)), val)
    return select(reflect, reflected, val)


ad.defjvp(lgamma_p, lambda t, x: mul(t, digamma(x)))
ad.defjvp(digamma_p, lambda t, x: mul(t, _trigamma(x)))

# --------------------------------------------------------------------------- reduce_precision


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """Round floats to a format with the given exponent and mantissa bits (XLA semantics)."""
    return reduce_precision_p.bind(operand, exponent_bits=int(exponent_bits),
                                   mantissa_bits=int(mantissa_bits))


def _reduce_precision_abstract_eval(x, *, exponent_bits, mantissa_bits):
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"reduce_precision needs exponent_bits >= 1 and mantissa_bits >= 0, "
                         f"got {exponent_bits} and {mantissa_bits}")
    return same_shape_dtype_rule("reduce_precision", x, allowed_kinds="f")


def _reduce_precision_impl(x, *, exponent_bits, mantissa_bits):
    return evaluator_ew.reduce_precision(np.asarray(x), exponent_bits, mantissa_bits)


reduce_precision_p = standard_primitive("reduce_precision", _reduce_precision_abstract_eval,
                                        _reduce_precision_impl)
batching.primitive_batchers[reduce_precision_p] = elementwise_batcher(reduce_precision_p)
register_lowering(reduce_precision_p, lambda ctx, x, *, exponent_bits, mantissa_bits:
                  ctx.builder.reduce_precision(x, exponent_bits, mantissa_bits,
                                               metadata=ctx.metadata))
ad.deflinear(reduce_precision_p, lambda ct, x, **params: [
    ad.Zero(x.aval) if type(ct) is ad.Zero else reduce_precision_p.bind(ct, **params)])

# --------------------------------------------------------------------------- is_finite, nextafter


def is_finite(x):
    """Elementwise test for finite values (not inf and not NaN); bool result."""
    return is_finite_p.bind(x)


is_finite_p = _typed_unary("is_finite", np.isfinite, "is-finite", lambda d: np.dtype(np.bool_),
                           "f")
ad.defjvp_zero(is_finite_p)


def nextafter(x1, x2):
    """The next representable float after x1 in the direction of x2."""
    x1, x2 = promote_scalars("nextafter", x1, x2)
    return nextafter_p.bind(x1, x2)


# Like JAX, nextafter has no JVP rule (differentiating it raises NotImplementedError).
def _nextafter_impl(x1, x2):
    # C's nextafter returns x2 when the two are equal (so nextafter(0, -0) is -0); NumPy's
    # float16 loop returns x1.
    x1, x2 = np.asarray(x1), np.asarray(x2)
    if x1.dtype.itemsize == 1:
        return _nextafter_f8(x1, x2)
    return np.where(x1 == x2, x2, np.nextafter(x1, x2))


def _nextafter_f8(x, y):
    # The lowering's bit step (el.nextafter), as XLA: stepping below the smallest negative
    # value of a "fnuz" type lands on its NaN pattern, where ml_dtypes would give 0.
    xf, yf = np.broadcast_arrays(x.astype(np.float32), y.astype(np.float32))
    bits = np.ascontiguousarray(np.broadcast_to(x, xf.shape)).view(np.int8).astype(np.int16)
    e8m0 = x.dtype == dtypes.float8_e8m0fnu
    away = (yf > xf) if e8m0 else ((xf > 0) == (yf > xf))
    out = np.where(away, bits + 1, bits - 1).astype(np.int8).view(x.dtype).astype(np.float32)
    if not e8m0:
        tiny = float(np.nextafter(np.zeros((), x.dtype), np.ones((), x.dtype)))
        out = np.where(xf == 0, np.where(yf > 0, tiny, -tiny), out)
    out = np.where(xf == yf, yf, out)
    return np.where(np.isnan(xf) | np.isnan(yf), np.nan, out).astype(x.dtype)


nextafter_p = _binary("nextafter", _nextafter_impl, None, kinds="f",
                      lowering=_composite(el.nextafter))
# A step in the type's own bit patterns: 8-bit floats are not widened to float32 here.
dispatch.numpy_impls[nextafter_p] = _nextafter_impl

