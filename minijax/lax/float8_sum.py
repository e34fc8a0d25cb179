"""Sums of float8 arrays the way XLA's CPU compiler computes them, so that results match
JAX's bit for bit.

XLA adds float8 values in float16 and rounds every partial sum back to the float8 type (the
accumulator *is* float8), and its tree-reduction rewrite splits a reduction of more than 32
elements into windows of 32 (the padding split evenly between both ends), each summed in
order from 0, then reduces the window sums the same way until at most 32 remain, which are
summed in order. The order matters: a float8 accumulator loses low bits at every step.

(bfloat16/float16 sums accumulate in float32 and round once; ``lax.reduce_sum`` handles them
as every other dtype.)
"""

from __future__ import annotations

import math

import numpy as np

from minijax import dtypes
from minijax.core import get_aval
from minijax.lax import reductions
from minijax.lax.elementwise import add
from minijax.lax.slicing import index_in_dim, pad
from minijax.lax.structural import broadcast_in_dim, convert_element_type, reshape, transpose

# float8 types whose values float16 holds exactly (XLA's compute type for their arithmetic)
ROUNDED_ACCUMULATION = frozenset({dtypes.float8_e4m3fn, dtypes.float8_e5m2,
                                  dtypes.float8_e4m3fnuz, dtypes.float8_e5m2fnuz,
                                  dtypes.float8_e4m3b11fnuz, dtypes.float8_e4m3,
                                  dtypes.float8_e3m4})
WINDOW = 32


def _round(v, dtype):
    """Round float32 partial sums as XLA does: to float16 (its add), then to ``dtype``."""
    f16 = convert_element_type(v, np.float16)
    return convert_element_type(convert_element_type(f16, dtype), np.float32)


def _ordered_sum(v, dtype):
    """Sum float32 ``v`` over its last axis in order from 0, rounding each partial sum."""
    shape = get_aval(v).shape
    acc = broadcast_in_dim(np.float32(0), shape[:-1], ())
    for j in range(shape[-1]):
        acc = _round(add(acc, index_in_dim(v, j, axis=len(shape) - 1, keepdims=False)), dtype)
    return acc


def float8_reduce_sum(operand, axes: tuple[int, ...]):
    """``reduce_sum(operand, axes)`` for a float8 ``operand``, in XLA's order and rounding."""
    aval = get_aval(operand)
    dtype = aval.dtype
    kept = [d for d in range(aval.ndim) if d not in axes]
    kept_shape = tuple(aval.shape[d] for d in kept)
    nk = len(kept_shape)
    v = operand
    if tuple(kept) + tuple(axes) != tuple(range(aval.ndim)):
        v = transpose(v, (*kept, *axes))
    v = convert_element_type(v, np.float32)
    sizes = [aval.shape[d] for d in axes]
    while any(n > WINDOW for n in sizes):
        # Dimensions longer than WINDOW are cut into windows of WINDOW (padded with zeros,
        # split evenly); shorter ones are taken whole. Each window is summed in row-major
        # order, and the window sums are reduced again.
        config, split_shape, outer, inner = [(0, 0, 0)] * nk, list(kept_shape), [], []
        for n in sizes:
            if n > WINDOW:
                windows = -(-n // WINDOW)
                total = windows * WINDOW - n
                config.append((total // 2, total - total // 2, 0))
                split_shape += [windows, WINDOW]
            else:
                config.append((0, 0, 0))
                split_shape += [1, n]
            outer.append(len(split_shape) - 2)
            inner.append(len(split_shape) - 1)
        v = reshape(pad(v, np.float32(0), config), tuple(split_shape))
        v = transpose(v, (*range(nk), *outer, *inner))
        sizes = [split_shape[i] for i in outer]
        v = reshape(v, (*kept_shape, *sizes, math.prod(split_shape[i] for i in inner)))
        v = _ordered_sum(v, dtype)
    v = reshape(v, (*kept_shape, math.prod(sizes)))
    return convert_element_type(_ordered_sum(v, dtype), dtype)


reductions.NARROW_ACCUMULATION_SUMS.update(
    {np.dtype(dt): float8_reduce_sum for dt in ROUNDED_ACCUMULATION})
