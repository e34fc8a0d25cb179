"""``jax.api_util`` under the import hook: flattening wrappers for
:class:`minijax.extend.linear_util.WrappedFun` and ``debug_info`` records, with JAX's
signatures (minijax's own ``minijax.api_util`` has its internal helpers)."""

from __future__ import annotations

import inspect
from typing import Any, NamedTuple

from minijax.api_util import fun_name
from minijax.extend.linear_util import WrappedFun
from minijax.tree_util import tree_flatten, tree_unflatten

__all__ = ["DebugInfo", "debug_info", "flatten_fun", "flatten_fun_nokwargs"]


class DebugInfo(NamedTuple):
    """What a traced function is, for error messages."""
    traced_for: str
    func_src_info: str
    arg_names: tuple[str, ...]
    result_paths: Any = None


def debug_info(traced_for: str, fun, args, kwargs, *, static_argnums=(), static_argnames=(),
               result_paths_thunk=None, sourceinfo=None, signature=None) -> DebugInfo:
    """A :class:`DebugInfo` for ``fun`` traced (for ``traced_for``) on ``args``/``kwargs``."""
    try:
        file = inspect.getsourcefile(fun)
        line = inspect.getsourcelines(fun)[1]
        where = f"{fun_name(fun)} at {file}:{line}"
    except (TypeError, OSError):
        where = fun_name(fun)
    names = tuple(f"args[{i}]" for i in range(len(args))) + tuple(sorted(kwargs))
    return DebugInfo(traced_for, sourceinfo or where, names, result_paths_thunk)


class _Store:
    """The output treedef, known once the wrapped function has run (call it)."""

    def __init__(self):
        self.treedef = None

    def __call__(self):
        if self.treedef is None:
            raise ValueError("the output tree is not known before the function has run")
        return self.treedef


def flatten_fun(f: WrappedFun, in_tree):
    """``f(*args, **kwargs)`` as a function of the flat leaves of ``(args, kwargs)``; returns
    the wrapped function and a thunk giving the output treedef."""
    store = _Store()

    def flat(inner, *leaves):
        args, kwargs = tree_unflatten(in_tree, leaves)
        out_leaves, store.treedef = tree_flatten(inner(*args, **kwargs))
        return out_leaves

    return f.wrap(flat), store


def flatten_fun_nokwargs(f: WrappedFun, in_tree):
    """Like :func:`flatten_fun` for a tree of positional arguments only."""
    store = _Store()

    def flat(inner, *leaves):
        out_leaves, store.treedef = tree_flatten(inner(*tree_unflatten(in_tree, leaves)))
        return out_leaves

    return f.wrap(flat), store
