"""PyTreeDef and the flatten/unflatten/map/reduce functions built on it.

A :class:`PyTreeDef` records the structure. Internally it holds one immutable nested tuple:
``None`` for a leaf, ``(node_type, aux_data, children)`` for a node, so equality and hashing
are those of Python tuples. Flattening looks handlers up per type in a dict (leaf types are
cached too); a tuple of plain leaves, the common case on the ``jit`` dispatch path, skips the
recursion and reuses a cached treedef.

Part of minijax.tree_util, which re-exports the public names here. It imports only the
registry (tree_util/registry.py) and the standard library.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Iterable
from typing import Any

from minijax.tree_util.registry import (
    _CUSTOM,
    _DICT,
    _MISSING,
    _NAMEDTUPLE,
    _NONE,
    _handlers,
    _resolve,
    keystr,
)

# --------------------------------------------------------------------------------------------
# PyTreeDef


def _count(node) -> tuple[int, int]:
    """(num_leaves, num_nodes) of a node."""
    if node is None:
        return 1, 1
    leaves, nodes = 0, 1
    for c in node[2]:
        cl, cn = _count(c)
        leaves += cl
        nodes += cn
    return leaves, nodes


def _build(node, it):
    """Rebuild a value from a (non-leaf) node, drawing leaves from the iterator ``it``."""
    typ, aux, children = node
    return _resolve(typ).unflatten(
        aux, [next(it) if c is None else _build(c, it) for c in children])


def _node_str(node) -> str:
    if node is None:
        return "*"
    typ, aux, children = node
    cs = [_node_str(c) for c in children]
    kind = _resolve(typ).kind
    if kind == _NONE:
        return "None"
    if typ is tuple:
        return "(" + ", ".join(cs) + ("," if len(cs) == 1 else "") + ")"
    if typ is list:
        return "[" + ", ".join(cs) + "]"
    if kind == _NAMEDTUPLE:
        return f"{typ.__name__}(" + ", ".join(f"{f}={c}" for f, c in zip(typ._fields, cs)) + ")"
    if kind == _DICT:
        keys = aux[1] if typ is collections.defaultdict else aux
        body = "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(keys, cs)) + "}"
        if typ is dict:
            return body
        if typ is collections.defaultdict:
            return f"defaultdict({aux[0]!r}, {body})"
        return f"{typ.__name__}({body})"
    return f"CustomNode({typ.__name__}[{aux!r}], [" + ", ".join(cs) + "])"


class _Mismatch(Exception):
    """Internal: a value does not match a treedef node; ``path`` grows while unwinding."""

    def __init__(self, msg):
        super().__init__(msg)
        self.msg = msg
        self.path: list = []


def _up_to(node, x, out: list) -> None:
    """Append to ``out`` the subtrees of ``x`` sitting where ``node`` has leaves."""
    if node is None:
        out.append(x)
        return
    typ, aux, children = node
    h = _resolve(typ)
    if h.kind == _DICT:
        if not isinstance(x, dict):
            raise _Mismatch(f"expected a {typ.__name__}, got {type(x).__name__}")
        keys = aux[1] if typ is collections.defaultdict else aux
        if set(keys) != set(x):
            raise _Mismatch(f"expected a {typ.__name__} with keys {sorted(keys, key=repr)}, "
                            f"got keys {sorted(x, key=repr)}")
        values = [x[k] for k in keys]
    else:
        if type(x) is not typ:
            raise _Mismatch(f"expected {typ.__name__}, got {type(x).__name__}")
        values = x if h.kind != _NONE else ()
        if h.kind == _CUSTOM:
            values, x_aux = h.flatten(x)
            values = list(values)
            if x_aux != aux:
                raise _Mismatch(f"{typ.__name__} aux data differs: {aux!r} vs {x_aux!r}")
        if len(values) != len(children):
            raise _Mismatch(f"expected a {typ.__name__} with {len(children)} children, "
                            f"got one with {len(values)}")
    for i, (c, v) in enumerate(zip(children, values)):
        try:
            _up_to(c, v, out)
        except _Mismatch as e:
            e.path.append(list(h.keys(aux, len(children)))[i])
            raise


class PyTreeDef:
    """The structure of a pytree: hashable, comparable with ``==``, picklable."""

    __slots__ = ("_node", "_num_leaves", "_num_nodes", "_hash", "_flat")

    def __init__(self, node, num_leaves: int = -1):
        self._node = node
        self._num_leaves = num_leaves
        self._num_nodes = -1
        self._hash = None
        self._flat = None  # True when the tree is a tuple of leaves (fast unflatten)

    @property
    def num_leaves(self) -> int:
        """Number of leaves."""
        if self._num_leaves < 0:
            self._num_leaves, self._num_nodes = _count(self._node)
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        """Number of nodes, leaves and ``None`` included."""
        if self._num_nodes < 0:
            self._num_leaves, self._num_nodes = _count(self._node)
        return self._num_nodes

    def children(self) -> list[PyTreeDef]:
        """Treedefs of the root's children (empty for a leaf)."""
        return [] if self._node is None else [PyTreeDef(c) for c in self._node[2]]

    def node_data(self) -> tuple[type, Any] | None:
        """``(node_type, aux_data)`` of the root, or None for a leaf."""
        return None if self._node is None else (self._node[0], self._node[1])

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Build a pytree of this structure from ``leaves`` (in flatten order)."""
        if self._flat is None:
            n = self._node
            self._flat = n is not None and n[0] is tuple and all(c is None for c in n[2])
        if self._flat:
            out = tuple(leaves)
            if len(out) != len(self._node[2]):
                self._count_error(len(out))
            return out
        leaves = leaves if isinstance(leaves, list) else list(leaves)
        if len(leaves) != self.num_leaves:
            self._count_error(len(leaves))
        return leaves[0] if self._node is None else _build(self._node, iter(leaves))

    def _count_error(self, got: int):
        which = "few" if got < self.num_leaves else "many"
        raise ValueError(f"Too {which} leaves for PyTreeDef; expected {self.num_leaves}, "
                         f"got {got}. Tree structure: {self}")

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """Subtrees of ``tree`` at this treedef's leaves; ValueError if it is not a prefix."""
        out: list = []
        try:
            _up_to(self._node, tree, out)
        except _Mismatch as e:
            raise ValueError(_mismatch_message(self, tree, e, "Tree structure mismatch")) from None
        return out

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The treedef obtained by replacing each leaf of this one with ``inner``."""

        def sub(node):
            return inner._node if node is None else (node[0], node[1],
                                                     tuple([sub(c) for c in node[2]]))

        return PyTreeDef(sub(self._node))

    def __eq__(self, other):
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return self is other or self._node == other._node

    def __hash__(self):
        if self._hash is None:
            try:
                self._hash = hash(self._node)
            except TypeError:  # unhashable aux_data (a dict): JAX never hashes it either
                self._hash = _structure_hash(self._node)
        return self._hash

    def __repr__(self):
        return f"PyTreeDef({_node_str(self._node)})"

    def __reduce__(self):
        return (PyTreeDef, (self._node,))


def _structure_hash(node) -> int:
    """A hash of a treedef node that skips unhashable aux_data (equality still compares it)."""
    if node is None:
        return 0
    typ, aux, children = node
    try:
        aux_hash = hash(aux)
    except TypeError:
        aux_hash = hash(type(aux))
    return hash((typ, aux_hash, tuple([_structure_hash(c) for c in children])))


def _mismatch_message(treedef: PyTreeDef, tree: Any, e: _Mismatch, intro: str,
                      labels: tuple[str, str] = ("expected", "got")) -> str:
    where = keystr(reversed(e.path)) or "the root"
    w = max(len(label) for label in labels) + 1
    return (f"{intro} (at {where}: {e.msg}).\n  {labels[0] + ':':<{w}} {treedef}\n"
            f"  {labels[1] + ':':<{w}} {tree_structure(tree)}")


_LEAF_DEF = PyTreeDef(None, 1)
_flat_tuple_defs: dict[int, PyTreeDef] = {}


def _flat_tuple_def(n: int) -> PyTreeDef:
    td = _flat_tuple_defs.get(n)
    if td is None:
        td = PyTreeDef((tuple, None, (None,) * n), n)
        td._flat = True
        if n <= 256:
            _flat_tuple_defs[n] = td
    return td


def _all_plain_leaves(xs: tuple) -> bool:
    """True if no element of ``xs`` is (or may be) a pytree node: the flat-tuple fast path."""
    get = _handlers.get
    for x in xs:
        if get(type(x), _MISSING) is not None:
            return False
    return True


# --------------------------------------------------------------------------------------------
# Flattening


def _flatten(x, leaves: list, is_leaf):
    """Append the leaves of ``x`` to ``leaves`` and return its structure node."""
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return None
    h = _handlers.get(type(x), _MISSING)
    if h is _MISSING:
        h = _resolve(type(x))
    if h is None:
        leaves.append(x)
        return None
    children, aux = h.flatten(x)
    if is_leaf is not None:
        return (h.type, aux, tuple([_flatten(c, leaves, is_leaf) for c in children]))
    nodes = []
    get = _handlers.get
    for c in children:  # leaves inline: saves a call per leaf
        if get(type(c), _MISSING) is None:
            leaves.append(c)
            nodes.append(None)
        else:
            nodes.append(_flatten(c, leaves, None))
    return (h.type, aux, tuple(nodes))


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], PyTreeDef]:
    """Flatten ``tree`` into ``(leaves, treedef)``; ``is_leaf(x)`` True stops at ``x``."""
    if is_leaf is None and type(tree) is tuple and _all_plain_leaves(tree):
        return list(tree), _flat_tuple_def(len(tree))
    leaves: list = []
    node = _flatten(tree, leaves, is_leaf)
    if node is None:
        return leaves, _LEAF_DEF
    return leaves, PyTreeDef(node, len(leaves))


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Build a pytree with structure ``treedef`` from ``leaves``."""
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree`` in flatten order."""
    if is_leaf is None and type(tree) is tuple and _all_plain_leaves(tree):
        return list(tree)
    leaves: list = []
    _flatten(tree, leaves, is_leaf)
    return leaves


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The treedef of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def _flatten_rest(treedef: PyTreeDef, rest: tuple, fname: str) -> list[list[Any]]:
    out = []
    for i, r in enumerate(rest, 1):
        leaves: list = []
        try:
            _up_to(treedef._node, r, leaves)
        except _Mismatch as e:
            intro = f"{fname}: tree {i} has a different structure from the first tree"
            labels = ("first tree", f"tree {i}")
            raise ValueError(_mismatch_message(treedef, r, e, intro, labels)) from None
        out.append(leaves)
    return out


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply ``f`` leafwise: ``f(x, *ys)`` for each leaf ``x`` of ``tree``.

    Each tree in ``rest`` must have ``tree``'s structure, or have it as a prefix (then ``f``
    receives the matching subtree); otherwise ValueError naming both structures.
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    others = _flatten_rest(treedef, rest, "tree_map")
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _MISSING,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``functools.reduce(function, tree_leaves(tree), initializer)``."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _MISSING:
        if not leaves:
            raise TypeError("tree_reduce() of an empty tree with no initializer.")
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every leaf is truthy."""
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turn an outer-of-inner pytree into an inner-of-outer one.

    ``inner_treedef=None`` infers it from the first outer leaf.
    """
    if inner_treedef is None:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        inner_treedef = tree_structure(subtrees[0]) if subtrees else _LEAF_DEF
    flat, treedef = tree_flatten(pytree_to_transpose)
    inner_n, outer_n = inner_treedef.num_leaves, outer_treedef.num_leaves
    expected = outer_treedef.compose(inner_treedef)
    if treedef != expected:
        raise TypeError(f"tree_transpose: structure mismatch:\n  got:      {treedef}\n"
                        f"  expected: {expected}")
    rows = [flat[i * inner_n:(i + 1) * inner_n] for i in range(outer_n)]
    return inner_treedef.unflatten([outer_treedef.unflatten(col) for col in zip(*rows)]
                                   if outer_n else [outer_treedef.unflatten([])] * inner_n)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True for a one-node treedef (a leaf, or a childless node such as None), as in JAX."""
    return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
    """True only for the treedef of a leaf."""
    return treedef._node is None


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """Treedefs of the root's children."""
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The treedef of a tuple whose children have the given treedefs."""
    return PyTreeDef((tuple, None, tuple(t._node for t in treedefs)))


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every element of ``iterable`` is a leaf."""
    if is_leaf is None:
        return all(_resolve(type(x)) is None for x in iterable)
    items = list(iterable)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(a is b for a, b in zip(leaves, items))
