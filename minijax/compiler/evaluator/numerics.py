"""Evaluator opcodes for numerical kernels and narrow element types.

- `batch-norm-training`, `batch-norm-inference`, `batch-norm-grad` (XLA's operation
  semantics; statistics over every dimension but `feature_index`, biased variance),
  computed in float64 and rounded once to the result type;
- `fft` with fft_type FFT, IFFT, RFFT, IRFFT over the last len(fft_length) dimensions;
- `stochastic-convert` (float -> signed int, rounding up when the random bits are below the
  fraction scaled to their width), step for step as XLA's StochasticConvertDecomposer;
- narrow types (s2/s4/u2/u4 and the f8/f4 floats, ml_dtypes storage): `widen` gives the
  type an instruction computes in (int8/uint8, float32); the result is rounded (floats) or
  wrapped (ints) back to the narrow type by the caller's cast. Opcodes whose answer depends
  on the bit width (logical shifts, popcnt, count-leading-zeros, bitcast-convert) are
  evaluated on the narrow bit pattern here.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.evaluator import elementwise as ew
from minijax.compiler.hlo.ir import NARROW_ELEMENT_TYPES, element_type_of

__all__ = ["OPCODES", "NARROW_DTYPES", "bitcast_bits", "involves_narrow", "widen",
           "narrow_bit_opcode", "narrow_convert"]

NARROW_DTYPES = frozenset(NARROW_ELEMENT_TYPES.values())
_BITS = {"s2": 2, "u2": 2, "s4": 4, "u4": 4, "f4e2m1fn": 4}


def _bits_of(dtype) -> int:
    return _BITS.get(element_type_of(dtype), 8)


def involves_narrow(values) -> bool:
    """Whether any array in `values` (nested tuples allowed) has a narrow dtype."""
    for v in values:
        if isinstance(v, tuple):
            if involves_narrow(v):
                return True
        elif getattr(v, "dtype", None) in NARROW_DTYPES:
            return True
    return False


def widen(value):
    """A narrow array in the type XLA computes it in: float32, or int8/uint8."""
    if isinstance(value, tuple):
        return tuple(widen(v) for v in value)
    arr = np.asarray(value)
    if arr.dtype not in NARROW_DTYPES:
        return arr
    et = element_type_of(arr.dtype)
    if et[0] == "f":
        return arr.astype(np.float32)
    return arr.astype(np.int8 if et[0] == "s" else np.uint8)


def _pattern(arr: np.ndarray) -> np.ndarray:
    """The raw bits of a narrow value, as uint8 (low `bits` bits)."""
    bits = _bits_of(arr.dtype)
    et = element_type_of(arr.dtype)
    if et[0] == "f":
        raw = arr.view(np.uint8)
    else:
        raw = arr.astype(np.int8 if et[0] == "s" else np.uint8).view(np.uint8)
    return raw & np.uint8((1 << bits) - 1)


def _from_pattern(raw: np.ndarray, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    et = element_type_of(dtype)
    if dtype not in NARROW_DTYPES:
        return raw.view(dtype)
    bits = _bits_of(dtype)
    raw = raw.astype(np.uint8) & np.uint8((1 << bits) - 1)
    if et[0] == "f":
        return raw.view(dtype)
    if et[0] == "s":
        signed = raw.astype(np.int16) - ((raw >> (bits - 1)) & 1).astype(np.int16) * (1 << bits)
        return signed.astype(np.int8).astype(dtype)
    return raw.astype(dtype)


def narrow_bit_opcode(instr, ops):
    """The value of a bit-width dependent opcode on narrow integers, or None."""
    op = instr.opcode
    if op == "bitcast-convert":
        src, dst = np.asarray(ops[0]), instr.shape.dtype
        if src.dtype.itemsize != 1 or dst.itemsize != 1:
            if _bits_of(src.dtype) < 8 or _bits_of(dst) < 8:
                raise ValueError(f"bitcast-convert between {src.dtype} and {dst} changes "
                                 "the storage width of a sub-byte type; only same-width "
                                 "bitcasts of 2- and 4-bit types are supported")
            # 8-bit floats are whole bytes: reinterpret them like any other type.
            return ew.bitcast_convert(src, dst)
        if _bits_of(src.dtype) != _bits_of(dst):
            raise ValueError(f"bitcast-convert from {src.dtype} to {dst}: bit widths differ")
        raw = _pattern(src) if src.dtype in NARROW_DTYPES else src.view(np.uint8)
        return _from_pattern(raw, dst)
    x = np.asarray(ops[0])
    if x.dtype not in NARROW_DTYPES or element_type_of(x.dtype)[0] == "f":
        return None
    bits = _bits_of(x.dtype)
    if op == "popcnt":
        return _from_pattern(ew.UNARY["popcnt"](_pattern(x)), x.dtype)
    if op == "count-leading-zeros":
        return (ew.UNARY["count-leading-zeros"](_pattern(x)).astype(np.int16)
                - (8 - bits)).astype(np.int8)
    if op == "shift-right-logical":
        amount = widen(np.asarray(ops[1])).astype(np.int16)
        raw = _pattern(x).astype(np.int16)
        out = np.where((amount < 0) | (amount >= bits), 0, raw >> np.clip(amount, 0, 7))
        return _from_pattern(out.astype(np.uint8), x.dtype)
    return None


def narrow_convert(x: np.ndarray, dtype) -> np.ndarray:
    """XLA convert when either side is narrow: floats round once to the target, float ->
    int saturates to the target's range (NaN -> 0), int -> int wraps."""
    dtype = np.dtype(dtype)
    x = np.asarray(x)
    if x.dtype in NARROW_DTYPES:
        x = widen(x)
    if dtype not in NARROW_DTYPES:
        return ew.convert(x, dtype)
    et = element_type_of(dtype)
    if et[0] == "f":
        return ew.convert(x, dtype)
    bits = _bits_of(dtype)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if et[0] == "s" else (0, (1 << bits) - 1)
    if x.dtype.kind in "fc":
        x = np.real(x)
        t = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
        return np.clip(t, lo, hi).astype(np.int8 if et[0] == "s" else np.uint8).astype(dtype)
    if x.dtype == np.bool_:
        return x.astype(np.uint8).astype(dtype)
    return _from_pattern((x.astype(np.int64) & ((1 << bits) - 1)).astype(np.uint8), dtype)


