"""float64 exp, log1p and erf_inv computed operation by operation as JAX 0.10.2's CPU backend
(XLA) computes them, so that float64 samplers (with jax_enable_x64) give JAX's bits.

XLA's float64 log and erf are the C library's (NumPy's np.log and Python's math.erf give the
same bits); exp is a Cephes
rational function after a Cody-Waite reduction, log1p a rational function near zero and
log(1 + x) elsewhere, and erf_inv Giles' double-precision polynomials in w = -log1p(-x*x)
(three ranges: w < 6.25, w < 16, else). LLVM contracts a multiply whose only use is an add or
subtract into a fused multiply-add; `_fma` below rounds once as that instruction does.

Concrete arrays go through NumPy (bit for bit with JAX); traced ones through lax with lax.log
for the C library's log, so compiled float64 samples can differ from JAX's where minijax's
compiled log rounds differently from the C library's.
"""

from __future__ import annotations

import math

import numpy as np

from minijax import dtypes, lax
from minijax.core import Tracer, get_aval

__all__ = ["emulated_fma", "erf", "erf_inv", "exp", "log1p"]

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)


def _h(bits: int) -> np.float64:
    """The float64 with the given bit pattern (XLA's IR spells its constants so)."""
    return np.array(bits, np.uint64).view(np.float64)[()]


# --------------------------------------------------------------------------- fma

_SPLIT = np.float64(2.0 ** 27 + 1)


def _split(x):
    """hi, lo with x = hi + lo exactly and hi holding 26 bits (Veltkamp)."""
    c = _SPLIT * x
    hi = c - (c - x)
    return hi, x - hi


def _fma_core(a, b, c, a_parts=None):
    """a * b + c rounded once (NaN or inf where a * b or the sum is not finite): the exact
    product (Dekker) and sum (Knuth), the low parts added with round-to-odd (Boldo and
    Melquiond). `a_parts` may give a's split, when a is reused."""
    ah, al = _split(a) if a_parts is None else a_parts
    bh, bl = _split(b)
    p = a * b
    pe = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = c + p
    bb = s - c
    se = (c - (s - bb)) + (p - bb)
    v = se + pe
    vv = v - se
    w = (se - (v - vv)) + (pe - vv)
    bump = ((v.view(_I64) & 1) == 0) & (w != 0)
    v = np.where(bump, np.nextafter(v, np.copysign(np.inf, w)), v)
    return s + v


def _np_fma(a, b, c):
    """a * b + c rounded once, in NumPy float64 (the plain a * b + c where that is not
    finite)."""
    a, b, c = (np.asarray(v, _F64) for v in (a, b, c))
    fused = _fma_core(a, b, c)
    plain = a * b + c
    return np.where(np.isfinite(fused), fused, plain)


def _np_horner(coeffs, t):
    """Horner's rule with fused multiply-adds, fma(c0, t, c1) first, then fma(t, p, c)."""
    parts = _split(t)
    p = _fma_core(t, np.float64(coeffs[0]), np.float64(coeffs[1]), parts)
    for coeff in coeffs[2:]:
        p = _fma_core(t, p, np.float64(coeff), parts)
    plain = np.float64(coeffs[0]) * t + coeffs[1]
    for coeff in coeffs[2:]:
        plain = t * plain + coeff
    return np.where(np.isfinite(p), p, plain)


class _NumpyOps:
    add, sub, mul, div = np.add, np.subtract, np.multiply, np.divide
    neg, abs, sqrt, floor, log = np.negative, np.abs, np.sqrt, np.floor, np.log
    lt, gt, eq = np.less, np.greater, np.equal
    logical_and, logical_not = np.logical_and, np.logical_not
    fma = staticmethod(_np_fma)

    @staticmethod
    def horner(coeffs, t, where):
        """The polynomial at t, computed only where `where` holds (zero elsewhere)."""
        out = np.zeros(np.shape(t), _F64)
        if np.all(where):
            return _np_horner(coeffs, np.asarray(t, _F64))
        if np.any(where):
            out[where] = _np_horner(coeffs, np.asarray(t, _F64)[where])
        return out

    @staticmethod
    def select(pred, on_true, on_false):
        return np.where(pred, on_true, on_false).astype(_F64)

    @staticmethod
    def minimum(x, c):
        return np.where(np.isnan(x), x, np.minimum(x, c))

    @staticmethod
    def maximum(x, c):
        return np.where(np.isnan(x), x, np.maximum(x, c))

    @staticmethod
    def pow2(n):
        """2**n for integer-valued float64 n in [-1022, 1023]."""
        n = np.where(np.isnan(n), 0, n).astype(_I64)
        return ((n + 1023) << 52).view(_F64)


