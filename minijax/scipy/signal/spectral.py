"""Short-time Fourier analysis of `jax.scipy.signal`: ``stft``, ``istft``, ``csd`` and
``welch``, with scipy's conventions (periodic windows, zero-padded boundaries, one-sided
spectra doubled except at DC and Nyquist, ``density``/``spectrum`` scaling).

Segments are gathered with one strided index array, so the transforms trace under jit and
vmap and differentiate.
"""

from __future__ import annotations

import operator

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.signal.convolution import detrend as _detrend

__all__ = ["csd", "istft", "stft", "welch"]


def _window(window, nperseg: int, dtype):
    """A periodic (``fftbins=True``) window by name, or a given 1-d array."""
    if isinstance(window, str):
        n = np.arange(nperseg)
        phase = 2 * np.pi * n / nperseg
        if window in ("hann", "hanning"):
            win = 0.5 - 0.5 * np.cos(phase)
        elif window in ("hamming", "hamm"):
            win = 0.54 - 0.46 * np.cos(phase)
        elif window in ("blackman", "black"):
            win = 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)
        elif window in ("boxcar", "box", "ones", "rectangular"):
            win = np.ones(nperseg)
        elif window in ("bartlett", "triangle", "triang"):
            win = 1 - np.abs(2 * n / nperseg - 1)
        else:
            raise ValueError(f"window {window!r} is not supported; use 'hann', 'hamming', "
                             "'blackman', 'boxcar', 'bartlett' or an array")
        return jnp.asarray(win, dtype)
    win = jnp.asarray(window, dtype)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if win.shape[0] != nperseg:
        raise ValueError(f"window must have length of {nperseg}")
    return win


def _extend(x, n, kind):
    """Extend the last axis by ``n`` samples at each end ('zeros', 'even', 'odd',
    'constant')."""
    if kind == "zeros":
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)])
    left, right = x[..., 1:n + 1][..., ::-1], x[..., -n - 1:-1][..., ::-1]
    if kind == "even":
        return jnp.concatenate([left, x, right], -1)
    if kind == "odd":
        return jnp.concatenate([2 * x[..., :1] - left, x, 2 * x[..., -1:] - right], -1)
    if kind == "constant":
        return jnp.concatenate([jnp.repeat(x[..., :1], n, -1), x,
                                jnp.repeat(x[..., -1:], n, -1)], -1)
    raise ValueError(f"Unknown boundary option '{kind}', must be one of: "
                     "['even', 'odd', 'constant', 'zeros', None]")


def _check_nperseg(nperseg) -> int:
    nperseg = operator.index(nperseg)
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    return nperseg


def _step(noverlap, nperseg: int) -> int:
    """The step between segments that overlap by `noverlap` (default half a segment)."""
    noverlap = nperseg // 2 if noverlap is None else operator.index(noverlap)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    return nperseg - noverlap


def _segment_index(nseg: int, nperseg: int, step: int) -> np.ndarray:
    """(nseg, nperseg): the signal positions of each segment's samples."""
    return np.arange(nseg)[:, None] * step + np.arange(nperseg)[None, :]


def _segments(x, nperseg, step):
    nseg = (x.shape[-1] - nperseg) // step + 1
    return x[..., _segment_index(nseg, nperseg, step)]  # (..., nseg, nperseg)


def _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
              scaling, axis, mode, boundary=None, padded=False, default_nperseg=256):
    """scipy's spectral helper: (freqs, times, result) with result (..., freq, seg) and the
    frequency axis moved to ``axis``."""
    if scaling not in ("density", "spectrum"):
        raise ValueError(f"Unknown scaling: {scaling}")
    x = jnp.asarray(x)
    same = y is None
    if not same:
        y = jnp.asarray(y)
        if x.ndim != y.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
    dtype = jnp.result_type(x, 1.0) if same else jnp.result_type(x, y, 1.0)
    complex_input = jnp.issubdtype(dtype, jnp.complexfloating)
    real_dtype = jnp.finfo(dtype).dtype
    x = jnp.moveaxis(x.astype(dtype), axis, -1)
    if not same:
        y = jnp.moveaxis(y.astype(dtype), axis, -1)
        shape = jnp.broadcast_shapes(x.shape[:-1], y.shape[:-1])
        x = jnp.broadcast_to(x, shape + x.shape[-1:])
        y = jnp.broadcast_to(y, shape + y.shape[-1:])
        if x.shape[-1] != y.shape[-1]:
            n = max(x.shape[-1], y.shape[-1])
            x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])
            y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, n - y.shape[-1])])
    length = x.shape[-1]
    if nperseg is None:
        nperseg = min(default_nperseg, length)
    nperseg = _check_nperseg(nperseg)
    if mode == "psd" and nperseg > length:
        nperseg = length
    nfft = nperseg if nfft is None else operator.index(nfft)
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    step = _step(noverlap, nperseg)
    win = _window(window, nperseg, real_dtype)
    if boundary is not None:
        x = _extend(x, nperseg // 2, boundary)
        if not same:
            y = _extend(y, nperseg // 2, boundary)
    if padded:
        extra = (-(x.shape[-1] - nperseg) % step) % nperseg
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, extra)])
        if not same:
            y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, extra)])
    if scaling == "density":
        scale = 1.0 / (fs * jnp.sum(win * win))
    else:
        scale = 1.0 / jnp.sum(win) ** 2
    if mode == "stft":
        scale = jnp.sqrt(scale)
    sides = "twosided" if (not return_onesided or complex_input) else "onesided"

    def transform(v):
        seg = _segments(v, nperseg, step)
        if detrend_type:
            seg = _detrend(seg, axis=-1, type=detrend_type)
        seg = seg * win
        if sides == "onesided":
            return jnp.fft.rfft(seg, n=nfft, axis=-1)
        return jnp.fft.fft(seg, n=nfft, axis=-1)

    fx = transform(x)
    if mode == "stft":
        result = fx * scale
    else:
        fy = fx if same else transform(y)
        result = jnp.conj(fx) * fy * scale
        if sides == "onesided":
            last = -1 if nfft % 2 == 0 else None
            result = result.at[..., 1:last].multiply(2)
    if sides == "onesided":
        freqs = np.fft.rfftfreq(nfft, 1.0)
    else:
        freqs = np.fft.fftfreq(nfft, 1.0)
    n_padded = x.shape[-1]
    times = np.arange(nperseg / 2, n_padded - nperseg / 2 + 1, step)
    if boundary is not None:
        times = times - nperseg / 2
    freqs = jnp.asarray(freqs, real_dtype) * fs
    times = jnp.asarray(times, real_dtype) / fs
    result = jnp.swapaxes(result, -1, -2)  # (..., freq, seg)
    out_axis = axis - 1 if axis < 0 else axis
    result = jnp.moveaxis(result, -2, out_axis)
    return freqs, times, result


