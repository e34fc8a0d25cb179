"""Fast paths for the gather and scatter patterns jnp indexing emits (x[i], x[:, i], take,
take_along_axis, .at[i].set/add/mul/min/max).

They apply when every operand dimension is either indexed with a one-wide slice
(`start_index_map` / `scatter_dims_to_operand_dims`) or taken whole, the indexed dimensions
are adjacent, and there are no batching dimensions. The indexed dimensions then merge into
one, and gather is one `np.take` of flattened positions; scatter combines rows grouped by
target. XLA semantics are kept: gather clamps each start into range, scatter skips updates
whose window does not fit. Anything else returns None and takes the general path.
"""

from __future__ import annotations

import numpy as np

# Reducer opcodes whose repeated application to one target is a ufunc reduction.
_REDUCERS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
             "minimum": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
             "xor": np.bitwise_xor}


def _split_dims(shape, slice_sizes, indexed: list[int]):
    """(indexed dims in order, their first dim) when the pattern applies, else None."""
    gdims = sorted(d for d in range(len(shape))
                   if d in indexed and slice_sizes[d] == 1 and shape[d] != 1)
    for d in range(len(shape)):
        if d not in gdims and slice_sizes[d] != shape[d]:
            return None
    if gdims and gdims != list(range(gdims[0], gdims[-1] + 1)):
        return None
    return gdims


def _flat_positions(vectors, indexed, gdims, shape, clamp: bool):
    """Row-major positions inside the merged indexed dims, and (scatter) the valid mask."""
    flat = np.zeros(vectors.shape[:-1], np.int64)
    valid = np.ones(vectors.shape[:-1], bool)
    for d in gdims:
        start = vectors[..., indexed.index(d)]
        if clamp:
            start = np.clip(start, 0, shape[d] - 1)
        else:
            valid &= (start >= 0) & (start < shape[d])
        flat = flat * shape[d] + start
    if not clamp:
        # Whole-dimension windows fit only when their start is 0.
        for k, d in enumerate(indexed):
            if d not in gdims:
                valid &= vectors[..., k] == 0
    return flat, valid


def fast_gather(operand, vectors, attrs, slice_sizes):
    """XLA gather for the simple patterns (vectors: indices as (batch..., K)), else None."""
    if attrs.get("operand_batching_dims") or operand.size == 0 or vectors.size == 0:
        return None
    offset_dims = sorted(int(d) for d in attrs.get("offset_dims", ()))
    collapsed = {int(d) for d in attrs.get("collapsed_slice_dims", ())}
    start_map = [int(d) for d in attrs.get("start_index_map", ())]
    shape = operand.shape
    gdims = _split_dims(shape, slice_sizes, start_map)
    if gdims is None:
        return None
    bshape = vectors.shape[:-1]
    flat, _ = _flat_positions(vectors, start_map, gdims, shape, clamp=True)
    g0 = gdims[0] if gdims else 0
    g1 = gdims[-1] + 1 if gdims else 0
    merged = operand.reshape(shape[:g0] + (-1,) + shape[g1:])
    taken = np.take(merged, flat if gdims else np.zeros(bshape, np.int64), axis=g0)
    # taken: (dims before g0..., batch..., dims from g1...); window dims are the operand
    # dims not collapsed, in order, so rebuild them with their (possibly 1) sizes.
    before = [d for d in range(g0) if d not in collapsed]
    inner = [d for d in range(g0, g1) if d not in collapsed]
    after = [d for d in range(g1, len(shape)) if d not in collapsed]
    nb = len(bshape)
    full = (tuple(shape[d] for d in before) + bshape + (1,) * len(inner)
            + tuple(shape[d] for d in after))
    taken = taken.reshape(full)
    window_axes = (list(range(len(before)))
                   + list(range(len(before) + nb, len(full))))
    batch_axes = list(range(len(before), len(before) + nb))
    perm, wi, bi = [], 0, 0
    for p in range(len(full)):
        if p in offset_dims:
            perm.append(window_axes[wi])
            wi += 1
        else:
            perm.append(batch_axes[bi])
            bi += 1
    return np.transpose(taken, perm)


