"""Collective operations over a named mapped axis (JAX's lax.psum and friends).

A collective names an axis introduced by `vmap(f, axis_name=...)`, or a device axis of
`pmap` / `shard_map` (interpreters/axis_env.py; their HLO lowering, to XLA's all-reduce,
all-gather, ..., is in collectives_lowering.py). Inside the vmapped
function each batch element sees its own value; a collective combines the values of all
elements along that axis, with JAX's semantics: `psum(x, 'i')` gives every element the
sum over the axis, `all_gather` gives every element the stacked values, `axis_index` gives
each element its position.

How it works: the collectives are primitives whose params hold `axis_name` (a tuple of
names). The BatchTrace whose `axis_name` matches runs the batching rule even when the
operand is not mapped (see batching._uses_axis); that rule does the actual reduction over
the batch dimension. Other traces (JVP, staging, vmaps with other names) pass the
primitive through. Outside any vmap with that name there is nothing to reduce over, so
the wrappers (and the eager implementations, as a backstop) raise NameError.

Derivatives follow JAX: psum, all_gather, psum_scatter and ppermute are linear; the
transpose of psum is psum (psum is treated as psum followed by a broadcast), all_gather
and psum_scatter transpose into each other, ppermute into the inverse permutation. pmax
and pmin split the tangent evenly among the elements that attain the extremum.
"""

from __future__ import annotations

import math

import numpy as np

from minijax import dtypes, tree_util
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, axis_env, batching
from minijax.interpreters.batching import not_mapped
from minijax.lax.elementwise import add, div, mul
from minijax.lax.elementwise_int import eq
from minijax.lax.reductions import reduce_max, reduce_min, reduce_sum
from minijax.lax.slicing import index_in_dim
from minijax.lax.structural import (
    bdim_at_front,
    concatenate,
    convert_element_type,
    full,
    iota,
    moveaxis,
    reshape,
)
from minijax.lax.utils import is_scalar_literal, standard_primitive, weak_scalar

__all__ = ["all_gather", "axis_index", "pmax", "pmean", "pmin", "ppermute", "psum",
           "psum_scatter"]


# --------------------------------------------------------------------------- helpers


def _axis_names(axis_name, what: str) -> tuple:
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for n in names:
        if isinstance(n, int) and not isinstance(n, bool):
            raise TypeError(f"{what}: positional axes (axis_name={axis_name!r}) are not "
                            "supported; name the axis with vmap(..., axis_name=...) or use a "
                            "reduction such as jnp.sum over the positional axis.")
        try:
            hash(n)
        except TypeError:
            raise TypeError(f"{what}: axis_name must be hashable, got {n!r}") from None
    return names


def _axis_size(names) -> int:
    """The product of the sizes of the named axes: bound by an enclosing vmap, else by the
    pmap/shard_map being traced (NameError if one is unbound)."""
    return math.prod(_one_axis_size(n) for n in names)


def _one_axis_size(name) -> int:
    try:
        return batching.find_axis_trace(name).axis_size
    except NameError:
        size = axis_env.lookup(name)
        if size is None:
            raise
        return size


def axis_size(axis_name) -> int:
    """The size of the named mapped axis (the product of sizes for a tuple of names), as a
    Python int: bound by an enclosing vmap, pmap or shard_map (NameError if unbound)."""
    return _axis_size(_axis_names(axis_name, "axis_size"))


def _single_name(axis_name, what: str):
    names = _axis_names(axis_name, what)
    if len(names) != 1:
        raise NotImplementedError(f"{what} over several axis names {names} is not supported "
                                  "in minijax; apply it once per axis.")
    return names


def _groups(axis_index_groups, names, what: str):
    """`axis_index_groups` as a tuple of tuples of axis indices (None: the whole axis),
    checked as JAX does: one axis name, every index in exactly one group, equal sizes."""
    if axis_index_groups is None:
        return None
    if len(names) != 1:
        raise NotImplementedError(f"{what}: axis_index_groups with several axis names "
                                  f"{names} is not supported; name one axis.")
    try:
        trace = batching.find_axis_trace(names[0])
    except NameError:
        trace = None
    if trace is not None:
        _no_vmap_groups(trace, names, axis_index_groups)
    groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
    size = _one_axis_size(names[0])
    if sorted(i for g in groups for i in g) != list(range(size)):
        raise ValueError(f"{what}: axis_index_groups must cover all indices exactly once "
                         f"(axis {names[0]!r} has size {size}, got {axis_index_groups})")
    if len({len(g) for g in groups}) != 1:
        raise ValueError(f"{what}: axis_index_groups must all be the same size, got "
                         f"{axis_index_groups}")
    return groups


