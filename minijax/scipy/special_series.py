"""Special functions by series and asymptotic expansions: ``i0e``, ``i1e`` (exponentially
scaled modified Bessel functions), ``expi`` (the exponential integral Ei) and
``multigammaln``; written in minijax.numpy / lax terms (they trace, vmap and differentiate).

Each function evaluates a convergent power series where it is accurate and an asymptotic
expansion (or, for E1, a continued fraction) elsewhere; both branches see safe arguments
and ``where`` selects, so gradients stay finite.
"""

from __future__ import annotations

import math

from minijax import lax
from minijax import numpy as jnp

__all__ = ["expi", "i0e", "i1e", "multigammaln"]

_EULER = 0.5772156649015329
_BESSEL_SWITCH = 15.0   # |x| above: asymptotic expansion
_SERIES_TERMS = 60
_FRACTION_TERMS = 100


def _inexact(x):
    return jnp.asarray(x, jnp.result_type(x, 1.0))


def _bessel_series(nu: int, y):
    """I_nu(y) for y >= 0 by its power series sum (y/2)^(2k+nu) / (k! (k+nu)!)."""
    q = 0.25 * y * y

    def body(k, carry):
        term, total = carry
        k = k.astype(y.dtype)
        term = term * q / (k * (k + nu))
        return term, total + term

    first = (0.5 * y) ** nu / math.factorial(nu)
    _, total = lax.fori_loop(1, _SERIES_TERMS, body, (first, first))
    return total


def _bessel_asymptotic(nu: int, y):
    """e^-y I_nu(y) for large y: (2 pi y)^-1/2 sum_k (-1)^k a_k(nu) / y^k."""
    mu = 4.0 * nu * nu
    total, term = jnp.ones_like(y), jnp.ones_like(y)
    for k in range(1, 12):
        term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * y)
        total = total + term
    return total / jnp.sqrt(2 * math.pi * y)


def _scaled_bessel(nu: int, x):
    x = _inexact(x)
    y = jnp.abs(x)
    small = y <= _BESSEL_SWITCH
    ys = jnp.where(small, y, 1.0)
    yl = jnp.where(small, 2 * _BESSEL_SWITCH, y)
    value = jnp.where(small, jnp.exp(-ys) * _bessel_series(nu, ys), _bessel_asymptotic(nu, yl))
    return value if nu % 2 == 0 else jnp.sign(x) * value


def i0e(x):
    """exp(-|x|) I0(x)."""
    return _scaled_bessel(0, x)


def i1e(x):
    """exp(-|x|) I1(x)."""
    return _scaled_bessel(1, x)


def _ei_series(x):
    """Ei(x) = gamma + ln|x| + sum x^k / (k k!) (for moderate x > 0)."""
    def body(k, carry):
        term, total = carry
        k = k.astype(x.dtype)
        term = term * x * (k - 1) / (k * k)
        return term, total + term

    _, total = lax.fori_loop(2, 2 * _SERIES_TERMS, body, (x, x))
    return _EULER + jnp.log(x) + total


def _ei_asymptotic(x):
    """Ei(x) ~ e^x / x sum k! / x^k (large x > 0)."""
    total, term = jnp.ones_like(x), jnp.ones_like(x)
    for k in range(1, 20):
        term = term * k / x
        total = total + term
    return jnp.exp(x) / x * total


def _e1_series(t):
    """E1(t) = -gamma - ln t - sum (-t)^k / (k k!) (t <= 1)."""
    def body(k, carry):
        term, total = carry
        k = k.astype(t.dtype)
        term = -term * t * (k - 1) / (k * k)
        return term, total + term

    _, total = lax.fori_loop(2, _SERIES_TERMS, body, (t, t))
    return -_EULER - jnp.log(t) + total


def _e1_fraction(t):
    """E1(t) by its continued fraction (t > 1), modified Lentz."""
    tiny = jnp.finfo(t.dtype).tiny * 1e3

    def body(i, carry):
        b, c, d, h = carry
        i = i.astype(t.dtype)
        an = -i * i
        b = b + 2.0
        d = 1.0 / (an * d + b)
        c = b + an / c
        return b, c, d, h * d * c

    b = t + 1.0
    d = 1.0 / b
    _, _, _, h = lax.fori_loop(1, _FRACTION_TERMS, body,
                               (b, jnp.full_like(t, 1.0 / tiny), d, d))
    return h * jnp.exp(-t)


def expi(x):
    """The exponential integral Ei(x) (for x < 0, -E1(-x))."""
    x = _inexact(x)
    pos = x > 0
    xp = jnp.where(pos, x, 1.0)
    large = xp > 40.0
    ei = jnp.where(large, _ei_asymptotic(jnp.where(large, xp, 50.0)),
                   _ei_series(jnp.where(large, 1.0, xp)))
    t = jnp.where(pos, 1.0, -x)
    t = jnp.where(t == 0, 1.0, t)
    near = t <= 1.0
    e1 = jnp.where(near, _e1_series(jnp.where(near, t, 0.5)),
                   _e1_fraction(jnp.where(near, 2.0, t)))
    value = jnp.where(pos, ei, -e1)
    value = jnp.where(x == 0, -jnp.inf, value)
    return jnp.where(jnp.isnan(x), jnp.nan, value)


def multigammaln(a, d: int):
    """log of the multivariate gamma function of dimension ``d``."""
    d = int(d)
    a = _inexact(a)
    js = jnp.arange(d, dtype=a.dtype)
    terms = lax.lgamma(jnp.expand_dims(a, -1) - js / 2)
    return jnp.sum(terms, axis=-1) + 0.25 * d * (d - 1) * math.log(math.pi)
