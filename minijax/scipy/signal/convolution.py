"""Convolution and correlation of `jax.scipy.signal`: ``convolve``, ``correlate``,
``convolve2d``, ``correlate2d``, ``fftconvolve`` (modes ``full``, ``same``, ``valid``) and
``detrend``.

Direct convolutions lower to one ``lax.conv_general_dilated`` over the whole arrays (the
kernel flipped); ``method="fft"`` and ``fftconvolve`` multiply FFTs. Complex inputs take the
FFT path.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from minijax import lax
from minijax import numpy as jnp

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "detrend", "fftconvolve"]

_MODES = ("full", "same", "valid")


def _promote(in1, in2):
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    dtype = jnp.result_type(in1, in2)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.result_type(dtype, 1.0)
    return in1.astype(dtype), in2.astype(dtype)


def _check(in1, in2, mode, what):
    if mode not in _MODES:
        raise ValueError(f"{what}: mode must be one of {list(_MODES)}, got {mode!r}")
    if in1.ndim != in2.ndim:
        raise ValueError(f"{what}: in1 and in2 must have the same number of dimensions, got "
                         f"{in1.ndim} and {in2.ndim}")
    if in1.size == 0 or in2.size == 0:
        raise ValueError(f"{what}: zero-size arrays not supported in convolutions, got shapes "
                         f"{in1.shape} and {in2.shape}.")


def _crop(full, shape1, shape2, mode, axes=None):
    """The ``same``/``valid`` part of a full convolution along ``axes``."""
    if mode == "full":
        return full
    axes = range(full.ndim) if axes is None else axes
    index = [slice(None)] * full.ndim
    for ax in axes:
        n1, n2 = shape1[ax], shape2[ax]
        if mode == "same":
            start = (full.shape[ax] - n1) // 2
            index[ax] = slice(start, start + n1)
        else:
            length = abs(n1 - n2) + 1
            start = min(n1, n2) - 1
            index[ax] = slice(start, start + length)
    return full[tuple(index)]


def _direct_full(in1, in2):
    """The full N-d convolution by one conv_general_dilated (kernel flipped)."""
    nd = in1.ndim
    if nd == 0:
        return in1 * in2
    kernel = jnp.flip(in2, axis=tuple(range(nd)))
    lhs = in1.reshape((1, 1) + in1.shape)
    rhs = kernel.reshape((1, 1) + kernel.shape)
    padding = [(k - 1, k - 1) for k in in2.shape]
    out = lax.conv_general_dilated(lhs, rhs, (1,) * nd, padding,
                                   precision=lax.Precision.HIGHEST)
    return out[0, 0]


def _fft_full(in1, in2, axes):
    shape = [in1.shape[a] + in2.shape[a] - 1 for a in axes]
    if jnp.iscomplexobj(in1) or jnp.iscomplexobj(in2):
        out = jnp.fft.ifftn(jnp.fft.fftn(in1, shape, axes) * jnp.fft.fftn(in2, shape, axes),
                            shape, axes)
    else:
        out = jnp.fft.irfftn(jnp.fft.rfftn(in1, shape, axes) * jnp.fft.rfftn(in2, shape, axes),
                             shape, axes)
    return out.astype(in1.dtype)


def _valid_check(in1, in2, axes, what):
    bigger = all(in1.shape[a] >= in2.shape[a] for a in axes)
    smaller = all(in1.shape[a] <= in2.shape[a] for a in axes)
    if not (bigger or smaller):
        raise ValueError(f"{what}: for 'valid' mode, one input must be at least as large as "
                         "the other in every dimension")
    return bigger


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """The N-d convolution of ``in1`` and ``in2`` (``method``: ``auto``/``direct``/``fft``)."""
    del precision  # the direct path always runs at the highest precision
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")
    in1, in2 = _promote(in1, in2)
    _check(in1, in2, mode, "convolve")
    axes = tuple(range(in1.ndim))
    if mode == "valid" and not _valid_check(in1, in2, axes, "convolve"):
        in1, in2 = in2, in1
    if method == "fft" or jnp.iscomplexobj(in1):
        full = _fft_full(in1, in2, axes)
    else:
        full = _direct_full(in1, in2)
    return _crop(full, in1.shape, in2.shape, mode)


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """The N-d cross-correlation: ``convolve(in1, flip(conj(in2)))``."""
    in1, in2 = _promote(in1, in2)
    _check(in1, in2, mode, "correlate")
    flipped = jnp.flip(jnp.conj(in2), axis=tuple(range(in2.ndim)))
    axes = tuple(range(in1.ndim))
    if mode == "valid" and not _valid_check(in1, in2, axes, "correlate"):
        # scipy swaps the inputs and conjugate-flips the result
        out = convolve(in2, jnp.flip(jnp.conj(in1), axis=axes), mode, method, precision)
        return jnp.flip(jnp.conj(out), axis=axes)
    return convolve(in1, flipped, mode, method, precision)


def _check_2d(in1, in2, boundary, fillvalue, what):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{what}() only supports boundary='fill', fillvalue=0")
    if jnp.ndim(in1) != 2 or jnp.ndim(in2) != 2:
        raise ValueError(f"{what}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue: float = 0,
               precision=None):
    """2-d convolution (``boundary="fill"`` with ``fillvalue=0`` only, as JAX)."""
    _check_2d(in1, in2, boundary, fillvalue, "convolve2d")
    return convolve(in1, in2, mode, "direct", precision)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue: float = 0,
                precision=None):
    """2-d cross-correlation (``boundary="fill"`` with ``fillvalue=0`` only, as JAX)."""
    _check_2d(in1, in2, boundary, fillvalue, "correlate2d")
    if mode == "same":
        # scipy's correlate2d centres 'same' from the other end (for even kernels)
        in1, in2 = _promote(in1, in2)
        return jnp.flip(convolve(jnp.flip(in1), jnp.conj(in2), "same", "direct", precision))
    return correlate(in1, in2, mode, "direct", precision)


def fftconvolve(in1, in2, mode: str = "full", axes: Sequence[int] | None = None):
    """Convolution through FFTs along ``axes`` (default: all); the other axes must match
    and are batched."""
    in1, in2 = _promote(in1, in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise ValueError("mode must be one of ['same', 'full', 'valid']")
    if axes is None:
        axes = tuple(range(in1.ndim))
    else:
        axes = tuple(operator.index(a) % max(in1.ndim, 1) for a in axes)
    for a in range(in1.ndim):
        if a not in axes and in1.shape[a] != in2.shape[a]:
            raise ValueError(f"mapped axes must have same shape; got in1.shape={in1.shape} "
                             f"in2.shape={in2.shape} axes={axes}")
    if in1.size == 0 or in2.size == 0:
        return jnp.zeros(in1.shape, in1.dtype)
    if mode == "valid" and not _valid_check(in1, in2, axes, "fftconvolve"):
        in1, in2 = in2, in1
    full = _fft_full(in1, in2, axes)
    return _crop(full, in1.shape, in2.shape, mode, axes)


def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data=None):
    """Remove the mean (``type="constant"``) or a least-squares line, piecewise between the
    breakpoints ``bp`` (``type="linear"``), along ``axis``."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    data = jnp.asarray(data)
    if not jnp.issubdtype(data.dtype, jnp.inexact):
        data = data.astype(jnp.result_type(data, 1.0))
    if type == "constant":
        return data - jnp.mean(data, axis, keepdims=True)
    n = data.shape[axis]
    bp = np.sort(np.unique(np.r_[0, np.asarray(bp, dtype=int), n]))
    if np.any(bp > n) or np.any(bp < 0):
        raise ValueError("Breakpoints must be non-negative and less than length of data "
                         "along given axis.")
    moved = jnp.moveaxis(data, axis, -1)
    pieces = []
    for lo, hi in zip(bp[:-1], bp[1:]):
        seg = moved[..., lo:hi]
        length = hi - lo
        t = jnp.arange(length, dtype=seg.real.dtype if jnp.iscomplexobj(seg) else seg.dtype)
        t = t - (length - 1) / 2  # centred: the slope and intercept decouple
        denom = jnp.sum(t * t)
        slope = jnp.sum(seg * t, -1, keepdims=True) / jnp.where(denom == 0, 1, denom)
        pieces.append(seg - jnp.mean(seg, -1, keepdims=True) - slope * t)
    return jnp.moveaxis(jnp.concatenate(pieces, -1), -1, axis)
