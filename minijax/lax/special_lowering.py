"""HLO expansions of erfc, erf_inv, lgamma and digamma (no XLA opcode), as expressions of
XLA opcodes built with `Emit`. Real types only; 16-bit floats are evaluated in float32.

Accuracy (float32 against float64 references, float64 against 30-digit ones): erfc and
erf_inv within ~4 ulp, lgamma and digamma within ~4 ulp for positive arguments (lgamma exactly
0 at 1 and 2, digamma relatively accurate around its root), absolutely accurate for negative
ones. The series coefficients are mathematical constants (zeta(k) - 1, derivatives of digamma
at its root, Bernoulli numbers, values of exp(x^2) erfc(x)); the float32 erfc polynomials
are least-squares fits of exp(x^2) erfc(x) made for this project in float64.
"""

from __future__ import annotations

import math

import numpy as np

from minijax import dtypes
from minijax.lax.lowering_emit import Emit, in_float32_at_least

_EULER = 0.5772156649015329
# zeta(k) - 1 for k = 2, 3, ...: lgamma(2 + z) = (1 - euler) z + sum_k (-1)^k (zeta(k)-1) z^k/k.
_ZETA_MINUS_ONE = (
    0.6449340668482264, 0.2020569031595943, 0.08232323371113819, 0.03692775514336993,
    0.01734306198444914, 0.008349277381922827, 0.00407735619794434, 0.0020083928260822143,
    0.0009945751278180853, 0.0004941886041194645, 0.0002460865533080483,
    0.00012271334757848915, 6.124813505870483e-05, 3.058823630702049e-05,
    1.528225940865187e-05, 7.637197637899763e-06, 3.81729326499984e-06, 1.908212716553939e-06,
    9.539620338727962e-07, 4.769329867878064e-07, 2.38450502727733e-07,
    1.1921992596531106e-07, 5.960818905125948e-08, 2.980350351465228e-08,
    1.4901554828365043e-08, 7.45071178983543e-09, 3.725334024788457e-09,
    1.862659723513049e-09, 9.313274324196682e-10, 4.656629065033784e-10,
    2.3283118336765053e-10, 1.164155017270052e-10)
# The positive root of digamma (the minimum of lgamma), lgamma there, and psi^(k)(root) / k!
# for k = 1, 2, ...
_DIGAMMA_ROOT, _DIGAMMA_ROOT_LO = 1.4616321449683622, 9.549995429965697e-17
_LGAMMA_MIN = -0.12148629053584961
_DIGAMMA_ROOT_SERIES = (
    0.9676722454476212, -0.4427631689835921, 0.258499760955651, -0.16394270544240652,
    0.10782405069126237, -0.07219956125645471, 0.04880428816414311, -0.03316112647484736,
    0.022597648232218104, -0.01542476590494896, 0.010538791616612175, -0.007204534386356869,
    0.004926781395729853, -0.003369801655439328, 0.002305126326734928,
    -0.0015769367714301972, 0.0010788252019162967, -0.0007380709389960052,
    0.000504953265834602, -0.0003454680251063077, 0.00023635601564027053,
    -0.00016170622091974803, 0.0001106337276874741, -7.569179582195066e-05)
# Bernoulli numbers B_2, B_4, ... for the Stirling series of lgamma and digamma.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330)
# exp(x^2) erfc(x) for float32: polynomials in x - 1 on [0.5, 1.5), in x - 2.25 on
# [1.5, 3), and x exp(x^2) erfc(x) as a polynomial in 1/x^2 - _ERFCX_W0 above 3.
_ERFCX_NEAR_1 = (
    0.427583576159509, -0.2732120151351988, 0.15437156066315247, -0.07922693799518073,
    0.03757231488689282, -0.016662619048383846, 0.006970039738357259,
    -0.0027617540051504946, 0.0010495796974848808, -0.0004126358759317215,
    0.00014079820956252193)
_ERFCX_NEAR_2 = (
    0.2310872587338227, -0.0884865030797813, 0.031992627141695554, -0.011002050189766502,
    0.0036189978936568157, -0.0011438418441298748, 0.00034853636720724913,
    -0.00010223220608528685, 2.9288778591223654e-05, -9.055563981823329e-06,
    2.3895381695652852e-06)
_ERFCX_W0 = 0.06045703543233942
_ERFCX_TAIL = (
    0.5484870737360219, -0.24006256528936548, 0.28764546124503343, -0.5295839186589514,
    1.267041731815694, -3.626434268378555, 13.01501816338561, -53.89221946146037)

