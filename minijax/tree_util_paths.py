"""Key paths (tree_flatten_with_path and friends) and Partial, a pytree functools.partial.

Part of minijax.tree_util, which re-exports everything here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from minijax.tree_util import PyTreeDef, _flatten_rest
from minijax.tree_util_registry import _resolve, register_pytree_node


def _flatten_path(x, path: tuple, out: list, is_leaf):
    if is_leaf is not None and is_leaf(x):
        out.append((path, x))
        return None
    h = _resolve(type(x))
    if h is None:
        out.append((path, x))
        return None
    keyed, aux = h.flatten_with_keys(x)
    return (h.type, aux, tuple([_flatten_path(c, path + (k,), out, is_leaf) for k, c in keyed]))


def tree_flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                           ) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
    """Like :func:`tree_flatten`, but each leaf comes as ``(key_path, leaf)``."""
    out: list = []
    node = _flatten_path(tree, (), out, is_leaf)
    return out, PyTreeDef(node, len(out))


def tree_leaves_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                          ) -> list[tuple[tuple, Any]]:
    """``(key_path, leaf)`` pairs of ``tree``."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Like :func:`tree_map`, but calls ``f(key_path, x, *ys)``."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    others = _flatten_rest(treedef, rest, "tree_map_with_path")
    return treedef.unflatten([f(p, x, *ys) for (p, x), *ys in zip(pairs, *others)])


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