def _no_vmap_groups(trace, axis_name, axis_index_groups):
    if axis_index_groups is not None and trace.axis_name in axis_name and not trace.spmd:
        raise NotImplementedError(
            "axis_index_groups not supported in vmap collectives (JAX's limit too): "
            f"the axis {trace.axis_name!r} is bound by vmap(..., axis_name=...). Use pmap "
            "(or shard_map), or reduce the groups with reshapes and jnp.sum.")


def _group_size(groups, n: int) -> int:
    """The number of members each collective instance combines: the axis size, or the size
    of one index group."""
    return n if groups is None else len(groups[0])


class _GroupAxis:
    """One index group of a device axis, seen by a batching rule as an axis of its own."""

    spmd = True

    def __init__(self, axis_name, axis_size: int):
        self.axis_name, self.axis_size = axis_name, axis_size


def _batch_by_groups(rule, trace, x, d, groups, **params):
    """Batch a grouped collective over the vmap that runs a pmap/shard_map body under an
    outer transformation: `rule` (the ungrouped batching rule) runs once per index group on
    that group's members (in group order), and each member takes its own result back."""
    n = trace.axis_size
    x = bdim_at_front(x, d, n)
    sub = _GroupAxis(trace.axis_name, len(groups[0]))
    pieces = [None] * n
    for g in groups:
        xg = concatenate([index_in_dim(x, i, 0, keepdims=True) for i in g], 0)
        out, od = rule(sub, [xg], [0], axis_index_groups=None, **params)
        for j, i in enumerate(g):
            piece = out if od is not_mapped else index_in_dim(out, j, od, keepdims=False)
            pieces[i] = reshape(piece, (1,) + get_aval(piece).shape)
    return concatenate(pieces, 0), 0


def _unbound_impl(name):
    def impl(*args, axis_name, **params):
        batching.find_axis_trace(axis_name[0])  # raises NameError outside a matching vmap
        raise NameError(f"unbound axis name: {axis_name[0]} ({name} was evaluated outside "
                        "the vmap that binds it).")
    return impl


def _as_array(x):
    if is_scalar_literal(x):
        dtype, _ = dtypes.result_type_and_weak(x)
        return weak_scalar(x, dtype)
    return x


def _same_aval(x, **params) -> ShapedArray:
    return x


def _numeric_check(what, x):
    aval = get_aval(x)
    if dtypes.kind(aval.dtype) not in "biufc":
        raise TypeError(f"{what} requires a numeric operand, got {aval.str_short()}")
    return aval


def _rest_names(trace, axis_name):
    return tuple(n for n in axis_name if n != trace.axis_name)


# --------------------------------------------------------------------------- psum


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum `x` (a pytree) over the named mapped axis; every element gets the total.

    Booleans are summed as int32, as in JAX. An operand that is not mapped along the axis
    is multiplied by the axis size.
    """
    names = _axis_names(axis_name, "psum")
    _axis_size(names)
    groups = _groups(axis_index_groups, names, "psum")

    def one(leaf):
        leaf = _as_array(leaf)
        aval = _numeric_check("psum", leaf)
        if aval.dtype == np.bool_:
            leaf = convert_element_type(leaf, np.int32)
        return psum_p.bind(leaf, axis_name=names, axis_index_groups=groups)
    return tree_util.tree_map(one, x)


psum_p = standard_primitive("psum", _same_aval, _unbound_impl("psum"))


def _psum_transpose(ct, x, *, axis_name, axis_index_groups=None):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    return [psum_p.bind(ct, axis_name=axis_name, axis_index_groups=axis_index_groups)]


def _psum_batcher(trace, vals, dims, *, axis_name, axis_index_groups=None):
    (x,), (d,) = vals, dims
    if trace.axis_name not in axis_name:
        return psum_p.bind(x, axis_name=axis_name, axis_index_groups=axis_index_groups), d
    _no_vmap_groups(trace, axis_name, axis_index_groups)
    if axis_index_groups is not None:
        return _batch_by_groups(_psum_batcher, trace, x, d, axis_index_groups,
                                axis_name=axis_name)
    if d is not_mapped:
        out = mul(x, weak_scalar(trace.axis_size, get_aval(x).dtype))
    else:
        out = reduce_sum(x, (d,))
    rest = _rest_names(trace, axis_name)
    if rest:
        out = psum_p.bind(out, axis_name=rest)
    return out, not_mapped


ad.deflinear(psum_p, _psum_transpose)
batching.primitive_batchers[psum_p] = _psum_batcher


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of `x` (a pytree) over the named mapped axis; integers give floats, as in JAX."""
    names = _axis_names(axis_name, "pmean")
    n = _axis_size(names)
    groups = _groups(axis_index_groups, names, "pmean")
    if groups is not None:
        n = len(groups[0])      # the mean over each group

    def one(total):
        dtype = get_aval(total).dtype
        if not dtypes.is_inexact(dtype):
            total = convert_element_type(total, dtypes.default_float_dtype())
            dtype = get_aval(total).dtype
        return div(total, weak_scalar(n, dtype))
    return tree_util.tree_map(one, psum(x, names, axis_index_groups=groups))


