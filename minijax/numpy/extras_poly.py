"""Polynomials (polyadd, polysub, polymul, polydiv, polyder, polyint, poly, polyfit),
numerical gradient, the Bessel function i0 and the window functions (bartlett, blackman,
hamming, hanning, kaiser), in lax terms with jax.numpy's signatures."""

from __future__ import annotations

import math

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.errors import ConcretizationTypeError
from minijax.numpy import base as jnp
from minijax.numpy import linalg, util
from minijax.numpy.signal_stats import convolve, vander
from minijax.numpy.util import check_arraylike, to_array

__all__ = ["bartlett", "blackman", "gradient", "hamming", "hanning", "i0", "kaiser", "poly",
           "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul", "polysub",
           "roots"]


# --------------------------------------------------------------------------- polynomials


def _poly_1d(name, *ps):
    check_arraylike(name, *ps)
    out = []
    for p in ps:
        p = jnp.atleast_1d(p)
        if p.ndim != 1:
            raise ValueError(f"{name}: coefficient arrays must be one-dimensional, got shape "
                             f"{p.shape}")
        out.append(p)
    return out


def polyadd(a1, a2):
    """Sum of two polynomials (coefficients highest power first)."""
    a1, a2 = util.promote_dtypes(*_poly_1d("polyadd", a1, a2))
    if a2.shape[0] > a1.shape[0]:
        a1, a2 = a2, a1
    return a1.at[a1.shape[0] - a2.shape[0]:].add(a2)


def polysub(a1, a2):
    """Difference of two polynomials (coefficients highest power first)."""
    a1, a2 = util.promote_dtypes(*_poly_1d("polysub", a1, a2))
    return polyadd(a1, -a2)


def _trim_front(p):
    value = util.concrete_or_none(p)
    if value is None:
        raise ConcretizationTypeError("trim_leading_zeros=True needs concrete coefficients "
                                      "(not under jit)")
    nz = np.flatnonzero(value)
    return p[nz[0]:] if nz.size else p[:0]


def polymul(a1, a2, *, trim_leading_zeros=False):
    """Product of two polynomials (a full convolution of the coefficients; the result is
    inexact, as JAX's)."""
    a1, a2 = util.promote_dtypes_inexact(*_poly_1d("polymul", a1, a2))
    if trim_leading_zeros and (a1.shape[0] > 1 or a2.shape[0] > 1):
        a1, a2 = _trim_front(a1), _trim_front(a2)
    if a1.shape[0] == 0:
        a1 = jnp.zeros((1,), a1.dtype)
    if a2.shape[0] == 0:
        a2 = jnp.zeros((1,), a2.dtype)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    """Quotient and remainder of polynomial division u / v (remainder as long as u unless
    trim_leading_zeros=True, which needs concrete values)."""
    u, v = util.promote_dtypes_inexact(*_poly_1d("polydiv", u, v))
    m, n = u.shape[0] - 1, v.shape[0] - 1
    if n < 0:
        raise ValueError("polydiv: the divisor must have at least one coefficient")
    scale = 1.0 / v[0]
    q = jnp.zeros((max(m - n + 1, 1),), u.dtype)
    r = u
    for k in range(m - n + 1):
        d = scale * r[k]
        q = q.at[k].set(d)
        r = r.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        value = util.concrete_or_none(r)
        if value is None:
            raise ConcretizationTypeError("trim_leading_zeros=True needs concrete "
                                          "coefficients")
        tol = math.sqrt(dtypes.finfo(u.dtype).eps)
        start = 0
        while start < value.shape[0] - 1 and abs(value[start]) <= tol:
            start += 1
        r = r[start:]
    return q, r


def polyder(p, m=1):
    """The m-th derivative of a polynomial (inexact, as JAX's)."""
    (p,) = util.promote_dtypes_inexact(*_poly_1d("polyder", p))
    m = util.concrete_int(m, "polyder: m")
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if m == 0:
        return p
    n = p.shape[0]
    powers = np.arange(n - 1, m - 1, -1)
    coeff = np.ones(powers.shape, np.int64)
    for j in range(m):
        coeff *= powers - j
    return p[: powers.shape[0]] * jnp.asarray(coeff.astype(p.dtype))


