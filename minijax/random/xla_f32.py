"""float32 log, log1p, exp, erf and erf_inv computed operation by operation as JAX 0.10.2's
CPU backend (XLA) computes them, so that samplers built on them give JAX's bits.

XLA expands erf into a rational function (its fused multiply-adds written out), erf_inv into
Giles' polynomial of -log1p(-x*x), log1p into a Cephes rational function near zero and
log(1 + x) elsewhere, log into a Cephes polynomial after splitting off the exponent and exp
into a polynomial after a Cody-Waite reduction; LLVM then contracts each multiply whose only
use is an add into a fused multiply-add (one rounding), and the CPU runs with subnormals
flushed to zero. The functions here repeat those steps, rounding where XLA's code rounds.
They agree with `jax.lax.log`, `log1p`, `exp`, `erf` and `erf_inv` on float32 bit for
bit (checked on millions of inputs; a fused multiply-add computed in float64 and rounded to
float32 can round twice, about once in 2**29 operations).

minijax's own lax.log & co. are accurate but round differently; the samplers use these where
JAX's bits are the point (normal, exponential, gumbel, ...). Each kernel is written once over
a small set of operations: NumPy's for concrete arrays (eager calls stay cheap) and lax's for
traced ones. Derivatives are the exact functions' (custom_jvp), as JAX's rules.
"""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import Tracer
from minijax.custom_derivatives import custom_jvp
from minijax.lax.structural import convert_element_type_p

__all__ = ["erf", "erf_inv", "exp", "fma", "log", "log1p"]

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _h(bits: int) -> np.float32:
    """The float32 with the given bit pattern (XLA's IR spells its constants so)."""
    return np.array(bits, np.uint32).view(np.float32)[()]


def _c(value) -> np.float32:
    return np.float32(value)


class _NumpyOps:
    """The kernels' operations on concrete float32 NumPy arrays."""

    add, sub, mul, div = np.add, np.subtract, np.multiply, np.divide
    neg, abs, sqrt, floor = np.negative, np.abs, np.sqrt, np.floor
    lt, le, gt, eq, ne = np.less, np.less_equal, np.greater, np.equal, np.not_equal
    logical_or, logical_not = np.logical_or, np.logical_not

    @staticmethod
    def select(pred, on_true, on_false):
        return np.where(pred, on_true, on_false).astype(_F32)

    @staticmethod
    def fma(a, b, c):
        wide = np.multiply(np.float64(a), np.float64(b), dtype=_F64) + np.float64(c)
        return np.asarray(wide).astype(_F32)

    @staticmethod
    def exponent_bits(x):
        """The biased exponent field of float32 x, as int32."""
        return (np.asarray(x, _F32).view(np.uint32) >> np.uint32(23)).astype(np.int32)

    @staticmethod
    def with_exponent_of_half(x):
        """x's sign and mantissa with the exponent of 0.5: the mantissa in [0.5, 1)."""
        bits = np.asarray(x, _F32).view(np.uint32)
        return ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(_F32)

    @staticmethod
    def to_float(n):
        return np.asarray(n).astype(_F32)

    @staticmethod
    def pow2(n):
        """2**n for float32 integer-valued n in [-127, 127] (0 for -127, as XLA's bits)."""
        biased = (np.asarray(n).astype(np.int32) + np.int32(127)) << np.int32(23)
        return biased.view(_F32)


class _LaxOps:
    """The same operations in lax, for traced arrays."""

    add, sub, mul, div = lax.add, lax.sub, lax.mul, lax.div
    neg, abs, sqrt, floor = lax.neg, lax.abs, lax.sqrt, lax.floor
    lt, le, gt, eq, ne = lax.lt, lax.le, lax.gt, lax.eq, lax.ne
    logical_or, logical_not = lax.bitwise_or, lax.bitwise_not

    @staticmethod
    def select(pred, on_true, on_false):
        shape = np.broadcast_shapes(np.shape(pred), np.shape(on_true), np.shape(on_false))
        return lax.select(*(_bcast(v, shape) for v in (pred, on_true, on_false)))

    @staticmethod
    def fma(a, b, c):
        # Bound directly: the float64 intermediates must exist even with x64 disabled
        # (lax.convert_element_type would canonicalize float64 to float32).
        a, b, c = (convert_element_type_p.bind(_arr(v), new_dtype=_F64, weak_type=False)
                   for v in (a, b, c))
        wide = lax.add(lax.mul(a, b), c)
        return convert_element_type_p.bind(wide, new_dtype=_F32, weak_type=False)

    @staticmethod
    def exponent_bits(x):
        bits = lax.bitcast_convert_type(x, np.uint32)
        return lax.convert_element_type(lax.shift_right_logical(bits, np.uint32(23)), np.int32)

    @staticmethod
    def with_exponent_of_half(x):
        bits = lax.bitcast_convert_type(x, np.uint32)
        bits = lax.bitwise_or(lax.bitwise_and(bits, np.uint32(0x807FFFFF)),
                              np.uint32(0x3F000000))
        return lax.bitcast_convert_type(bits, _F32)

    @staticmethod
    def to_float(n):
        return lax.convert_element_type(n, _F32)

    @staticmethod
    def pow2(n):
        biased = lax.shift_left(lax.add(lax.convert_element_type(n, np.int32), np.int32(127)),
                                np.int32(23))
        return lax.bitcast_convert_type(biased, _F32)


