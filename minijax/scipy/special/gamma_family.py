"""Gamma-function relatives of `jax.scipy.special`: ``gamma``, ``gammasgn``, ``loggamma``,
``beta``, ``factorial``, ``comb``, ``poch``, the Hurwitz ``zeta``, ``polygamma``,
``bernoulli``, and the elementwise ``softmax``/``log_softmax``, ``kl_div``/``rel_entr``,
``boxcox``/``boxcox1p``.

Values at the poles follow JAX: ``gamma(0.0)`` is ``inf``, ``gamma(-0.0)`` is ``-inf``,
negative integers give ``nan``; ``loggamma`` of a real argument is ``nan`` for ``x <= 0``;
``poch(z, m)`` is ``nan`` where ``z`` is a non-positive integer (unless ``m == 0``).
All are jnp/lax compositions, so jit, vmap and grad go through them.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.lax import special as lax_special
from minijax.scipy.special.basic import _inexact, _reduction_dims, digamma, gammaln

__all__ = ["bernoulli", "beta", "boxcox", "boxcox1p", "comb", "factorial", "gamma",
           "gammasgn", "kl_div", "log_softmax", "loggamma", "poch", "polygamma",
           "rel_entr", "softmax", "zeta"]


def _is_nonpos_int(x):
    return (x <= 0) & (x == jnp.floor(x))


def gammasgn(x):
    """The sign of the gamma function: -1 or 1 (``gammasgn(-0.0)`` is -1), ``nan`` at the
    negative integers, ``-inf`` and ``nan``."""
    (x,) = _inexact("gammasgn", x)
    floor = jnp.floor(x)
    negative = (x < 0) & (jnp.fmod(floor, 2.0) != 0)
    sign = jnp.where(negative | ((x == 0) & jnp.signbit(x)), -1.0, 1.0).astype(x.dtype)
    bad = ((x < 0) & (x == floor)) | jnp.isnan(x) | (x == -jnp.inf)
    return jnp.where(bad, jnp.array(np.nan, x.dtype), sign)


def gamma(x):
    """The gamma function, as ``gammasgn(x) * exp(gammaln(x))``."""
    (x,) = _inexact("gamma", x)
    return gammasgn(x) * jnp.exp(gammaln(x))


def loggamma(x):
    """log(Gamma(x)) for real ``x``: ``gammaln`` for ``x > 0``, ``nan`` for ``x <= 0``."""
    (x,) = _inexact("loggamma", x)
    if jnp.iscomplexobj(x):
        raise NotImplementedError("loggamma: complex arguments are not implemented")
    return jnp.where(x > 0, gammaln(jnp.where(x > 0, x, 1.0)), jnp.array(np.nan, x.dtype))


def beta(a, b):
    """The beta function Gamma(a) Gamma(b) / Gamma(a + b), signed for negative arguments."""
    a, b = _inexact("beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * jnp.exp(gammaln(a) + gammaln(b) - gammaln(a + b))


def factorial(n, exact: bool = False):
    """n! as ``gamma(n + 1)`` (0 for ``n < 0``); ``exact=True`` is not implemented (as JAX)."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = _inexact("factorial", n)
    return jnp.where(n < 0, jnp.zeros_like(n), gamma(n + 1))


def comb(N, k, *, repetition: bool = False):
    """The number of combinations of ``N`` things taken ``k`` at a time (real arguments
    through the gamma function; 0 outside ``0 <= k <= N``)."""
    N, k = _inexact("comb", N, k)
    if repetition:
        return comb(N + k - 1, k)
    valid = (k >= 0) & (N >= 0) & (k <= N)
    value = jnp.exp(gammaln(N + 1) - gammaln(k + 1) - gammaln(N - k + 1))
    return jnp.where(valid, value, jnp.zeros_like(value))


