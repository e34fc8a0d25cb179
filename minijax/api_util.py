"""Helpers shared by the public transformations: argument flattening, argnums, names."""

from __future__ import annotations

import inspect
import math

import numpy as np

from minijax import tree_util
from minijax.dtypes import float0
from minijax.source_info import SourceInfo


def flatten_fun(fun, in_tree):
    """Wrap `fun(*args)` as a function of flat leaves; `store` receives the output treedef."""
    store = {}

    def flat_fun(*flat_args):
        args = tree_util.tree_unflatten(in_tree, flat_args)
        out = fun(*args)
        leaves, out_tree = tree_util.tree_flatten(out)
        store["out_tree"] = out_tree
        return leaves
    return flat_fun, store


def arg_names(fun, nargs: int) -> list[str]:
    """Names of the positional arguments of `fun` (for error messages)."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(nargs):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                  params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        elif params and params[-1].kind == params[-1].VAR_POSITIONAL:
            names.append(f"{params[-1].name}[{i - len(params) + 1}]")
        else:
            names.append(f"args[{i}]")
    return names


def leaf_arg_names(fun, args) -> list[str]:
    """A name per flattened leaf: `x`, `params['w']`, `batch[0]`."""
    names = arg_names(fun, len(args))
    out = []
    for name, arg in zip(names, args, strict=True):
        paths, _ = tree_util.tree_flatten_with_path(arg)
        for path, _leaf in paths:
            out.append(name + tree_util.keystr(path))
    return out


def fun_name(fun) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def fun_source(fun):
    """The SourceInfo of a function's definition, when Python knows it."""
    try:
        fun = inspect.unwrap(fun)
    except ValueError:
        pass
    code = getattr(fun, "__code__", None)
    if code is None:
        return None
    return SourceInfo(code.co_filename, code.co_firstlineno, code.co_name)


def normalize_argnums(argnums, nargs: int, what: str) -> tuple[int, ...]:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    out = []
    for n in nums:
        if not -nargs <= n < nargs:
            raise ValueError(f"{what}: argnums {argnums} out of range for a function called "
                             f"with {nargs} positional arguments")
        out.append(n % nargs)
    return tuple(out)


def broadcast_prefix(prefix, tree, is_leaf=None) -> list:
    """Expand a pytree prefix (e.g. vmap's in_axes) to one entry per leaf of `tree`."""
    out = []

    def walk(p, t):
        if p is None or isinstance(p, int):
            out.extend([p] * len(tree_util.tree_leaves(t, is_leaf=is_leaf)))
            return
        if isinstance(p, (tuple, list)) and isinstance(t, (tuple, list)):
            if len(p) != len(t):
                raise ValueError(f"axis specification {p} has {len(p)} entries but the "
                                 f"value has {len(t)}")
            for pi, ti in zip(p, t, strict=True):
                walk(pi, ti)
            return
        if isinstance(p, dict) and isinstance(t, dict):
            if set(p) != set(t):
                raise ValueError(f"axis specification keys {sorted(p)} do not match the "
                                 f"value's keys {sorted(t)}")
            for k in sorted(t):
                walk(p[k], t[k])
            return
        p_leaves, p_tree = tree_util.tree_flatten(p)
        t_children = tree_util.tree_flatten(t, is_leaf=lambda x: x is not t)[0]
        if len(p_leaves) == len(t_children):
            for pi, ti in zip(p_leaves, t_children, strict=True):
                walk(pi, ti)
            return
        raise ValueError(f"axis specification {p!r} is not a prefix of the value's structure "
                         f"{tree_util.tree_structure(t)}")

    walk(prefix, tree)
    return out