# float64: exp(x^2) erfc(x) at x = 0.625, 0.875, ..., 1.875; its Taylor coefficients there
# follow from y' = 2 x y - 2 / sqrt(pi) (_erfcx_taylor).
_ERFCX_AT = (0.5568138808733625, 0.464311583202669, 0.3956980795529959, 0.3432958898621254,
             0.30226120936348594, 0.2694299851646704)


def _erfcx_taylor(c: float, value: float, terms: int = 17) -> list[float]:
    """Taylor coefficients of exp(x^2) erfc(x) about c, given its value there."""
    coeffs = [value, 2 * c * value - 2 / math.sqrt(math.pi)]
    for k in range(1, terms - 1):
        coeffs.append((2 * c * coeffs[k] + 2 * coeffs[k - 1]) / (k + 1))
    return coeffs


def _is_f64(e: Emit) -> bool:
    return e.dtype == np.float64


def _exp_minus_square(e: Emit, x):
    """exp(-x^2) for 0 <= x < 32 without rounding x^2: x = xh + d with xh a multiple of
    1/16 (xh^2 is exact), exp(-x^2) = exp(-xh^2) exp(-d (x + xh))."""
    xh = e.mul(e.round_nearest_even(e.mul(x, 16)), 1 / 16)
    d = e.sub(x, xh)
    return e.mul(e.exponential(e.negate(e.mul(xh, xh))),
                 e.exponential(e.negate(e.mul(d, e.add(x, xh)))))


def _erfc_cf(e: Emit, ax, lo):
    """erfc(ax) by Laplace's continued fraction, for ax >= lo (clamped up to lo)."""
    safe = e.select(e.lt(ax, lo), lo, ax)
    f = safe
    for k in range(60, 0, -1):
        f = e.add(safe, e.div(0.5 * k, f))
    return e.div(_exp_minus_square(e, safe), e.mul(math.sqrt(math.pi), f))


def _erfc_nonneg(e: Emit, ax):
    """erfc(ax) for ax >= 0.5, as exp(-x^2) times exp(x^2) erfc(x), which does not cancel
    like 1 - erf(x)."""
    if _is_f64(e):
        # Taylor series of exp(x^2) erfc(x) about the nearest of 0.625, 0.875, ... below 2
        centres = [0.625 + 0.25 * i for i in range(len(_ERFCX_AT))]
        series = [e.poly(e.sub(ax, c), _erfcx_taylor(c, v))
                  for c, v in zip(centres, _ERFCX_AT, strict=True)]
        near = e.mul(_exp_minus_square(e, ax), e.piecewise(ax, [c + 0.125 for c in
                                                                centres[:-1]], series))
        return e.select(e.lt(ax, 2), near, _erfc_cf(e, ax, 2.0))
    tail = e.div(e.poly(e.sub(e.div(1, e.mul(ax, ax)), _ERFCX_W0), _ERFCX_TAIL), ax)
    scaled = e.piecewise(ax, [1.5, 3.0], [e.poly(e.sub(ax, 1), _ERFCX_NEAR_1),
                                          e.poly(e.sub(ax, 2.25), _ERFCX_NEAR_2), tail])
    # The tail polynomial stops at 1/x^2 = 0; erfc is 0 there anyway (x > 10.06).
    return e.mul(_exp_minus_square(e, e.select(e.lt(ax, 16), ax, 16)), scaled)


@in_float32_at_least
def erfc(e: Emit, x):
    # Below 0.5 erfc = 1 - erf(x) >= 0.47 does not cancel.
    out = e.select(e.lt(x, 0.5), e.sub(1, e.erf(x)), _erfc_nonneg(e, e.abs(x)))
    return e.select(e.cmp(x, x, "NE"), x, out)


