"""Hypergeometric and Bessel functions of `jax.scipy.special`: ``hyp1f1``, ``hyp2f1`` and
``bessel_jn``.

The hypergeometric functions sum their power series in a ``lax.fori_loop`` of fixed length
after a transformation that makes the terms positive or the argument small (Kummer's for
1F1 at negative x; Pfaff's for 2F1 at negative x; the 1 - x connection formula for 2F1
near 1), so they trace, vmap and differentiate. ``bessel_jn`` runs Miller's backward
recurrence, as JAX's does.
"""

from __future__ import annotations

import math

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.scipy.special.basic import _inexact, gammaln
from minijax.scipy.special.gamma_family import gammasgn

__all__ = ["bessel_jn", "hyp1f1", "hyp2f1"]

_HYP1F1_TERMS = 400
_HYP2F1_TERMS = 1500


def _series(numerator, denominator, x, terms):
    """sum_k prod_{j<k} numerator(j) / denominator(j) * x^k / k! by a fori_loop; the
    callables give the k-th ratio factors."""
    def body(k, carry):
        term, total = carry
        kf = k.astype(x.dtype)
        term = term * numerator(kf) / denominator(kf) * x / (kf + 1)
        return term, total + term

    _, total = lax.fori_loop(0, terms, body, (jnp.ones_like(x), jnp.ones_like(x)))
    return total


def hyp1f1(a, b, x):
    """The confluent hypergeometric function 1F1(a; b; x) = sum (a)_k / (b)_k x^k / k!
    (``inf`` where ``b`` is a non-positive integer)."""
    a, b, x = _inexact("hyp1f1", a, b, x)
    neg = x < 0
    # Kummer: 1F1(a; b; x) = exp(x) 1F1(b - a; b; -x)
    aa = jnp.where(neg, b - a, a)
    ax = jnp.abs(x)
    total = _series(lambda k: aa + k, lambda k: b + k, ax, _HYP1F1_TERMS)
    value = jnp.where(neg, jnp.exp(x) * total, total)
    pole = (b <= 0) & (b == jnp.floor(b))
    return jnp.where(pole, jnp.array(np.inf, x.dtype), value)


def _gauss_series(a, b, c, z):
    return _series(lambda k: (a + k) * (b + k), lambda k: c + k, z, _HYP2F1_TERMS)


def _gamma_ratio(num, den):
    """prod Gamma(num) / prod Gamma(den), signed."""
    sign = jnp.ones_like(num[0])
    log = jnp.zeros_like(num[0])
    for v in num:
        sign, log = sign * gammasgn(v), log + gammaln(v)
    for v in den:
        sign, log = sign * gammasgn(v), log - gammaln(v)
    return sign * jnp.exp(log)


def _connection(a, b, c, w, near):
    """2F1(a, b; c; 1 - w) by the connection formula in w (c - a - b not an integer)."""
    s = c - a - b
    first = _gamma_ratio([c, s], [c - a, c - b]) * _gauss_series(a, b, 1 - s, w)
    second = _gamma_ratio([c, -s], [a, b]) * jnp.exp(s * jnp.log(jnp.where(near, w, 1.0))) \
        * _gauss_series(c - a, c - b, 1 + s, w)
    return first + second


def hyp2f1(a, b, c, x):
    """The Gauss hypergeometric function 2F1(a, b; c; x) for real x <= 1 (``inf`` for
    x > 1, and at x == 1 unless c > a + b)."""
    a, b, c, x = _inexact("hyp2f1", a, b, c, x)
    neg = x < 0
    # Pfaff: 2F1(a, b; c; x) = (1 - x)^-a 2F1(a, c - b; c; x / (x - 1))
    safe_x = jnp.where(x < 1, x, 0.0)
    bb = jnp.where(neg, c - b, b)
    z = jnp.where(neg, safe_x / (safe_x - 1), safe_x)
    direct = _gauss_series(a, bb, c, jnp.where(z > 0.9, 0.0, z))
    direct = jnp.where(neg, jnp.exp(-a * jnp.log1p(-safe_x)) * direct, direct)
    # z > 0.9 (x = z here): connection formula in 1 - x
    near = z > 0.9
    w = jnp.where(near, 1 - z, 0.0)
    s = c - a - b
    integer_s = s == jnp.round(s)
    # at an integer c - a - b the formula's terms have poles that cancel: average it over
    # c +- eps (error O(eps^2)); the plain series is exact there up to x = 0.97
    eps = 1e-5 if x.dtype == np.float64 else 2e-2
    connected = jnp.where(integer_s, 0.5 * (_connection(a, b, c + eps, w, near)
                                            + _connection(a, b, c - eps, w, near)),
                          _connection(a, b, c, w, near))
    plain_ok = near & integer_s & (z <= 0.97)
    plain = _gauss_series(a, b, c, jnp.where(plain_ok, z, 0.0))
    value = jnp.where(near, jnp.where(plain_ok, plain, connected), direct)
    at_one = jnp.where(s > 0, _gamma_ratio([c, jnp.where(s > 0, s, 1.0)], [c - a, c - b]),
                       jnp.inf)
    value = jnp.where(x == 1, at_one, value)
    value = jnp.where(x > 1, jnp.array(np.inf, x.dtype), value)
    pole = (c <= 0) & (c == jnp.floor(c))
    return jnp.where(pole, jnp.array(np.inf, x.dtype), value)


def bessel_jn(z, *, v: int, n_iter: int = 50):
    """Bessel functions of the first kind J_0(z) .. J_v(z), stacked on a new leading axis
    (shape ``(v + 1,) + z.shape``), by Miller's backward recurrence from order
    ``v + n_iter`` normalized with J_0 + 2 sum J_2k = 1 (accurate for |z| well below
    ``n_iter``)."""
    v = int(v)
    if v < 0:
        raise ValueError(f"bessel_jn: the order v must be non-negative, got {v}")
    (z,) = _inexact("bessel_jn", z)
    az = jnp.abs(z)
    tiny = az < 1e-3
    safe = jnp.where(tiny, 1.0, az)
    top = v + int(n_iter) + int(n_iter) % 2
    big = 1e8 if z.dtype == np.float32 else 1e100
    upper, current = jnp.zeros_like(safe), jnp.full_like(safe, 1e-30)
    norm = jnp.zeros_like(safe)
    kept = [None] * (v + 1)
    for k in range(top, 0, -1):
        # current is f_k; f_{k-1} = (2k / z) f_k - f_{k+1}
        if k <= v:
            kept[k] = current
        if k % 2 == 0:
            norm = norm + 2 * current
        lower = (2.0 * k / safe) * current - upper
        upper, current = current, lower
        scale = jnp.where(jnp.abs(current) > big, 1.0 / big, 1.0)
        upper, current, norm = upper * scale, current * scale, norm * scale
        kept = [None if kv is None else kv * scale for kv in kept]
    kept[0] = current
    norm = norm + current
    out = []
    for n, f in enumerate(kept):
        jn = f / norm
        if n % 2:
            jn = jnp.where(z < 0, -jn, jn)
        # |z| < 1e-3: (z/2)^n / n! (1 - (z/2)^2 / (n + 1)), the series' first two terms
        half = az / 2
        small = half ** n / math.factorial(n) * (1 - half * half / (n + 1))
        out.append(jnp.where(tiny, small, jn).astype(z.dtype))
    return jnp.stack(out)


