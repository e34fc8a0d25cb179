"""The shared helpers of minijax.scipy.special (dtype promotion, reduction axes) and its
elementary functions: logsumexp, error functions, gammaln/digamma, xlogy/xlog1py, entr,
expit/logit and the normal distribution's ndtr, ndtri and log_ndtr, in numerically stable
forms with JAX's gradient conventions. The other modules of the package import these."""

from __future__ import annotations

import math

import numpy as np

from minijax import dtypes, lax
from minijax import numpy as jnp
from minijax.custom_derivatives import custom_jvp

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "expit", "gammaln", "log_ndtr",
           "logit", "logsumexp", "ndtr", "ndtri", "xlog1py", "xlogy"]


def _inexact(name, *args):
    """Arrays promoted to a common inexact dtype (JAX's promote_args_inexact)."""
    arrs = [jnp.asarray(a) for a in args]
    dtype = jnp.result_type(*arrs)
    if not jnp.issubdtype(dtype, jnp.inexact):
        if not jnp.issubdtype(dtype, jnp.integer) and dtype != np.bool_:
            raise TypeError(f"{name}: unsupported dtype {dtype}")
        dtype = dtypes.to_inexact(dtype)  # as JAX: int32 -> float32, int64 -> float64
    # Python scalars keep their weak type through jnp's promotion
    return [a.astype(dtype) if a.dtype != dtype else a for a in
            jnp.broadcast_arrays(*arrs)] if len(arrs) > 1 else [arrs[0].astype(dtype)]


def _is_complex(x) -> bool:
    return np.dtype(x.dtype).kind == "c"


def _reduction_dims(ndim, axis):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
        out.append(a % max(ndim, 1))
    return tuple(sorted(set(out)))


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
    """log(sum(b * exp(a))) over `axis`, shifted by the (finite) max for stability; with
    `return_sign`, returns (log|sum|, sign). A negative sum without return_sign is nan."""
    if b is not None:
        a, b = _inexact("logsumexp", a, b)
        a = jnp.where(b != 0, a, -jnp.inf)
    else:
        (a,) = _inexact("logsumexp", a)
    dims = _reduction_dims(a.ndim, axis)
    amax = jnp.max(a.real if _is_complex(a) else a, axis=dims, keepdims=True,
                   where=where, initial=-jnp.inf)
    amax = lax.stop_gradient(jnp.where(jnp.isfinite(amax), amax, jnp.zeros_like(amax)))
    exp_a = jnp.exp(a - amax.astype(a.dtype))
    if b is not None:
        exp_a = exp_a * b
    sumexp = jnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
    sign = jnp.sign(sumexp)
    if return_sign or not _is_complex(sumexp):
        sumexp = jnp.abs(sumexp)
    amax_out = amax if keepdims else jnp.squeeze(amax, dims)
    out = jnp.log(sumexp) + amax_out.astype(sumexp.dtype)
    if return_sign:
        return out, sign
    if b is not None and not _is_complex(out):
        out = jnp.where(sign < 0, jnp.array(np.nan, out.dtype), out)
    return out


def erf(x):
    """The error function."""
    (x,) = _inexact("erf", x)
    return lax.erf(x)


def erfc(x):
    """The complementary error function 1 - erf(x), accurate for large x."""
    (x,) = _inexact("erfc", x)
    return lax.erfc(x)


def erfinv(x):
    """The inverse error function on (-1, 1)."""
    (x,) = _inexact("erfinv", x)
    return lax.erf_inv(x)


def gammaln(x):
    """log|Gamma(x)|."""
    (x,) = _inexact("gammaln", x)
    return lax.lgamma(x)


def digamma(x):
    """The logarithmic derivative of Gamma."""
    (x,) = _inexact("digamma", x)
    return lax.digamma(x)


@custom_jvp
def xlogy(x, y):
    """x * log(y), defined as 0 where x == 0 (even for y == 0)."""
    x, y = _inexact("xlogy", x, y)
    # as JAX (and scipy): a NaN y propagates even where x == 0
    return jnp.where((x != 0) | jnp.isnan(y), x * jnp.log(y), jnp.zeros_like(x))


@xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    out = xlogy(x, y)
    return out, (x_dot * jnp.log(y) + y_dot * x / y).astype(out.dtype)


@custom_jvp
def xlog1py(x, y):
    """x * log1p(y), defined as 0 where x == 0."""
    x, y = _inexact("xlog1py", x, y)
    # as JAX (and scipy): a NaN y propagates even where x == 0
    return jnp.where((x != 0) | jnp.isnan(y), x * jnp.log1p(y), jnp.zeros_like(x))


@xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    out = xlog1py(x, y)
    return out, (x_dot * jnp.log1p(y) + y_dot * x / (1 + y)).astype(out.dtype)


def entr(x):
    """Elementwise entropy -x log x (0 at 0, -inf for x < 0)."""
    (x,) = _inexact("entr", x)
    return jnp.where(x < 0, jnp.array(-np.inf, x.dtype), -_xlogx(x))


