"""minijax.numpy.fft: discrete Fourier transforms (jax.numpy.fft), lowered to XLA's fft.

Transforms over up to three axes become one `fft` instruction (after moving the axes
innermost); more axes are transformed one axis at a time (the DFT is separable). `n`/`s`
zero-pad or truncate the input as NumPy does; `norm` is "backward" (default), "ortho" or
"forward". Results are complex64 for float32 input (complex128 with jax_enable_x64).
"""

from __future__ import annotations

import math
import operator

import numpy as np

from minijax import dtypes, lax
from minijax.lax.fft import FftType
from minijax.numpy.creation import asarray
from minijax.numpy.manipulation import moveaxis, roll

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
           "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift", "hfft",
           "ihfft"]

_NORMS = (None, "backward", "ortho", "forward")


def _resize(x, axis: int, size: int):
    """Zero-pad or truncate axis `axis` of x to `size`."""
    have = x.shape[axis]
    if have == size:
        return x
    if have > size:
        return lax.slice_in_dim(x, 0, size, axis=axis)
    config = [(0, 0, 0)] * x.ndim
    config[axis] = (0, size - have, 0)
    return lax.pad(x, lax.full((), 0, x.dtype), config)


def _to_complex(x):
    """JAX's lax.fft input rule: integers/bool become float32 (float64 for 64-bit ones,
    also with x64), then f16/bf16/f32 become complex64 and float64 complex128."""
    dt = x.dtype
    if dt.kind == "c":
        return x
    real = dtypes.to_inexact(dt)
    return lax.convert_element_type(
        x, np.complex128 if real == np.float64 else np.complex64)


def _to_real(x, name):
    dt = x.dtype
    if dt.kind == "c":
        raise TypeError(f"jnp.fft.{name} needs real input, got {dt}")
    dt = dtypes.to_inexact(dt)
    if dt not in (np.float32, np.float64):
        raise ValueError(f"RFFT input must be float32 or float64, got {dt} (jnp.fft.{name}); "
                         "convert the input with .astype(jnp.float32)")
    return lax.convert_element_type(x, dt) if dt != x.dtype else x


def _innermost(x, fft_type, lengths):
    """lax.fft over the innermost len(lengths) axes, split when there are more than 3."""
    k = len(lengths)
    if k <= 3:
        return lax.fft(x, fft_type, lengths)
    if fft_type == FftType.RFFT:  # real transform of the last axis, then complex ones
        x = lax.fft(x, FftType.RFFT, lengths[-1:])
        return _per_axis(x, FftType.FFT, x.ndim - k, lengths[:-1])
    if fft_type == FftType.IRFFT:
        x = _per_axis(x, FftType.IFFT, x.ndim - k, lengths[:-1])
        return lax.fft(x, FftType.IRFFT, lengths[-1:])
    return _per_axis(x, fft_type, x.ndim - k, lengths)


def _per_axis(x, fft_type, first: int, lengths):
    for i, n in enumerate(lengths):
        moved = moveaxis(x, first + i, -1)
        x = moveaxis(lax.fft(moved, fft_type, (n,)), -1, first + i)
    return x


