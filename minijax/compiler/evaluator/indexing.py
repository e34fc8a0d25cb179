"""Dot, convolution, gather, scatter, cholesky and triangular-solve for the reference
evaluator (XLA semantics).

Float dots and convolutions accumulate in float64 (complex128) and round once to the result
type; integer ones wrap in the result type.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.evaluator.linalg import solve_triangular_left
from minijax.compiler.evaluator.ops import combine_into, pad_array
from minijax.compiler.evaluator.take import fast_gather, fast_scatter


def _compute_dtype(out_dtype: np.dtype) -> np.dtype:
    if out_dtype.kind == "f":
        return np.dtype(np.float64)
    if out_dtype.kind == "c":
        return np.dtype(np.complex128)
    if out_dtype == np.bool_:
        return np.dtype(np.int64)
    return out_dtype


def _finish(result: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    if out_dtype == np.bool_:
        return result != 0
    return result.astype(out_dtype)


def _dot(instr, ops, ctx):
    lhs, rhs = np.asarray(ops[0]), np.asarray(ops[1])
    a = instr.attrs
    lb = [int(d) for d in a.get("lhs_batch_dims", ())]
    rb = [int(d) for d in a.get("rhs_batch_dims", ())]
    lc = [int(d) for d in a.get("lhs_contracting_dims", ())]
    rc = [int(d) for d in a.get("rhs_contracting_dims", ())]
    lfree = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    size = lambda x, ds: int(np.prod([x.shape[d] for d in ds], dtype=np.int64))  # noqa: E731
    batch, m, k, n = size(lhs, lb), size(lhs, lfree), size(lhs, lc), size(rhs, rfree)
    cd = _compute_dtype(instr.shape.dtype)
    left = np.transpose(lhs, lb + lfree + lc).reshape(batch, m, k).astype(cd)
    right = np.transpose(rhs, rb + rc + rfree).reshape(batch, k, n).astype(cd)
    out = np.matmul(left, right)
    dims = ([lhs.shape[d] for d in lb] + [lhs.shape[d] for d in lfree]
            + [rhs.shape[d] for d in rfree])
    return _finish(out.reshape(dims), instr.shape.dtype)


def _parse_dim_labels(labels: str):
    lhs, rest = labels.split("_", 1)
    rhs, out = rest.split("->")
    nsp = len(lhs) - 2
    spatial = [str(k) for k in range(nsp)]
    lhs_perm = [lhs.index("b"), lhs.index("f")] + [lhs.index(s) for s in spatial]
    rhs_perm = [rhs.index("o"), rhs.index("i")] + [rhs.index(s) for s in spatial]
    source_axis = {"b": 0, "f": 1, **{s: 2 + k for k, s in enumerate(spatial)}}
    out_perm = [source_axis[c] for c in out]
    return lhs_perm, rhs_perm, out_perm, nsp


def _convolution(instr, ops, ctx):
    lhs, rhs = np.asarray(ops[0]), np.asarray(ops[1])
    nd = lhs.ndim - 2
    labels = instr.attrs.get("dim_labels") or ("bf" + "".join(map(str, range(nd))) + "_oi"
                                               + "".join(map(str, range(nd))) + "->bf"
                                               + "".join(map(str, range(nd))))
    lhs_perm, rhs_perm, out_perm, nsp = _parse_dim_labels(labels)
    groups = int(instr.attrs.get("feature_group_count", 1) or 1)
    batch_groups = int(instr.attrs.get("batch_group_count", 1) or 1)
    cd = _compute_dtype(instr.shape.dtype)
    lhs = np.transpose(lhs, lhs_perm).astype(cd)
    rhs = np.transpose(rhs, rhs_perm).astype(cd)
    window = dict(instr.attrs.get("window") or {})
    ksize = rhs.shape[2:]
    stride = tuple(window.get("stride", (1,) * nsp))
    pad = tuple(tuple(p) for p in window.get("pad", ((0, 0),) * nsp))
    lhs_dilate = tuple(window.get("lhs_dilate", (1,) * nsp))
    rhs_dilate = tuple(window.get("rhs_dilate", (1,) * nsp))
    config = [(0, 0, 0), (0, 0, 0)] + [(lo, hi, d - 1) for (lo, hi), d in zip(pad, lhs_dilate)]
    padded = pad_array(lhs, np.zeros((), cd), config)
    out_sp = []
    for p, k, s, rd in zip(padded.shape[2:], ksize, stride, rhs_dilate):
        span = (k - 1) * rd + 1
        out_sp.append((p - span) // s + 1 if p >= span and k > 0 else 0)
    b, f = lhs.shape[:2]
    o, i = rhs.shape[:2]
    if f != i * groups or b % batch_groups or o % max(groups, batch_groups):
        raise ValueError(f"convolution feature/batch sizes do not match: lhs batch {b}, "
                         f"features {f}; rhs input features {i}, output features {o}; "
                         f"feature_group_count {groups}, batch_group_count {batch_groups}")
    acc = np.zeros((b // batch_groups, o) + tuple(out_sp), dtype=cd)
    if acc.size:
        for offset in np.ndindex(*ksize):
            sl = (slice(None), slice(None)) + tuple(
                slice(w * rd, w * rd + s * (n - 1) + 1, s)
                for w, s, rd, n in zip(offset, stride, rhs_dilate, out_sp))
            patch = padded[sl]
            weight = rhs[(slice(None), slice(None)) + offset]
            if batch_groups > 1:
                p = patch.reshape((batch_groups, b // batch_groups, i) + tuple(out_sp))
                w = weight.reshape(batch_groups, o // batch_groups, i)
                term = np.einsum("gbi...,goi->bgo...", p, w)
            else:
                p = patch.reshape((b, groups, i) + tuple(out_sp))
                w = weight.reshape(groups, o // groups, i)
                term = np.einsum("bgi...,goi->bgo...", p, w)
            acc += term.reshape(acc.shape)
    return _finish(np.transpose(acc, out_perm), instr.shape.dtype)


def _index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """Indices as (batch..., K): the index vector dimension moved last (added if absent)."""
    if index_vector_dim == indices.ndim:
        indices = indices[..., None]
    return np.moveaxis(indices, index_vector_dim, -1).astype(np.int64)


def _batch_axis(indices_dim: int, index_vector_dim: int) -> int:
    return indices_dim - 1 if indices_dim > index_vector_dim else indices_dim


def _batch_positions(bshape, axis: int) -> np.ndarray:
    """Each batch element's own position along batch axis `axis` (shape `bshape`)."""
    view = [1] * len(bshape)
    view[axis] = bshape[axis]
    return np.arange(bshape[axis]).reshape(view) * np.ones(bshape, np.int64)