# --------------------------------------------------------------------------- pmax / pmin


def pmax(x, axis_name, *, axis_index_groups=None):
    """Maximum of `x` (a pytree) over the named mapped axis."""
    return _pminmax(pmax_p, "pmax", x, axis_name, axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
    """Minimum of `x` (a pytree) over the named mapped axis."""
    return _pminmax(pmin_p, "pmin", x, axis_name, axis_index_groups)


def _pminmax(prim, what, x, axis_name, axis_index_groups):
    names = _axis_names(axis_name, what)
    _axis_size(names)
    groups = _groups(axis_index_groups, names, what)

    def one(leaf):
        leaf = _as_array(leaf)
        _numeric_check(what, leaf)
        return prim.bind(leaf, axis_name=names, axis_index_groups=groups)
    return tree_util.tree_map(one, x)


pmax_p = standard_primitive("pmax", _same_aval, _unbound_impl("pmax"))
pmin_p = standard_primitive("pmin", _same_aval, _unbound_impl("pmin"))


def _pminmax_batcher(prim, reducer):
    def rule(trace, vals, dims, *, axis_name, axis_index_groups=None):
        (x,), (d,) = vals, dims
        if trace.axis_name not in axis_name:
            return prim.bind(x, axis_name=axis_name, axis_index_groups=axis_index_groups), d
        _no_vmap_groups(trace, axis_name, axis_index_groups)
        if axis_index_groups is not None:
            return _batch_by_groups(rule, trace, x, d, axis_index_groups, axis_name=axis_name)
        out = x if d is not_mapped else reducer(x, (d,))
        rest = _rest_names(trace, axis_name)
        if rest:
            out = prim.bind(out, axis_name=rest)
        return out, not_mapped
    return rule


def _pminmax_jvp(prim):
    # Ties share the tangent equally (the mean over the elements attaining the extremum),
    # matching reduce_max's convention.
    def rule(primals, tangents, *, axis_name, axis_index_groups=None):
        (x,), (t,) = primals, tangents
        groups = {"axis_name": axis_name, "axis_index_groups": axis_index_groups}
        ans = prim.bind(x, **groups)
        mask = convert_element_type(eq(x, ans), get_aval(t).dtype)
        num = psum_p.bind(mul(t, mask), **groups)
        den = psum_p.bind(mask, **groups)
        return ans, div(num, den)
    return rule


def _register_minmax():
    for prim, reducer in ((pmax_p, reduce_max), (pmin_p, reduce_min)):
        ad.primitive_jvps[prim] = _pminmax_jvp(prim)
        batching.primitive_batchers[prim] = _pminmax_batcher(prim, reducer)


_register_minmax()


# --------------------------------------------------------------------------- all_gather


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """Gather `x` (a pytree) from every element of the named axis.

    Each element gets the values stacked along a new axis `axis` (shape
    `x.shape[:axis] + (n,) + x.shape[axis:]`), or concatenated along the existing `axis`
    when `tiled=True`. With `axis_index_groups` (pmap / shard_map only, as in JAX) each
    element gathers from the members of its own group, in group order (n is the group size).
    """
    names = _single_name(axis_name, "all_gather")
    groups = _groups(axis_index_groups, names, "all_gather")
    n = _group_size(groups, _axis_size(names))

    def one(leaf):
        leaf = _as_array(leaf)
        aval = _numeric_check("all_gather", leaf)
        ax = _gather_axis(aval, axis, tiled)
        return all_gather_p.bind(leaf, axis_name=names, axis=ax, tiled=bool(tiled),
                                 axis_size=n, axis_index_groups=groups)
    return tree_util.tree_map(one, x)


def _gather_axis(aval, axis, tiled) -> int:
    limit = aval.ndim if tiled else aval.ndim + 1
    if not -limit <= axis < limit:
        what = "an axis of the operand" if tiled else "a position in the result"
        raise ValueError(f"all_gather: axis {axis} is out of bounds for an operand of shape "
                         f"{aval.shape} (tiled={tiled}); it must be {what}.")
    return axis % limit


def _all_gather_abstract_eval(x, *, axis_name, axis, tiled, axis_size,
                              axis_index_groups=None):
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return x.update(shape=tuple(shape))


all_gather_p = standard_primitive("all_gather", _all_gather_abstract_eval,
                                  _unbound_impl("all_gather"))


def _merge_into(x, axis):
    """Merge dimension `axis` (major) with `axis + 1`."""
    shape = list(get_aval(x).shape)
    shape[axis:axis + 2] = [shape[axis] * shape[axis + 1]]
    return reshape(x, tuple(shape))


def _split_dim(x, axis, n):
    """Split dimension `axis` of size n*k into (n, k)."""
    shape = list(get_aval(x).shape)
    shape[axis:axis + 1] = [n, shape[axis] // n]
    return reshape(x, tuple(shape))


def _all_gather_batcher(trace, vals, dims, *, axis_name, axis, tiled, axis_size,
                        axis_index_groups=None):
    (x,), (d,) = vals, dims
    if trace.axis_name not in axis_name:
        x = moveaxis(x, d, 0)
        out = all_gather_p.bind(x, axis_name=axis_name, axis=axis + 1, tiled=tiled,
                                axis_size=axis_size, axis_index_groups=axis_index_groups)
        return out, 0
    _no_vmap_groups(trace, axis_name, axis_index_groups)
    if axis_index_groups is not None:
        return _batch_by_groups(_all_gather_batcher, trace, x, d, axis_index_groups,
                                axis_name=axis_name, axis=axis, tiled=tiled,
                                axis_size=axis_size)
    x = bdim_at_front(x, d, trace.axis_size)
    out = moveaxis(x, 0, axis)
    if tiled:
        out = _merge_into(out, axis)
    return out, not_mapped


def _all_gather_transpose(ct, x, *, axis_name, axis, tiled, axis_size,
                          axis_index_groups=None):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    return [psum_scatter_p.bind(ct, axis_name=axis_name, scatter_dimension=axis,
                                tiled=tiled, axis_size=axis_size,
                                axis_index_groups=axis_index_groups)]


ad.deflinear(all_gather_p, _all_gather_transpose)
batching.primitive_batchers[all_gather_p] = _all_gather_batcher


# --------------------------------------------------------------------------- psum_scatter


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """Sum `x` over the named axis and give element i the i-th slice of the result.

    Without `tiled`, `x.shape[scatter_dimension]` must equal the axis size and that
    dimension is removed; with `tiled=True` it must be a multiple of the axis size and each
    element gets a block of `x.shape[scatter_dimension] // n` rows. With
    `axis_index_groups` (pmap / shard_map only, as in JAX) each group sums on its own and n
    is the group size: the member at position i of its group gets slice i.
    """
    names = _single_name(axis_name, "psum_scatter")
    groups = _groups(axis_index_groups, names, "psum_scatter")
    n = _group_size(groups, _axis_size(names))
    of = f"axis {names[0]!r}" if groups is None else f"the axis_index_groups of {names[0]!r}"

    def one(leaf):
        leaf = _as_array(leaf)
        aval = _numeric_check("psum_scatter", leaf)
        if not -aval.ndim <= scatter_dimension < aval.ndim:
            raise ValueError(f"psum_scatter: scatter_dimension {scatter_dimension} is out of "
                             f"bounds for an operand of shape {aval.shape}")
        dim = scatter_dimension % aval.ndim
        size = aval.shape[dim]
        if (size % n) if tiled else (size != n):
            need = "a multiple of" if tiled else "equal to"
            raise ValueError(f"psum_scatter: dimension {dim} of the operand (shape "
                             f"{aval.shape}) has size {size}, which must be {need} the size "
                             f"{n} of {of} (tiled={tiled})")
        return psum_scatter_p.bind(leaf, axis_name=names, scatter_dimension=dim,
                                   tiled=bool(tiled), axis_size=n, axis_index_groups=groups)
    return tree_util.tree_map(one, x)


def _psum_scatter_abstract_eval(x, *, axis_name, scatter_dimension, tiled, axis_size,
                                axis_index_groups=None):
    shape = list(x.shape)
    if tiled:
        shape[scatter_dimension] //= axis_size
    else:
        del shape[scatter_dimension]
    return x.update(shape=tuple(shape))


psum_scatter_p = standard_primitive("psum_scatter", _psum_scatter_abstract_eval,
                                    _unbound_impl("psum_scatter"))


def _psum_scatter_batcher(trace, vals, dims, *, axis_name, scatter_dimension, tiled,
                          axis_size, axis_index_groups=None):
    (x,), (d,) = vals, dims
    if trace.axis_name not in axis_name:
        x = moveaxis(x, d, 0)
        out = psum_scatter_p.bind(x, axis_name=axis_name, scatter_dimension=scatter_dimension
                                  + 1, tiled=tiled, axis_size=axis_size,
                                  axis_index_groups=axis_index_groups)
        return out, 0
    _no_vmap_groups(trace, axis_name, axis_index_groups)
    if axis_index_groups is not None:
        return _batch_by_groups(_psum_scatter_batcher, trace, x, d, axis_index_groups,
                                axis_name=axis_name, scatter_dimension=scatter_dimension,
                                tiled=tiled, axis_size=axis_size)
    total, _ = _psum_batcher(trace, [x], [d], axis_name=axis_name)
    # Element i of the batch takes slice i of the total: the scatter dimension becomes the
    # batch dimension, with no data movement.
    if tiled:
        total = _split_dim(total, scatter_dimension, trace.axis_size)
    return total, scatter_dimension


def _psum_scatter_transpose(ct, x, *, axis_name, scatter_dimension, tiled, axis_size,
                            axis_index_groups=None):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    return [all_gather_p.bind(ct, axis_name=axis_name, axis=scatter_dimension, tiled=tiled,
                              axis_size=axis_size, axis_index_groups=axis_index_groups)]


ad.deflinear(psum_scatter_p, _psum_scatter_transpose)
batching.primitive_batchers[psum_scatter_p] = _psum_scatter_batcher


# --------------------------------------------------------------------------- ppermute


def ppermute(x, axis_name, perm):
    """Send element `src`'s value to element `dst` for each pair `(src, dst)` in `perm`.

    Elements that receive nothing get zeros. Each index may appear at most once as a source
    and once as a destination.
    """
    names = _single_name(axis_name, "ppermute")
    n = _axis_size(names)
    pairs = tuple((int(s), int(t)) for s, t in perm)
    srcs, dsts = [s for s, _ in pairs], [t for _, t in pairs]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute: perm sources and destinations must be unique, got perm="
                         f"{list(pairs)}")
    for s, t in pairs:
        if not (0 <= s < n and 0 <= t < n):
            raise ValueError(f"ppermute: perm {list(pairs)} has index out of range for axis "
                             f"{names[0]!r} of size {n}")

    def one(leaf):
        leaf = _as_array(leaf)
        _numeric_check("ppermute", leaf)
        return ppermute_p.bind(leaf, axis_name=names, perm=pairs)
    return tree_util.tree_map(one, x)


ppermute_p = standard_primitive("ppermute", _same_aval, _unbound_impl("ppermute"))


def _ppermute_batcher(trace, vals, dims, *, axis_name, perm):
    (x,), (d,) = vals, dims
    if trace.axis_name not in axis_name:
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    x = bdim_at_front(x, d, trace.axis_size)
    aval = get_aval(x)
    source_of = {t: s for s, t in perm}
    pieces = []
    for dst in range(trace.axis_size):
        src = source_of.get(dst)
        if src is None:
            pieces.append(full((1,) + aval.shape[1:], 0, aval.dtype))
        else:
            pieces.append(index_in_dim(x, src, 0, keepdims=True))
    return concatenate(pieces, 0), 0


def _ppermute_transpose(ct, x, *, axis_name, perm):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    inverse = tuple((t, s) for s, t in perm)
    return [ppermute_p.bind(ct, axis_name=axis_name, perm=inverse)]


ad.deflinear(ppermute_p, _ppermute_transpose)
batching.primitive_batchers[ppermute_p] = _ppermute_batcher


# --------------------------------------------------------------------------- axis_index


def axis_index(axis_name):
    """The position (int32) of the current element along the named mapped axis.

    For a tuple of names the index is row-major over the axes (the first name is major).
    """
    names = _axis_names(axis_name, "axis_index")
    if not names:
        raise ValueError("axis_index needs at least one axis name")
    out = None
    for name in names:
        size = _axis_size((name,))
        idx = axis_index_p.bind(axis_name=(name,))
        out = idx if out is None else add(mul(out, size), idx)
    return out


def _axis_index_abstract_eval(*, axis_name):
    return ShapedArray((), np.dtype(np.int32))


axis_index_p = standard_primitive("axis_index", _axis_index_abstract_eval,
                                  _unbound_impl("axis_index"))


def _axis_index_batcher(trace, vals, dims, *, axis_name):
    return iota(np.int32, trace.axis_size), 0


ad.defjvp_zero(axis_index_p)
batching.primitive_batchers[axis_index_p] = _axis_index_batcher
