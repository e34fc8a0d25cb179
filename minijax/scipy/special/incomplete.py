"""The incomplete gamma and beta functions and the modified Bessel functions of order 0 and 1
(`gammainc`, `gammaincc`, `betainc`, `betaln`, `i0`, `i0e`, `i1`, `i1e`, `multigammaln`), as
in `jax.scipy.special`.

All are written in jnp/lax terms, so they work under jit, vmap and grad (including the
derivatives with respect to the shape parameters, taken through the evaluation itself). The
series and continued fractions run a fixed number of terms in a `lax.fori_loop`, so no shape
depends on the values; the number of terms covers shape parameters up to a few thousand.
"""

from __future__ import annotations

import math

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.lax import special as lax_special
from minijax.scipy.special.basic import _inexact, gammaln

__all__ = ["betainc", "betaln", "gammainc", "gammaincc", "i0", "i0e", "i1", "i1e",
           "multigammaln"]

#: Terms of the power series and levels of the continued fractions, per dtype. The gamma
#: series (x < a + 1) needs about sqrt(74 a) terms in float64 (sqrt(34 a) in float32), the
#: continued fraction (x >= a + 1) about 2 sqrt(a) + 10 levels, the beta continued fraction
#: (x < (a + 1) / (a + b + 2)) about sqrt(max(a, b)) levels. Series terms are summed in chunks
#: of _CHUNK (one cumprod per chunk), so a loop step does the work of _CHUNK terms.
_CHUNK = 16
_SERIES_TERMS = {np.dtype(np.float64): 400, np.dtype(np.float32): 192}
_CF_LEVELS = {np.dtype(np.float64): 160, np.dtype(np.float32): 80}


def _count(table, dtype):
    return table.get(np.dtype(dtype), max(table.values()))


def _tiny(dtype):
    return np.array(np.finfo(dtype).tiny * 16, dtype)