def _window_coords(start, d: int, window, wsizes, full) -> np.ndarray:
    """Operand coordinates along dim `d` for every (batch..., window...) position:
    the window's start plus the offset inside the window when `d` is a window dim."""
    nb = start.ndim
    idx = start.reshape(start.shape + (1,) * len(window))
    if d in window:
        j = window.index(d)
        view = [1] * (nb + len(window))
        view[nb + j] = wsizes[j]
        idx = idx + np.arange(wsizes[j]).reshape(view)
    return np.broadcast_to(idx, full)


def _gather(instr, ops, ctx):
    operand, indices = np.asarray(ops[0]), np.asarray(ops[1])
    a = instr.attrs
    offset_dims = sorted(int(d) for d in a.get("offset_dims", ()))
    collapsed = {int(d) for d in a.get("collapsed_slice_dims", ())}
    start_map = [int(d) for d in a.get("start_index_map", ())]
    ivd = int(a.get("index_vector_dim", indices.ndim))
    slice_sizes = [int(s) for s in a["slice_sizes"]]
    op_batch = [int(d) for d in a.get("operand_batching_dims", ())]
    idx_batch = [int(d) for d in a.get("start_indices_batching_dims", ())]
    vectors = _index_vectors(indices, ivd)
    fast = fast_gather(operand, vectors, a, slice_sizes)
    if fast is not None:
        return fast
    bshape = vectors.shape[:-1]
    nb = len(bshape)
    window = [d for d in range(operand.ndim) if d not in collapsed and d not in op_batch]
    wsizes = [slice_sizes[d] for d in window]
    full = bshape + tuple(wsizes)
    index_arrays = []
    for d in range(operand.ndim):
        if d in start_map:
            start = vectors[..., start_map.index(d)]
            start = np.clip(start, 0, operand.shape[d] - slice_sizes[d])
        elif d in op_batch:
            start = _batch_positions(bshape, _batch_axis(idx_batch[op_batch.index(d)], ivd))
        else:
            start = np.zeros(bshape, np.int64)
        index_arrays.append(_window_coords(start, d, window, wsizes, full))
    gathered = operand[tuple(index_arrays)] if operand.ndim else np.broadcast_to(operand, full)
    perm, next_batch = [], 0
    for p in range(len(full)):
        if p in offset_dims:
            perm.append(nb + offset_dims.index(p))
        else:
            perm.append(next_batch)
            next_batch += 1
    return np.transpose(gathered, perm)