# ----------------------------------------------------------------------------- batch norm

def _feature_axes(x: np.ndarray, feature: int) -> tuple[int, ...]:
    return tuple(i for i in range(x.ndim) if i != feature)


def _along(v: np.ndarray, x: np.ndarray, feature: int) -> np.ndarray:
    shape = [1] * x.ndim
    shape[feature] = -1
    return v.reshape(shape)


def _batch_norm_training(instr, ops, ctx):
    f, eps = int(instr.attrs["feature_index"]), float(instr.attrs.get("epsilon", 0.0))
    x, scale, offset = (np.asarray(v, np.float64) for v in ops)
    axes = _feature_axes(x, f)
    mean = x.mean(axis=axes) if x.size else np.zeros(x.shape[f])
    var = ((x - _along(mean, x, f)) ** 2).mean(axis=axes) if x.size else np.zeros(x.shape[f])
    y = ((x - _along(mean, x, f)) / np.sqrt(_along(var, x, f) + eps) * _along(scale, x, f)
         + _along(offset, x, f))
    return (y, mean, var)


def _batch_norm_inference(instr, ops, ctx):
    f, eps = int(instr.attrs["feature_index"]), float(instr.attrs.get("epsilon", 0.0))
    x, scale, offset, mean, var = (np.asarray(v, np.float64) for v in ops)
    return ((x - _along(mean, x, f)) / np.sqrt(_along(var, x, f) + eps)
            * _along(scale, x, f) + _along(offset, x, f))


def _batch_norm_grad(instr, ops, ctx):
    f, eps = int(instr.attrs["feature_index"]), float(instr.attrs.get("epsilon", 0.0))
    x, scale, mean, var, dy = (np.asarray(v, np.float64) for v in ops)
    axes = _feature_axes(x, f)
    n = max(x.size // max(x.shape[f], 1), 1)
    centered = x - _along(mean, x, f)
    inv_std = 1.0 / np.sqrt(var + eps)
    doffset = dy.sum(axis=axes)
    dscale = (dy * centered).sum(axis=axes) * inv_std
    dx = _along(scale * inv_std, x, f) * (
        dy - _along(doffset / n, x, f)
        - centered * _along((dy * centered).sum(axis=axes) / n / (var + eps), x, f))
    return (dx, dscale, doffset)


# ----------------------------------------------------------------------------- fft

def _fft(instr, ops, ctx):
    x = np.asarray(ops[0])
    length = tuple(int(n) for n in instr.attrs.get("fft_length", ()))
    kind = instr.attrs.get("fft_type", "FFT")
    axes = tuple(range(x.ndim - len(length), x.ndim))
    if x.size == 0 or 0 in length:
        return np.zeros(instr.shape.dims, instr.shape.dtype)
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    if kind == "FFT":
        return np.fft.fftn(wide, axes=axes)
    if kind == "IFFT":
        return np.fft.ifftn(wide, axes=axes)
    if kind == "RFFT":
        return np.fft.rfftn(wide, s=length, axes=axes)
    if kind == "IRFFT":
        return np.fft.irfftn(wide, s=length, axes=axes)
    raise ValueError(f"unknown fft_type {kind!r}")


# ----------------------------------------------------------------------------- stochastic

def _stochastic_convert(instr, ops, ctx):
    x, random = np.asarray(ops[0]), np.asarray(ops[1])
    out = instr.shape.dtype
    negative = np.sign(x) < 0
    magnitude = np.abs(x)
    truncated = np.floor(magnitude)
    fraction = magnitude - truncated
    if fraction.dtype == np.float16:
        fraction = fraction.astype(np.float32)
    scaled = fraction * fraction.dtype.type(2.0 ** (8 * random.dtype.itemsize))
    round_up = random < ew.convert(scaled, random.dtype)
    value = ew.convert(truncated, out)
    value = np.where(round_up, value + out.type(1), value).astype(out)
    value = np.where(negative, -value, value).astype(out)
    info = np.iinfo(out)
    value = np.where(x <= x.dtype.type(info.min), out.type(info.min), value)
    return np.where(x >= x.dtype.type(info.max), out.type(info.max), value)


OPCODES = {
    "batch-norm-training": _batch_norm_training,
    "batch-norm-inference": _batch_norm_inference,
    "batch-norm-grad": _batch_norm_grad,
    "fft": _fft,
    "stochastic-convert": _stochastic_convert,
}


def bitcast_bits(x, shape):
    """`x`'s bits as `shape`'s element type (a bitcast may change it, keeping the bytes)."""
    x = np.asarray(x)
    dtype = shape.dtype
    if x.dtype == dtype or shape.element_type in NARROW_ELEMENT_TYPES or x.dtype == bool:
        return x
    if dtype.itemsize == x.dtype.itemsize:
        return x.view(dtype)
    return np.ascontiguousarray(x).reshape(-1).view(dtype)
