"""Differences, 1-D signals, polynomials and covariance: ediff1d, convolve, correlate,
interp, polyval, trapezoid, vander, cov, corrcoef, unwrap (diff is in reductions.py)."""

from __future__ import annotations

import operator

import numpy as np

from minijax import lax
from minijax.numpy import base as jnp
from minijax.numpy import util
from minijax.numpy.sorting_searching import argsort, searchsorted
from minijax.numpy.util import check_arraylike, to_array

__all__ = ["convolve", "corrcoef", "correlate", "cov", "ediff1d", "interp", "polyval",
           "trapezoid", "unwrap", "vander"]


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences between consecutive elements of the flattened array."""
    check_arraylike("ediff1d", ary)
    flat = jnp.ravel(ary)
    out = flat[1:] - flat[:-1]
    parts = []
    if to_begin is not None:
        parts.append(jnp.ravel(jnp.asarray(to_begin)).astype(out.dtype))
    parts.append(out)
    if to_end is not None:
        parts.append(jnp.ravel(jnp.asarray(to_end)).astype(out.dtype))
    return jnp.concatenate(parts) if len(parts) > 1 else out


# --------------------------------------------------------------------------- convolution


def _full_convolve(a, v, precision, preferred):
    """Full 1-D convolution (length n + m - 1) with lax.conv_general_dilated."""
    n, m = a.shape[0], v.shape[0]
    if a.dtype.kind == "c":
        # conv has no complex kernel here: split into real products.
        ar, ai, vr, vi = jnp.real(a), jnp.imag(a), jnp.real(v), jnp.imag(v)
        re = _full_convolve(ar, vr, precision, None) - _full_convolve(ai, vi, precision, None)
        im = _full_convolve(ar, vi, precision, None) + _full_convolve(ai, vr, precision, None)
        return lax.complex(re, im)
    lhs = lax.reshape(a, (1, 1, n))
    rhs = lax.reshape(lax.rev(v, (0,)), (1, 1, m))
    out = lax.conv_general_dilated(lhs, rhs, (1,), [(m - 1, m - 1)], precision=precision,
                                   preferred_element_type=preferred)
    return lax.reshape(out, (n + m - 1,))


def _mode_slice(full, n, m, mode):
    length = n + m - 1
    if mode == "full":
        return full
    if mode == "same":
        size = max(n, m)
        start = (length - size) // 2
        return lax.slice_in_dim(full, start, start + size)
    if mode == "valid":
        size = max(n, m) - min(n, m) + 1
        start = min(n, m) - 1
        return lax.slice_in_dim(full, start, start + size)
    raise ValueError(f"mode must be one of ['full', 'same', 'valid'], got {mode!r}")


def _conv_args(name, a, v, preferred_element_type):
    check_arraylike(name, a, v)
    # Without preferred_element_type, integer and boolean inputs convolve in the default
    # float type (as JAX, following NumPy's convolution default); with it, in their own.
    if preferred_element_type is None:
        a, v = util.promote_dtypes_inexact(a, v)
    else:
        a, v = util.promote_dtypes(a, v)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{name}() only supports 1-dimensional inputs, got shapes "
                         f"{a.shape} and {v.shape}")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {a.shape} and {v.shape}")
    if a.dtype == np.bool_:
        a, v = a.astype(np.int32), v.astype(np.int32)
    return a, v


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """Discrete linear convolution of two 1-D arrays (modes 'full', 'same', 'valid')."""
    a, v = _conv_args("convolve", a, v, preferred_element_type)
    n, m = a.shape[0], v.shape[0]
    if m > n:
        a, v = v, a
    full = _full_convolve(a, v, precision, preferred_element_type)
    return _mode_slice(full, n, m, mode)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """Cross-correlation of two 1-D arrays: c[k] = sum_n a[n + k] * conj(v[n])."""
    a, v = _conv_args("correlate", a, v, preferred_element_type)
    n, m = a.shape[0], v.shape[0]
    vc = jnp.conj(v) if v.dtype.kind == "c" else v
    swap = m > n
    if swap:
        a, vc = vc, a
    full = _full_convolve(a, lax.rev(vc, (0,)), precision, preferred_element_type)
    out = _mode_slice(full, max(n, m), min(n, m), mode)
    return lax.rev(out, (0,)) if swap else out


# --------------------------------------------------------------------------- interpolation


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at x (xp increasing)."""
    check_arraylike("interp", x, xp, fp)
    x, xp = util.promote_dtypes_inexact(x, xp)
    (fp,) = util.promote_dtypes_inexact(fp)
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("interp: xp and fp must be one-dimensional")
    if xp.shape != fp.shape:
        raise ValueError(f"interp: xp and fp must have the same length, got {xp.shape} and "
                         f"{fp.shape}")
    if xp.shape[0] == 0:
        raise ValueError("interp: xp and fp must not be empty")
    if period is not None:
        if left is not None or right is not None:
            raise ValueError("interp: left/right are not used with period")
        period = jnp.abs(jnp.asarray(period, x.dtype))
        x = x % period
        xp = xp % period
        order = argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = jnp.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = jnp.concatenate([fp[-1:], fp, fp[:1]])
    n = xp.shape[0]
    if n == 1:
        out = jnp.broadcast_to(fp[0], x.shape)
    else:
        i = jnp.clip(searchsorted(xp, x, side="right"), 1, n - 1)
        x0, x1 = xp[i - 1], xp[i]
        f0, f1 = fp[i - 1], fp[i]
        dx = x1 - x0
        safe = jnp.where(dx == 0, 1, dx)
        out = jnp.where(dx == 0, f1, f0 + (x - x0) * ((f1 - f0) / safe).astype(fp.dtype))
    if period is None:
        lo = fp[0] if left is None else jnp.asarray(left, fp.dtype)
        hi = fp[-1] if right is None else jnp.asarray(right, fp.dtype)
        out = jnp.where(x < xp[0], lo, out)
        out = jnp.where(x > xp[-1], hi, out)
    return out


