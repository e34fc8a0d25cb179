"""lax.all_to_all over a named axis (vmap, pmap, shard_map), with JAX's semantics.

Member i of the axis splits its operand along `split_axis` into n chunks and sends chunk j
to member j; it receives one chunk from every member and puts them, in member order, along
`concat_axis`. Without `tiled`, `x.shape[split_axis]` must be n: that axis is removed and
a new axis of size n is inserted at `concat_axis`. With `tiled=True` it must be a multiple
of n and the received chunks are concatenated along `concat_axis`. all_to_all is linear;
its transpose is the all_to_all going back (split and concat axes swapped). With
`axis_index_groups` (pmap / shard_map only, as in JAX) the exchange happens inside each
group and n is the group size.
"""

from __future__ import annotations

from minijax import tree_util
from minijax.core import get_aval
from minijax.interpreters import ad, batching
from minijax.lax.collectives import (
    _as_array,
    _axis_size,
    _batch_by_groups,
    _group_size,
    _groups,
    _no_vmap_groups,
    _numeric_check,
    _single_name,
    _unbound_impl,
)
from minijax.lax.structural import bdim_at_front, moveaxis, reshape
from minijax.lax.utils import standard_primitive

__all__ = ["all_to_all"]


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Exchange chunks of `x` (a pytree) between the members of the named axis."""
    names = _single_name(axis_name, "all_to_all")
    groups = _groups(axis_index_groups, names, "all_to_all")
    n = _group_size(groups, _axis_size(names))
    of = f"axis {names[0]!r}" if groups is None else f"the axis_index_groups of {names[0]!r}"

    def one(leaf):
        leaf = _as_array(leaf)
        aval = _numeric_check("all_to_all", leaf)
        nd = aval.ndim
        if not (-nd <= split_axis < nd and -nd <= concat_axis < nd):
            raise ValueError(f"all_to_all: split_axis {split_axis} / concat_axis {concat_axis} "
                             f"out of bounds for an operand of shape {aval.shape}")
        s, cat = split_axis % nd, concat_axis % nd
        size = aval.shape[s]
        if (size % n) if tiled else (size != n):
            need = "a multiple of" if tiled else "equal to"
            raise ValueError(f"all_to_all: dimension {s} of the operand (shape {aval.shape}) "
                             f"has size {size}, which must be {need} the size {n} of {of} "
                             f"(tiled={tiled})")
        return all_to_all_p.bind(leaf, axis_name=names, split_axis=s, concat_axis=cat,
                                 tiled=bool(tiled), axis_size=n, axis_index_groups=groups)
    return tree_util.tree_map(one, x)


def _abstract_eval(x, *, axis_name, split_axis, concat_axis, tiled, axis_size,
                   axis_index_groups=None):
    shape = list(x.shape)
    if tiled:
        shape[split_axis] //= axis_size
        shape[concat_axis] *= axis_size
    else:
        del shape[split_axis]
        shape.insert(concat_axis, axis_size)
    return x.update(shape=tuple(shape))


all_to_all_p = standard_primitive("all_to_all", _abstract_eval, _unbound_impl("all_to_all"))


def _batcher(trace, vals, dims, *, axis_name, split_axis, concat_axis, tiled, axis_size,
             axis_index_groups=None):
    (x,), (d,) = vals, dims
    if trace.axis_name not in axis_name:
        x = moveaxis(x, d, 0)
        return all_to_all_p.bind(x, axis_name=axis_name, split_axis=split_axis + 1,
                                 concat_axis=concat_axis + 1, tiled=tiled,
                                 axis_size=axis_size, axis_index_groups=axis_index_groups), 0
    _no_vmap_groups(trace, axis_name, axis_index_groups)
    if axis_index_groups is not None:
        return _batch_by_groups(_batcher, trace, x, d, axis_index_groups,
                                axis_name=axis_name, split_axis=split_axis,
                                concat_axis=concat_axis, tiled=tiled, axis_size=axis_size)
    n = trace.axis_size
    x = bdim_at_front(x, d, n)                      # [j (sender), member dims...]
    shape = list(get_aval(x).shape)
    if tiled:
        shape[1 + split_axis:2 + split_axis] = [n, shape[1 + split_axis] // n]
        x = reshape(x, tuple(shape))
    x = moveaxis(x, 1 + split_axis, 0)              # [i (receiver), j, rest...]
    x = moveaxis(x, 1, 1 + concat_axis)             # j at concat_axis of the member
    if tiled:
        shape = list(get_aval(x).shape)
        shape[1 + concat_axis:3 + concat_axis] = [shape[1 + concat_axis]
                                                  * shape[2 + concat_axis]]
        x = reshape(x, tuple(shape))
    return x, 0


def _transpose(ct, x, *, axis_name, split_axis, concat_axis, tiled, axis_size,
               axis_index_groups=None):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    return [all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                              concat_axis=split_axis, tiled=tiled, axis_size=axis_size,
                              axis_index_groups=axis_index_groups)]


ad.deflinear(all_to_all_p, _transpose)
batching.primitive_batchers[all_to_all_p] = _batcher


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the named mapped axis with positional `axis` (`all_to_all` with both axes
    `axis`, untiled)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)