def _arr(v):
    return np.asarray(v, _F32) if isinstance(v, (float, np.floating)) else v


def _bcast(v, shape):
    if np.shape(v) == tuple(shape):
        return v
    if isinstance(v, (bool, float, np.generic, np.ndarray)):
        return np.broadcast_to(v, shape)
    return lax.broadcast_in_dim(v, tuple(shape), ())


def _ops(x):
    return _LaxOps if isinstance(x, Tracer) else _NumpyOps


_TINY = _h(0x00800000)


def _flush(m, x):
    """Subnormal inputs become signed zeros, as XLA's CPU code runs with denormals off."""
    return m.select(m.lt(m.abs(x), _TINY), m.mul(x, _c(0.0)), x)


def _log_impl(m, x):
    x = _flush(m, x)
    xm = m.select(m.gt(x, _TINY), x, _TINY)
    e = m.add(m.to_float(m.sub(m.exponent_bits(xm), np.int32(127))), _c(1.0))
    mant = m.with_exponent_of_half(xm)
    small = m.lt(mant, _h(0x3F3504F3))  # mantissa < sqrt(1/2): use 2 mant and e - 1
    t = m.add(m.add(mant, _c(-1.0)), m.select(small, mant, _c(0.0)))
    e = m.sub(e, m.select(small, _c(1.0), _c(0.0)))
    t2 = m.mul(t, t)
    t3 = m.mul(t2, t)
    p1 = m.fma(m.fma(t, _h(0x3D9021BB), _h(0xBDEBD1B8)), t, _h(0x3DEF251A))
    p2 = m.fma(m.fma(t, _h(0xBDFE5D4F), _h(0x3E11E9BF)), t, _h(0xBE2AAE50))
    p3 = m.fma(m.fma(t, _h(0x3E4CCEAC), _h(0xBE7FFFFC)), t, _h(0x3EAAAAAA))
    q = m.fma(m.fma(p1, t3, p2), t3, p3)
    r = m.fma(q, t3, m.mul(e, _h(0xB95E8083)))
    s = m.fma(m.neg(t2), _c(0.5), t)
    r = m.fma(e, _h(0x3F318000), m.add(s, r))
    r = m.select(m.logical_not(m.gt(x, _c(0.0))), _c(np.nan), r)  # x < 0 and nan
    r = m.select(m.eq(x, _c(0.0)), _c(-np.inf), r)
    return m.select(m.eq(x, _c(np.inf)), x, r)


_LOG1P_NUM = (4.527000e-05, _h(0x3EFF40C5), _h(0x40D284FA), _h(0x41EF4B9C), _h(0x4273CC76),
              _h(0x426473AD), _h(0x41A05101))
_LOG1P_DEN = (_h(0x417101AD), _h(0x42A6185B), _h(0x435DC32D), _h(0x439A8CA3), _h(0x43586D8A),
              _h(0x42707982))


def _log1p_impl(m, x):
    x = _flush(m, x)
    big = _log_impl(m, m.add(x, _c(1.0)))
    x2 = m.mul(x, x)
    z = m.mul(x, _c(0.0))  # XLA's Horner starts from x * 0 (nan stays nan)
    d = m.add(z, _c(1.0))
    for coeff in _LOG1P_DEN:
        d = m.fma(d, x, coeff)
    n = m.add(z, _c(_LOG1P_NUM[0]))
    for coeff in _LOG1P_NUM[1:]:
        n = m.fma(n, x, coeff)
    small = m.add(x, m.fma(x2, _c(-0.5), m.mul(m.mul(x, x2), m.div(n, d))))
    return m.select(m.lt(m.abs(x), _h(0x3ED413CD)), small, big)


def _exp_impl(m, x):
    x = m.select(m.lt(x, _c(-87.8)), _c(-87.8), x)  # clamps that let nan through
    x = m.select(m.gt(x, _c(88.8)), _c(88.8), x)
    n = m.floor(m.fma(x, _h(0x3FB8AA3B), _c(0.5)))  # round(x / log(2))
    n = m.select(m.lt(n, _c(-127.0)), _c(-127.0), n)
    n = m.select(m.gt(n, _c(127.0)), _c(127.0), n)
    r = m.fma(m.neg(n), _h(0x3F318000), x)  # x - n log(2), log(2) in two parts
    r = m.fma(m.neg(n), _h(0xB95E8083), r)
    p = m.fma(r, _h(0x39506967), _h(0x3AB743CE))
    for coeff in (_h(0x3C088908), _h(0x3D2AA9C1), _h(0x3E2AAAAA), _c(0.5)):
        p = m.fma(p, r, coeff)
    p = m.add(_c(1.0), m.fma(p, m.mul(r, r), r))
    return _flush(m, m.mul(p, m.pow2(n)))


