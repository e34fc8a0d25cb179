"""Approximate top-k: `approx_max_k` / `approx_min_k`, as jax.lax.

On TPU, XLA's ApproxTopK trades recall for speed. On other platforms JAX runs XLA's
fallback: an exact sort along the reduction dimension, keeping the first k entries (or,
with aggregate_to_topk=False, the first entries up to the size the TPU reduction would
produce). minijax follows that fallback: results are exact, ordered by value (descending
for max, ascending for min), ties in index order, with -0.0 equal to +0.0.
"""

from __future__ import annotations

import math

import numpy as np

from minijax import dtypes
from minijax.core import get_aval
from minijax.lax import elementwise
from minijax.lax.sorting import _take_along, top_k
from minijax.lax.structural import moveaxis
from minijax.lax.utils import weak_scalar

__all__ = ["approx_max_k", "approx_min_k", "approx_top_k_output_size"]

_TILING_RANK1, _TILING = 1024, 128   # XLA's TPU chunk / lane tiling of the reduction


def approx_top_k_output_size(input_size: int, rank: int, k: int, recall_target: float,
                             aggregate_to_topk: bool, input_size_override: int = -1) -> int:
    """Size of the reduction dimension of ApproxTopK's result (XLA's
    ApproxTopKReductionOutputSize): k when aggregating; otherwise the size of the TPU
    windowed reduction that reaches `recall_target`."""
    if aggregate_to_topk:
        return k
    tiling = _TILING_RANK1 if rank == 1 else _TILING
    if input_size <= tiling:
        return input_size
    if 0 <= input_size_override < input_size:
        raise ValueError(f"approx_top_k: reduction_input_size_override: {input_size_override} "
                         f"should be greater equals to operands[reduction_dim]: {input_size}")
    logical = input_size_override if input_size_override >= 0 else input_size
    if k == 1:
        log2_reduction = _log2_ceil(_ceil_div(logical, tiling))
    else:
        # Windows of size m keep a top-k element with probability (1 - 1/m)^(k-1) ~=
        # exp((1 - k) / m): the recall target fixes m.
        recall = float(np.float32(recall_target))
        m = min(max(int((1.0 - k) / math.log(recall)), tiling), logical)
        log2_reduction = _log2_floor(logical // m)
        if log2_reduction == 0:
            return input_size
        log2_reduction = min(log2_reduction, _log2_ceil(input_size // tiling))
    return _ceil_div(_ceil_div(input_size, tiling), 1 << log2_reduction) * tiling


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _log2_floor(v: int) -> int:
    return 0 if v == 0 else v.bit_length() - 1


def _log2_ceil(v: int) -> int:
    return 0 if v == 0 else (v - 1).bit_length()


def _approx_top_k(name, operand, k, reduction_dimension, recall_target,
                  reduction_input_size_override, aggregate_to_topk, largest):
    aval = get_aval(operand)
    k = int(k)
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if aval.ndim == 0:
        raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {aval.shape}")
    if not -aval.ndim <= reduction_dimension < aval.ndim:
        raise ValueError(f"{name}: reduction_dimension {reduction_dimension} is out of range "
                         f"for an operand of rank {aval.ndim} ({aval.str_short()})")
    axis = reduction_dimension % aval.ndim
    n = aval.shape[axis]
    if n < k:
        raise ValueError(f"k must be smaller than the size of reduction_dim {n}, got {k}")
    if not dtypes.is_float(aval.dtype):
        raise ValueError("operand must be a floating type")
    size = approx_top_k_output_size(n, aval.ndim, k, recall_target, aggregate_to_topk,
                                    int(reduction_input_size_override))
    if size > n:
        raise ValueError(f"{name}: the approximate output size {size} (from "
                         f"reduction_input_size_override={reduction_input_size_override}) "
                         f"exceeds the reduction dimension's size {n}")
    x = moveaxis(operand, axis, -1) if axis != aval.ndim - 1 else operand
    # The fallback compares with > (or <): -0.0 ties with +0.0, ties keep index order.
    key = elementwise.add(x, weak_scalar(0, aval.dtype))   # -0.0 + 0.0 is +0.0
    if not largest:
        key = elementwise.neg(key)
    key_values, indices = top_k(key, size)
    if 0 in aval.shape:   # nothing to gather (and the gather rejects empty operands)
        values = key_values if largest else elementwise.neg(key_values)
    else:
        values = _take_along(x, indices, aval.ndim - 1)
    if axis != aval.ndim - 1:
        values, indices = moveaxis(values, -1, axis), moveaxis(indices, -1, axis)
    return values, indices


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The k largest entries of `operand` along `reduction_dimension` (descending) and their
    int32 indices, as jax.lax.approx_max_k on CPU/GPU (exact)."""
    return _approx_top_k("approx_max_k", operand, k, reduction_dimension, recall_target,
                         reduction_input_size_override, aggregate_to_topk, True)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The k smallest entries of `operand` along `reduction_dimension` (ascending) and their
    int32 indices, as jax.lax.approx_min_k on CPU/GPU (exact)."""
    return _approx_top_k("approx_min_k", operand, k, reduction_dimension, recall_target,
                         reduction_input_size_override, aggregate_to_topk, False)

