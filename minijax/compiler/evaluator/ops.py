"""Shape, reduction, window and random-number opcodes for the reference evaluator.

Implementations take `(instr, operand_values, ctx)` where `ctx.call_elementwise(comp, arrays)`
applies a scalar computation to whole arrays (see evaluator.py) and return a value that the
evaluator casts to the instruction's shape.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.evaluator import numerics, random_bits
from minijax.compiler.evaluator.sort import sort_opcode, topk_opcode

# Reducers whose computation is one binary op of its two parameters run as numpy ufuncs.
_UFUNCS = {
    "add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}


def binary_ufunc(comp):
    """The numpy ufunc equal to a two-parameter scalar computation `op(p0, p1)`, or None."""
    params = comp.parameters
    root = comp.root
    if len(params) != 2 or root is None or root.opcode not in _UFUNCS:
        return None
    if len(root.operands) != 2 or {id(o) for o in root.operands} != {id(p) for p in params}:
        return None
    if root.shape.dims or root.shape.is_tuple:
        return None
    if root.shape.element_type == "bf16":
        return None  # per-step rounding matters; use the generic path
    if root.opcode in ("maximum", "minimum") and root.shape.dtype.kind == "f":
        return None  # np.maximum(0.0, -0.0) is -0.0; XLA's is 0.0 (the generic path)
    return _UFUNCS[root.opcode]


def _window_config(window: dict | None, rank: int):
    window = dict(window or {})
    size = tuple(window.get("size", (1,) * rank))
    stride = tuple(window.get("stride", (1,) * rank))
    pad = tuple(tuple(p) for p in window.get("pad", ((0, 0),) * rank))
    lhs_dilate = tuple(window.get("lhs_dilate", (1,) * rank))
    rhs_dilate = tuple(window.get("rhs_dilate", (1,) * rank))
    return size, stride, pad, lhs_dilate, rhs_dilate


def pad_array(x: np.ndarray, value, config) -> np.ndarray:
    """XLA pad: per dim (lo, hi, interior); negative lo/hi remove elements."""
    x = np.asarray(x)
    dilated_shape = tuple((n - 1) * (i + 1) + 1 if n > 0 else 0
                          for n, (_, _, i) in zip(x.shape, config))
    dilated = np.full(dilated_shape, value, dtype=x.dtype)
    dilated[tuple(slice(None, None, i + 1) for (_, _, i) in config)] = x
    final = tuple(lo + d + hi for d, (lo, hi, _) in zip(dilated_shape, config))
    if any(f < 0 for f in final):
        raise ValueError(f"padding {config} of shape {x.shape} gives negative size {final}")
    out = np.full(final, value, dtype=x.dtype)
    src, dst = [], []
    for d, (lo, hi, _) in zip(dilated_shape, config):
        s0, s1 = max(-lo, 0), d - max(-hi, 0)
        if s1 <= s0:
            return out
        src.append(slice(s0, s1))
        dst.append(slice(max(lo, 0), max(lo, 0) + s1 - s0))
    out[tuple(dst)] = dilated[tuple(src)]
    return out


def _window_out_dims(padded_shape, size, stride, rhs_dilate):
    out = []
    for p, k, s, rd in zip(padded_shape, size, stride, rhs_dilate):
        span = (k - 1) * rd + 1
        out.append((p - span) // s + 1 if p >= span and k > 0 else 0)
    return tuple(out)


def _window_slice(offset, stride, rhs_dilate, out_dims):
    return tuple(slice(w * rd, w * rd + s * (o - 1) + 1, s)
                 for w, s, rd, o in zip(offset, stride, rhs_dilate, out_dims))


# ------------------------------------------------------------------------- shape opcodes


def _iota(instr, ops, ctx):
    dims = instr.shape.dims
    d = int(instr.attrs.get("iota_dimension", 0))
    values = np.arange(dims[d], dtype=np.int64).astype(instr.shape.dtype)
    view = [1] * len(dims)
    view[d] = dims[d]
    return np.broadcast_to(values.reshape(view), dims)


def _broadcast(instr, ops, ctx):
    x = np.asarray(ops[0])
    out_dims = instr.shape.dims
    dims = tuple(instr.attrs.get("dimensions", ()))
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = np.transpose(x, order) if x.ndim else x
    view = [1] * len(out_dims)
    for i in order:
        view[dims[i]] = out_dims[dims[i]]
    return np.broadcast_to(x.reshape(view), out_dims)


def _reshape(instr, ops, ctx):
    return np.asarray(ops[0]).reshape(instr.shape.dims)


def _bitcast(instr, ops, ctx):
    """Reinterpret the physical (layout-ordered) element sequence with the new shape."""
    x = np.asarray(ops[0])
    src = instr.operands[0].shape if instr.operands else None
    src_major = tuple(reversed(src.minor_to_major)) if src is not None else tuple(range(x.ndim))
    physical = np.transpose(x, src_major).ravel() if x.ndim else x.ravel()
    out = instr.shape
    out_major = tuple(reversed(out.minor_to_major))
    physical = numerics.bitcast_bits(physical, out)
    arr = physical.reshape(tuple(out.dims[d] for d in out_major))
    return np.transpose(arr, np.argsort(out_major)) if out.rank else arr.reshape(())


def _transpose(instr, ops, ctx):
    return np.transpose(np.asarray(ops[0]), tuple(instr.attrs["dimensions"]))


def _slice(instr, ops, ctx):
    return np.asarray(ops[0])[tuple(slice(s, l, st) for s, l, st in instr.attrs["slice"])]


def _start_indices(ops, rank):
    if len(ops) == 1 and np.asarray(ops[0]).ndim == 1 and rank != 0:
        return [int(v) for v in np.asarray(ops[0])]
    return [int(np.asarray(v)) for v in ops]


def _dynamic_slice(instr, ops, ctx):
    x = np.asarray(ops[0])
    sizes = tuple(instr.attrs.get("dynamic_slice_sizes", instr.shape.dims))
    starts = _start_indices(ops[1:], x.ndim)
    starts = [min(max(s, 0), n - k) for s, n, k in zip(starts, x.shape, sizes)]
    return x[tuple(slice(s, s + k) for s, k in zip(starts, sizes))]


def _dynamic_update_slice(instr, ops, ctx):
    x, update = np.asarray(ops[0]), np.asarray(ops[1])
    starts = _start_indices(ops[2:], x.ndim)
    starts = [min(max(s, 0), n - k) for s, n, k in zip(starts, x.shape, update.shape)]
    out = x.copy()
    out[tuple(slice(s, s + k) for s, k in zip(starts, update.shape))] = update
    return out


def _concatenate(instr, ops, ctx):
    dim = instr.attrs["dimensions"]
    dim = dim[0] if isinstance(dim, (tuple, list)) else dim
    return np.concatenate([np.asarray(o) for o in ops], axis=int(dim))


def _pad(instr, ops, ctx):
    return pad_array(ops[0], np.asarray(ops[1]), instr.attrs["padding"])


def _reverse(instr, ops, ctx):
    return np.flip(np.asarray(ops[0]), axis=tuple(instr.attrs.get("dimensions", ())))


# ---------------------------------------------------------------------------- reductions


def _reduce(instr, ops, ctx):
    n = len(ops) // 2
    xs = [np.asarray(v) for v in ops[:n]]
    inits = [np.asarray(v) for v in ops[n:]]
    dims = tuple(int(d) for d in instr.attrs.get("dimensions", ()))
    comp = instr.called["to_apply"]
    kept = [d for d in range(xs[0].ndim) if d not in dims]
    out_shape = tuple(xs[0].shape[d] for d in kept)
    k = int(np.prod([xs[0].shape[d] for d in dims], dtype=np.int64))
    flat = [np.transpose(x, kept + list(dims)).reshape(out_shape + (k,)) for x in xs]
    ufunc = binary_ufunc(comp) if n == 1 else None
    if k == 0:
        results = [np.broadcast_to(i, out_shape) for i in inits]
    elif ufunc is not None:
        x = flat[0]
        if ufunc in (np.add, np.multiply) and x.dtype.kind in "fc" and x.dtype.itemsize < 16:
            # The reference accumulates float sums/products in double precision and rounds
            # once, so it is at least as accurate as any backend's float32 accumulation.
            wide = np.complex128 if x.dtype.kind == "c" else np.float64
            partial = ufunc.reduce(x.astype(wide), axis=-1)
            results = [ufunc(inits[0].astype(wide), partial).astype(x.dtype)]
        else:
            partial = ufunc.reduce(x, axis=-1, dtype=x.dtype)
            results = [ufunc(inits[0], partial)]
    else:
        vals = flat
        while k > 1:  # pairwise tree: log2(k) batched calls of the reducer
            h = k // 2
            combined = ctx.call_elementwise(comp, [v[..., :h] for v in vals]
                                            + [v[..., h:2 * h] for v in vals])
            if k % 2:
                combined = [np.concatenate([c, v[..., 2 * h:]], axis=-1)
                            for c, v in zip(combined, vals)]
            vals, k = combined, h + k % 2
        results = ctx.call_elementwise(comp, inits + [v[..., 0] for v in vals])
        results = [np.broadcast_to(r, out_shape) for r in results]
    return results[0] if n == 1 else tuple(results)


def _reduce_window(instr, ops, ctx):
    n = len(ops) // 2
    xs = [np.asarray(v) for v in ops[:n]]
    inits = [np.asarray(v) for v in ops[n:]]
    rank = xs[0].ndim
    size, stride, pad, lhs_dilate, rhs_dilate = _window_config(instr.attrs.get("window"), rank)
    config = [(lo, hi, ld - 1) for (lo, hi), ld in zip(pad, lhs_dilate)]
    padded = [pad_array(x, i, config) for x, i in zip(xs, inits)]
    out_dims = _window_out_dims(padded[0].shape, size, stride, rhs_dilate)
    acc = [np.broadcast_to(i, out_dims).copy() for i in inits]
    if 0 in out_dims:
        return acc[0] if n == 1 else tuple(acc)
    comp = instr.called["to_apply"]
    ufunc = binary_ufunc(comp) if n == 1 else None
    for offset in np.ndindex(*size):
        sl = _window_slice(offset, stride, rhs_dilate, out_dims)
        views = [p[sl] for p in padded]
        if ufunc is not None:
            acc = [ufunc(acc[0], views[0])]
        else:
            acc = ctx.call_elementwise(comp, acc + views)
    return acc[0] if n == 1 else tuple(acc)


def combine_into(outs: list[np.ndarray], targets: np.ndarray, updates: list[np.ndarray],
                 comp, ctx) -> None:
    """outs[t] = comp(outs[t], u) for each (t, u) in order; flat `outs` are updated in place.

    Repeated targets are applied in their order of appearance, in rounds of distinct targets.
    """
    if targets.size == 0:
        return
    params = comp.parameters
    ufunc = binary_ufunc(comp) if len(outs) == 1 else None
    if ufunc is not None:
        ufunc.at(outs[0], targets, updates[0])
        return
    if comp.root is params[len(outs)] and len(outs) == 1:  # overwrite: the last write wins
        rev = targets[::-1]
        uniq, first = np.unique(rev, return_index=True)
        outs[0][uniq] = updates[0][::-1][first]
        return
    order = np.argsort(targets, kind="stable")
    sorted_t = targets[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_t)) + 1])
    lengths = np.diff(np.concatenate([starts, [len(sorted_t)]]))
    rank_sorted = np.arange(len(sorted_t)) - np.repeat(starts, lengths)
    rank = np.empty_like(rank_sorted)
    rank[order] = rank_sorted
    for r in range(int(rank.max()) + 1):
        sel = rank == r
        t = targets[sel]
        results = ctx.call_elementwise(comp, [o[t] for o in outs] + [u[sel] for u in updates])
        for o, v in zip(outs, results):
            o[t] = v


def _select_and_scatter(instr, ops, ctx):
    x, source, init = (np.asarray(v) for v in ops)
    size, stride, pad, _, _ = _window_config(instr.attrs.get("window"), x.ndim)
    config = [(lo, hi, 0) for lo, hi in pad]
    xp = pad_array(x, np.zeros((), x.dtype), config)
    ids = pad_array(np.arange(x.size, dtype=np.int64).reshape(x.shape), -1, config)
    out_dims = source.shape
    select = instr.called["select"]
    sel_val = sel_idx = None
    has = np.zeros(out_dims, dtype=bool)
    for offset in np.ndindex(*size):
        sl = _window_slice(offset, stride, (1,) * x.ndim, out_dims)
        cand, cid = xp[sl], ids[sl]
        if cand.shape != out_dims:
            raise ValueError(f"source shape {out_dims} does not match the window output "
                             f"shape {cand.shape}")
        valid = cid >= 0
        if sel_val is None:
            sel_val, sel_idx = cand.copy(), cid.copy()
            has = valid.copy()
            continue
        keep = ctx.call_elementwise(select, [sel_val, cand])[0]
        take = valid & (~has | ~keep.astype(bool))
        sel_val = np.where(take, cand, sel_val)
        sel_idx = np.where(take, cid, sel_idx)
        has |= take
    out = np.broadcast_to(init, x.shape).astype(x.dtype).ravel()
    if sel_idx is not None:
        combine_into([out], sel_idx[has], [source[has].astype(out.dtype)],
                     instr.called["scatter"], ctx)
    return out.reshape(x.shape)


# --------------------------------------------------------------------------- random bits


_RNG = np.random.default_rng(0)


def _rng(instr, ops, ctx):
    a, b = np.asarray(ops[0]), np.asarray(ops[1])
    dims = instr.shape.dims
    if instr.attrs.get("distribution", "rng_uniform").lower().endswith("normal"):
        return _RNG.normal(a, b, size=dims)
    if instr.shape.dtype.kind in "iu":
        return _RNG.integers(a, b, size=dims, endpoint=False)
    return _RNG.uniform(a, b, size=dims)


OPCODES = {
    "iota": _iota,
    "broadcast": _broadcast,
    "reshape": _reshape,
    "bitcast": _bitcast,
    "transpose": _transpose,
    "slice": _slice,
    "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice,
    "concatenate": _concatenate,
    "pad": _pad,
    "reverse": _reverse,
    "reduce": _reduce,
    "reduce-window": _reduce_window,
    "select-and-scatter": _select_and_scatter,
    "sort": sort_opcode,
    "topk": topk_opcode,
    "rng-bit-generator": random_bits.rng_bit_generator,
    "rng": _rng,
}
