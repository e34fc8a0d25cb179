"""Integral functions of `jax.scipy.special`: ``erfcx``, ``dawsn``, ``exp1``, ``expn``,
``sici``, ``fresnel``, ``spence`` and ``owens_t``.

Each is a convergent power series where that is accurate and a continued fraction (or an
asymptotic series, or a quadrature) elsewhere, written in jnp/lax terms so that jit, vmap
and grad go through them; every branch sees arguments that are safe for it and ``where``
selects, which keeps gradients finite. Complex continued fractions are carried as pairs of
real arrays.
"""

from __future__ import annotations

import math

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.scipy.special.basic import _inexact, digamma, ndtr
from minijax.scipy.special.gamma_family import _bernoulli_numbers
from minijax.scipy.special.series import _e1_fraction, _e1_series

__all__ = ["dawsn", "erfcx", "exp1", "expn", "fresnel", "owens_t", "sici", "spence", "wofz"]

_EULER = 0.5772156649015329
_SQRT_PI = math.sqrt(math.pi)


def _nan(x):
    return jnp.array(np.nan, x.dtype)


def _cf_erfc_scaled(x, depth=80):
    """sqrt(pi) exp(x^2) erfc(x) = 1 / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))),
    evaluated from the bottom up (x >= 2)."""
    t = x
    for k in range(depth, 0, -1):
        t = x + (0.5 * k) / t
    return 1.0 / t