# Giles' erf_inv coefficients for w = -log1p(-x*x) < 5 and >= 5, highest degree first.
_ERFINV_LT5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
               0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_GE5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erf_inv_impl(m, x):
    x = _flush(m, x)
    neg_w = _log1p_impl(m, m.mul(x, m.neg(x)))
    lt5 = m.gt(neg_w, _c(-5.0))

    def coeff(i):
        return m.select(lt5, _c(_ERFINV_LT5[i]), _c(_ERFINV_GE5[i]))

    w = m.select(lt5, m.sub(_c(-2.5), neg_w), m.add(m.sqrt(m.neg(neg_w)), _c(-3.0)))
    p = m.fma(coeff(0), w, coeff(1))
    for i in range(2, 9):
        p = m.fma(w, p, coeff(i))
    p = m.select(m.eq(m.abs(x), _c(1.0)), _c(np.inf), p)
    return m.mul(x, p)


# erf(x) = x P(x^2) / Q(x^2) for |x| < 3.8325 (else sign(x)), XLA's coefficients, highest
# degree first.
_ERF_P = (_h(0x39702D51), _h(0x3B5F5DA2), _h(0x3D50B6EB), _h(0x3E3DA740), _h(0x3F906EBA))
_ERF_Q = (_h(0xB3FD3906), _h(0x37C588DF), _h(0x3A856D28), _h(0x3C6687D4), _h(0x3DE34C21),
          _h(0x3EFEB44A), _c(1.0))


def _erf_impl(m, x):
    x = _flush(m, x)
    x2 = m.mul(x, x)
    p = m.fma(x2, _ERF_P[0], _ERF_P[1])
    for coeff in _ERF_P[2:]:
        p = m.fma(x2, p, coeff)
    q = m.fma(x2, _ERF_Q[0], _ERF_Q[1])
    for coeff in _ERF_Q[2:]:
        q = m.fma(x2, q, coeff)
    r = m.div(m.mul(x, p), q)
    sign = m.select(m.lt(x, _c(0.0)), _c(-1.0), _c(1.0))
    sign = m.select(m.eq(x, _c(0.0)), m.select(m.ne(x, x), x, _c(1.0)), sign)
    return m.select(m.logical_not(m.lt(m.abs(x), _h(0x407547CB))),
                    m.select(m.ne(x, x), x, sign), r)


def _concrete(impl, x):
    with np.errstate(all="ignore"):
        return lax.convert_element_type(impl(_NumpyOps, np.asarray(x, _F32)), _F32)


def _kernel(impl, jvp, name):
    """The public function: NumPy on concrete arrays, else a custom_jvp over the lax kernel
    (so only tracing pays for the lax graph, and derivatives follow `jvp`)."""
    traced = custom_jvp(lambda x: impl(_LaxOps, x))

    @traced.defjvp
    def _rule(primals, tangents):
        (x,), (dx,) = primals, tangents
        y = traced(x)
        return y, jvp(x, y, dx)

    def fun(x):
        return traced(x) if isinstance(x, Tracer) else _concrete(impl, x)

    fun.__name__ = fun.__qualname__ = name
    fun.__doc__ = f"XLA's float32 {name} (JAX 0.10.2's CPU bits)."
    return fun


def fma(a, b, c):
    """a * b + c rounded once to float32 (the product of two float32s is exact in float64).
    Not differentiable: the samplers use it inside functions with their own derivatives."""
    if any(isinstance(v, Tracer) for v in (a, b, c)):
        return _LaxOps.fma(a, b, c)
    return lax.convert_element_type(_NumpyOps.fma(np.asarray(a, _F32), np.asarray(b, _F32),
                                                  np.asarray(c, _F32)), _F32)


log = _kernel(_log_impl, lambda x, y, dx: lax.div(dx, x), "log")
log1p = _kernel(_log1p_impl, lambda x, y, dx: lax.div(dx, lax.add(x, _c(1.0))), "log1p")
exp = _kernel(_exp_impl, lambda x, y, dx: lax.mul(dx, y), "exp")
# d/dx erf(x) = 2 / sqrt(pi) * exp(-x**2)
erf = _kernel(_erf_impl, lambda x, y, dx: lax.mul(
    dx, lax.mul(_c(2 / np.sqrt(np.pi)), lax.exp(lax.neg(lax.mul(x, x))))), "erf")
# As JAX's rule: d/dx erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x) ** 2)
erf_inv = _kernel(_erf_inv_impl, lambda x, y, dx: lax.mul(
    dx, lax.mul(_c(np.sqrt(np.pi) / 2), lax.exp(lax.mul(y, y)))), "erf_inv")