@custom_jvp
def _xlogx(x):
    """x log x with JAX's derivative log(x) + 1 (so entr'(0) is +inf, as JAX)."""
    return xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _xlogx(x), t * (jnp.log(x) + 1)


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    (x,) = _inexact("expit", x)
    return lax.logistic(x)


def logit(x):
    """The inverse of expit: log(x / (1 - x)); derivative 1 / (x (1 - x)) (inf at 0, 1)."""
    (x,) = _inexact("logit", x)
    return _logit(x)


@custom_jvp
def _logit(x):
    return jnp.log(x / (1 - x))


@_logit.defjvp
def _logit_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _logit(x), t / (x * (1 - x))


def ndtr(x):
    """The standard normal CDF, via erf near 0 and erfc in the tails."""
    (x,) = _inexact("ndtr", x)
    half_sqrt_2 = np.array(0.5 * np.sqrt(2.0), x.dtype)
    w = x * half_sqrt_2
    z = jnp.abs(w)
    y = jnp.where(z < half_sqrt_2, 1 + lax.erf(w),
                  jnp.where(w > 0, 2 - lax.erfc(z), lax.erfc(z)))
    return 0.5 * y


def _log_ndtr_lower(x, series_order=3):
    """Asymptotic series of log(ndtr(x)) for very negative x."""
    x2 = x * x
    log_scale = -(x2 / 2) - jnp.log(-x) - 0.5 * math.log(2 * math.pi)
    even = odd = jnp.zeros_like(x)
    x2n = x2
    for n in range(1, series_order + 1):
        term = float(np.prod(np.arange(2 * n - 1, 0, -2))) / x2n
        if n % 2:
            odd = odd + term
        else:
            even = even + term
        x2n = x2n * x2
    return log_scale + jnp.log(1 + even - odd)


def log_ndtr(x, series_order: int = 3):
    """log of the standard normal CDF, accurate far into both tails."""
    (x,) = _inexact("log_ndtr", x)
    if x.dtype == np.float64:
        lower, upper = -20.0, 8.0
    else:
        lower, upper = -10.0, 5.0
    lower_c = np.array(lower, x.dtype)
    # For x > 0, log1p(-ndtr(-x)) keeps the relative accuracy that log(ndtr(x)) loses when
    # ndtr(x) rounds near 1 (JAX uses -ndtr(-x) only beyond `upper`).
    upper_tail = jnp.where(x > upper, -ndtr(-x), jnp.log1p(-ndtr(-jnp.maximum(x, 0))))
    return jnp.where(x > 0, upper_tail,
                     jnp.where(x > lower, jnp.log(ndtr(jnp.maximum(x, lower_c))),
                               _log_ndtr_lower(jnp.minimum(x, lower_c), series_order)))


@custom_jvp
def ndtri(p):
    """The inverse of ndtr (the standard normal quantile function); nan outside [0, 1]."""
    (p,) = _inexact("ndtri", p)
    q = jnp.minimum(p, 1 - p)
    safe_q = jnp.clip(q, dtypes.finfo(p.dtype).tiny, 0.5)
    # Start from erfinv in the body and from the tail asymptote below 1e-3, then Newton's
    # method on log(ndtr(x)) = log(q), whose step is (log ndtr(x) - log q) ndtr(x) / pdf(x).
    body = np.sqrt(2.0).astype(p.dtype) * lax.erf_inv(2 * safe_q - 1)
    t = -2 * jnp.log(safe_q)
    tail = -jnp.sqrt(t - jnp.log(t) - math.log(2 * math.pi))
    x = jnp.where(safe_q > 1e-3, body, tail)
    log_q = jnp.log(safe_q)
    for _ in range(4):
        log_pdf = -0.5 * x * x - 0.5 * math.log(2 * math.pi)
        ln = log_ndtr(x)
        x = x - (ln - log_q) * jnp.exp(ln - log_pdf)
    x = jnp.where(q == 0.5, jnp.zeros_like(x), x)
    x = jnp.where(p > 0.5, -x, x)
    x = jnp.where(p == 0, -jnp.inf, jnp.where(p == 1, jnp.inf, x))
    return jnp.where((p < 0) | (p > 1) | jnp.isnan(p), jnp.nan, x)


@ndtri.defjvp
def _ndtri_jvp(primals, tangents):
    (p,), (p_dot,) = primals, tangents
    x = ndtri(p)
    # d ndtri / dp = 1 / pdf(x) = sqrt(2 pi) exp(x^2 / 2); 0 at p = 0 and p = 1 (where
    # x = -+inf) as in JAX, whose ndtri selects the infinities as constants there.
    slope = math.sqrt(2 * math.pi) * jnp.exp(0.5 * x * x)
    slope = jnp.where(jnp.isinf(x), jnp.zeros_like(slope), slope)
    return x, p_dot * slope