@in_float32_at_least
def erf_inv(e: Emit, y):
    ay = e.abs(y)
    # Winitzki's closed-form guess, refined by Halley steps on erf (erfc near |y| = 1).
    a = 0.147
    ln = e.log_plus_one(e.negate(e.mul(ay, ay)))
    bb = e.add(2 / (math.pi * a), e.mul(0.5, ln))
    x = e.sqrt(e.sub(e.sqrt(e.sub(e.mul(bb, bb), e.div(ln, a))), bb))
    x = e.select(e.lt(ay, 1), x, 0)
    tail = e.cmp(ay, 0.5, "GE")
    target = e.select(tail, e.sub(1, ay), ay)  # 1 - ay is exact above 0.5
    for _ in range(4 if _is_f64(e) else 2):
        f = e.select(tail, e.sub(target, _erfc_nonneg(e, x)), e.sub(e.erf(x), target))
        dfdx = e.mul(2 / math.sqrt(math.pi), e.exponential(e.negate(e.mul(x, x))))
        step = e.div(f, dfdx)
        x = e.sub(x, e.div(step, e.add(1, e.mul(x, step))))
    x = e.select(e.cmp(ay, 1, "EQ"), math.inf, x)
    x = e.select(e.cmp(ay, 1, "GT"), math.nan, x)
    x = e.select(e.cmp(y, y, "NE"), math.nan, x)
    return e.mul(e.sign(y), x)


# --------------------------------------------------------------------------- gamma family

# Arguments up to _STIRLING_FROM are shifted into [1.5, 2.5) by the recurrences; above, the
# asymptotic series takes over.
_STIRLING_FROM = 8.0


def _series_terms(e: Emit) -> int:
    return 28 if _is_f64(e) else 14  # |z| <= 1/2: terms shrink like 4^-k


def _shift(e: Emit, y):
    """(z, k) with y = z + 2 + k: z in [-1/2, 1/2) for 0.5 <= y < _STIRLING_FROM, with k
    in -1..5; z = y, k = -2 for y < 0.5."""
    k = e.floor(e.sub(y, 1.5))
    k = e.select(e.lt(y, 0.5), -2, k)
    return e.sub(y, e.add(k, 2)), k  # exact: y is within a factor 2 of k + 2


def _lgamma_near_2(e: Emit, z):
    """lgamma(2 + z) for |z| <= 1/2."""
    n = _series_terms(e)
    coeffs = [0.0, 1 - _EULER] + [(-1) ** k * _ZETA_MINUS_ONE[k - 2] / k
                                  for k in range(2, n + 1)]
    return e.mul(z, e.poly(z, coeffs[1:]))


def _near_root(e: Emit, y):
    """(y - root, |y - root| < 1/4, terms) for Taylor series about digamma's root (the root
    is split in two to keep its digits)."""
    root_hi = float(np.asarray(_DIGAMMA_ROOT, e.dtype))
    dz = e.sub(e.sub(y, root_hi), (_DIGAMMA_ROOT - root_hi) + _DIGAMMA_ROOT_LO)
    return dz, e.lt(e.abs(dz), 0.25), (24 if _is_f64(e) else 11)


def _lgamma_positive(e: Emit, y):
    """lgamma(y) for y > 0."""
    z, k = _shift(e, y)
    base = _lgamma_near_2(e, z)
    # lgamma(y) = lgamma(y - k) + log((y - 1) ... (y - k)) for k >= 1.
    prod = e.c(1)
    for i in range(1, int(_STIRLING_FROM) - 1):
        prod = e.mul(prod, e.select(e.cmp(k, float(i), "GE"), e.sub(y, float(i)), 1))
    up = e.add(base, e.log(prod))
    # lgamma(1 + z) = lgamma(2 + z) - log1p(z); lgamma(y) = lgamma(2 + y) - log(y (1 + y)).
    down = e.sub(base, e.log_plus_one(z))
    tiny = e.sub(down, e.log(y))
    small = e.piecewise(k, [-1.5, -0.5, 0.5], [tiny, down, base, up])
    # lgamma(1 + z) = -euler z + sum_k (-1)^k zeta(k) z^k / k for |z| < 1/4, where the
    # difference above loses a bit or two.
    n = _series_terms(e)
    coeffs = [-_EULER] + [(-1) ** k * (1 + _ZETA_MINUS_ONE[k - 2]) / k for k in range(2, n + 1)]
    near_1 = e.select(e.cmp(z, 0, "EQ"), 0, e.mul(z, e.poly(z, coeffs)))  # +0, not -0
    small = e.select(e.lt(e.abs(e.sub(y, 1)), 0.25), near_1, small)
    # Around the minimum, where lgamma(2 + z) - log1p(z) would cancel.
    dz, is_near, n_root = _near_root(e, y)
    coeffs = [c / j for j, c in enumerate(_DIGAMMA_ROOT_SERIES[:n_root], start=2)]
    near_min = e.add(_LGAMMA_MIN, e.mul(e.mul(dz, dz), e.poly(dz, coeffs)))
    small = e.select(is_near, near_min, small)
    terms = 10 if _is_f64(e) else 4
    inv = e.div(1, y)
    corr = e.mul(inv, e.poly(e.mul(inv, inv), [b / (2 * j * (2 * j - 1)) for j, b in
                                               enumerate(_BERNOULLI[:terms], start=1)]))
    stirling = e.add(e.add(e.mul(e.sub(y, 0.5), e.sub(e.log(y), 1)),
                           0.5 * math.log(2 * math.pi) - 0.5), corr)
    return e.select(e.lt(y, _STIRLING_FROM), small, stirling)


