"""float32 log, log1p and erf_inv computed operation by operation as JAX 0.10.2's CPU
backend (XLA) computes them, so that samplers built on them give JAX's bits.

XLA expands erf_inv into Giles' polynomial of -log1p(-x*x), log1p into a Cephes rational
function near zero and log(1 + x) elsewhere, and log into a Cephes polynomial after splitting
off the exponent; LLVM then contracts each multiply whose only use is an add into a fused
multiply-add (one rounding). The functions here repeat those steps, rounding where XLA's
code rounds. They agree with `jax.lax.log`, `jax.lax.log1p` and `jax.lax.erf_inv` on float32
bit for bit (checked on millions of inputs; a fused multiply-add computed in float64 and
rounded to float32 can round twice, about once in 2**29 operations).

minijax's own lax.log & co. are accurate but round differently; the samplers use these where
JAX's bits are the point (normal, exponential, gumbel, ...). Derivatives are the exact
functions' (custom_jvp), as JAX's rules for the primitives.
"""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.custom_derivatives import custom_jvp
from minijax.lax.structural import convert_element_type_p

__all__ = ["erf_inv", "exp", "fma", "log", "log1p"]

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def _h(bits: int) -> np.float32:
    """The float32 with the given bit pattern (XLA's IR spells its constants so)."""
    return np.array(bits, np.uint32).view(np.float32)[()]


def _c(value) -> np.ndarray:
    return np.asarray(value, _F32)


def _to(x, dtype):
    # Bound directly: the float64 intermediates of fma must exist even with x64 disabled
    # (lax.convert_element_type would canonicalize float64 to float32).
    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=False)


@custom_jvp
def fma(a, b, c):
    """a * b + c rounded once to float32 (the product of two float32s is exact in float64)."""
    return _to(lax.add(lax.mul(_wide(a), _wide(b)), _wide(c)), _F32)


@fma.defjvp
def _fma_jvp(primals, tangents):
    (a, b, c), (da, db, dc) = primals, tangents
    return fma(a, b, c), lax.add(lax.add(lax.mul(da, b), lax.mul(a, db)), dc)


def _wide(v):
    return _to(v, _F64)


def _flush(x):
    """Subnormal inputs become signed zeros, as XLA's CPU code runs with denormals off."""
    return lax.select(lax.lt(lax.abs(x), _TINY), lax.mul(x, _c(0.0)), x)


_TINY = _c(_h(0x00800000))


def _log_impl(x):
    x = _flush(x)
    tiny = _TINY
    xm = lax.select(lax.gt(x, tiny), x, lax.full_like(x, tiny))
    bits = lax.bitcast_convert_type(xm, np.uint32)
    exponent = lax.sub(lax.convert_element_type(lax.shift_right_logical(bits, np.uint32(23)),
                                                np.int32), np.int32(127))
    e = lax.add(lax.convert_element_type(exponent, _F32), _c(1.0))
    m = lax.bitcast_convert_type(
        lax.bitwise_or(lax.bitwise_and(bits, np.uint32(0x807FFFFF)), np.uint32(0x3F000000)),
        _F32)
    small = lax.lt(m, _c(_h(0x3F3504F3)))  # m < sqrt(1/2): use 2m and e - 1
    zero = lax.full_like(x, 0.0)
    t = lax.add(lax.add(m, _c(-1.0)), lax.select(small, m, zero))
    e = lax.sub(e, lax.select(small, lax.full_like(x, 1.0), zero))
    t2 = lax.mul(t, t)
    t3 = lax.mul(t2, t)
    p1 = fma(t, _c(_h(0x3D9021BB)), _c(_h(0xBDEBD1B8)))
    p2 = fma(t, _c(_h(0xBDFE5D4F)), _c(_h(0x3E11E9BF)))
    p3 = fma(t, _c(_h(0x3E4CCEAC)), _c(_h(0xBE7FFFFC)))
    p1 = fma(p1, t, _c(_h(0x3DEF251A)))
    p2 = fma(p2, t, _c(_h(0xBE2AAE50)))
    p3 = fma(p3, t, _c(_h(0x3EAAAAAA)))
    q = fma(fma(p1, t3, p2), t3, p3)
    r = fma(q, t3, lax.mul(e, _c(_h(0xB95E8083))))
    s = fma(lax.neg(t2), _c(0.5), t)
    r = fma(e, _c(_h(0x3F318000)), lax.add(s, r))
    r = lax.select(lax.bitwise_not(lax.gt(x, zero)), lax.full_like(x, np.nan), r)
    r = lax.select(lax.eq(x, zero), lax.full_like(x, -np.inf), r)
    return lax.select(lax.eq(x, lax.full_like(x, np.inf)), x, r)


