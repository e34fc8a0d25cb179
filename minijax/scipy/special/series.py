"""The exponential integral ``expi`` (Ei) by series and asymptotic expansions, written in
minijax.numpy / lax terms (it traces, vmaps and differentiates).

A convergent power series where it is accurate and an asymptotic expansion (or, for E1, a
continued fraction) elsewhere; both branches see safe arguments and ``where`` selects, so
gradients stay finite.
"""

from __future__ import annotations

from minijax import lax
from minijax import numpy as jnp

__all__ = ["expi"]

_EULER = 0.5772156649015329
_SERIES_TERMS = 60
_FRACTION_TERMS = 100


def _inexact(x):
    return jnp.asarray(x, jnp.result_type(x, 1.0))


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