def _group_rows(flat):
    """Stable order of targets, the sorted targets' group starts and their unique targets."""
    order = np.argsort(flat, kind="stable")
    sorted_t = flat[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_t[1:] != sorted_t[:-1]]))
    return order, starts, sorted_t[starts]


def fast_scatter(operand, vectors, update, attrs, comp):
    """XLA scatter of one operand for the simple patterns, else None.

    `update` is laid out as (batch..., window dims...)."""
    if attrs.get("input_batching_dims") or operand.size == 0:
        return None
    root, params = comp.root, comp.parameters
    if len(params) != 2:
        return None
    if root is params[1]:
        reducer = None
    elif (root.opcode in _REDUCERS and len(root.operands) == 2
          and {id(o) for o in root.operands} == {id(p) for p in params}
          and root.shape.element_type != "bf16"):
        reducer = _REDUCERS[root.opcode]
        if reducer in (np.add, np.multiply) and operand.dtype.kind == "b":
            return None
    else:
        return None
    inserted = {int(d) for d in attrs.get("inserted_window_dims", ())}
    to_operand = [int(d) for d in attrs.get("scatter_dims_to_operand_dims", ())]
    shape = operand.shape
    window = [d for d in range(len(shape)) if d not in inserted]
    bshape = vectors.shape[:-1]
    wsizes = update.shape[len(bshape):]
    sizes = [wsizes[window.index(d)] if d in window else 1 for d in range(len(shape))]
    gdims = _split_dims(shape, sizes, to_operand)
    if gdims is None:
        return None
    flat, valid = _flat_positions(vectors, to_operand, gdims, shape, clamp=False)
    g0 = gdims[0] if gdims else 0
    g1 = gdims[-1] + 1 if gdims else 0
    # Rows: (batch, dims before g0, dims from g1); the indexed window dims are all 1 wide.
    rows = update.reshape((int(np.prod(bshape, dtype=np.int64)),) + tuple(shape[:g0])
                          + tuple(shape[g1:]))
    flat, valid = flat.reshape(-1), valid.reshape(-1)
    if not valid.all():
        rows, flat = rows[valid], flat[valid]
    out = np.array(operand, copy=True)
    if flat.size == 0:
        return out
    merged = np.moveaxis(out.reshape(shape[:g0] + (-1,) + shape[g1:]), g0, 0)
    if not gdims:
        flat = np.zeros_like(flat)
    order, starts, targets = _group_rows(flat)
    if reducer is None:  # overwrite: the last update to a target wins
        ends = np.concatenate([starts[1:], [len(order)]]) - 1
        merged[targets] = rows[order[ends]]
    elif len(starts) == len(flat):  # distinct targets
        merged[flat] = reducer(merged[flat], rows.astype(out.dtype, copy=False))
    elif reducer in (np.add, np.multiply) and out.dtype.kind in "fc":
        rows = rows.astype(out.dtype, copy=False)
        _apply_in_rounds(merged, flat, rows, order, starts, reducer)
    else:  # exact in any order: integer wrap-around, min/max, bitwise
        grouped = rows[order].astype(out.dtype, copy=False)
        combined = reducer.reduceat(grouped, starts, axis=0, dtype=out.dtype)
        merged[targets] = reducer(merged[targets], combined)
    return out


def _apply_in_rounds(merged, flat, rows, order, starts, reducer, max_rounds: int = 32):
    """merged[t] = reducer(merged[t], row) in update order (float rounding depends on it):
    round r applies every target's r-th update, all distinct targets at once."""
    lengths = np.diff(np.concatenate([starts, [len(order)]]))
    if int(lengths.max()) > max_rounds:
        reducer.at(merged, flat, rows)
        return
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order)) - np.repeat(starts, lengths)
    by_round = np.argsort(rank, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(rank))])
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        pick = by_round[lo:hi]
        t = flat[pick]
        merged[t] = reducer(merged[t], rows[pick])