def _scatter(instr, ops, ctx):
    n = (len(ops) - 1) // 2
    operands = [np.asarray(v) for v in ops[:n]]
    indices = np.asarray(ops[n])
    updates = [np.asarray(v) for v in ops[n + 1:]]
    a = instr.attrs
    window_dims = [int(d) for d in a.get("update_window_dims", ())]
    inserted = {int(d) for d in a.get("inserted_window_dims", ())}
    to_operand = [int(d) for d in a.get("scatter_dims_to_operand_dims", ())]
    ivd = int(a.get("index_vector_dim", indices.ndim))
    in_batch = [int(d) for d in a.get("input_batching_dims", ())]
    idx_batch = [int(d) for d in a.get("scatter_indices_batching_dims", ())]
    vectors = _index_vectors(indices, ivd)
    bshape = vectors.shape[:-1]
    upd = updates[0]
    scatter_dims = [d for d in range(upd.ndim) if d not in window_dims]
    operand = operands[0]
    window = [d for d in range(operand.ndim) if d not in inserted and d not in in_batch]
    wsizes = [upd.shape[d] for d in window_dims]
    # Reorder updates to (scatter/batch dims..., window dims...).
    ups = [np.transpose(u, scatter_dims + window_dims).reshape(bshape + tuple(wsizes))
           for u in updates]
    if n == 1:
        fast = fast_scatter(operand, vectors, ups[0], a, instr.called["to_apply"])
        if fast is not None:
            return fast
    full = bshape + tuple(wsizes)
    valid = np.ones(bshape, dtype=bool)
    coords = []
    for d in range(operand.ndim):
        extent = wsizes[window.index(d)] if d in window else 1
        if d in to_operand:
            start = vectors[..., to_operand.index(d)]
        elif d in in_batch:
            start = _batch_positions(bshape, _batch_axis(idx_batch[in_batch.index(d)], ivd))
        else:
            start = np.zeros(bshape, np.int64)
        # XLA skips a whole update window that does not fit inside the operand.
        valid &= (start >= 0) & (start <= operand.shape[d] - extent)
        coords.append(_window_coords(start, d, window, wsizes, full))
    mask = np.broadcast_to(valid.reshape(bshape + (1,) * len(window)), full)
    outs = [o.copy().ravel() for o in operands]
    if operand.ndim:
        flat = np.ravel_multi_index(tuple(c[mask] for c in coords), operand.shape)
    else:
        flat = np.zeros(int(mask.sum()), dtype=np.int64)
    combine_into(outs, flat, [u[mask].astype(o.dtype) for u, o in zip(ups, outs)],
                 instr.called["to_apply"], ctx)
    results = [o.reshape(operand.shape) for o in outs]
    return results[0] if n == 1 else tuple(results)


def _flag(value) -> bool:
    return value is True or str(value).lower() == "true"


def _cholesky(instr, ops, ctx):
    """XLA cholesky: reads one triangle; a failed factorization gives NaNs for that matrix."""
    a = np.asarray(ops[0])
    lower = _flag(instr.attrs.get("lower", False))
    cd = _compute_dtype(instr.shape.dtype)
    tri = np.tril(a) if lower else np.triu(a)
    diag = np.einsum("...ii->...i", tri)
    herm = tri + np.conj(np.swapaxes(tri, -1, -2))
    herm = herm - np.einsum("...i,ij->...ij", diag, np.eye(a.shape[-1]))
    herm = herm.astype(cd)
    out = np.full(herm.shape, np.nan, dtype=cd)
    for index in np.ndindex(*herm.shape[:-2]):
        try:
            factor = np.linalg.cholesky(herm[index])
        except np.linalg.LinAlgError:
            continue
        out[index] = factor if lower else np.conj(factor.T)
    return out


def _triangular_solve(instr, ops, ctx):
    """Solve op(a) x = b (left_side) or x op(a) = b with a lower or upper triangular `a`."""
    a, b = np.asarray(ops[0]), np.asarray(ops[1])
    at = instr.attrs
    cd = _compute_dtype(instr.shape.dtype)
    lower = _flag(at.get("lower", False))
    tri = (np.tril(a) if lower else np.triu(a)).astype(cd)
    if _flag(at.get("unit_diagonal", False)):
        n = a.shape[-1]
        tri = tri * (1 - np.eye(n)) + np.eye(n)
    mode = str(at.get("transpose_a", "NO_TRANSPOSE")).upper()
    if mode == "TRANSPOSE":
        tri = np.swapaxes(tri, -1, -2)
    elif mode == "ADJOINT":
        tri = np.conj(np.swapaxes(tri, -1, -2))
    op_lower = lower != (mode in ("TRANSPOSE", "ADJOINT"))
    b = b.astype(cd)
    if _flag(at.get("left_side", False)):
        return solve_triangular_left(tri, b, op_lower)
    # x A = b  <=>  A^T x^T = b^T
    return np.swapaxes(solve_triangular_left(np.swapaxes(tri, -1, -2), np.swapaxes(b, -1, -2),
                                             not op_lower), -1, -2)


OPCODES = {
    "cholesky": _cholesky,
    "triangular-solve": _triangular_solve,
    "dot": _dot,
    "convolution": _convolution,
    "gather": _gather,
    "scatter": _scatter,
}
