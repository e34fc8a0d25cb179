"""The sort opcode for the reference evaluator.

Comparators JAX and our lowering emit are lexicographic chains of per-key comparisons,
`or(lt(T(k0), T(k0')), and(eq(T(k0), T(k0')), <rest of the chain>))`, where T is any elementwise
expression of one parameter (e.g. the NaN canonicalization `select(x != x, nan, x)`). Those
are recognized structurally: T runs once over each whole key operand, the keys become
unsigned integers (evaluator/sort_keys.py) and one np.sort orders them: sorted keys decoded
back to values, or keys packed with the element index for a stable permutation. Any other
comparator sorts with a vectorized bottom-up merge sort whose merges binary-search the
partner run, calling the comparator on whole arrays of pairs: O(n log^2 n) comparisons in
O(log^2 n) batched calls, stable.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.evaluator import core as ev
from minijax.compiler.evaluator.sort_keys import (
    differing,
    is_iota,
    pack_keys,
    packed_permutation,
    reference_values,
    scratch,
    sorted_values,
    take_rows,
    unsigned_key,
)

_LESS = {"LT": False, "GT": True}  # direction -> descending when compare(p[2k], p[2k+1])


# ------------------------------------------------------------------- comparator matching


def _params_of(instr, memo: dict) -> frozenset:
    """Parameter numbers an instruction depends on."""
    hit = memo.get(id(instr))
    if hit is None:
        if instr.opcode == "parameter":
            hit = frozenset((instr.parameter_number,))
        else:
            hit = frozenset().union(*(_params_of(o, memo) for o in instr.operands))
        memo[id(instr)] = hit
    return hit


def _mirror(x, y, px: int, py: int, memo: dict) -> bool:
    """Whether `y` is the expression `x` with parameter px replaced by parameter py."""
    if x is y and (px == py or not _params_of(x, memo)):
        return True
    if x.opcode == "parameter" or y.opcode == "parameter":
        return (x.opcode == y.opcode == "parameter" and x.parameter_number == px
                and y.parameter_number == py)
    if (x.opcode != y.opcode or len(x.operands) != len(y.operands) or x.shape != y.shape
            or x.attrs != y.attrs or x.called or y.called):
        return False
    if x.opcode == "constant":
        return (x.literal is not None and y.literal is not None
                and x.literal.dtype == y.literal.dtype
                and x.literal.tobytes() == y.literal.tobytes())
    return all(_mirror(a, b, px, py, memo) for a, b in zip(x.operands, y.operands))


def _key_compare(node, nparams: int, memo: dict):
    """(key index, lhs transform, lhs param, direction, type) for `compare(T(pi), T(pj))`
    with {i, j} = {2k, 2k+1}; None otherwise."""
    if node.opcode != "compare" or len(node.operands) != 2:
        return None
    a, b = node.operands
    pa, pb = _params_of(a, memo), _params_of(b, memo)
    if len(pa) != 1 or len(pb) != 1:
        return None
    (i,), (j,) = pa, pb
    if i // 2 != j // 2 or i == j or max(i, j) >= nparams or not _mirror(a, b, i, j, memo):
        return None
    ctype = node.attrs.get("comparison_type")
    return i // 2, a, i, node.attrs.get("direction"), ctype


def _chain(node, nparams: int, memo: dict):
    """[(key index, transform, param, descending, type)] for a lexicographic comparator."""
    first = _key_compare(node, nparams, memo)
    if first is not None:
        k, t, i, direction, ctype = first
        if direction not in _LESS:
            return None
        return [(k, t, i, _LESS[direction] == (i % 2 == 0), ctype)]
    if node.opcode != "or" or len(node.operands) != 2:
        return None
    for less, rest in (node.operands, node.operands[::-1]):
        head = _chain_head(less, rest, nparams, memo)
        if head is not None:
            return head
    return None


def _chain_head(less, rest, nparams: int, memo: dict):
    lead = _key_compare(less, nparams, memo)
    if lead is None or lead[3] not in _LESS or rest.opcode != "and" or len(rest.operands) != 2:
        return None
    k, t, i, direction, ctype = lead
    for eq, tail in (rest.operands, rest.operands[::-1]):
        same = _key_compare(eq, nparams, memo)
        if same is None or same[3] != "EQ" or same[0] != k or same[4] != ctype:
            continue
        # The EQ must compare the same transform (it may be a structural duplicate).
        if not _mirror(t, same[1], i, same[2], memo):
            continue
        tail_keys = _chain(tail, nparams, memo)
        if tail_keys is not None:
            return [(k, t, i, _LESS[direction] == (i % 2 == 0), ctype)] + tail_keys
    return None


def comparator_keys(comp):
    """The comparator as a lexicographic key list, or None when it is not one.

    Each entry is (operand index, transform root, its parameter number, descending,
    comparison type)."""
    root = comp.root
    if root is None or root.shape.dims or root.shape.is_tuple:
        return None
    return _chain(root, len(comp.parameters), {})


# ----------------------------------------------------------------------- fast key sorting


def _nan_replacement(expr, param: int):
    """The NaN constant c when `expr` is `select(p != p, c, p)` of parameter `param` (the
    NaN canonicalization in sort comparators), else None."""
    if expr.opcode != "select" or len(expr.operands) != 3:
        return None
    test, const, other = expr.operands
    literal = const.literal if const.opcode == "constant" else None
    if (test.opcode != "compare" or test.attrs.get("direction") != "NE"
            or len(test.operands) != 2 or literal is None or literal.ndim != 0
            or literal.dtype.kind != "f" or not np.isnan(literal)):
        return None
    same = [o.opcode == "parameter" and o.parameter_number == param
            for o in (*test.operands, other)]
    return literal if all(same) and const.shape == other.shape else None


def _transform(expr, param: int, value: np.ndarray) -> np.ndarray:
    """Evaluate the scalar expression `expr` of one parameter elementwise over `value`."""
    nan = _nan_replacement(expr, param)
    if nan is not None and value.dtype == nan.dtype:
        mask = np.isnan(value, out=scratch("nan", value.shape, np.bool_))
        return np.where(mask, nan, value) if mask.any() else value

    ctx = ev._Context(True)
    env: dict[int, object] = {}

    def visit(instr):
        hit = env.get(id(instr))
        if hit is None:
            if instr.opcode == "parameter":
                hit = value
            else:
                hit = ev._evaluate_one(instr, [visit(o) for o in instr.operands], ctx)
            env[id(instr)] = hit
        return hit
    return np.broadcast_to(visit(expr), value.shape)


def _key_arrays(flat, keys):
    """Each comparator key as an UnsignedKey (None when a key type is unsupported)."""
    ukeys = []
    for slot, (k, expr, param, descending, ctype) in enumerate(keys):
        key = flat[k] if expr.opcode == "parameter" else _transform(expr, param, flat[k])
        ukey = unsigned_key(np.asarray(key), descending, ctype, f"key{slot}")
        if ukey is None:
            return None
        ukeys.append(ukey)
    return ukeys


def _stable_permutation(ukeys, n):
    """(permutation, sorted keys of a one-key sort or None) for rows of length n."""
    packed = packed_permutation(ukeys, n)
    if packed is not None:
        return packed
    if len(ukeys) == 1:
        return np.argsort(ukeys[0].u, axis=-1, kind="stable"), None  # 64-bit keys
    return np.lexsort([k.u for k in ukeys[::-1]], axis=-1), None


def keyed_sort(moved, keys):
    """The sorted operands (sort axis last) for a recognized comparator, or None.

    One key: operands of the key's dtype are decoded from the sorted keys (np.sort, no
    permutation); the others, and any sort with several keys, are gathered along a stable
    permutation from one sort of keys packed with the element index.
    """
    n = moved[0].shape[-1]
    lead = moved[0].shape[:-1]
    flat = [m.reshape(-1, n) for m in moved]
    ukeys = _key_arrays(flat, keys)
    if ukeys is None:
        return None
    outs: list = [None] * len(flat)
    perm = None
    if len(ukeys) == 1:
        key = ukeys[0]
        reference = reference_values(key)
        differs = {j: differing(f, reference, f"differs{j}") for j, f in enumerate(flat)
                   if f.dtype == reference.dtype}
        # Too many elements not recoverable from their keys: gather those operands instead.
        by_value = [j for j, d in differs.items() if np.count_nonzero(d) * 4 <= d.size]
        keys_u = key.u
        if len(by_value) < len(flat):
            perm, sorted_u = _stable_permutation(ukeys, n)
            if sorted_u is None:  # no packing (64-bit keys)
                sorted_u = np.sort(key.u, axis=-1)
        elif key.owned and not any(differs[j].any() for j in by_value):
            keys_u = None  # not needed for tie groups: sort in place
            key.u.sort(axis=-1)
            sorted_u = key.u
        else:
            sorted_u = np.sort(key.u, axis=-1)
        for j in by_value:
            outs[j] = sorted_values(flat[j], key, sorted_u, differs[j], keys_u)
    for j, out in enumerate(outs):
        if out is None:
            if perm is None:
                perm, _ = _stable_permutation(ukeys, n)
            outs[j] = perm.astype(flat[j].dtype) if is_iota(flat[j]) else take_rows(flat[j], perm)
    return [o.reshape(lead + (n,)) for o in outs]


# ------------------------------------------------------------------ general merge sort


def merge_sort_permutation(moved, comp, ctx):
    """Stable sort permutation along the last axis for any strict-weak-order comparator.

    Bottom-up merge sort: each element's place in a merged run is its index in its own run
    plus the number of partner-run elements that go before it, found by a binary search
    that calls the comparator once per step on all elements at once.
    """
    n = moved[0].shape[-1]
    lead = moved[0].shape[:-1]
    rows = [m.reshape(-1, n) for m in moved]
    nrows = rows[0].shape[0]
    perm = np.broadcast_to(np.arange(n), (nrows, n)).copy()
    pos = np.arange(n)
    row_ix = np.arange(nrows)[:, None]
    width = 1
    while width < n:
        current = [r[row_ix, perm] for r in rows]
        q = pos % (2 * width)
        left = q < width
        base = pos - q
        own = np.where(left, q, q - width)
        partner = base + np.where(left, width, 0)
        lo = np.zeros((nrows, n), np.int64)
        hi = np.broadcast_to(np.clip(n - partner, 0, width), (nrows, n)).copy()
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            other = np.minimum(partner + mid, n - 1)
            theirs = [np.take_along_axis(c, other, axis=-1) for c in current]
            # Left elements count partner elements strictly before them, right elements
            # count those not after them (ties keep the left run first).
            args = []
            for mine, their in zip(current, theirs):
                args += [np.where(left, their, mine), np.where(left, mine, their)]
            less = np.asarray(ctx.call_elementwise(comp, args)[0], dtype=bool)
            go_right = np.where(left, less, ~less) & active
            lo = np.where(go_right, mid + 1, lo)
            hi = np.where(active & ~go_right, mid, hi)
        new = np.empty_like(perm)
        new[row_ix, base + own + lo] = perm
        perm = new
        width *= 2
    return perm.reshape(lead + (n,))


# --------------------------------------------------------------------------------- opcode


def sort_opcode(instr, ops, ctx):
    """XLA sort along `dimensions[0]`; every operand is permuted like the keys."""
    dims = instr.attrs.get("dimensions", (0,))
    dim = int(dims[0] if isinstance(dims, (tuple, list)) else dims)
    moved = [np.moveaxis(np.asarray(o), dim, -1) for o in ops]
    if moved[0].shape[-1] <= 1 or moved[0].size == 0:
        outs = [np.asarray(o) for o in ops]
    else:
        comp = instr.called["to_apply"]
        keys = comparator_keys(comp) if ev._is_batchable(comp) else None
        sorted_moved = keyed_sort(moved, keys) if keys is not None else None
        if sorted_moved is None:
            perm = merge_sort_permutation(moved, comp, ctx)
            sorted_moved = [np.take_along_axis(m, perm, axis=-1) for m in moved]
        outs = [np.moveaxis(m, -1, dim) for m in sorted_moved]
    return outs[0] if len(outs) == 1 else tuple(outs)


def top_k_rows(x: np.ndarray, k: int, largest: bool = True):
    """(values, int32 indices) of the k largest (or smallest) entries along the last axis,
    ordered as a stable sort in that direction (ties: lower index first) in XLA's total
    order, as JAX's: a positive NaN is above everything, a negative NaN below everything
    (NaNs of one sign equal to each other), -0 is smaller than +0."""
    x = np.asarray(x)
    n = x.shape[-1]
    lead = x.shape[:-1]
    if x.dtype.kind == "c":
        raise ValueError(f"top_k does not accept complex operands, got {x.dtype}")
    if not 0 <= k <= n:
        raise ValueError(f"top_k needs 0 <= k <= {n} (the last dimension), got k={k}")
    flat = x.reshape(int(np.prod(lead, dtype=np.int64)), n)
    key = flat
    if x.dtype.kind == "f":
        nans = np.isnan(flat)
        if nans.any():
            key = np.where(nans, np.copysign(np.array(np.nan, x.dtype), flat), flat)
    ukey = unsigned_key(key, largest, "TOTALORDER", "topk")
    if ukey is None:
        raise ValueError(f"top_k does not support element type {x.dtype}")
    if k == 0 or flat.shape[0] == 0:
        perm = np.zeros((flat.shape[0], k), np.intp)
    elif ukey.bits + max(1, (n - 1).bit_length()) > 64:  # 64-bit keys
        perm = np.argsort(ukey.u, axis=-1, kind="stable")[:, :k]
    else:
        perm = _partial_permutation(ukey, n, k)
    values = take_rows(flat, perm) if k else flat[:, :0].copy()
    return values.reshape(lead + (k,)), perm.astype(np.int32).reshape(lead + (k,))


def _partial_permutation(ukey, n: int, k: int) -> np.ndarray:
    """The first k entries of the stable permutation: keys packed with the index are all
    distinct, so a partition then a sort of the k smallest is exact."""
    need = max(1, (n - 1).bit_length())
    wide = np.uint32 if ukey.bits + need <= 32 else np.uint64
    index_bits = wide(0).itemsize * 8 - ukey.bits
    packed = pack_keys([ukey], n, index_bits, wide)  # a scratch array: partition in place
    if k < n:
        packed.partition(k - 1, axis=-1)
    packed = np.sort(packed[:, :k], axis=-1)
    return (packed & wide((1 << index_bits) - 1)).astype(np.intp)


def topk_opcode(instr, ops, ctx):
    """XLA's topk (what JAX emits for lax.top_k): `k=`, `largest=` attributes."""
    k = int(instr.attrs.get("k", 0))
    largest = str(instr.attrs.get("largest", "true")).lower() in ("true", "1")
    return top_k_rows(ops[0], k, largest)