def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x)."""
    (x,) = _inexact("erfcx", x)
    ax = jnp.abs(x)
    far = ax >= 2.0
    near_value = jnp.exp(ax * ax) * lax.erfc(jnp.where(far, 0.0, ax))
    far_value = _cf_erfc_scaled(jnp.where(far, ax, 2.0)) / _SQRT_PI
    positive = jnp.where(far, far_value, near_value)
    # erfcx(-x) = 2 exp(x^2) - erfcx(x)
    negative = 2 * jnp.exp(jnp.minimum(ax * ax, 750.0 if x.dtype == np.float64 else 90.0)) \
        - positive
    value = jnp.where(x < 0, negative, positive)
    return jnp.where(x == jnp.inf, jnp.zeros_like(x), value)


def dawsn(x):
    """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt."""
    (x,) = _inexact("dawsn", x)
    ax = jnp.abs(x)
    far = ax > 6.0
    # x exp(-x^2) sum_n x^2n / (n! (2n + 1)): all terms positive, so no cancellation
    s = jnp.where(far, 0.0, ax)
    s2 = s * s

    def body(n, carry):
        term, total = carry
        n = n.astype(s.dtype)
        term = term * s2 / n
        return term, total + term / (2 * n + 1)

    _, total = lax.fori_loop(1, 110, body, (jnp.ones_like(s), jnp.ones_like(s)))
    near_value = s * jnp.exp(-s2) * total
    # asymptotic: 1/(2x) sum (2k - 1)!! / (2x^2)^k
    f = jnp.where(far, ax, 7.0)
    inv = 1.0 / (2 * f * f)
    term, series = jnp.ones_like(f), jnp.ones_like(f)
    for k in range(1, 30):
        term = term * (2 * k - 1) * inv
        series = series + term
    far_value = series / (2 * f)
    value = jnp.where(far, far_value, near_value)
    value = jnp.where(ax == jnp.inf, jnp.zeros_like(x), value)
    return jnp.where(x < 0, -value, value)


def exp1(x):
    """The exponential integral E1(x) = int_1^inf exp(-x t) / t dt (``nan`` for x < 0)."""
    (x,) = _inexact("exp1", x)
    t = jnp.where(x > 0, x, 1.0)
    near = t <= 1.0
    value = jnp.where(near, _e1_series(jnp.where(near, t, 0.5)),
                      _e1_fraction(jnp.where(near, 2.0, t)))
    value = jnp.where(x == 0, jnp.array(np.inf, x.dtype), value)
    value = jnp.where(x == jnp.inf, jnp.zeros_like(x), value)
    return jnp.where((x < 0) | jnp.isnan(x), _nan(x), value)


def _expn_series(n, x, terms=60):
    """E_n(x) for x <= 1: (-x)^(n-1)/(n-1)! (psi(n) - ln x) - sum_{k != n-1} (-x)^k /
    (k! (k - n + 1))."""
    log_x = jnp.log(x)
    lead = jnp.exp((n - 1) * log_x - lax.lgamma(n)) * (digamma(n) - log_x)
    lead = jnp.where(jnp.fmod(n - 1, 2.0) != 0, -lead, lead)
    total = jnp.zeros_like(x)
    power = jnp.ones_like(x)  # (-x)^k / k!
    for k in range(terms):
        denom = k - n + 1
        total = total + jnp.where(denom == 0, 0.0, power / jnp.where(denom == 0, 1.0, denom))
        power = -power * x / (k + 1)
    return lead - total


def _expn_fraction(n, x, depth=80):
    """E_n(x) for x > 1 by its continued fraction, from the bottom up:
    E_n(x) = exp(-x) / (x + n - 1 n / (x + n + 2 - 2 (n + 1) / (x + n + 4 - ...)))."""
    t = x + n + 2 * depth
    for i in range(depth, 0, -1):
        t = x + n + 2 * (i - 1) - i * (n - 1 + i) / t
    return jnp.exp(-x) / t


def expn(n, x):
    """The generalized exponential integral E_n(x) = int_1^inf exp(-x t) / t^n dt for
    integer ``n >= 0`` and ``x >= 0`` (``nan`` elsewhere, ``inf`` at x = 0 for n <= 1)."""
    n, x = _inexact("expn", n, x)
    bad = (n < 0) | (x < 0) | (n != jnp.floor(n)) | jnp.isnan(x) | jnp.isnan(n)
    safe_n = jnp.where(bad, 1.0, n)
    pos = jnp.where(x > 0, x, 1.0)
    near = pos <= 1.0
    n1 = jnp.maximum(safe_n, 1.0)
    series = _expn_series(n1, jnp.where(near, pos, 0.5))
    fraction = _expn_fraction(n1, jnp.where(near, 2.0, pos))
    value = jnp.where(near, series, fraction)
    value = jnp.where(safe_n == 0, jnp.exp(-pos) / pos, value)
    at_zero = jnp.where(safe_n <= 1, jnp.array(np.inf, x.dtype),
                        1.0 / jnp.maximum(safe_n - 1, 1.0))
    value = jnp.where(x == 0, at_zero, value)
    value = jnp.where(x == jnp.inf, jnp.zeros_like(x), value)
    return jnp.where(bad, _nan(x), value)


def _e1_imaginary(y, depth=100):
    """E1(i y) for y >= 4 as (re, im), by the continued fraction
    E1(z) = exp(-z) / (z + 1 - 1 / (z + 3 - 4 / (z + 5 - ...))), z = i y."""
    tr, ti = jnp.full_like(y, 2.0 * depth + 1), y
    for k in range(depth, 0, -1):
        # t = (2k - 1 + i y) - k^2 / t
        inv = (k * k) / (tr * tr + ti * ti)
        tr, ti = (2 * k - 1) - inv * tr, y + inv * ti
    # exp(-i y) / t
    c, s = jnp.cos(y), -jnp.sin(y)
    mag = tr * tr + ti * ti
    return (c * tr + s * ti) / mag, (s * tr - c * ti) / mag


def sici(x):
    """The sine and cosine integrals (Si(x), Ci(x)); Si is odd, Ci(x) is Ci(|x|) (the real
    part), ``-inf`` at 0 and ``nan`` at ``-inf`` (as JAX)."""
    (x,) = _inexact("sici", x)
    ax = jnp.abs(x)
    far = ax > 4.0
    s = jnp.where(far, 1.0, ax)
    s2 = s * s
    si_series, ci_series = jnp.zeros_like(s), jnp.zeros_like(s)
    term = jnp.ones_like(s)  # (-1)^k s^(2k) / (2k)!
    for k in range(30):
        # Si: sum (-1)^k s^(2k+1) / ((2k+1)! (2k+1)); Ci: sum_{k>=1} (-1)^k s^2k / ((2k)! 2k)
        if k > 0:
            ci_series = ci_series + term / (2 * k)
        odd = term * s / (2 * k + 1)
        si_series = si_series + odd / (2 * k + 1)
        term = -term * s2 / ((2 * k + 1) * (2 * k + 2))
    ci_near = _EULER + jnp.log(s) + ci_series
    f = jnp.where(far, ax, 5.0)
    re, im = _e1_imaginary(jnp.where(jnp.isinf(f), 5.0, f))
    si_far = jnp.where(jnp.isinf(f), math.pi / 2, math.pi / 2 + im)
    ci_far = jnp.where(jnp.isinf(f), 0.0, -re)
    si = jnp.where(far, si_far, si_series)
    ci = jnp.where(far, ci_far, ci_near)
    si = jnp.where(x < 0, -si, si)
    ci = jnp.where(x == 0, jnp.array(-np.inf, x.dtype), ci)
    ci = jnp.where(x == -jnp.inf, _nan(x), ci)
    return si.astype(x.dtype), ci.astype(x.dtype)


def _erfc_complex_scaled(zr, zi, depth=200):
    """sqrt(pi) exp(z^2) erfc(z) for Re z > 0 as (re, im), by the continued fraction of
    :func:`_cf_erfc_scaled` in complex arithmetic."""
    tr, ti = zr, zi
    for k in range(depth, 0, -1):
        mag = tr * tr + ti * ti
        tr, ti = zr + 0.5 * k * tr / mag, zi - 0.5 * k * ti / mag
    mag = tr * tr + ti * ti
    return tr / mag, -ti / mag


def fresnel(x):
    """The Fresnel integrals (S(x), C(x)) = int_0^x (sin, cos)(pi t^2 / 2) dt."""
    (x,) = _inexact("fresnel", x)
    ax = jnp.abs(x)
    far = ax > 2.5
    s = jnp.where(far, 1.0, ax)
    u = 0.5 * math.pi * s * s
    s_series, c_series = jnp.zeros_like(s), jnp.zeros_like(s)
    term = s  # s u^k / k! (-1)^(k//2)
    for k in range(60):
        if k % 2 == 0:
            c_series = c_series + term / (2 * k + 1)
        else:
            s_series = s_series + term / (2 * k + 1)
        term = term * u / (k + 1) * (-1 if k % 2 else 1)
    # C + iS = (1 + i)/2 [1 - exp(-z^2) w] with z = sqrt(pi)/2 (1 - i) x and
    # w = erfc(z) exp(z^2); exp(-z^2) = exp(i pi x^2 / 2)
    f = jnp.where(far & jnp.isfinite(ax), ax, 3.0)
    zr = 0.5 * _SQRT_PI * f
    wr, wi = _erfc_complex_scaled(zr, -zr)
    wr, wi = wr / _SQRT_PI, wi / _SQRT_PI
    ang = 0.5 * math.pi * f * f
    er, ei = jnp.cos(ang), jnp.sin(ang)
    pr, pi_ = er * wr - ei * wi, er * wi + ei * wr
    # (1 + i)/2 (1 - p)
    qr, qi = 1 - pr, -pi_
    c_far, s_far = 0.5 * (qr - qi), 0.5 * (qr + qi)
    c_far = jnp.where(jnp.isinf(ax), 0.5, c_far)
    s_far = jnp.where(jnp.isinf(ax), 0.5, s_far)
    s_val = jnp.where(far, s_far, s_series)
    c_val = jnp.where(far, c_far, c_series)
    return (jnp.where(x < 0, -s_val, s_val).astype(x.dtype),
            jnp.where(x < 0, -c_val, c_val).astype(x.dtype))


_B_SPENCE = _bernoulli_numbers(40)
_LI2_COEFFS = [float(_B_SPENCE[n] / math.factorial(n + 1)) for n in range(40)]


def _li2_small(z):
    """Li2(z) for -1 <= z <= 1/2: sum_n B_n u^(n+1) / (n+1)! with u = -log(1 - z)."""
    u = -jnp.log1p(-z)
    total = jnp.zeros_like(z)
    power = u
    for n, coeff in enumerate(_LI2_COEFFS):
        if coeff != 0.0:
            total = total + coeff * power
        power = power * u
        del n
    return total


def spence(x):
    """Spence's function int_1^x log(t) / (1 - t) dt = Li2(1 - x) for x >= 0 (``nan`` for
    x < 0)."""
    (x,) = _inexact("spence", x)
    pi2_6 = math.pi ** 2 / 6
    small = x < 0.5
    large = x > 2.0
    mid = ~small & ~large
    # 1/2 <= x <= 2: Li2(z), z = 1 - x in [-1, 1/2]
    mid_value = _li2_small(jnp.where(mid, 1 - x, 0.0))
    # 0 < x < 1/2: Li2(1 - x) = pi^2/6 - log(x) log(1 - x) - Li2(x)
    xs = jnp.where(small & (x > 0), x, 0.25)
    small_value = pi2_6 - jnp.log(xs) * jnp.log1p(-xs) - _li2_small(xs)
    small_value = jnp.where(x == 0, pi2_6, small_value)
    # x > 2: Li2(z) = -pi^2/6 - log(-z)^2 / 2 - Li2(1/z), z = 1 - x < -1
    xl = jnp.where(large & jnp.isfinite(x), x, 3.0)
    lg = jnp.log(xl - 1)
    large_value = -pi2_6 - 0.5 * lg * lg - _li2_small(1 / (1 - xl))
    value = jnp.where(small, small_value, jnp.where(large, large_value, mid_value))
    return jnp.where((x < 0) | jnp.isinf(x) | jnp.isnan(x), _nan(x), value)


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(48)


def _owens_t_quad(h, a):
    """T(h, a) for 0 <= a <= 1 by Gauss-Legendre quadrature of
    exp(-h^2 (1 + t^2) / 2) / (1 + t^2) / (2 pi) on [0, a], cut where the integrand has
    fallen below exp(-40) of its start."""
    upper = jnp.minimum(a, 9.0 / jnp.maximum(h, 1e-30))
    total = jnp.zeros_like(h)
    for node, weight in zip(_GL_NODES, _GL_WEIGHTS):
        t = 0.5 * upper * (node + 1)
        one_t2 = 1 + t * t
        total = total + weight * jnp.exp(-0.5 * h * h * one_t2) / one_t2
    return 0.5 * upper * total / (2 * math.pi)


def owens_t(h, a):
    """Owen's T function T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx."""
    h, a = _inexact("owens_t", h, a)
    ah = jnp.abs(h)
    aa = jnp.abs(a)
    inner = aa <= 1
    small_value = _owens_t_quad(ah, jnp.where(inner, aa, 1.0))
    # |a| > 1: T(h, a) = (Phi(h) Q(a h) + Phi(a h) Q(h)) / 2 - T(a h, 1/a)
    outer_a = jnp.where(inner, 2.0, aa)
    ahh = outer_a * ah
    large_value = 0.5 * (ndtr(ah) * ndtr(-ahh) + ndtr(ahh) * ndtr(-ah)) \
        - _owens_t_quad(ahh, 1 / outer_a)
    large_value = jnp.where(jnp.isinf(aa), 0.5 * ndtr(-ah), large_value)
    value = jnp.where(inner, small_value, large_value)
    return jnp.where(a < 0, -value, value)