def polyint(p, m=1, k=None):
    """The m-th antiderivative of a polynomial, with integration constants k (scalar or m
    values, the first one for the innermost integral)."""
    (p,) = _poly_1d("polyint", p)
    m = util.concrete_int(m, "polyint: m")
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    if m == 0:
        return p
    k = jnp.zeros((), p.dtype) if k is None else to_array(k)
    k = jnp.atleast_1d(k)
    if k.shape == (1,):
        k = jnp.broadcast_to(k, (m,))
    if k.shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    (p, k) = util.promote_dtypes_inexact(p, k)
    for i in range(m):
        n = p.shape[0]
        p = jnp.concatenate([p / jnp.arange(n, 0, -1, dtype=p.dtype), k[i:i + 1]])
    return p


def poly(seq_of_zeros):
    """Coefficients of the monic polynomial with the given roots (1-D input), or the
    characteristic polynomial of a square matrix (complex, from its eigenvalues, as JAX)."""
    check_arraylike("poly", seq_of_zeros)
    a = jnp.atleast_1d(seq_of_zeros)
    matrix = a.ndim == 2 and a.shape[0] == a.shape[1] and a.shape[0] > 0
    if matrix:
        a = linalg.eigvals(a)
    if a.ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    (a,) = util.promote_dtypes_inexact(a)
    coeffs = jnp.ones((1,), a.dtype)
    for i in range(a.shape[0]):
        coeffs = convolve(coeffs, jnp.stack([jnp.ones((), a.dtype), -a[i]]), mode="full")
    if dtypes.is_complex(a.dtype) and not matrix:
        value = util.concrete_or_none(a)
        if value is not None:
            pos = np.sort_complex(value[value.imag > 0])
            neg = np.conjugate(np.sort_complex(value[value.imag < 0]))
            if len(pos) == len(neg) and np.all(pos == neg):
                coeffs = jnp.real(coeffs)
    return coeffs


def roots(p, *, strip_zeros: bool = True):
    """The complex roots of the polynomial with coefficients p (highest power first).

    JAX takes the eigenvalues of the companion matrix; minijax, which has no general
    eigensolver, finds the same roots with the Aberth-Ehrlich simultaneous iteration, so
    the roots agree to rounding but their order may differ (NumPy's order differs too).
    With strip_zeros (the default) leading zeros are removed, which needs concrete p;
    with strip_zeros=False (usable under jit) each leading zero gives a nan root instead.
    """
    check_arraylike("roots", p)
    (p,) = util.promote_dtypes_inexact(p)
    p = jnp.atleast_1d(p)
    if p.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    wide = p.dtype in (np.float64, np.complex128)
    cdt = np.dtype(np.complex128 if wide else np.complex64)
    if p.shape[0] < 2:
        return jnp.zeros((0,), cdt)
    if not strip_zeros:
        is_zero = p == 0
        leading = jnp.where(jnp.all(is_zero), p.shape[0], jnp.argmin(is_zero))
        return _aberth(p.astype(cdt), leading)
    value = util.concrete_or_none(p)
    if value is None:
        raise ConcretizationTypeError(
            "jnp.roots with strip_zeros=True needs concrete coefficients (the number of "
            "roots depends on the leading zeros). The error occurred in the jnp.roots() "
            "function. To use this within a JIT-compiled context, pass strip_zeros=False, "
            "but be aware that leading zeros will result in some returned roots being set "
            "to NaN.")
    nonzero = np.flatnonzero(value)
    if not nonzero.size:
        return jnp.zeros((0,), cdt)
    # Trailing zeros are exact zero roots (as NumPy): only the rest needs iterating.
    first, last = int(nonzero[0]), int(nonzero[-1])
    found = _aberth(p[first:last + 1].astype(cdt), 0)
    return jnp.concatenate([found, jnp.zeros((p.shape[0] - 1 - last,), cdt)])