def _series(x, first, ratio, terms):
    """first * (1 + sum_{n>=1} prod_{k=1..n} ratio(k)), summed _CHUNK terms per loop step;
    `ratio(ks)` gets the term indices as a float array of shape (_CHUNK, 1, ..., 1)."""
    base = np.arange(1, _CHUNK + 1, dtype=x.dtype).reshape((_CHUNK,) + (1,) * x.ndim)

    def body(c, carry):
        term, total = carry
        ks = base + (c * _CHUNK).astype(x.dtype)
        chunk = term * jnp.cumprod(ratio(ks), axis=0)
        return chunk[-1], total + jnp.sum(chunk, axis=0)
    one = jnp.ones_like(x)
    _, total = lax.fori_loop(0, terms // _CHUNK, body, (one, one))
    return first * total


def _gamma_series(a, x):
    """P(a, x) = e^-x x^a / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)), for x < a + 1."""
    first = jnp.exp(a * jnp.log(x) - x - gammaln(a + 1))
    return _series(x, first, lambda k: x / (a + k), _count(_SERIES_TERMS, x.dtype))


def _gamma_cf(a, x):
    """Q(a, x) by Legendre's continued fraction (modified Lentz), for x >= a + 1."""
    tiny = _tiny(x.dtype)
    b = x + 1 - a
    c = jnp.full_like(x, 1 / tiny)
    d = 1 / b

    def body(i, carry):
        b, c, d, h = carry
        i = i.astype(x.dtype)
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = jnp.where(jnp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = jnp.where(jnp.abs(c) < tiny, tiny, c)
        d = 1 / d
        return b, c, d, h * d * c
    *_, h = lax.fori_loop(1, _count(_CF_LEVELS, x.dtype), body, (b, c, d, d))
    return jnp.exp(a * jnp.log(x) - x - gammaln(a)) * h


def _gamma_parts(name, a, x):
    a, x = _inexact(name, a, x)
    use_cf = x >= a + 1
    bad = (a <= 0) | (x < 0) | jnp.isnan(a) | jnp.isnan(x)
    # Each branch sees only arguments where it converges (and no NaN leaks into gradients).
    one = jnp.ones_like(x)
    a_ok = jnp.where(bad, one, a)
    x_series = jnp.where(use_cf | bad | (x == 0), 0.5 * one, x)
    x_cf = jnp.where(use_cf & ~bad, x, a_ok + 1)
    x_cf = jnp.where(jnp.isinf(x_cf), a_ok + 1, x_cf)
    p = _gamma_series(a_ok, x_series)
    q = _gamma_cf(a_ok, x_cf)
    return a, x, use_cf, bad, p, q


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (scipy.special.gammainc)."""
    a, x, use_cf, bad, p, q = _gamma_parts("gammainc", a, x)
    out = jnp.where(use_cf, 1 - q, p)
    out = jnp.where(x == 0, jnp.zeros_like(out), out)
    out = jnp.where(jnp.isposinf(x), jnp.ones_like(out), out)
    # JAX: P(0, x) is 1 for x >= 1 (its series leaves NaN for 0 < x < 1, and so does this).
    a_zero_one = (a == 0) & (x >= 1)
    out = jnp.where(a_zero_one, jnp.ones_like(out), out)
    return jnp.where(bad & ~a_zero_one, jnp.nan, out)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    a, x, use_cf, bad, p, q = _gamma_parts("gammaincc", a, x)
    out = jnp.where(use_cf, q, 1 - p)
    out = jnp.where(x == 0, jnp.ones_like(out), out)
    out = jnp.where(jnp.isposinf(x), jnp.zeros_like(out), out)
    a_zero = (a == 0) & (x > 0)  # Q(0, x) = 0 for x > 0, as in JAX
    out = jnp.where(a_zero, jnp.zeros_like(out), out)
    return jnp.where(bad & ~a_zero, jnp.nan, out)


def betaln(a, b):
    """log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)."""
    a, b = _inexact("betaln", a, b)
    return gammaln(a) + gammaln(b) - gammaln(a + b)


def _beta_cf(a, b, x):
    """I_x(a, b) by its continued fraction (modified Lentz), for x < (a + 1) / (a + b + 2),
    where it converges in about sqrt(max(a, b)) levels."""
    tiny = _tiny(x.dtype)

    def clamp(v):
        return jnp.where(jnp.abs(v) < tiny, tiny, v)

    def step(aa, c, d, h):
        d = 1 / clamp(1 + aa * d)
        c = clamp(1 + aa / c)
        return c, d, h * d * c

    d = 1 / clamp(1 - (a + b) * x / (a + 1))

    def body(m, carry):
        c, d, h = carry
        m = m.astype(x.dtype)
        even = m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m))
        c, d, h = step(even, c, d, h)
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m))
        return step(odd, c, d, h)
    _, _, h = lax.fori_loop(1, _count(_CF_LEVELS, x.dtype), body, (jnp.ones_like(x), d, d))
    front = jnp.exp(a * jnp.log(x) + b * jnp.log1p(-x) - betaln(a, b))
    return front * h / a


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (scipy.special.betainc)."""
    a, b, x = _inexact("betainc", a, b, x)
    bad = (a < 0) | (b < 0) | (x < 0) | (x > 1) | jnp.isnan(a) | jnp.isnan(b) | jnp.isnan(x)
    bad = bad | ((a == 0) & (b == 0)) | (jnp.isinf(a) & jnp.isinf(b))
    # JAX's limits: a == 0 or b == inf puts all mass at 0, b == 0 or a == inf at 1
    at_zero = (a == 0) | (jnp.isposinf(b) & (a > 0))
    at_one = (b == 0) | (jnp.isposinf(a) & (b > 0))
    limit = ~bad & (at_zero | at_one)
    one = jnp.ones_like(x)
    a_ok, b_ok = jnp.where(bad | limit, one, a), jnp.where(bad | limit, one, b)
    flip = x > (a_ok + 1) / (a_ok + b_ok + 2)
    edge = bad | (x == 0) | (x == 1)
    # The series converges fast below the mean; above it use I_x(a, b) = 1 - I_{1-x}(b, a).
    xs = jnp.where(edge, 0.5 * one, jnp.where(flip, 1 - x, x))
    aa, bb = jnp.where(flip, b_ok, a_ok), jnp.where(flip, a_ok, b_ok)
    s = _beta_cf(aa, bb, xs)
    out = jnp.where(flip, 1 - s, s)
    out = jnp.where(x == 0, jnp.zeros_like(out), jnp.where(x == 1, one, out))
    out = jnp.where(limit & at_zero & (x > 0), one, out)
    out = jnp.where(limit & at_one & (x < 1), jnp.zeros_like(out), out)
    return jnp.where(bad, jnp.nan, out)


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension `d` (a static int)."""
    d = int(d)
    (a,) = _inexact("multigammaln", a)
    terms = sum(gammaln(a - 0.5 * j) for j in range(d))
    return terms + np.array(d * (d - 1) / 4 * math.log(math.pi), a.dtype)


# Above this |x| the Bessel functions use their asymptotic expansion (the power series would
# need about |x| terms and its terms overflow).
_BESSEL_SWITCH = 40.0
_BESSEL_ASYMPTOTIC_TERMS = 12


def _bessel_series_e(order, x):
    """exp(-|x|) I_order(|x|) by the power series sum (x/2)^(2k+order) / (k! (k+order)!)
    (|x| <= _BESSEL_SWITCH: the terms peak near k = |x|/2 and vanish by k = 96)."""
    half_sq = 0.25 * x * x
    first = jnp.ones_like(x) if order == 0 else 0.5 * x
    return jnp.exp(-x) * _series(x, first, lambda k: half_sq / (k * (k + order)), 96)


def _bessel_asymptotic_e(order, x):
    """exp(-x) I_order(x) ~ 1/sqrt(2 pi x) sum_k (-1)^k prod_j (4 nu^2 - (2j-1)^2) / (k! (8x)^k)."""
    mu = 4.0 * order * order
    total = jnp.ones_like(x)
    coeff = 1.0
    inv = 1 / (8 * x)
    power = jnp.ones_like(x)
    for k in range(1, _BESSEL_ASYMPTOTIC_TERMS):
        coeff *= -(mu - (2 * k - 1) ** 2) / k
        power = power * inv
        total = total + coeff * power
    return total / jnp.sqrt(2 * math.pi * x)


def _bessel_e(name, order, x):
    (x,) = _inexact(name, x)
    ax = jnp.abs(x)
    big = ax > _BESSEL_SWITCH
    small_x = jnp.where(big, jnp.zeros_like(ax), ax)
    big_x = jnp.where(big, ax, jnp.full_like(ax, 2 * _BESSEL_SWITCH))
    out = jnp.where(big, _bessel_asymptotic_e(order, big_x), _bessel_series_e(order, small_x))
    out = jnp.where(jnp.isinf(ax), jnp.zeros_like(out), out)
    return out if order == 0 else jnp.where(x < 0, -out, out)


def i0e(x):
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x)."""
    return _bessel_e("i0e", 0, x)


def i1e(x):
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x)."""
    return _bessel_e("i1e", 1, x)


def i0(x):
    """The modified Bessel function of order 0."""
    (x,) = _inexact("i0", x)
    return jnp.exp(jnp.abs(x)) * i0e(x)


def i1(x):
    """The modified Bessel function of order 1."""
    (x,) = _inexact("i1", x)
    return jnp.exp(jnp.abs(x)) * i1e(x)


for _name, _fn in [("igamma", gammainc), ("igammac", gammaincc), ("betainc", betainc),
                   ("bessel_i0e", i0e), ("bessel_i1e", i1e)]:
    lax_special.register_special_function(_name, _fn)
