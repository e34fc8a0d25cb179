"""Pytrees: nested containers of arrays, flattened to a list of leaves plus a structure.

Follows ``jax.tree_util``. A pytree is a leaf or a node whose children are pytrees. Nodes are
tuples, lists, dicts (children in sorted key order), namedtuples, ``None`` (a node with no
children), ``collections.OrderedDict`` (insertion order), ``collections.defaultdict`` and any
type registered with :func:`register_pytree_node` (or the class/dataclass/keyed variants).
Everything else is a leaf. Registration is by exact type: a subclass of a node type is a leaf
unless it is registered itself (namedtuples are recognized automatically).

The package's modules import one way: ``registry`` (node types, key entries) is the lowest,
``treedef`` (PyTreeDef, flatten, map, reduce) builds on it, and ``paths`` (key paths,
one-level helpers, Partial) on both; this module re-exports their public names. Together
they are a leaf: they import only the standard library.
"""

from minijax.tree_util.paths import (
    KeyEntry,
    KeyPath,
    Partial,
    PyTreeRegistry,
    default_registry,
    flatten_one_level,
    flatten_one_level_with_keys,
    is_tree_node,
    tree_broadcast,
    tree_flatten_with_path,
    tree_leaves_with_path,
    tree_map_with_path,
    tree_reduce_associative,
)
from minijax.tree_util.registry import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    SequenceKey,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
)
from minijax.tree_util.treedef import (
    PyTreeDef,
    all_leaves,
    tree_all,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_reduce,
    tree_structure,
    tree_transpose,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
    treedef_is_strict_leaf,
    treedef_tuple,
)

__all__ = [
    "DictKey", "FlattenedIndexKey", "GetAttrKey", "KeyEntry", "KeyPath", "Partial", "PyTreeDef",
    "SequenceKey", "all_leaves", "PyTreeRegistry", "default_registry", "flatten_one_level",
    "flatten_one_level_with_keys",
    "is_tree_node", "keystr", "register_dataclass", "register_pytree_node",
    "register_pytree_node_class", "register_pytree_with_keys",
    "register_pytree_with_keys_class", "register_static", "tree_all", "tree_broadcast",
    "tree_reduce_associative",
    "tree_flatten", "tree_flatten_with_path", "tree_leaves", "tree_leaves_with_path",
    "tree_map", "tree_map_with_path", "tree_reduce", "tree_structure", "tree_transpose",
    "tree_unflatten", "treedef_children", "treedef_is_leaf", "treedef_is_strict_leaf",
    "treedef_tuple",
]