def _aberth(c, leading):
    """Roots of the polynomial c (complex, highest power first) whose first `leading`
    coefficients (possibly traced) are zero: len(c) - 1 slots, the last `leading` nan."""
    n = c.shape[0] - 1
    if n == 0:
        return jnp.zeros((0,), c.dtype)
    rdt = jnp.real(c).dtype
    m = n - leading                        # the number of actual roots
    active = jnp.arange(n) < m
    lead = jnp.take(c, jnp.clip(leading, 0, n))
    # Fujiwara's bound on the root moduli: 2 max |c_(k+j) / c_k| ** (1/j).
    j = jnp.arange(n + 1) - leading
    ratio = jnp.abs(c / jnp.where(lead == 0, 1, lead))
    terms = jnp.where(j >= 1, ratio ** (1 / jnp.maximum(j, 1).astype(rdt)), 0)
    radius = 2 * jnp.max(terms)
    radius = jnp.where((radius > 0) & jnp.isfinite(radius), radius, 1)
    angle = 2 * np.pi * jnp.arange(n, dtype=rdt) / jnp.maximum(m, 1).astype(rdt) + 0.4
    z = (radius * (jnp.cos(angle) + 1j * jnp.sin(angle))).astype(c.dtype)
    eps = float(dtypes.finfo(rdt).eps)
    pair_ok = (active[:, None] & active[None, :]) & ~jnp.eye(n, dtype=bool)

    def horner(z):
        val, der = jnp.zeros_like(z), jnp.zeros_like(z)
        for k in range(n + 1):
            der = der * z + val
            val = val * z + c[k]
        return val, der

    def body(state):
        it, z, _ = state
        val, der = horner(z)
        w = jnp.where(der == 0, 0, val / jnp.where(der == 0, 1, der))
        diff = z[:, None] - z[None, :]
        inv = jnp.where(pair_ok, 1 / jnp.where(pair_ok, diff, 1), 0)
        step = w / (1 - w * jnp.sum(inv, axis=1))
        step = jnp.where(active & jnp.isfinite(step), step, 0)
        moving = jnp.any(jnp.abs(step) > 4 * eps * jnp.abs(z))
        return it + 1, z - step, moving

    def cond(state):
        it, _, moving = state
        return moving & (it < 50 + 10 * n)

    _, z, _ = lax.while_loop(cond, body, (jnp.int32(0), z, jnp.asarray(True)))
    return jnp.where(active, z, jnp.asarray(complex(np.nan, np.nan), c.dtype))


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit of degree `deg` (coefficients highest power first);
    full=True adds (residuals, rank, singular values, rcond); cov=True adds the
    coefficients' covariance."""
    check_arraylike("polyfit", x, y)
    deg = util.concrete_int(deg, "polyfit: deg")
    order = deg + 1
    x, y = util.promote_dtypes_inexact(x, y)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = x.shape[0] * float(dtypes.finfo(x.dtype).eps)
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        check_arraylike("polyfit", w)
        (w,) = util.promote_dtypes_inexact(w)
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w if rhs.ndim == 1 else w[:, None])
    scale = jnp.sqrt(jnp.sum(lhs * lhs, axis=0))
    scale = jnp.where(scale == 0, jnp.ones_like(scale), scale)
    lhs = lhs / scale
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, jnp.asarray(rcond)
    if cov:
        vbase = linalg.inv(lhs.T @ lhs) / jnp.outer(scale, scale)
        if cov == "unscaled":
            fac = 1
        else:
            if x.shape[0] <= order:
                raise ValueError("the number of data points must exceed order to scale the "
                                 "covariance matrix")
            fac = resids / (x.shape[0] - order)
        if y.ndim == 1:
            return c, vbase * fac
        return c, vbase[:, :, None] * fac
    return c


# --------------------------------------------------------------------------- gradient


def gradient(f, *varargs, axis=None, edge_order=None):
    """Second-order central differences inside and one-sided first differences at the
    edges, along each axis (spacings: scalars or coordinate arrays)."""
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not "
                                  "supported.")
    check_arraylike("gradient", f)
    f = to_array(f)
    (f,) = util.promote_dtypes_inexact(f)
    axes = util.canonicalize_axes(axis, f.ndim) if axis is not None else tuple(range(f.ndim))
    if axis is not None and not isinstance(axis, (tuple, list)):
        axes = (util.canonicalize_axis(axis, f.ndim),)
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    outs = []
    for ax, h in zip(axes, spacings, strict=True):
        n = f.shape[ax]
        if n < 2:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")

        def part(start, stop, ax=ax):
            return lax.slice_in_dim(f, start, stop, axis=ax)

        if np.ndim(h) == 0:
            h = util.convert(h, f.dtype)
            inner = (part(2, n) - part(0, n - 2)) / (2 * h)
            first = (part(1, 2) - part(0, 1)) / h
            last = (part(n - 1, n) - part(n - 2, n - 1)) / h
        else:
            h = util.convert(h, f.dtype)
            if h.ndim != 1:
                raise ValueError("distances must be either scalars or 1d")
            if h.shape[0] != n:
                raise ValueError("when 1d, distances must match the length of the "
                                 "corresponding dimension")
            dx = jnp.diff(h)
            shape = [1] * f.ndim
            shape[ax] = n - 2
            dx1 = jnp.reshape(dx[:-1], shape)
            dx2 = jnp.reshape(dx[1:], shape)
            a = -dx2 / (dx1 * (dx1 + dx2))
            b = (dx2 - dx1) / (dx1 * dx2)
            c = dx1 / (dx2 * (dx1 + dx2))
            inner = a * part(0, n - 2) + b * part(1, n - 1) + c * part(2, n)
            first = (part(1, 2) - part(0, 1)) / dx[0]
            last = (part(n - 1, n) - part(n - 2, n - 1)) / dx[-1]
        outs.append(jnp.concatenate([first, inner, last], axis=ax))
    return outs[0] if len(outs) == 1 else outs


