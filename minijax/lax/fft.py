"""The fft primitive: XLA's `fft` (FFT, IFFT, RFFT, IRFFT over the innermost 1 to 3 axes).

`fft(x, fft_type, fft_lengths)` as jax.lax.fft. FFT and IFFT map complex to complex (IFFT
includes the 1/n factor); RFFT maps real to complex, keeping n // 2 + 1 entries of the last
axis; IRFFT inverts it. The primitive is linear: its JVP applies it to the tangent; its
transpose follows JAX's conventions (FFT and IFFT are their own transposes; the RFFT
transpose is the real part of an FFT of the zero-padded cotangent; the IRFFT transpose is
the conjugate of a weighted RFFT, the weights counting each retained frequency's mirror).
"""

from __future__ import annotations

import enum
import math

import numpy as np

from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray
from minijax.interpreters import ad, batching
from minijax.lax.elementwise import mul
from minijax.lax.elementwise_complex import conj, real
from minijax.lax.slicing import pad
from minijax.lax.structural import broadcast_in_dim, convert_element_type, full, moveaxis
from minijax.lax.utils import standard_primitive

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
    """The kind of transform (jax.lax.FftType)."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}
_REAL_OF = {v: k for k, v in _COMPLEX_OF.items()}


def _as_type(fft_type) -> FftType:
    if isinstance(fft_type, str):
        name = fft_type.upper().replace("FFTTYPE.", "")
        if name not in FftType.__members__:
            raise ValueError(f"fft: unknown fft_type {fft_type!r}; expected one of "
                             f"{list(FftType.__members__)}")
        return FftType[name]
    return FftType(int(fft_type))


def fft(x, fft_type, fft_lengths):
    """XLA's FFT over the innermost len(fft_lengths) axes (1 to 3) of `x`."""
    lengths = tuple(int(n) for n in np.atleast_1d(fft_lengths))
    return fft_p.bind(x, fft_type=_as_type(fft_type), fft_lengths=lengths)


def _abstract_eval(x, *, fft_type, fft_lengths):
    n = len(fft_lengths)
    where = f"fft ({fft_type.name}, fft_lengths={list(fft_lengths)}) of {x.str_short()}"
    if not 1 <= n <= 3 or n > x.ndim:
        raise ValueError(f"{where}: fft_lengths must have 1 to 3 entries, at most x.ndim")
    inner = tuple(x.shape[x.ndim - n:])
    if fft_type in (FftType.FFT, FftType.IFFT):
        if x.dtype.kind != "c":
            raise TypeError(f"{where}: {fft_type.name} needs a complex operand")
        if inner != fft_lengths:
            raise ValueError(f"{where}: the innermost dimensions must equal fft_lengths")
        return ShapedArray(x.shape, x.dtype)
    if fft_type == FftType.RFFT:
        if x.dtype not in _COMPLEX_OF:
            raise TypeError(f"{where}: RFFT needs a float32 or float64 operand")
        if inner != fft_lengths:
            raise ValueError(f"{where}: the innermost dimensions must equal fft_lengths")
        last = fft_lengths[-1] // 2 + 1 if fft_lengths[-1] else 0
        return ShapedArray(x.shape[:-1] + (last,), _COMPLEX_OF[x.dtype])
    if x.dtype not in _REAL_OF:
        raise TypeError(f"{where}: IRFFT needs a complex operand")
    want = fft_lengths[:-1] + ((fft_lengths[-1] // 2 + 1) if fft_lengths[-1] else 0,)
    if inner != want:
        raise ValueError(f"{where}: the innermost dimensions must be {list(want)}")
    return ShapedArray(x.shape[:x.ndim - n] + fft_lengths, _REAL_OF[x.dtype])


def _impl(x, *, fft_type, fft_lengths):
    x = np.asarray(x)
    out = _abstract_eval(ShapedArray(x.shape, x.dtype), fft_type=fft_type,
                         fft_lengths=fft_lengths)
    if x.size == 0 or 0 in fft_lengths or math.prod(out.shape) == 0:
        return np.zeros(out.shape, out.dtype)
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    fn = {FftType.FFT: lambda: np.fft.fftn(wide, axes=axes),
          FftType.IFFT: lambda: np.fft.ifftn(wide, axes=axes),
          FftType.RFFT: lambda: np.fft.rfftn(wide, s=fft_lengths, axes=axes),
          FftType.IRFFT: lambda: np.fft.irfftn(wide, s=fft_lengths, axes=axes)}[fft_type]
    return fn().astype(out.dtype)


fft_p = standard_primitive("fft", _abstract_eval, _impl)


def _lower(ctx, x, *, fft_type, fft_lengths):
    return ctx.builder.add_instruction(
        "fft", [x], {"fft_type": fft_type.name, "fft_length": tuple(fft_lengths)},
        metadata=ctx.metadata)


register_lowering(fft_p, _lower)


def _batch(trace, vals, dims, *, fft_type, fft_lengths):
    x = moveaxis(vals[0], dims[0], 0)
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), 0


batching.primitive_batchers[fft_p] = _batch


def _rfft_transpose(ct, fft_lengths):
    # RFFT = slice(FFT(complex(x))): transpose = real(FFT(zero-padded ct)).
    n = fft_lengths[-1]
    zero = full((), 0, ct.dtype)
    padded = pad(ct, zero, [(0, 0, 0)] * (ct.ndim - 1) + [(0, n - ct.shape[-1], 0)])
    return real(fft(padded, FftType.FFT, fft_lengths))


def _irfft_transpose(ct, fft_lengths):
    x = fft(ct, FftType.RFFT, fft_lengths)
    m = x.shape[-1]
    odd = fft_lengths[-1] % 2
    weights = np.concatenate([[1.0], np.full(m - 2 + odd, 2.0), np.ones(1 - odd)])[:m]
    weights = (weights / math.prod(fft_lengths)).astype(_REAL_OF[np.dtype(x.dtype)])
    scaled = mul(x, convert_element_type(
        broadcast_in_dim(weights, x.shape, (x.ndim - 1,)), x.dtype))
    return conj(scaled)


def _transpose(ct, x, *, fft_type, fft_lengths):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    if fft_type == FftType.RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == FftType.IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft(ct, fft_type, fft_lengths)]


ad.deflinear(fft_p, _transpose)
