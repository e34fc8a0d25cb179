"""minijax.scipy.signal (JAX's ``jax.scipy.signal``): convolution, correlation, detrending
and short-time Fourier analysis."""

from minijax.scipy.signal.convolution import (
    convolve,
    convolve2d,
    correlate,
    correlate2d,
    detrend,
    fftconvolve,
)
from minijax.scipy.signal.spectral import csd, istft, stft, welch

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
           "fftconvolve", "istft", "stft", "welch"]
