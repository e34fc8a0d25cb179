"""Scaled dot-product attention (JAX's `jax.nn.dot_product_attention`, its 'xla'
implementation) with grouped-query attention, boolean and additive masks, causal and
local-window masks and per-batch sequence lengths."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minijax import dtypes, lax
from minijax import numpy as jnp
from minijax.nn.functions import logsumexp, softmax

__all__ = ["dot_product_attention"]


def _ensure_4d(t):
    t = jnp.asarray(t)
    return jnp.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t


def _check(t, shape: Sequence[int], dtype, name: str):
    if t is None:
        return
    if t.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
    if any(want != -1 and got != want for got, want in zip(t.shape, shape, strict=True)):
        raise ValueError(f"{name} shape should be {list(shape)}: but got {tuple(t.shape)}")


def _large_negative(dtype):
    # Softmax runs in float32, so the fill value stays finite there even for float64 logits.
    big = min(float(dtypes.finfo(dtype).max), float(np.finfo(np.float32).max))
    return jnp.asarray(-0.7 * big, dtype=dtype)


def _logits_mask(t_len, s_len, mask, is_causal, q_seqlen, kv_seqlen, window):
    """The combined boolean mask, broadcastable to (B, N, T, S), or None for no mask."""
    masks = [] if mask is None else [mask]
    q_pos = jnp.arange(t_len)[:, None]
    k_pos = jnp.arange(s_len)[None, :]
    if is_causal:
        masks.append((q_pos >= k_pos)[None, None])
    if window is not None:
        left, right = window
        masks.append(((q_pos <= k_pos + left) & (q_pos >= k_pos - right))[None, None])
    if q_seqlen is not None:
        masks.append((jnp.arange(t_len)[None, :, None] < q_seqlen[:, None, None])[:, None])
    if kv_seqlen is not None:
        masks.append((jnp.arange(s_len)[None, None, :] < kv_seqlen[:, None, None])[:, None])
    if not masks:
        return None
    out = masks[0]
    for m in masks[1:]:
        out = jnp.logical_and(out, m)
    return out


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal: bool = False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual: bool = False):
    """softmax(Q K^T * scale + bias, masked) V per head.

    Shapes use JAX's letters: query (B, T, N, H) or (T, N, H); key and value (B, S, K, H) or
    (S, K, H), where K divides N (K < N is grouped-query attention: query head n uses
    key/value head n // (N // K)). bias and mask broadcast to (B, N, T, S); mask is boolean,
    True where attention is allowed. scale defaults to 1 / sqrt(H). query_seq_lengths and
    key_value_seq_lengths (int32, shape (B,)) mask padding (outputs past a query's length
    are 0). local_window_size (left, right) or an int restricts each query to nearby keys.
    Logits are computed in at least float32 and the softmax in float32. Only the 'xla'
    implementation exists (None selects it). With return_residual, also returns the
    logsumexp of the masked logits, shape (B, T, N)."""
    out_shape = tuple(jnp.asarray(query).shape)
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = None if bias is None else _ensure_4d(bias)
    mask = None if mask is None else _ensure_4d(mask)
    q_seqlen = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
    kv_seqlen = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    b, s_len, n_kv, h = k.shape
    _check(v, [b, s_len, n_kv, h], k.dtype, "value")
    _check(q, [b, -1, -1, h], k.dtype, "query")
    _check(mask, [-1] * 4, np.dtype(bool), "mask")
    _check(bias, [-1] * 4, None, "bias")
    _check(q_seqlen, [b], np.dtype(np.int32), "query_seq_lengths")
    _check(kv_seqlen, [b], np.dtype(np.int32), "key_value_seq_lengths")
    n_heads = q.shape[2]
    if n_heads % n_kv != 0:
        raise ValueError("The number of query heads must be a multiple of key/value heads, "
                         f"but got {n_heads} vs {n_kv}")
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NotImplementedError("dot_product_attention: minijax has no cuDNN "
                                      "implementation; use implementation=None or 'xla'")
        raise ValueError(f"Unsupported implementation option: {implementation}")
    scale = 1.0 / np.sqrt(h) if scale is None else scale
    t_len, groups = q.shape[1], n_heads // n_kv

    logits_dtype = jnp.promote_types(q.dtype, np.float32)
    # Query head n = kv_head * groups + g, as a reshape of the N axis into (K, G).
    qg = jnp.reshape(q, (b, t_len, n_kv, groups, h))
    logits = jnp.einsum("BTKGH,BSKH->BKGTS", qg, k, preferred_element_type=logits_dtype)
    logits = jnp.reshape(logits, (b, n_heads, t_len, s_len))
    logits = logits * jnp.asarray(scale, dtype=logits_dtype)
    if bias is not None:
        logits = (logits + bias).astype(logits_dtype)
    combined = _logits_mask(t_len, s_len, mask, is_causal, q_seqlen, kv_seqlen,
                            local_window_size)
    if combined is not None:
        logits = jnp.where(combined, logits, _large_negative(logits_dtype))
    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(k.dtype)
    probs = jnp.reshape(probs, (b, n_kv, groups, t_len, s_len))
    encoded = jnp.einsum("BKGTS,BSKH->BTKGH", probs, v)
    encoded = jnp.reshape(encoded, (b, t_len, n_heads, h))
    if q_seqlen is not None:
        valid = jnp.arange(t_len)[None, :] < q_seqlen[:, None]
        encoded = encoded * valid[:, :, None, None].astype(encoded.dtype)
    encoded = jnp.reshape(encoded, out_shape)
    if not return_residual:
        return encoded
    lse = jnp.transpose(logsumexp(logits, axis=-1).astype(k.dtype), (0, 2, 1))
    return encoded, jnp.reshape(lax.stop_gradient(lse), out_shape[:-1])
