"""``jax.tree``: the pytree functions of :mod:`minijax.tree_util` under short names
(``minijax.tree.map`` is ``tree_util.tree_map``, and so on)."""

from minijax import tree_util as _tu
from minijax.tree_util.paths import static

all = _tu.tree_all
broadcast = _tu.tree_broadcast
flatten = _tu.tree_flatten
flatten_with_path = _tu.tree_flatten_with_path
leaves = _tu.tree_leaves
leaves_with_path = _tu.tree_leaves_with_path
map = _tu.tree_map
map_with_path = _tu.tree_map_with_path
reduce = _tu.tree_reduce
reduce_associative = _tu.tree_reduce_associative
structure = _tu.tree_structure
transpose = _tu.tree_transpose
unflatten = _tu.tree_unflatten

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
           "map", "map_with_path", "reduce", "reduce_associative", "static", "structure",
           "transpose", "unflatten"]
