"""all_to_all and pswapaxes over a named vmap axis (JAX's semantics; see collectives.py).

Element i of the named axis splits its operand along ``split_axis`` into n chunks and sends
chunk j to element j; each element stacks the n chunks it receives along ``concat_axis``
(a new axis, when ``tiled=False``: the split axis must then have size n and disappears) or
concatenates them along it (``tiled=True``). Under vmap this is a transpose of the batch
axis with the split axis. all_to_all is linear; its transpose swaps split and concat axes.
"""

from __future__ import annotations

from minijax import tree_util
from minijax.interpreters import ad, batching
from minijax.lax.collectives import (
    _as_array,
    _axis_size,
    _merge_into,
    _no_groups,
    _numeric_check,
    _single_name,
    _split_dim,
    _unbound_impl,
)
from minijax.lax.utils import bdim_at_front, moveaxis, standard_primitive

__all__ = ["all_to_all", "pswapaxes"]


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None,
               tiled=False):
    """Exchange chunks of ``x`` (a pytree) between the elements of the named axis."""
    names = _single_name(axis_name, "all_to_all")
    _no_groups(axis_index_groups, "all_to_all")
    n = _axis_size(names)

    def one(leaf):
        leaf = _as_array(leaf)
        aval = _numeric_check("all_to_all", leaf)
        s = _check_axis(split_axis, aval.ndim, "split_axis", aval.shape)
        c = _check_axis(concat_axis, aval.ndim, "concat_axis", aval.shape)
        size = aval.shape[s]
        if (size % n if tiled else size != n):
            need = "a multiple of" if tiled else "equal to"
            raise ValueError(f"all_to_all requires x.shape[split_axis] to be {need} the size "
                             f"of the mapped axis {names[0]!r}, but they are {size} and {n} "
                             f"(operand {aval.str_short()}, split_axis={s}, tiled={tiled}).")
        return all_to_all_p.bind(leaf, axis_name=names, split_axis=s, concat_axis=c,
                                 tiled=bool(tiled), axis_size=n)
    return tree_util.tree_map(one, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the named mapped axis with positional ``axis`` (``all_to_all`` with both axes
    ``axis``, untiled)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def _check_axis(axis, ndim, what, shape) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"all_to_all: {what}={axis} is out of bounds for an operand of "
                         f"shape {shape}.")
    return axis % ndim


def _abstract_eval(x, *, axis_name, split_axis, concat_axis, tiled, axis_size):
    shape = list(x.shape)
    if tiled:
        shape[split_axis] //= axis_size
        shape[concat_axis] *= axis_size
    else:
        del shape[split_axis]
        shape.insert(concat_axis, axis_size)
    return x.update(shape=tuple(shape))


all_to_all_p = standard_primitive("all_to_all", _abstract_eval, _unbound_impl("all_to_all"))


def _batcher(trace, vals, dims, *, axis_name, split_axis, concat_axis, tiled, axis_size):
    (x,), (d,) = vals, dims
    if trace.axis_name not in axis_name:
        x = moveaxis(x, d, 0)
        out = all_to_all_p.bind(x, axis_name=axis_name, split_axis=split_axis + 1,
                                concat_axis=concat_axis + 1, tiled=tiled, axis_size=axis_size)
        return out, 0
    x = bdim_at_front(x, d, trace.axis_size)  # X[j, ...]: element j's operand
    s = split_axis
    if tiled:
        x = _split_dim(x, 1 + s, axis_size)   # the split axis as (n chunks, chunk)
    w = moveaxis(x, 1 + s, 0)                  # w[i, j, rest] = chunk i of element j
    y = moveaxis(w, 1, 1 + concat_axis)        # element i stacks its chunks at concat_axis
    if tiled:
        y = _merge_into(y, 1 + concat_axis)
    return y, 0


def _transpose(ct, x, *, axis_name, split_axis, concat_axis, tiled, axis_size):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    return [all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                              concat_axis=split_axis, tiled=tiled, axis_size=axis_size)]


ad.deflinear(all_to_all_p, _transpose)
batching.primitive_batchers[all_to_all_p] = _batcher
