"""Convolution and matmul conveniences of jax.lax built on conv_general_dilated and
dot_general: conv_transpose, conv_general_dilated_patches, batch_matmul."""

from __future__ import annotations

import math

import numpy as np

from minijax.core import get_aval
from minijax.lax.conv_util import conv_dimension_numbers
from minijax.lax.dot_conv import Precision, conv_general_dilated, dot_general
from minijax.lax.elementwise_int import eq
from minijax.lax.shape_helpers import asarray
from minijax.lax.structural import (
    broadcasted_iota,
    convert_element_type,
    reshape,
    rev,
    transpose,
)

_DEFAULT_DN = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
               5: ("NHWDC", "HWDIO", "NHWDC")}


def _transpose_padding(k: int, s: int, padding) -> tuple[int, int]:
    """(before, after) padding of one spatial dim of a transposed convolution, for the
    padding of the forward convolution it transposes (JAX's rule)."""
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else math.ceil(pad_len / 2)
    elif padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, (tuple, list)):
        pads = tuple(k - int(p) - 1 for p in padding)
        pad_a, pad_len = pads[0], sum(pads)
    else:
        raise ValueError(f"conv_transpose: invalid padding mode {padding!r}")
    return pad_a, pad_len - pad_a


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None,
                   preferred_element_type=None, use_consistent_padding: bool = False):
    """Transposed convolution: `lhs` dilated by `strides` convolved with `rhs`.

    `padding` is 'SAME', 'VALID' or explicit (lo, hi) pairs; explicit pairs are used as the
    padding of the dilated convolution itself, unless `use_consistent_padding` (then they are
    the forward convolution's padding, as PyTorch does). With `transpose_kernel` the kernel's
    spatial axes are flipped and its I/O axes swapped (the gradient of conv_general_dilated).
    Default layouts are NC / NHC / NHWC / NHWDC with kernels IO / HIO / HWIO / HWDIO.
    """
    lhs, rhs = asarray(lhs), asarray(rhs)
    ndim = get_aval(lhs).ndim
    if dimension_numbers is None:
        if ndim not in _DEFAULT_DN:
            raise ValueError(f"conv_transpose: no default dimension_numbers for rank-{ndim} "
                             "operands; pass dimension_numbers")
        dimension_numbers = _DEFAULT_DN[ndim]
    dn = conv_dimension_numbers(get_aval(lhs).shape, get_aval(rhs).shape, dimension_numbers)
    rshape = get_aval(rhs).shape
    k_spatial = [rshape[d] for d in dn.rhs_spec[2:]]
    if rhs_dilation is None:
        rhs_dilation = (1,) * (ndim - 2)
    strides = tuple(int(s) for s in strides)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        if isinstance(padding, str):
            per_dim = [padding] * len(strides)
        else:
            per_dim = [tuple(p) for p in padding]
        eff = [(k - 1) * r + 1 for k, r in zip(k_spatial, rhs_dilation, strict=True)]
        pads = [_transpose_padding(k, s, p) for k, s, p in zip(eff, strides, per_dim,
                                                                strict=True)]
    elif isinstance(padding, str):
        raise ValueError(f"conv_transpose: padding must be 'SAME', 'VALID' or (lo, hi) "
                         f"pairs, got {padding!r}")
    else:
        pads = [tuple(p) for p in padding]
    if transpose_kernel:
        rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(ndim))
        o, i = dn.rhs_spec[0], dn.rhs_spec[1]
        perm[o], perm[i] = perm[i], perm[o]
        rhs = transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * (ndim - 2), pads, lhs_dilation=strides,
                                rhs_dilation=rhs_dilation, dimension_numbers=dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                 lhs_dilation=None, rhs_dilation=None,
                                 dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The patches conv_general_dilated would see: the output's feature dimension holds
    each receptive field flattened in the order (channel, *filter_shape), so its size is
    C * prod(filter_shape)."""
    lhs = asarray(lhs)
    filter_shape = tuple(int(d) for d in filter_shape)
    lshape = get_aval(lhs).shape
    dn = conv_dimension_numbers(lshape, (1, 1) + filter_shape, dimension_numbers)
    spatial = math.prod(filter_shape)
    channels = lshape[dn.lhs_spec[1]]
    dtype = get_aval(lhs).dtype
    # kernel [C * spatial, 1, *filter_shape]: output feature c * spatial + j picks channel c
    # (via feature groups) at the j-th position of the window
    rows = broadcasted_iota(np.int32, (channels, spatial, spatial), 1)
    cols = broadcasted_iota(np.int32, (channels, spatial, spatial), 2)
    kernel = convert_element_type(eq(rows, cols), dtype)
    kernel = reshape(kernel, (channels * spatial, 1) + filter_shape)
    kernel = _place_axes(kernel, dn.rhs_spec[0], dn.rhs_spec[1])
    if precision is not None and not isinstance(precision, tuple):
        precision = (precision, Precision.DEFAULT)
    return conv_general_dilated(lhs, kernel, window_strides, padding,
                                lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                                dimension_numbers=dn, feature_group_count=channels,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def _place_axes(x, out_axis: int, in_axis: int):
    """Move axes 0 (O) and 1 (I) of a kernel to positions out_axis and in_axis."""
    ndim = get_aval(x).ndim
    rest = iter(range(2, ndim))
    perm = []
    for pos in range(ndim):
        perm.append(0 if pos == out_axis else 1 if pos == in_axis else next(rest))
    return transpose(x, perm)


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product of [..., m, k] and [..., k, n] with equal batch dims."""
    lhs, rhs = asarray(lhs), asarray(rhs)
    ls, rs = get_aval(lhs).shape, get_aval(rhs).shape
    if len(ls) < 2 or len(ls) != len(rs) or ls[:-2] != rs[:-2] or ls[-1] != rs[-2]:
        raise TypeError(f"batch_matmul requires operands of equal rank >= 2 with matching "
                        f"batch dims and contraction, got shapes {ls} and {rs}")
    batch = tuple(range(len(ls) - 2))
    return dot_general(lhs, rhs, (((len(ls) - 1,), (len(rs) - 2,)), (batch, batch)),
                       precision=precision)
