"""Convolution helpers: dimension numbers, padding types, the shape rule and the NumPy
(im2col + matrix multiply) implementation used by conv_general_dilated in dot_conv.py."""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np


class ConvDimensionNumbers(NamedTuple):
    """Where the batch/feature/spatial dimensions are: each spec lists dimension indices as
    (batch, feature, spatial...) for lhs and out, and (out feature, in feature, spatial...)
    for rhs (JAX's ConvDimensionNumbers)."""

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_general_permutations(dimension_numbers):
    """The (lhs, rhs, out) specs for string dimension numbers like ("NHWC", "HWIO", "NHWC").

    Spatial dimensions are ordered as they appear in the rhs string."""
    specs = tuple(dimension_numbers)
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (spec, (a, b)) in enumerate(zip(specs, pairs, strict=True)):
        if spec.count(a) != 1 or spec.count(b) != 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {spec}.")
        if len(set(spec)) != len(spec):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {spec}.")
    spatial = [set(s) - set(p) for s, p in zip(specs, pairs, strict=True)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise TypeError("convolution dimension_numbers elements must each have the same set "
                        f"of spatial characters, got {tuple(specs)}.")
    rhs = specs[1]

    def perm(spec, pair):
        positions = [i for i, c in enumerate(spec) if c not in pair]
        positions.sort(key=lambda i: rhs.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(positions)
    return tuple(perm(s, p) for s, p in zip(specs, pairs, strict=True))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """Canonicalize `dimension_numbers` (None, a ConvDimensionNumbers, or three strings)."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, (list, tuple)):
        if len(dimension_numbers) != 3:
            raise TypeError("convolution dimension_numbers list/tuple must be length 3, got "
                            f"{len(dimension_numbers)}.")
        if all(isinstance(s, (list, tuple)) for s in dimension_numbers):
            return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
        if not all(isinstance(s, str) for s in dimension_numbers):
            raise TypeError("convolution dimension_numbers elements must be strings, got "
                            f"{dimension_numbers}.")
        for i, s in enumerate(dimension_numbers):
            if len(s) != len(lhs_shape):
                raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to "
                                f"the ndim of lhs and rhs, got {len(s)} for lhs and rhs "
                                f"shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}.")
        return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
    raise TypeError("convolution dimension_numbers must be tuple/list or None, got "
                    f"{dimension_numbers}.")


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """Explicit (low, high) pads for "VALID", "SAME" or "SAME_LOWER" padding."""
    if not isinstance(padding, str):
        return [tuple(p) for p in padding]
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME' or "
                           f"'SAME_LOWER', got {padding}.")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides, strict=True):
        out = -(-n // s)
        total = max((out - 1) * s + w - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return pads


def dilate_dim(d: int, rate: int) -> int:
    """The size of a dimension of size d with (rate - 1) holes between elements."""
    return 0 if d == 0 else 1 + rate * (d - 1)


def conv_out_spatial(in_sizes, window, strides, padding, lhs_dilation, rhs_dilation):
    """Output spatial sizes of a convolution or a window reduction."""
    out = []
    for n, k, s, (lo, hi), ld, rd in zip(in_sizes, window, strides, padding, lhs_dilation,
                                         rhs_dilation, strict=True):
        padded = dilate_dim(n, ld) + lo + hi
        wd = dilate_dim(k, rd)
        out.append(0 if padded < wd or wd == 0 else (padded - wd) // s + 1)
    return tuple(out)


def check_ints(name, what, values, n, minimum, per=None):
    """`values` as a tuple of `n` ints >= minimum, or a TypeError/ValueError naming `name`;
    `per` says what each entry belongs to (default: "spatial dimension (n)")."""
    values = tuple(operator.index(v) for v in values)
    if len(values) != n:
        per = per or f"spatial dimension ({n})"
        raise TypeError(f"{name}: {what} must have one entry per {per}, got {values}")
    if any(v < minimum for v in values):
        raise ValueError(f"{name}: {what} must be >= {minimum}, got {values}")
    return values


def conv_shape(lhs_shape, rhs_shape, *, window_strides, padding, lhs_dilation,
               rhs_dilation, dimension_numbers, feature_group_count, batch_group_count):
    """The output shape of conv_general_dilated; raises on inconsistent arguments."""
    name = "conv_general_dilated"
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    desc = f"lhs shape {tuple(lhs_shape)}, rhs shape {tuple(rhs_shape)}"
    if len(lhs_shape) != len(rhs_shape) or len(lhs_shape) < 2:
        raise TypeError(f"{name} requires lhs and rhs of equal rank >= 2, got {desc}")
    for spec in dimension_numbers:
        if sorted(spec) != list(range(len(lhs_shape))):
            raise TypeError(f"{name}: dimension_numbers {tuple(dimension_numbers)} are not "
                            f"permutations of the dimensions ({desc})")
    fgc, bgc = feature_group_count, batch_group_count
    if fgc < 1 or bgc < 1:
        raise ValueError(f"{name}: feature_group_count and batch_group_count must be >= 1, "
                         f"got {fgc} and {bgc}")
    if fgc > 1 and bgc > 1:
        raise ValueError("At most one of batch_group_count and feature_group_count may be > 1,"
                         f" got batch_group_count={bgc} and feature_group_count={fgc}")
    lhs_batch, lhs_feat = lhs_shape[lhs_spec[0]], lhs_shape[lhs_spec[1]]
    rhs_out, rhs_in = rhs_shape[rhs_spec[0]], rhs_shape[rhs_spec[1]]
    if lhs_feat % fgc:
        raise ValueError(f"{name} feature_group_count must divide lhs feature dimension size,"
                         f" but {fgc} does not divide {lhs_feat} ({desc})")
    if lhs_feat // fgc != rhs_in:
        raise TypeError(f"{name} lhs feature dimension size divided by feature_group_count "
                        f"must equal the rhs input feature dimension size, but {lhs_feat} // "
                        f"{fgc} != {rhs_in} ({desc})")
    if rhs_out % fgc:
        raise ValueError(f"{name} rhs output feature dimension size must be a multiple of "
                         f"feature_group_count, but {rhs_out} is not a multiple of {fgc}")
    if lhs_batch % bgc:
        raise ValueError(f"{name} batch_group_count must divide lhs batch dimension size, but"
                         f" {bgc} does not divide {lhs_batch} ({desc})")
    if rhs_out % bgc:
        raise ValueError(f"{name} rhs output feature dimension size must be a multiple of "
                         f"batch_group_count, but {rhs_out} is not a multiple of {bgc}")
    in_sp = [lhs_shape[d] for d in lhs_spec[2:]]
    win = [rhs_shape[d] for d in rhs_spec[2:]]
    padded = [dilate_dim(n, ld) + lo + hi
              for n, ld, (lo, hi) in zip(in_sp, lhs_dilation, padding, strict=True)]
    if any(p < 0 for p in padded):
        raise ValueError(f"{name}: negative padding is larger than the size of the "
                         f"corresponding dimension: got padding={tuple(map(tuple, padding))} "
                         f"for lhs spatial shape {tuple(in_sp)} (lhs_dilation "
                         f"{tuple(lhs_dilation)}; {desc})")
    spatial = conv_out_spatial(in_sp, win, window_strides, padding, lhs_dilation,
                               rhs_dilation)
    logical = (lhs_batch // bgc, rhs_out) + spatial
    out = [0] * len(logical)
    for j, d in enumerate(out_spec):
        out[d] = logical[j]
    return tuple(out)


def pad_crop(x, pads, first_spatial: int, value=0):
    """Pad (or, for negative pads, crop) the trailing spatial dimensions of x."""
    widths = [(0, 0)] * first_spatial + [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths, constant_values=value)
    index = [slice(None)] * first_spatial
    for (lo, hi), n in zip(pads, x.shape[first_spatial:], strict=True):
        index.append(slice(max(-lo, 0), n - max(-hi, 0)))
    return x[tuple(index)]


def dilate(x, rates, first_spatial: int, value=0):
    """Insert (rate - 1) copies of `value` between elements of the trailing dimensions."""
    if all(r == 1 for r in rates):
        return x
    shape = x.shape[:first_spatial] + tuple(
        dilate_dim(n, r) for n, r in zip(x.shape[first_spatial:], rates, strict=True))
    out = np.full(shape, value, x.dtype)
    out[(slice(None),) * first_spatial + tuple(slice(None, None, r) for r in rates)] = x
    return out


def window_views(x, window, strides, rhs_dilation, out_spatial, first_spatial: int):
    """For each window offset (row-major), the strided view of x that it reads."""
    views = []
    for offset in np.ndindex(*window):
        index = [slice(None)] * first_spatial
        for o, s, rd, n in zip(offset, strides, rhs_dilation, out_spatial, strict=True):
            start = o * rd
            index.append(slice(start, start + (n - 1) * s + 1, s))
        views.append(x[tuple(index)])
    return views


def _compute_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return np.dtype(np.float32)
    return dtype


def conv_numpy(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, out_dtype):
    """conv_general_dilated on NumPy arrays: im2col (one strided view per kernel offset)
    followed by one batched matrix multiply per group."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    ct = _compute_dtype(out_dtype)
    x = np.transpose(np.asarray(lhs), lhs_spec).astype(ct, copy=False)   # N, C, S...
    w = np.transpose(np.asarray(rhs), rhs_spec).astype(ct, copy=False)   # O, I, K...
    n_b, n_c = x.shape[:2]
    n_o, n_i = w.shape[:2]
    window = w.shape[2:]
    out_spatial = conv_out_spatial(x.shape[2:], window, window_strides, padding,
                                   lhs_dilation, rhs_dilation)
    fgc, bgc = feature_group_count, batch_group_count
    logical = (n_b // bgc, n_o) + out_spatial
    p = int(np.prod(out_spatial, dtype=np.int64))
    kp = int(np.prod(window, dtype=np.int64))
    if p == 0 or 0 in logical or n_i == 0 or kp == 0:
        res = np.zeros(logical, ct)
    else:
        x = pad_crop(dilate(x, lhs_dilation, 2), padding, 2)
        cols = np.stack(window_views(x, window, window_strides, rhs_dilation, out_spatial, 2),
                        axis=2)                                     # N, C, Kp, out...
        cols = cols.reshape(n_b, n_c, kp, p)
        wk = w.reshape(n_o, n_i, kp)
        if bgc > 1:
            nb = n_b // bgc
            cols = cols.reshape(bgc, nb, n_c * kp, p)               # groups split the batch
            wg = wk.reshape(bgc, 1, n_o // bgc, n_i * kp)
            res = np.matmul(wg, cols)                               # G, N', O/G, P
            res = np.moveaxis(res, 0, 1).reshape((nb, n_o) + out_spatial)
        else:
            g = fgc
            cols = cols.reshape(n_b, g, (n_c // g) * kp, p)
            wg = wk.reshape(g, n_o // g, n_i * kp)
            res = np.matmul(wg[None], cols).reshape((n_b, n_o) + out_spatial)
    return np.transpose(res, np.argsort(out_spec)).astype(out_dtype, copy=False)


def vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                    rhs_dilation):
    """Padding of the convolution that computes the lhs cotangent."""
    pads = []
    for n, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                           lhs_dilation, rhs_dilation, strict=True):
        before = dilate_dim(k, rd) - lo - 1
        after = dilate_dim(n, ld) + dilate_dim(k, rd) - 1 - dilate_dim(o, s) - before
        pads.append((before, after))
    return pads


def vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                    rhs_dilation):
    """Padding of the convolution that computes the rhs cotangent."""
    pads = []
    for n, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                           lhs_dilation, rhs_dilation, strict=True):
        hi = dilate_dim(o, s) - dilate_dim(n, ld) + dilate_dim(k, rd) - lo - 1
        pads.append((lo, hi))
    return pads


def dim_labels(dimension_numbers) -> str:
    """HLO dim_labels (e.g. `b01f_01io->b01f`) for convolution dimension numbers."""
    def labels(spec, first, second):
        chars = [""] * len(spec)
        chars[spec[0]], chars[spec[1]] = first, second
        for i, d in enumerate(spec[2:]):
            chars[d] = str(i)
        return "".join(chars)
    lhs, rhs, out = dimension_numbers
    return f"{labels(lhs, 'b', 'f')}_{labels(rhs, 'o', 'i')}->{labels(out, 'b', 'f')}"