def _reflected(e: Emit, x):
    """(x < 0, 1 - x where x < 0 else x, pi * (x - round(x)))."""
    neg = e.lt(x, 0)
    y = e.select(neg, e.sub(1, x), x)
    r = e.mul(math.pi, e.sub(x, e.round_nearest_even(x)))
    return neg, y, r


def _is_pole(e: Emit, x):
    return e.op("and", e.cmp(x, 0, "LE"), e.cmp(x, e.floor(x), "EQ"))


@in_float32_at_least
def lgamma(e: Emit, x):
    neg, y, r = _reflected(e, x)
    pos = _lgamma_positive(e, y)
    # Gamma(x) Gamma(1 - x) = pi / sin(pi x)
    refl = e.sub(e.sub(math.log(math.pi), e.log(e.abs(e.sine(r)))), pos)
    out = e.select(neg, refl, pos)
    # lgamma(x) = -log|x| - euler x + O(x^2): avoids sin of a subnormal pi x.
    tiny = float(dtypes.finfo(e.dtype).eps) / 8
    out = e.select(e.lt(e.abs(x), tiny), e.negate(e.log(e.abs(x))), out)
    out = e.select(_is_pole(e, x), math.inf, out)
    return e.select(e.cmp(e.abs(x), math.inf, "EQ"), math.inf, out)


def _digamma_near_2(e: Emit, z):
    """digamma(2 + z) for |z| <= 1/2 (the derivative of _lgamma_near_2)."""
    n = _series_terms(e) + 1
    coeffs = [1 - _EULER] + [(-1) ** k * _ZETA_MINUS_ONE[k - 2] for k in range(2, n + 1)]
    return e.poly(z, coeffs)


def _digamma_positive(e: Emit, y):
    """digamma(y) for y > 0."""
    z, k = _shift(e, y)
    base = _digamma_near_2(e, z)
    # digamma(y) = digamma(y - k) + sum_i 1 / (y - i), smallest terms first.
    up = base
    for i in range(int(_STIRLING_FROM) - 2, 0, -1):
        up = e.add(up, e.select(e.cmp(k, float(i), "GE"), e.div(1, e.sub(y, float(i))), 0))
    # digamma(1 + z) = digamma(2 + z) - 1 / (1 + z); digamma(y) = digamma(y + 2) - ...
    down = e.sub(base, e.div(1, y))
    tiny = e.sub(e.sub(base, e.div(1, e.add(y, 1))), e.div(1, y))
    small = e.piecewise(k, [-1.5, -0.5, 0.5], [tiny, down, base, up])
    # Around the root, where the sums above cancel.
    dz, is_near, n_root = _near_root(e, y)
    near_root = e.mul(dz, e.poly(dz, _DIGAMMA_ROOT_SERIES[:n_root]))
    small = e.select(is_near, near_root, small)
    terms = 10 if _is_f64(e) else 5
    inv = e.div(1, y)
    inv2 = e.mul(inv, inv)
    corr = e.mul(inv2, e.poly(inv2, [b / (2 * j) for j, b in
                                     enumerate(_BERNOULLI[:terms], start=1)]))
    asym = e.sub(e.sub(e.log(y), e.mul(0.5, inv)), corr)
    return e.select(e.lt(y, _STIRLING_FROM), small, asym)


@in_float32_at_least
def digamma(e: Emit, x):
    neg, y, r = _reflected(e, x)
    pos = _digamma_positive(e, y)
    # digamma(1 - x) - digamma(x) = pi / tan(pi x)
    out = e.select(neg, e.sub(pos, e.div(math.pi, e.tan(r))), pos)
    out = e.select(_is_pole(e, x), math.nan, out)
    out = e.select(e.cmp(x, -math.inf, "EQ"), math.nan, out)
    return e.select(e.cmp(x, math.inf, "EQ"), math.inf, out)
