"""Key paths (tree_flatten_with_path and friends), one-level and prefix helpers
(flatten_one_level, is_tree_node, tree_broadcast, tree_reduce_associative) and Partial, a
pytree functools.partial.

Part of minijax.tree_util, which re-exports its public names.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

from minijax.tree_util.registry import (
    _MISSING,
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    SequenceKey,
    _resolve,
    register_dataclass,
    register_pytree_node,
)
from minijax.tree_util.treedef import (
    PyTreeDef,
    _flatten_rest,
    tree_flatten,
    tree_map,
    tree_structure,
)

KeyEntry = SequenceKey | DictKey | GetAttrKey | FlattenedIndexKey | Any
KeyPath = tuple[KeyEntry, ...]


def _flatten_path(x, path: tuple, out: list, is_leaf, takes_path=False):
    if is_leaf is not None and (is_leaf(path, x) if takes_path else is_leaf(x)):
        out.append((path, x))
        return None
    h = _resolve(type(x))
    if h is None:
        out.append((path, x))
        return None
    keyed, aux = h.flatten_with_keys(x)
    return (h.type, aux, tuple([_flatten_path(c, path + (k,), out, is_leaf, takes_path)
                                for k, c in keyed]))


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
    """Like :func:`tree_flatten`, but each leaf comes as ``(key_path, leaf)``; with
    ``is_leaf_takes_path``, ``is_leaf`` is called as ``is_leaf(key_path, x)``."""
    out: list = []
    node = _flatten_path(tree, (), out, is_leaf, is_leaf_takes_path)
    return out, PyTreeDef(node, len(out))


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[tuple, Any]]:
    """``(key_path, leaf)`` pairs of ``tree``."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """Like :func:`tree_map`, but calls ``f(key_path, x, *ys)``."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = _flatten_rest(treedef, rest, "tree_map_with_path")
    return treedef.unflatten([f(p, x, *ys) for (p, x), *ys in zip(pairs, *others)])


# --------------------------------------------------------------------------------------------
# One level, prefixes, associative reduction


def is_tree_node(typ: type) -> bool:
    """True if ``typ`` is a pytree node type (built-in, registered, or a namedtuple)."""
    return _resolve(typ) is not None


def flatten_one_level(tree: Any) -> tuple[Sequence[Any], Any]:
    """``(children, aux_data)`` of the root node; ValueError for a leaf."""
    h = _resolve(type(tree))
    if h is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, aux = h.flatten(tree)
    return tuple(children), aux


def flatten_one_level_with_keys(tree: Any) -> tuple[Sequence[tuple[Any, Any]], Any]:
    """``(((key, child), ...), aux_data)`` of the root node; ValueError for a leaf."""
    h = _resolve(type(tree))
    if h is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    keyed, aux = h.flatten_with_keys(tree)
    return tuple((k, c) for k, c in keyed), aux


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Repeat each leaf of ``prefix_tree`` over the subtree of ``full_tree`` it stands for."""
    treedef = tree_structure(prefix_tree, is_leaf)
    subtrees = treedef.flatten_up_to(full_tree)
    prefixes = tree_flatten(prefix_tree, is_leaf)[0]
    return treedef.unflatten([tree_map(lambda _, p=p: p, sub)
                              for p, sub in zip(prefixes, subtrees)])


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *,
                            identity: Any = _MISSING,
                            is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Reduce the leaves with an associative ``operation`` as a balanced tree of calls.

    The leaves split in halves (the left one has ``n // 2``) recursively, as JAX does, so the
    result's nesting matches JAX's for non-commutative operations too.
    """
    leaves = tree_flatten(tree, is_leaf)[0]
    if not leaves:
        if identity is _MISSING:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity

    def reduce(xs):
        if len(xs) == 1:
            return xs[0]
        mid = len(xs) // 2
        return operation(reduce(xs[:mid]), reduce(xs[mid:]))

    return reduce(leaves)


def static(**kwargs) -> Any:
    """``dataclasses.field(**kwargs)`` marked ``static`` for :func:`register_dataclass`."""
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["static"] = True
    return dataclasses.field(metadata=metadata, **kwargs)


# --------------------------------------------------------------------------------------------
# Partial


class _OpaqueCallable:
    """Hides a functools.partial from ``functools.partial.__new__``, which would merge it."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __eq__(self, other):
        return isinstance(other, _OpaqueCallable) and self.fn == other.fn

    def __hash__(self):
        return hash(self.fn)


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: bound arguments are children, ``func`` static.

    A Partial can therefore be passed to and returned from transformed functions.
    """

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            func = _OpaqueCallable(func)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, cs: Partial(func, *cs[0], **cs[1]))


class PyTreeRegistry:
    """The pytree node registry as an object (jax.tree_util.default_registry): flatten,
    flatten_one_level (None for a leaf), flatten_with_path, is_node and registration."""

    def flatten(self, tree: Any, leaf_predicate: Callable[[Any], bool] | None = None):
        return tree_flatten(tree, leaf_predicate)

    def flatten_one_level(self, tree: Any):
        return None if _resolve(type(tree)) is None else flatten_one_level(tree)

    def flatten_one_level_with_keys(self, tree: Any):
        return None if _resolve(type(tree)) is None else flatten_one_level_with_keys(tree)

    def flatten_with_path(self, tree: Any, leaf_predicate: Callable[..., bool] | None = None):
        return tree_flatten_with_path(tree, leaf_predicate)

    def is_node(self, typ: type) -> bool:
        return is_tree_node(typ)

    def register_node(self, typ: type, to_iterable: Callable, from_iterable: Callable,
                      to_iterable_with_keys: Callable | None = None):
        register_pytree_node(typ, to_iterable, from_iterable, to_iterable_with_keys)

    def register_dataclass_node(self, typ: type, data_fields, meta_fields):
        register_dataclass(typ, data_fields, meta_fields)

    def __repr__(self) -> str:
        return "PyTreeRegistry(default)"


#: The registry every tree function uses (JAX's jax.tree_util.default_registry).
default_registry = PyTreeRegistry()