_LOG1P_NUM = (4.527000e-05, _h(0x3EFF40C5), _h(0x40D284FA), _h(0x41EF4B9C), _h(0x4273CC76),
              _h(0x426473AD), _h(0x41A05101))
_LOG1P_DEN = (_h(0x417101AD), _h(0x42A6185B), _h(0x435DC32D), _h(0x439A8CA3), _h(0x43586D8A),
              _h(0x42707982))


def _log1p_impl(x):
    x = _flush(x)
    big = _log_impl(lax.add(x, _c(1.0)))
    x2 = lax.mul(x, x)
    z = lax.mul(x, _c(0.0))  # XLA's Horner starts from x * 0 (nan stays nan)
    d = lax.add(z, _c(1.0))
    for coeff in _LOG1P_DEN:
        d = fma(d, x, _c(coeff))
    n = lax.add(z, _c(_LOG1P_NUM[0]))
    for coeff in _LOG1P_NUM[1:]:
        n = fma(n, x, _c(coeff))
    small = lax.add(x, fma(x2, _c(-0.5), lax.mul(lax.mul(x, x2), lax.div(n, d))))
    return lax.select(lax.lt(lax.abs(x), _c(_h(0x3ED413CD))), small, big)


def _exp_impl(x):
    x = lax.clamp(_c(-87.8), x, _c(88.8))  # nan passes through
    n = lax.floor(fma(x, _c(_h(0x3FB8AA3B)), _c(0.5)))  # round(x / log(2))
    n = lax.clamp(_c(-127.0), n, _c(127.0))
    r = fma(lax.neg(n), _c(_h(0x3F318000)), x)  # x - n log(2), in two parts
    r = fma(lax.neg(n), _c(_h(0xB95E8083)), r)
    p = fma(r, _c(_h(0x39506967)), _c(_h(0x3AB743CE)))
    for coeff in (_h(0x3C088908), _h(0x3D2AA9C1), _h(0x3E2AAAAA), 0.5):
        p = fma(p, r, _c(coeff))
    p = lax.add(_c(1.0), fma(p, lax.mul(r, r), r))
    scale = lax.shift_left(lax.add(lax.convert_element_type(n, np.int32), np.int32(127)),
                           np.int32(23))
    return _flush(lax.mul(p, lax.bitcast_convert_type(scale, _F32)))


# Giles' erf_inv coefficients for w = -log1p(-x*x) < 5 and >= 5, highest degree first.
_ERFINV_LT5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
               0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_GE5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erf_inv_impl(x):
    x = _flush(x)
    neg_w = _log1p_impl(lax.mul(x, lax.neg(x)))
    lt5 = lax.gt(neg_w, _c(-5.0))

    def coeff(i):
        return lax.select(lt5, lax.full_like(x, _ERFINV_LT5[i]),
                          lax.full_like(x, _ERFINV_GE5[i]))

    w = lax.select(lt5, lax.sub(_c(-2.5), neg_w),
                   lax.add(lax.sqrt(lax.neg(neg_w)), _c(-3.0)))
    p = fma(coeff(0), w, coeff(1))
    for i in range(2, 9):
        p = fma(w, p, coeff(i))
    p = lax.select(lax.eq(lax.abs(x), _c(1.0)), lax.full_like(x, np.inf), p)
    return lax.mul(x, p)


@custom_jvp
def log(x):
    """XLA's float32 log."""
    return _log_impl(x)


@log.defjvp
def _log_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return log(x), lax.div(dx, x)


@custom_jvp
def log1p(x):
    """XLA's float32 log1p."""
    return _log1p_impl(x)


@log1p.defjvp
def _log1p_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return log1p(x), lax.div(dx, lax.add(x, _c(1.0)))


@custom_jvp
def erf_inv(x):
    """XLA's float32 erf_inv."""
    return _erf_inv_impl(x)


@erf_inv.defjvp
def _erf_inv_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    y = erf_inv(x)
    # As JAX's rule: d/dx erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x) ** 2)
    return y, lax.mul(dx, lax.mul(_c(np.sqrt(np.pi) / 2), lax.exp(lax.mul(y, y))))


@custom_jvp
def exp(x):
    """XLA's float32 exp."""
    return _exp_impl(x)


@exp.defjvp
def _exp_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    y = exp(x)
    return y, lax.mul(dx, y)
