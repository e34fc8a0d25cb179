"""vmap's implementation (jax.vmap; minijax.vmap re-exports it from api.py).

It lives with lax, below numpy, random and api, because lax.map(batch_size=...), numpy's
functional helpers and random's distributions vectorize with it; it only needs the batching
interpreter and lax's axis helpers.
"""

from __future__ import annotations

import functools

import numpy as np

from minijax import core, tree_util
from minijax.api_util import broadcast_prefix, flatten_fun, leaf_arg_names
from minijax.core import get_aval, set_current_trace
from minijax.dtypes import float0
from minijax.interpreters import batching
from minijax.lax.structural import bdim_at_front, moveaxis
from minijax.traceback_util import api_boundary


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorize `fun` over a mapped axis of its arguments (jax.vmap).

    `in_axes` is an int, None, or a tuple with one entry per positional argument, each a
    pytree prefix of that argument (ints, possibly negative, or None for unmapped);
    keyword arguments are always mapped over axis 0. `out_axes` is a pytree prefix of the
    output. `axis_size` gives the batch size when no input is mapped. `axis_name` names
    the axis for collectives (lax.psum, ...). `spmd_axis_name` is accepted and ignored.
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or type(in_axes) in (int, tuple)):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                        "to the positional arguments passed to the function, but got "
                        f"{in_axes}.")
    if not all(type(leaf) is int for leaf in tree_util.tree_leaves(in_axes)):
        raise TypeError("vmap in_axes must be an int, None, or (nested) container with those "
                        f"types as leaves, but got {in_axes}.")
    if not all(type(leaf) is int for leaf in tree_util.tree_leaves(out_axes)):
        raise TypeError("vmap out_axes must be an int, None, or (nested) container with those "
                        f"types as leaves, but got {out_axes}.")
    if axis_size is not None and (not isinstance(axis_size, int) or axis_size < 0):
        raise TypeError(f"vmap axis_size must be a non-negative int, got {axis_size!r}")

    @api_boundary
    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap in_axes must be an int, None, or a tuple of entries corresponding to "
                f"the positional arguments passed to the function, but got len(in_axes)="
                f"{len(in_axes)}, len(args)={len(args)}")
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        prefix = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        try:
            axes = broadcast_prefix(prefix, args) + broadcast_prefix(0, kwargs)
        except ValueError:
            raise ValueError(
                f"vmap in_axes specification must be a tree prefix of the corresponding "
                f"value, got specification {in_axes} for value tree "
                f"{tree_util.tree_structure(args)}.") from None
        names = leaf_arg_names(fun, args) + _kwarg_leaf_names(kwargs)
        size = _batch_size(names, leaves, axes, axis_size)
        trace = batching.BatchTrace(core.current_trace(), size, axis_name)
        tracers = []
        for x, ax in zip(leaves, axes, strict=True):
            if ax is None:
                tracers.append(x)
            else:
                ndim = get_aval(x).ndim
                tracers.append(batching.BatchTracer(trace, x, ax % ndim))

        def call(a, kw):
            return fun(*a, **kw)
        flat_fun, store = flatten_fun(call, in_tree)
        with set_current_trace(trace):
            outs = flat_fun(*tracers)
        out_tree = store["out_tree"]
        out_struct = tree_util.tree_unflatten(out_tree, list(range(len(outs))))
        try:
            o_axes = broadcast_prefix(out_axes, out_struct)
        except ValueError:
            raise ValueError(
                f"vmap out_axes specification must be a tree prefix of the corresponding "
                f"value, got specification {out_axes} for value tree {out_tree}.") from None
        results = [_move_out(trace, o, ax, size, axis_name)
                   for o, ax in zip(outs, o_axes, strict=True)]
        return tree_util.tree_unflatten(out_tree, results)
    return vmapped


def _kwarg_leaf_names(kwargs) -> list[str]:
    paths, _ = tree_util.tree_flatten_with_path(kwargs)
    return [tree_util.keystr(path) for path, _leaf in paths]


def _batch_size(names, leaves, axes, axis_size):
    sizes = {}
    for i, (x, ax) in enumerate(zip(leaves, axes, strict=True)):
        if ax is None:
            continue
        aval = get_aval(x)
        if not -aval.ndim <= ax < aval.ndim:
            need = ax + 1 if ax >= 0 else -ax
            raise ValueError(f"vmap was requested to map its argument along axis {ax}, which "
                             f"implies that its rank should be at least {need}, but is only "
                             f"{aval.ndim} (its shape is {aval.shape})")
        sizes[i] = aval.shape[ax]
    if not sizes:
        if axis_size is None:
            raise ValueError("vmap must have at least one non-None value in in_axes (or "
                             "axis_size must be given)")
        return axis_size
    values = set(sizes.values())
    if axis_size is not None:
        values.add(axis_size)
    if len(values) > 1:
        lines = ["vmap got inconsistent sizes for array axes to be mapped:"]
        for i, (x, ax) in enumerate(zip(leaves, axes, strict=True)):
            if ax is not None:
                lines.append(f"  * argument {names[i]} of type {get_aval(x).str_short()} with "
                             f"mapped axis {ax} has size {sizes[i]}")
        if axis_size is not None:
            lines.append(f"  * axis_size={axis_size} was given")
        raise ValueError("\n".join(lines))
    return values.pop()


def _move_out(trace, out, out_axis, size, axis_name):
    if isinstance(out, batching.BatchTracer) and out._trace is trace:
        val, dim = out.val, out.batch_dim
    else:
        val, dim = out, None
    if isinstance(val, np.ndarray) and val.dtype == float0:
        if out_axis is None:
            return val
        shape = list(val.shape)
        shape.insert(out_axis % (len(shape) + 1), size)
        return np.zeros(shape, float0)
    if out_axis is None:
        if dim is not None:
            where = f" (axis_name={axis_name!r})" if axis_name is not None else ""
            raise ValueError(f"vmap has mapped output{where} but out_axes is None")
        return val
    if dim is None:
        val = bdim_at_front(val, None, size)
        dim = 0
    ndim = get_aval(val).ndim
    if not -ndim <= out_axis < ndim:
        raise ValueError(f"vmap out_axes={out_axis} is out of bounds for an output of rank "
                         f"{ndim - 1} (valid: {-ndim} to {ndim - 1}, counting the mapped axis)")
    return moveaxis(val, dim, out_axis % ndim)