def poch(z, m):
    """The Pochhammer symbol (rising factorial) Gamma(z + m) / Gamma(z)."""
    z, m = _inexact("poch", z, m)
    value = gammasgn(z + m) * gammasgn(z) * jnp.exp(gammaln(z + m) - gammaln(z))
    value = jnp.where(_is_nonpos_int(z), jnp.array(np.nan, z.dtype), value)
    return jnp.where(m == 0, jnp.ones_like(value), value)


# Euler-Maclaurin summation of the Hurwitz zeta function: _ZETA_DIRECT terms summed
# directly (so q >= -_ZETA_DIRECT + 16 is shifted to a tail start of at least 16), then the
# integral, the half term and _ZETA_CORRECTIONS Bernoulli corrections.
_ZETA_DIRECT = 48
_ZETA_CORRECTIONS = 10


def _bernoulli_numbers(n: int) -> list[Fraction]:
    """B_0 .. B_n (B_1 = -1/2) from the recurrence sum_{j<=m} C(m+1, j) B_j = 0."""
    numbers = [Fraction(1)]
    for m in range(1, n + 1):
        numbers.append(-sum(math.comb(m + 1, j) * numbers[j] for j in range(m)) / (m + 1))
    return numbers


_B = _bernoulli_numbers(2 * _ZETA_CORRECTIONS + 2)
_ZETA_COEFFS = [float(_B[2 * j] / math.factorial(2 * j)) for j in range(1, _ZETA_CORRECTIONS + 1)]


def _signed_power(base, s):
    """base ** -s for real s, with the sign of an integer power of a negative base."""
    odd = jnp.fmod(s, 2.0) != 0
    sign = jnp.where((base < 0) & odd, -1.0, 1.0).astype(base.dtype)
    return sign * jnp.exp(-s * jnp.log(jnp.abs(base)))


def zeta(x, q=None):
    """The Hurwitz zeta function sum_k (k + q) ** -x (``q`` is required, as in JAX).

    As in JAX: ``nan`` for ``x < 1`` and for ``q <= 0`` with non-integer ``x``; at a pole
    (integer ``q <= 0``) ``inf`` for even integer ``x``, else ``nan``; ``inf`` at ``x == 1``.
    """
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None to "
                                  "compute the Hurwitz Zeta function.")
    x, q = _inexact("zeta", x, q)
    total = jnp.zeros_like(x)
    for k in range(_ZETA_DIRECT):
        total = total + _signed_power(q + k, x)
    a = q + _ZETA_DIRECT
    a_pow = jnp.exp(-x * jnp.log(a))
    total = total + a * a_pow / (x - 1) + 0.5 * a_pow
    rising = x  # x (x + 1) ... (x + 2j - 2)
    term = a_pow / a
    for j, coeff in enumerate(_ZETA_COEFFS, start=1):
        total = total + coeff * rising * term
        rising = rising * (x + 2 * j - 1) * (x + 2 * j)
        term = term / (a * a)
    nan, inf = jnp.array(np.nan, x.dtype), jnp.array(np.inf, x.dtype)
    # JAX 0.10.2's domain rules, in their order.
    total = jnp.where(x < 1, nan, total)
    q_nonpos = q <= 0
    total = jnp.where(q_nonpos & (x != jnp.floor(x)), nan, total)
    # A pole at integer q <= 0: +inf for even integer x, else NaN (zeta(3, 0) is NaN).
    even_x = (jnp.fmod(x, 2) == 0) & (x == jnp.floor(x))
    total = jnp.where(q_nonpos & (q == jnp.floor(q)), jnp.where(even_x, inf, nan), total)
    return jnp.where(x == 1, inf, total)