class _LaxOps:
    add, sub, mul, div = lax.add, lax.sub, lax.mul, lax.div
    neg, abs, sqrt, floor, log = lax.neg, lax.abs, lax.sqrt, lax.floor, lax.log
    lt, gt, eq = lax.lt, lax.gt, lax.eq
    logical_and, logical_not = lax.bitwise_and, lax.bitwise_not

    @staticmethod
    def fma(a, b, c):
        shape = np.broadcast_shapes(*(np.shape(v) for v in (a, b, c)))
        return emulated_fma(*(_bcast(v, shape) for v in (a, b, c)))

    @staticmethod
    def select(pred, on_true, on_false):
        shape = np.broadcast_shapes(np.shape(pred), np.shape(on_true), np.shape(on_false))
        return lax.select(*(_bcast(v, shape) for v in (pred, on_true, on_false)))

    @staticmethod
    def horner(coeffs, t, where):
        del where  # traced: every polynomial everywhere, the caller selects
        p = _LaxOps.fma(coeffs[0], t, coeffs[1])
        for coeff in coeffs[2:]:
            p = _LaxOps.fma(t, p, coeff)
        return p

    @staticmethod
    def minimum(x, c):
        return lax.min(x, _bcast(c, np.shape(x)))

    @staticmethod
    def maximum(x, c):
        return lax.max(x, _bcast(c, np.shape(x)))

    @staticmethod
    def pow2(n):
        bits = lax.shift_left(lax.add(lax.convert_element_type(n, _I64), np.int64(1023)),
                              np.int64(52))
        return lax.bitcast_convert_type(bits, _F64)


def _bcast(v, shape):
    if np.shape(v) == tuple(shape):
        return v if isinstance(v, Tracer) else np.asarray(v, v.dtype if hasattr(v, "dtype")
                                                            else _F64)
    if not isinstance(v, Tracer):
        return np.broadcast_to(np.asarray(v, getattr(v, "dtype", _F64)), shape)
    return lax.broadcast_in_dim(v, tuple(shape), ())


# --------------------------------------------------------------------------- lax fma


def _const(value, dtype):
    return np.asarray(value, dtype)


def _two_sum(a, b):
    """s, e with s = fl(a + b) and a + b = s + e exactly (Knuth)."""
    s = lax.add(a, b)
    bb = lax.sub(s, a)
    return s, lax.add(lax.sub(a, lax.sub(s, bb)), lax.sub(b, bb))