def _fftn(name, fft_type, a, s, axes, norm):
    if norm not in _NORMS:
        raise ValueError(f"jnp.fft.{name}: norm must be one of {_NORMS}, got {norm!r}")
    x = asarray(a)
    x = _to_real(x, name) if fft_type == FftType.RFFT else _to_complex(x)
    if s is not None:
        s = tuple(operator.index(n) for n in np.atleast_1d(s))
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(-len(s), 0))
    axes = tuple(operator.index(ax) for ax in axes)
    if not axes:
        return x
    axes = tuple(ax + x.ndim if ax < 0 else ax for ax in axes)
    if any(not 0 <= ax < x.ndim for ax in axes) or len(set(axes)) != len(axes):
        raise ValueError(f"jnp.fft.{name}: bad axes {axes} for an array of rank {x.ndim}")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"jnp.fft.{name}: s has {len(s)} entries for {len(axes)} axes")
    k = len(axes)
    inner = tuple(range(x.ndim - k, x.ndim))
    x = moveaxis(x, axes, inner)
    if fft_type == FftType.IRFFT:
        lengths = s if s is not None else (
            tuple(x.shape[-k:-1]) + (2 * (x.shape[-1] - 1),))
        for i, n in enumerate(lengths[:-1]):
            x = _resize(x, x.ndim - k + i, n)
        x = _resize(x, x.ndim - 1, lengths[-1] // 2 + 1)
    else:
        lengths = s if s is not None else tuple(x.shape[-k:])
        for i, n in enumerate(lengths):
            x = _resize(x, x.ndim - k + i, n)
    if any(n < 1 for n in lengths):
        raise ValueError(f"jnp.fft.{name}: transform lengths must be positive, got {lengths}")
    out = _innermost(x, fft_type, tuple(lengths))
    count = math.prod(lengths)
    inverse = fft_type in (FftType.IFFT, FftType.IRFFT)
    scale = {None: 1.0, "backward": 1.0, "ortho": math.sqrt(count) if inverse
             else 1 / math.sqrt(count), "forward": count if inverse else 1 / count}[norm]
    if scale != 1.0:
        out = lax.mul(out, lax.full((), scale, out.dtype))
    return moveaxis(out, inner, axes)


def _one_axis(name, fft_type, a, n, axis, norm):
    return _fftn(name, fft_type, a, None if n is None else (n,), (axis,), norm)


def fft(a, n=None, axis=-1, norm=None):
    """One-dimensional discrete Fourier transform along `axis`."""
    return _one_axis("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
    """One-dimensional inverse discrete Fourier transform along `axis`."""
    return _one_axis("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """Discrete Fourier transform of real input: the n // 2 + 1 non-negative frequencies."""
    return _one_axis("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
    """Inverse of rfft: real output of length n (default 2 * (m - 1))."""
    return _one_axis("irfft", FftType.IRFFT, a, n, axis, norm)


# hfft/ihfft are irfft/rfft of the conjugate with the normalization direction swapped.
_SWAPPED_NORM = {None: "forward", "backward": "forward", "ortho": "ortho",
                 "forward": "backward"}


def _swapped_norm(norm):
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or '
                         '"forward".')
    return _SWAPPED_NORM[norm]


def hfft(a, n=None, axis=-1, norm=None):
    """FFT of a signal with Hermitian symmetry given by its first half `a`: a real
    spectrum of length n (default 2 * (m - 1))."""
    return irfft(lax.conj(_to_complex(asarray(a))), n, axis, _swapped_norm(norm))


def ihfft(a, n=None, axis=-1, norm=None):
    """Inverse of hfft: the n // 2 + 1 non-negative-frequency terms of a real signal's
    Hermitian inverse transform."""
    return lax.conj(rfft(a, n, axis, _swapped_norm(norm)))


def fftn(a, s=None, axes=None, norm=None):
    """N-dimensional discrete Fourier transform over `axes` (default: all)."""
    return _fftn("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """N-dimensional inverse discrete Fourier transform."""
    return _fftn("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """N-dimensional transform of real input (the last axis keeps n // 2 + 1 entries)."""
    return _fftn("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """Inverse of rfftn."""
    return _fftn("irfftn", FftType.IRFFT, a, s, axes, norm)


def _two_axes(name, axes):
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"jax.numpy.fft.{name} only supports 2 axes. Got axes = {axes}.")
    return axes


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional discrete Fourier transform."""
    return _fftn("fft2", FftType.FFT, a, s, _two_axes("fft2", axes), norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional inverse discrete Fourier transform."""
    return _fftn("ifft2", FftType.IFFT, a, s, _two_axes("ifft2", axes), norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional transform of real input."""
    return _fftn("rfft2", FftType.RFFT, a, s, _two_axes("rfft2", axes), norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """Inverse of rfft2."""
    return _fftn("irfft2", FftType.IRFFT, a, s, _two_axes("irfft2", axes), norm)


def _freq(name, n, d, dtype, ks):
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"jnp.fft.{name}: n must be a positive integer, got {n!r}")
    out_dtype = dtypes.canonicalize_dtype(dtype or dtypes.default_float_dtype())
    dtype = dtypes.real_dtype(dtypes.to_inexact(out_dtype))
    k = asarray(np.asarray(ks, np.float64), dtype=dtype)
    # As JAX: d * n is formed first (in Python for a Python d), then rounded to dtype.
    scale = d * int(n) if isinstance(d, (int, float, np.number)) else asarray(d) * int(n)
    out = lax.div(k, asarray(scale, dtype=dtype))
    return out if out_dtype == dtype else lax.convert_element_type(out, out_dtype)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of fft: [0, 1, ..., n//2 - 1 (or n//2), -n//2, ..., -1] / (d n)."""
    return _freq("fftfreq", n, d, dtype, np.fft.fftfreq(int(n)) * int(n))


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """Sample frequencies of rfft: [0, 1, ..., n // 2] / (d n)."""
    return _freq("rfftfreq", n, d, dtype, np.arange(int(n) // 2 + 1))


def _shift(x, axes, sign):
    x = asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    shifts = tuple(sign * (x.shape[ax] // 2) for ax in axes)
    return roll(x, shifts, tuple(axes))


def fftshift(x, axes=None):
    """Move the zero frequency to the center (roll by n // 2 along each axis)."""
    return _shift(x, axes, 1)


def ifftshift(x, axes=None):
    """Inverse of fftshift (roll by -(n // 2) along each axis)."""
    return _shift(x, axes, -1)