def _weideman_coefficients(n: int):
    """Coefficients of Weideman's rational approximation of w(z) (SIAM J. Numer. Anal. 31,
    1994) with n terms, from an FFT of exp(-t^2) (L^2 + t^2) at t = L tan(theta / 2)."""
    m = 2 * n
    length = math.sqrt(n / math.sqrt(2))
    theta = np.arange(-m + 1, m) * np.pi / m
    t = length * np.tan(theta / 2)
    f = np.concatenate([[0.0], np.exp(-t * t) * (length ** 2 + t * t)])
    a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
    return a[1:n + 1][::-1], length


_WOFZ_COEFFS, _WOFZ_L = _weideman_coefficients(40)


def wofz(z):
    """The Faddeeva function w(z) = exp(-z^2) erfc(-i z) (complex), by Weideman's rational
    approximation in the upper half plane (relative error about 1e-14) and
    w(z) = 2 exp(-z^2) - w(-z) below it."""
    z = jnp.asarray(z)
    if not jnp.issubdtype(z.dtype, jnp.complexfloating):
        z = z.astype(jnp.result_type(z, 1j))
    upper = jnp.imag(z) >= 0
    zz = jnp.where(upper, z, -z)
    denom = _WOFZ_L - 1j * zz
    ratio = (_WOFZ_L + 1j * zz) / denom
    poly = jnp.zeros_like(zz)
    for coeff in _WOFZ_COEFFS:
        poly = poly * ratio + coeff
    value = 2 * poly / (denom * denom) + (1 / _SQRT_PI) / denom
    reflected = 2 * jnp.exp(-jnp.where(upper, 0.0, z * z)) - value
    return jnp.where(upper, value, reflected).astype(z.dtype)