def prefix_leaves(prefix, tree, is_leaf, what: str) -> list:
    """One leaf of the pytree prefix `prefix` (its leaves as `is_leaf` says) per leaf of
    `tree`: the prefix leaf standing for the subtree holding it (jit's in_shardings,
    shard_map's in_specs)."""
    leaves, treedef = tree_util.tree_flatten(prefix, is_leaf=is_leaf)
    try:
        subtrees = treedef.flatten_up_to(tree)
    except (ValueError, TypeError):
        raise ValueError(f"{what} must be a pytree prefix of the corresponding value, got "
                         f"{prefix} for {tree_util.tree_structure(tree)}") from None
    return [leaf for leaf, sub in zip(leaves, subtrees, strict=True)
            for _ in tree_util.tree_leaves(sub)]


class _Float0:
    """Stands for a float0 array (an integer's trivial gradient) in jit's argument and result
    trees: a node without leaves whose aux data is the shape, so the array is neither passed
    to nor returned by the program; unflattening gives back np.zeros(shape, float0)."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = tuple(shape)


tree_util.register_pytree_node(_Float0, lambda m: ((), m.shape),
                               lambda shape, _: np.zeros(shape, float0))


def is_float0(x) -> bool:
    """True for a NumPy array of dtype float0."""
    return isinstance(x, np.ndarray) and x.dtype == float0


def mark_float0(tree):
    """`tree` with each float0 array replaced by a _Float0 node: flattening it then gives
    no leaf there, and unflattening gives the float0 array back."""
    return tree_util.tree_map(lambda x: _Float0(x.shape) if is_float0(x) else x, tree)


def positional_name(fun, i: int):
    """The name of `fun`'s i-th positional parameter (None when it has none)."""
    code = getattr(fun, "__code__", None)
    if code is None or i >= code.co_argcount:
        return None
    return code.co_varnames[i]


def donated_flags(fun, args, kwargs, argnums, argnames, static=()) -> list[bool]:
    """Per flat leaf of (positional arguments but the `static` ones, keyword arguments
    `kwargs`), whether the call donates it: positional arguments by position (`argnums`)
    or parameter name (`argnames`), keyword ones by name; as JAX does, a number also
    donates its parameter passed by keyword, and a name the same parameter passed
    positionally."""
    nums = {argnums} if isinstance(argnums, int) else set(argnums or ())
    names = {argnames} if isinstance(argnames, str) else set(argnames or ())
    names |= {n for n in (positional_name(fun, i) for i in nums if i >= 0) if n}
    flags = []
    for i, a in enumerate(args):
        if i not in static:
            gone = i in nums or i - len(args) in nums or positional_name(fun, i) in names
            flags += [gone] * len(tree_util.tree_leaves(a))
    for k, v in sorted(kwargs.items()):   # flat order: a dict's keys sorted
        flags += [k in names] * len(tree_util.tree_leaves(v))
    return flags


def donation_pairs(ins, outs) -> list:
    """Per output, the donated input whose buffer it can take (JAX's first pairing pass:
    the first donated input left of its shape and dtype), or None. `ins`, `outs` as in
    `usable_donations`."""
    taken: set = set()
    pairs = []
    for shape, dtype in outs:
        k = next((i for i, a in enumerate(ins) if a is not None and i not in taken
                  and tuple(a[0]) == tuple(shape) and a[1] == dtype), None)
        if k is not None:
            taken.add(k)
        pairs.append(k)
    return pairs


def usable_donations(ins, outs) -> list[bool]:
    """Which donated inputs a jit call really donates (JAX deletes only those; it warns
    that the others "were not usable" and leaves them valid). `ins`: per flat input,
    its (shape, dtype) when donated, else None; `outs`: the outputs' (shape, dtype) (the
    per-device ones when partitioned). As JAX pairs them: each output, in order, takes
    the first donated input of its shape and dtype (`donation_pairs`); then each donated
    input left takes an output left with as many elements."""
    pairs = donation_pairs(ins, outs)
    used = [False] * len(ins)
    left = []
    for (shape, _), k in zip(outs, pairs, strict=True):
        if k is None:
            left.append(math.prod(shape))
        else:
            used[k] = True
    for i, a in enumerate(ins):
        if a is not None and not used[i] and math.prod(a[0]) in left:
            left.remove(math.prod(a[0]))
            used[i] = True
    return used