def polyval(p, x, *, unroll=16):
    """Evaluate the polynomial with coefficients p (highest degree first) at x (Horner).

    As in NumPy and JAX, p may have more dimensions: p[k] broadcasts against x."""
    check_arraylike("polyval", p, x)
    p, x = util.promote_dtypes(p, x)
    if p.ndim < 1:
        raise ValueError(f"polyval: p must be at least 1-D, got shape {p.shape}")
    y = jnp.zeros_like(x)
    for k in range(p.shape[0]):
        y = y * x + p[k]
    return y


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of y along `axis` by the trapezoidal rule (samples at x, or spacing dx)."""
    check_arraylike("trapezoid", y)
    (y,) = util.promote_dtypes_inexact(y)
    axis = util.canonicalize_axis(axis, y.ndim)
    m = y.shape[axis]
    hi = lax.slice_in_dim(y, min(1, m), m, axis=axis)
    lo = lax.slice_in_dim(y, 0, max(m - 1, 0), axis=axis)
    if x is None:
        return jnp.sum((hi + lo) * (jnp.asarray(dx, y.dtype) / 2), axis=axis)
    x = jnp.asarray(x)
    d = jnp.diff(x) if x.ndim == 1 else jnp.diff(x, axis=axis)
    if d.ndim == 1:
        shape = [1] * y.ndim
        shape[axis] = d.shape[0]
        d = d.reshape(shape)
    return jnp.sum((hi + lo) * d / 2, axis=axis)


def vander(x, N=None, increasing=False):
    """Vandermonde matrix: columns are powers of x (decreasing unless `increasing`)."""
    check_arraylike("vander", x)
    x = to_array(x)
    if x.ndim != 1:
        raise ValueError(f"vander: x must be a one-dimensional array, got shape {x.shape}")
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise ValueError("N must be nonnegative")
    if n == 0:
        return jnp.zeros((x.shape[0], 0), x.dtype)
    cols = jnp.concatenate([jnp.ones((x.shape[0], 1), x.dtype),
                            jnp.broadcast_to(x[:, None], (x.shape[0], n - 1))], axis=1)
    powers = jnp.cumprod(cols, axis=1)
    return powers if increasing else powers[:, ::-1]


# --------------------------------------------------------------------------- statistics


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """Covariance matrix of the variables in the rows (or columns if not rowvar) of m."""
    check_arraylike("cov", m)
    m = jnp.atleast_2d(jnp.asarray(m))
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        (m, y) = util.promote_dtypes_inexact(m, y)
        y = jnp.atleast_2d(y)
        if not rowvar and y.shape[0] != 1:
            y = y.T
        m = jnp.concatenate([m if rowvar or m.shape[0] == 1 else m.T, y], axis=0)
        rowvar = True
    (x,) = util.promote_dtypes_inexact(m)
    if not rowvar and x.shape[0] != 1:
        x = x.T
    if x.shape[0] == 0:
        return jnp.zeros((0, 0), x.dtype)
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = jnp.asarray(fweights).astype(x.dtype)
    if aweights is not None:
        aw = jnp.asarray(aweights).astype(x.dtype)
        w = aw if w is None else w * aw
    if w is None:
        avg = jnp.mean(x, axis=1)
        fact = n - ddof
        xc = x - avg[:, None]
        c = jnp.matmul(xc, jnp.conj(xc).T if x.dtype.kind == "c" else xc.T)
        return jnp.squeeze(c / fact)
    w_sum = jnp.sum(w)
    avg = jnp.sum(x * w, axis=1) / w_sum
    if aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * jnp.sum(w * aw) / w_sum
    xc = x - avg[:, None]
    xw = xc * w
    c = jnp.matmul(xw, jnp.conj(xc).T if x.dtype.kind == "c" else xc.T)
    return jnp.squeeze(c / fact)


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """Pearson correlation coefficients (cov normalized by the standard deviations)."""
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return c / c
    d = jnp.real(jnp.diagonal(c)) if c.dtype.kind == "c" else jnp.diagonal(c)
    std = jnp.sqrt(d)
    c = c / std[:, None] / std[None, :]
    if c.dtype.kind == "c":
        return lax.complex(jnp.clip(jnp.real(c), -1, 1), jnp.clip(jnp.imag(c), -1, 1))
    return jnp.clip(c, -1, 1)


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """Unwrap phase angles: remove jumps larger than discont (default period/2)."""
    check_arraylike("unwrap", p)
    (p,) = util.promote_dtypes_inexact(p)
    axis = util.canonicalize_axis(axis, p.ndim)
    period = jnp.asarray(period, p.dtype)
    discont = period / 2 if discont is None else jnp.asarray(discont, p.dtype)
    dd = jnp.diff(p, axis=axis)
    half = period / 2
    ddmod = jnp.mod(dd + half, period) - half
    ddmod = jnp.where((ddmod == -half) & (dd > 0), half, ddmod)
    correction = jnp.where(jnp.abs(dd) < discont, 0, ddmod - dd)
    cum = jnp.cumsum(correction, axis=axis)
    m = p.shape[axis]
    first = lax.slice_in_dim(p, 0, min(m, 1), axis=axis)
    rest = lax.slice_in_dim(p, 1, m, axis=axis) + cum
    return jnp.concatenate([first, rest], axis=axis)
