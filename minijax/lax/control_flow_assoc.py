"""lax.associative_scan: an inclusive prefix scan with an associative combine function,
built from slices, pads and concatenations (work-efficient odd/even recursion, depth
O(log n)), so it needs no primitive of its own and every transformation applies."""

from __future__ import annotations

from minijax import tree_util
from minijax.core import get_aval
from minijax.lax.slicing import concatenate, pad, slice_in_dim
from minijax.lax.structural import expand_dims, reshape, rev


def associative_scan(fn, elems, reverse: bool = False, axis: int = 0):
    """Inclusive scan of `elems` (a pytree of arrays) along `axis` with associative `fn`.

    fn(a, b) combines two pytrees shaped like elems (sliced along axis) elementwise.
    """
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    leaves, tree = tree_util.tree_flatten(elems)
    if not leaves:
        return elems
    avals = [get_aval(x) for x in leaves]
    ndim = avals[0].ndim
    if not -ndim <= axis < ndim or ndim == 0:
        raise ValueError(f"associative_scan: axis {axis} is out of bounds for an array of "
                         f"rank {ndim}")
    axis = axis % ndim
    sizes = [a.shape[axis] if axis < a.ndim else None for a in avals]
    if len(set(sizes)) != 1:
        raise ValueError("Array inputs to associative_scan must have the same first "
                         f"dimension. (saw: {[a.shape for a in avals]})")

    def combine(a, b):
        out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError("associative_scan: fn must return a pytree with the structure "
                            f"of its inputs, {tree}, but returned {out_tree}.")
        return out_leaves

    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]
    out = _scan(combine, leaves, axis)
    if reverse:
        out = [rev(x, (axis,)) for x in out]
    return tree_util.tree_unflatten(tree, out)


def _slice(x, start, stop, stride, axis):
    return slice_in_dim(x, start, stop, stride, axis)


def _scan(combine, xs, axis):
    n = get_aval(xs[0]).shape[axis]
    if n < 2:
        return xs
    # Combine neighbouring pairs, scan the half-length sequence recursively: that gives
    # the prefixes ending at odd positions; even positions combine one more element.
    pairs = combine([_slice(x, 0, n - 1, 2, axis) for x in xs],
                    [_slice(x, 1, n, 2, axis) for x in xs])
    odd = _scan(combine, pairs, axis)
    n_even = (n - 1) // 2
    if n_even:
        even = combine([_slice(o, 0, n_even, 1, axis) for o in odd],
                       [_slice(x, 2, n, 2, axis) for x in xs])
    else:
        even = None
    firsts = [_slice(x, 0, 1, 1, axis) for x in xs]
    if even is None:
        even = firsts
    else:
        even = [concatenate([f, e], axis) for f, e in zip(firsts, even, strict=True)]
    return [_interleave(e, o, axis) for e, o in zip(even, odd, strict=True)]


def _interleave(a, b, axis):
    """Elements a0, b0, a1, b1, ... along axis (len(a) == len(b) or len(b) + 1)."""
    aval_a, aval_b = get_aval(a), get_aval(b)
    na, nb = aval_a.shape[axis], aval_b.shape[axis]
    if nb < na:
        config = [(0, 0, 0)] * aval_b.ndim
        config[axis] = (0, na - nb, 0)
        zero = _zero_scalar(aval_b.dtype)
        b = pad(b, zero, config)
    both = concatenate([expand_dims(a, (axis + 1,)), expand_dims(b, (axis + 1,))], axis + 1)
    shape = list(aval_a.shape)
    shape[axis] = 2 * na
    out = reshape(both, tuple(shape))
    if nb < na:
        out = _slice(out, 0, na + nb, 1, axis)
    return out


def _zero_scalar(dtype):
    import numpy as np
    return np.zeros((), dtype)