def polygamma(n, x):
    """The n-th derivative of the digamma function; ``n`` must have an integer dtype."""
    n_arr = jnp.asarray(n)
    if not jnp.issubdtype(n_arr.dtype, jnp.integer):
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype "
                         f"{n_arr.dtype}.")
    (x,) = _inexact("polygamma", x)
    n_f = jnp.broadcast_to(n_arr.astype(x.dtype), jnp.broadcast_shapes(n_arr.shape, x.shape))
    x = jnp.broadcast_to(x, n_f.shape)
    safe_n = jnp.maximum(n_f, 1.0)
    sign = jnp.where(jnp.fmod(safe_n, 2.0) == 0, -1.0, 1.0).astype(x.dtype)
    higher = sign * jnp.exp(gammaln(safe_n + 1)) * zeta(safe_n + 1, x)
    # (at x = 0, -1, ...: zeta's pole rule gives inf for odd n and nan for even n, as JAX)
    value = jnp.where(n_f == 0, digamma(x), higher)
    return jnp.where(n_f < 0, jnp.array(np.nan, x.dtype), value)


def bernoulli(n: int):
    """The Bernoulli numbers B_0 .. B_n (with B_1 = -1/2) as a float array."""
    n = int(n)
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    numbers = _bernoulli_numbers(n)
    dtype = jnp.result_type(float)
    return jnp.asarray(np.array([float(b) for b in numbers]), dtype)


def softmax(x, /, *, axis: int | tuple[int, ...] | None = None):
    """exp(x) / sum(exp(x)) over ``axis`` (all axes by default), shifted by the max."""
    (x,) = _inexact("softmax", x)
    dims = _reduction_dims(x.ndim, axis)
    unnormalized = jnp.exp(x - lax.stop_gradient(jnp.max(x, axis=dims, keepdims=True)))
    return unnormalized / jnp.sum(unnormalized, axis=dims, keepdims=True)


def log_softmax(x, /, *, axis: int | tuple[int, ...] | None = None):
    """x - logsumexp(x) over ``axis`` (all axes by default)."""
    (x,) = _inexact("log_softmax", x)
    dims = _reduction_dims(x.ndim, axis)
    shifted = x - lax.stop_gradient(jnp.max(x, axis=dims, keepdims=True))
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=dims, keepdims=True))


def rel_entr(p, q):
    """p log(p / q): 0 at p == 0 <= q, ``inf`` where p < 0 or q < 0 or (p > 0, q == 0)."""
    p, q = _inexact("rel_entr", p, q)
    both_pos = (p > 0) & (q > 0)
    safe_p = jnp.where(both_pos, p, 1.0)
    safe_q = jnp.where(both_pos, q, 1.0)
    value = jnp.where(both_pos, safe_p * jnp.log(safe_p / safe_q),
                      jnp.array(np.inf, p.dtype))
    return jnp.where((p == 0) & (q >= 0), jnp.zeros_like(value), value)


def kl_div(p, q):
    """p log(p / q) - p + q: ``q`` at p == 0 <= q, ``inf`` outside the domain."""
    p, q = _inexact("kl_div", p, q)
    both_pos = (p > 0) & (q > 0)
    safe_p = jnp.where(both_pos, p, 1.0)
    safe_q = jnp.where(both_pos, q, 1.0)
    value = jnp.where(both_pos, safe_p * jnp.log(safe_p / safe_q) - safe_p + safe_q,
                      jnp.array(np.inf, p.dtype))
    return jnp.where((p == 0) & (q >= 0), q, value)


def boxcox(x, lmbda):
    """The Box-Cox transform (x ** lmbda - 1) / lmbda, log(x) at lmbda == 0."""
    x, lmbda = _inexact("boxcox", x, lmbda)
    return _boxcox_from_log(jnp.log(x), lmbda)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x, accurate for small x."""
    x, lmbda = _inexact("boxcox1p", x, lmbda)
    return _boxcox_from_log(jnp.log1p(x), lmbda)


def _boxcox_from_log(log_x, lmbda):
    # |lmbda| below 1e-19 is the log (as scipy), where lmbda * log(x) would lose it
    is_log = jnp.abs(lmbda) < 1e-19
    safe = jnp.where(is_log, 1.0, lmbda)
    return jnp.where(is_log, log_x, jnp.expm1(safe * log_x) / safe)



lax_special.register_special_function("zeta", zeta)
lax_special.register_special_function("polygamma", polygamma)