def _two_prod(a, b):
    """p, e with p = fl(a * b) and a * b = p + e exactly (Dekker with Veltkamp splits)."""
    dtype = get_aval(a).dtype
    k = _const(2.0 ** ((dtypes.finfo(dtype).nmant + 2) // 2) + 1, dtype)

    def split(x):
        c = lax.mul(k, x)
        hi = lax.sub(c, lax.sub(c, x))
        return hi, lax.sub(x, hi)

    p = lax.mul(a, b)
    ah, al = split(a)
    bh, bl = split(b)
    e = lax.add(lax.sub(lax.mul(ah, bh), p), lax.mul(ah, bl))
    e = lax.add(lax.add(e, lax.mul(al, bh)), lax.mul(al, bl))
    return p, e


def emulated_fma(a, b, c):
    """a * b + c rounded once, for float32/float64 (Boldo and Melquiond's emulation: exact
    product and sum, the low parts added with round-to-odd); other dtypes round twice.
    Falls back to the plain a * b + c where that is not finite."""
    dtype = get_aval(a).dtype
    plain = lax.add(lax.mul(a, b), c)
    if dtype not in (np.float32, np.float64):
        return plain
    uh, ul = _two_prod(a, b)
    th, tl = _two_sum(c, uh)
    v, w = _two_sum(tl, ul)
    sint = np.dtype(f"int{dtype.itemsize * 8}")
    vb = lax.bitcast_convert_type(v, sint)
    one = _const(1, sint)
    even = lax.eq(lax.bitwise_and(vb, one), _const(0, sint))
    inexact = lax.ne(w, _const(0.0, dtype))
    zero = _const(0.0, dtype)
    same_sign = lax.eq(lax.lt(v, zero), lax.lt(w, zero))
    odd = lax.select(same_sign, lax.add(vb, one), lax.sub(vb, one))
    v = lax.bitcast_convert_type(lax.select(lax.bitwise_and(even, inexact), odd, vb), dtype)
    fused = lax.add(th, v)
    finite = lax.bitwise_and(lax.is_finite(fused), lax.is_finite(uh))
    return lax.select(lax.bitwise_and(finite, lax.is_finite(ul)), fused, plain)


# --------------------------------------------------------------------------- kernels

_EXP_LO, _EXP_HI = _h(0xC086232BDD7ABCD2), _h(0x40862E42FEFA39EF)
_EXP_P = (_h(0x3F2089CDD5E44BE8), _h(0x3F9F06D10CCA2C7E), 1.0)
_EXP_Q = (_h(0x3EC92EB6BC365FA0), _h(0x3F64AE39B508B6C0), _h(0x3FCD17099887E074), 2.0)


def _exp_impl(m, x):
    xc = m.maximum(m.minimum(x, _EXP_HI), _EXP_LO)
    n = m.floor(m.fma(xc, _h(0x3FF71547652B82FE), 0.5))  # round(x / log(2))
    g = m.fma(m.neg(n), _h(0x3FE62E4000000000), xc)  # x - n log(2), log(2) in two parts
    g = m.fma(m.neg(n), _h(0x3EB7F7D1CF79ABCA), g)
    g2 = m.mul(g, g)
    p = m.mul(m.fma(m.fma(g2, _EXP_P[0], _EXP_P[1]), g2, _EXP_P[2]), g)
    q = m.fma(g2, _EXP_Q[0], _EXP_Q[1])
    for coeff in _EXP_Q[2:]:
        q = m.fma(q, g2, coeff)
    e = m.fma(m.div(p, m.sub(q, p)), 2.0, 1.0)
    # 2**n applied as 2**b three times and 2**(n - 3b), b = n // 4, so no factor overflows
    b = m.floor(m.mul(n, 0.25))
    s = m.pow2(b)
    r = m.mul(m.mul(m.mul(m.mul(e, s), s), s), m.pow2(m.sub(n, m.mul(b, 3.0))))
    r = m.select(m.lt(r, _h(0x0010000000000000)), 0.0, r)  # denormals are flushed
    r = m.select(m.lt(x, _EXP_LO), 0.0, r)
    return m.select(m.gt(x, _EXP_HI), np.inf, r)


_LOG1P_NUM = tuple(_h(b) for b in (
    0x3F07BC0962B395CA, 0x3FDFE818A0FE1A83, 0x401A509F46F4FA53, 0x403DE9738B8CB9C9,
    0x404E798EB86C3351, 0x404C8E7597479A10, 0x40340A202D99830A))
_LOG1P_DEN = tuple(_h(b) for b in (
    0x402E20359E903E37, 0x4054C30B52213498, 0x406BB86590FCFB56, 0x407351945DC908A5,
    0x406B0DB13E48E066, 0x404E0F304466448E))


def _log1p_impl(m, x):
    big = m.log(m.add(x, 1.0))
    x2 = m.mul(x, x)
    z = m.mul(x, 0.0)  # XLA's Horner starts from x * 0 (nan stays nan)
    d = m.add(z, 1.0)
    for coeff in _LOG1P_DEN:
        d = m.fma(d, x, coeff)
    n = m.add(z, _LOG1P_NUM[0])
    for coeff in _LOG1P_NUM[1:]:
        n = m.fma(n, x, coeff)
    small = m.add(x, m.fma(x2, -0.5, m.mul(m.mul(x, x2), m.div(n, d))))
    return m.select(m.lt(m.abs(x), _h(0x3FDA827999FCEF32)), small, big)


# Giles' double-precision erf_inv coefficients, highest degree first, for w < 6.25 (in
# w - 3.125), w < 16 (in sqrt(w) - 3.25) and beyond (in sqrt(w) - 5).
_ERFINV_LT6 = tuple(_h(b) for b in (
    0xBBB135D2E746E627, 0xBC08DDF93324D327, 0x3C37B83EEF0B7C9F, 0x3C69BA72CD589B91,
    0xBCA33689090A6B96, 0x3C782E11898132E0, 0x3CFDE4ACFD9E26BA, 0xBD26D33EED66C487,
    0xBD36F2167040D8E2, 0x3D872A22C2D77E20, 0xBDAC8859C4E5C0AF, 0xBDCDC583D118A561,
    0x3E120F47CCF46B3C, 0xBE31A9E38DC84D60, 0xBE5F36CD6D3D46A9, 0x3E9C6B4F5D03B787,
    0xBEB6E8A5434AE8A2, 0xBEED1D1F7B8736F6, 0x3F2879C2A212F024, 0xBF4845769484FCA8,
    0xBF78B6C33114F909, 0x3FCEBD80D9B13E28, 0x3FFA755E7C99AE86))
_ERFINV_LT16 = tuple(_h(b) for b in (
    0x3E23040F87DBD932, 0x3E785CBE52878635, 0xBE92777453DD3955, 0x3E5395ABCD554C6C,
    0x3EB936388A3790AD, 0xBED0D5DB812B5083, 0x3EC8860CD5D652F6, 0x3EEA29A0CACDFB23,
    0xBF08CEF1F80281F2, 0x3F11E684D0B9188A, 0x3EF932CD54C8A222, 0xBF37448A89EF8AA3,
    0x3F4F3CC55AD40C25, 0xBF5BA924132F38B1, 0x3F6468EECA533CF8, 0xBF6EBADABB891BBD,
    0x3F75FFCFE5B76AFC, 0x3FF0158A6D641D39, 0x4008ABCC380D5A48))
_ERFINV_REST = tuple(_h(b) for b in (
    0xBDBDCEC3A7785389, 0xBDF18FEEC0E38727, 0x3E19E6BF2DDA45E3, 0xBE30468FB24E2F5F,
    0x3E405AC6A8FBA182, 0xBE50102E495FB9C0, 0x3E5F4C20E1334AF8, 0xBE722D220FDF9C3E,
    0x3E8EBC8BB824CB54, 0xBEB0A8D40EA372CC, 0x3ED2FBD29D093D2B, 0xBEF4A3497E1E0FAC,
    0x3F13EBF4EB00938F, 0xBF2C2F36A8FC5D53, 0xBF222EA5DF04047C, 0x3FF02A30D1FBA0DC,
    0x4013664DDD1AD7FB))


def _erf_inv_impl(m, x):
    neg_w = _log1p_impl(m, m.mul(x, m.neg(x)))
    lt6, lt16 = m.gt(neg_w, -6.25), m.gt(neg_w, -16.0)
    mid, rest = m.logical_and(lt16, m.logical_not(lt6)), m.logical_not(lt16)
    root = m.sqrt(m.neg(neg_w))
    p = m.select(lt16, m.horner(_ERFINV_LT16, m.sub(root, 3.25), mid),
                 m.horner(_ERFINV_REST, m.sub(root, 5.0), rest))
    p = m.select(lt6, m.horner(_ERFINV_LT6, m.sub(-3.125, neg_w), lt6), p)
    return m.mul(x, m.select(m.eq(m.abs(x), 1.0), np.inf, p))


def _kernel(impl, name):
    def fun(x):
        if isinstance(x, Tracer):
            return impl(_LaxOps, x)
        with np.errstate(all="ignore"):
            return lax.convert_element_type(impl(_NumpyOps, np.asarray(x, _F64)), _F64)

    fun.__name__ = fun.__qualname__ = name
    fun.__doc__ = f"XLA's float64 {name} (JAX 0.10.2's CPU bits on concrete arrays)."
    return fun


_erf_elementwise = np.vectorize(math.erf, otypes=[_F64])


def erf(x):
    """XLA's float64 erf: the C library's (math.erf, element by element) on concrete arrays;
    lax.erf on traced ones."""
    if isinstance(x, Tracer):
        return lax.erf(x)
    return lax.convert_element_type(_erf_elementwise(np.asarray(x, _F64)), _F64)


exp = _kernel(_exp_impl, "exp")
log1p = _kernel(_log1p_impl, "log1p")
erf_inv = _kernel(_erf_inv_impl, "erf_inv")