def stft(x, fs=1.0, window="hann", nperseg: int = 256, noverlap: int | None = None,
         nfft: int | None = None, detrend: bool = False, return_onesided: bool = True,
         boundary: str | None = "zeros", padded: bool = True, axis: int = -1):
    """The short-time Fourier transform: ``(freqs, times, Zxx)`` with ``Zxx`` scaled by
    1/sum(window) (scipy's ``spectrum`` scaling)."""
    detrend_type = "constant" if detrend is True else (detrend or None)
    return _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend_type,
                     return_onesided, "spectrum", axis, "stft", boundary, padded)


def csd(x, y, fs=1.0, window="hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend="constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean"):
    """The cross power spectral density of ``x`` and ``y`` by Welch's method:
    ``(freqs, Pxy)`` (``y=None`` gives the power spectral density of ``x``)."""
    if average not in ("mean", "median"):
        raise ValueError(f'average must be "median" or "mean", got {average}')
    freqs, _, pxy = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                              return_onesided, scaling, axis, "psd")
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                # the median of a chi-square(2) sample is biased by log(2) per segment count
                bias = _median_bias(pxy.shape[-1])
                if jnp.iscomplexobj(pxy):
                    pxy = (jnp.median(jnp.real(pxy), axis=-1)
                           + 1j * jnp.median(jnp.imag(pxy), axis=-1)) / bias
                else:
                    pxy = jnp.median(pxy, axis=-1) / bias
            else:
                pxy = jnp.mean(pxy, axis=-1)
        else:
            pxy = pxy.reshape(pxy.shape[:-1])
    return freqs, pxy


def _median_bias(n: int) -> float:
    """The bias of the median of n chi-square(2) samples relative to the mean."""
    return 1.0 + sum((-1.0) ** k / (k + 1) for k in range(1, (n - 1) // 2 * 2 + 1))


def welch(x, fs=1.0, window="hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend="constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean"):
    """The power spectral density by Welch's method: ``(freqs, Pxx)``."""
    freqs, pxx = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     scaling, axis, average)
    return freqs, jnp.real(pxx)


def istft(Zxx, fs=1.0, window="hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1, freq_axis: int = -2):
    """The inverse of :func:`stft` by weighted overlap-add: ``(times, x)``."""
    Zxx = jnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    ndim = Zxx.ndim
    time_axis, freq_axis = time_axis % ndim, freq_axis % ndim
    if time_axis == freq_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    Zxx = jnp.moveaxis(Zxx, (freq_axis, time_axis), (-2, -1))
    nfreq, nseg = Zxx.shape[-2], Zxx.shape[-1]
    if nperseg is None:
        nperseg = 2 * (nfreq - 1) if input_onesided else nfreq
    nperseg = _check_nperseg(nperseg)
    if nfft is None:
        if input_onesided and nperseg == nfreq:
            raise ValueError("nperseg must be specified for an onesided stft of an "
                             "odd-length signal")
        nfft = nperseg
    elif nfft < nperseg:
        raise ValueError("FFT length (nfft) must be at least as long as nperseg")
    step = _step(noverlap, nperseg)
    real_dtype = jnp.finfo(jnp.result_type(Zxx, 1.0)).dtype
    win = _window(window, nperseg, real_dtype)
    frames = jnp.swapaxes(Zxx, -1, -2)  # (..., seg, freq)
    if input_onesided:
        frames = jnp.fft.irfft(frames, n=nfft, axis=-1)
    else:
        frames = jnp.fft.ifft(frames, n=nfft, axis=-1)
    frames = frames[..., :nperseg] * (jnp.sum(win) * win)
    out_len = nperseg + (nseg - 1) * step
    index = _segment_index(nseg, nperseg, step).reshape(-1)
    batch = frames.shape[:-2]
    x = jnp.zeros(batch + (out_len,), frames.dtype).at[..., index].add(
        frames.reshape(batch + (-1,)))
    norm = np.zeros(out_len)
    np.add.at(norm, index, np.tile(np.asarray(win, np.float64) ** 2, nseg))
    if boundary:
        half = nperseg // 2
        x, norm = x[..., half:out_len - half], norm[half:out_len - half]
    x = x / jnp.asarray(np.where(norm > 1e-10, norm, 1.0), real_dtype)
    if input_onesided:
        x = jnp.real(x)
    if x.ndim > 1 and time_axis != ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    # as scipy and JAX: the times count the first axis of the output
    times = jnp.arange(x.shape[0], dtype=real_dtype) / fs
    return times, x