# --------------------------------------------------------------------------- i0


_SERIES_TERMS = 60
_ASYMPTOTIC_TERMS = 24
_SWITCH = 20.0


def _i0_series(x):
    """sum_k (x^2/4)^k / (k!)^2 (accurate for |x| <= _SWITCH), term by term: t_k =
    t_(k-1) y / k^2. Unlike Horner's rule on coefficients that underflow, the reverse-mode
    cotangents stay bounded (Horner's gave a NaN gradient from 5 up)."""
    y = x * x * 0.25
    term = jnp.ones_like(x)
    acc = term
    for k in range(1, _SERIES_TERMS):
        term = term * (y * (1.0 / (k * k)))
        acc = acc + term
    return acc


def _i0_asymptotic(x):
    """e^x / sqrt(2 pi x) * sum_k ((2k-1)!!)^2 / (k! (8x)^k) for large x > 0."""
    z = 1.0 / (8.0 * x)
    coeffs = [1.0]
    for k in range(1, _ASYMPTOTIC_TERMS):
        coeffs.append(coeffs[-1] * (2 * k - 1) ** 2 / k)
    acc = jnp.full_like(x, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = acc * z + c
    half = jnp.exp(0.5 * x)
    return half * (acc / jnp.sqrt(2 * np.pi * x)) * half


def i0(x):
    """Modified Bessel function of the first kind, order 0 (real inputs)."""
    check_arraylike("i0", x)
    (x,) = util.promote_dtypes_inexact(x)
    if not np.issubdtype(get_aval(x).dtype, np.floating):
        raise ValueError(f"Unsupported input type to jax.numpy.i0: {get_aval(x).dtype}")
    ax = jnp.abs(x)
    large = ax > _SWITCH
    small_x = jnp.where(large, jnp.zeros_like(ax), ax)
    large_x = jnp.where(large, ax, jnp.full_like(ax, 2 * _SWITCH))
    return jnp.where(large, _i0_asymptotic(large_x), _i0_series(small_x))


# --------------------------------------------------------------------------- windows


def _window_n(M, name):
    M = util.concrete_int(M, f"M argument of jnp.{name}")
    dtype = dtypes.canonicalize_dtype(np.float64)
    return M, dtype


def _cosine_window(name, M, terms):
    M, dtype = _window_n(M, name)
    if M <= 1:
        return jnp.ones((max(M, 0),), dtype)
    n = jnp.arange(M, dtype=dtype)
    out = jnp.zeros((M,), dtype)
    for k, a in enumerate(terms):
        out = out + a * jnp.cos(2 * np.pi * k * n / (M - 1))
    return out


def hamming(M):
    """Hamming window of length M: 0.54 - 0.46 cos(2 pi n / (M - 1))."""
    return _cosine_window("hamming", M, (0.54, -0.46))


def hanning(M):
    """Hann window of length M: 0.5 - 0.5 cos(2 pi n / (M - 1))."""
    return _cosine_window("hanning", M, (0.5, -0.5))


def blackman(M):
    """Blackman window of length M."""
    return _cosine_window("blackman", M, (0.42, -0.5, 0.08))


def bartlett(M):
    """Triangular (Bartlett) window of length M."""
    M, dtype = _window_n(M, "bartlett")
    if M <= 1:
        return jnp.ones((max(M, 0),), dtype)
    n = jnp.arange(1 - M, M, 2, dtype=dtype)
    return 1 - jnp.abs(n) / (M - 1)


def kaiser(M, beta):
    """Kaiser window of length M with shape parameter beta (differentiable in beta)."""
    M, dtype = _window_n(M, "kaiser")
    if M <= 1:
        return jnp.ones((max(M, 0),), dtype)
    beta = util.convert(beta, dtype)
    alpha = (M - 1) / 2.0
    n = jnp.arange(M, dtype=dtype)
    r = (n - alpha) / alpha
    return i0(beta * jnp.sqrt(jnp.maximum(1 - r * r, 0))) / i0(beta)
