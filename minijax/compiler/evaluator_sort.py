"""The sort opcode for the reference evaluator.

Comparators JAX and our lowering emit are lexicographic chains of per-key comparisons,
`or(lt(T(k0), T(k0')), and(eq(T(k0), T(k0')), <rest of the chain>))`, where T is any elementwise
expression of one parameter (e.g. the NaN canonicalization `select(x != x, nan, x)`). Those
are recognized structurally: T runs once over each whole key operand, and one stable
lexsort orders the transformed keys. Any other comparator sorts with a vectorized bottom-up
merge sort whose merges binary-search the partner run, calling the comparator on whole
arrays of pairs: O(n log^2 n) comparisons in O(log^2 n) batched calls, stable.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.evaluator_elementwise import total_order_key

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


def _transform(expr, param: int, value: np.ndarray) -> np.ndarray:
    """Evaluate the scalar expression `expr` of one parameter elementwise over `value`."""
    from minijax.compiler import evaluator as ev  # the evaluator imports this module

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


def _sortable(key: np.ndarray, descending: bool, ctype) -> np.ndarray | None:
    """An array whose ascending stable order is the comparison's order (None: unsupported)."""
    kind = key.dtype.kind
    if kind == "c":
        return None
    if kind == "f":
        if ctype == "TOTALORDER":
            key = total_order_key(key)
        elif descending:
            return -key.astype(np.float64)  # IEEE: -0 and 0 tie; NaNs stay last
        else:
            return key
    elif kind == "b":
        key = key.astype(np.uint8)
    return ~key if descending else key


def _keyed_permutation(moved, keys):
    sortables = []
    for k, expr, param, descending, ctype in keys:
        key = moved[k] if expr.opcode == "parameter" else _transform(expr, param, moved[k])
        key = _sortable(np.asarray(key), descending, ctype)
        if key is None:
            return None
        sortables.append(key)
    if len(sortables) == 1:
        return np.argsort(sortables[0], axis=-1, kind="stable")
    return np.lexsort(sortables[::-1], axis=-1)


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


def sort_permutation(moved, comp, ctx):
    """Stable permutation sorting `moved` (operands with the sort axis last) by `comp`."""
    from minijax.compiler import evaluator as ev  # the evaluator imports this module

    keys = comparator_keys(comp) if ev._is_batchable(comp) else None
    if keys is not None:
        perm = _keyed_permutation(moved, keys)
        if perm is not None:
            return perm
    return merge_sort_permutation(moved, comp, ctx)


def sort_opcode(instr, ops, ctx):
    """XLA sort along `dimensions[0]`; every operand is permuted like the keys."""
    dims = instr.attrs.get("dimensions", (0,))
    dim = int(dims[0] if isinstance(dims, (tuple, list)) else dims)
    moved = [np.moveaxis(np.asarray(o), dim, -1) for o in ops]
    if moved[0].shape[-1] <= 1 or moved[0].size == 0:
        outs = [np.asarray(o) for o in ops]
    else:
        perm = sort_permutation(moved, instr.called["to_apply"], ctx)
        outs = [np.moveaxis(np.take_along_axis(m, perm, axis=-1), -1, dim) for m in moved]
    return outs[0] if len(outs) == 1 else tuple(outs)
