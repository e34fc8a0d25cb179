"""minijax.tree (jax.tree), the one-level / broadcast / associative helpers of tree_util,
keyed class registration and flatten_util.ravel_pytree. Expected values are JAX 0.10.2's."""

import dataclasses

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import tree, tree_util
from minijax.flatten_util import ravel_pytree


def test_tree_module_names_are_tree_util_functions():
    assert tree.map is tree_util.tree_map and tree.leaves is tree_util.tree_leaves
    assert tree.flatten_with_path is tree_util.tree_flatten_with_path
    assert minijax.tree is tree
    t = {"b": (1, 2), "a": [3]}
    assert tree.leaves(t) == [3, 1, 2]
    assert tree.map(lambda x: x * 10, t) == {"b": (10, 20), "a": [30]}
    leaves, td = tree.flatten(t)
    assert tree.unflatten(td, leaves) == t and tree.structure(t) == td
    assert tree.reduce(lambda a, b: a + b, t) == 6 and tree.all(t) and not tree.all([1, 0])
    assert tree.transpose(tree.structure([0, 0]), tree.structure((0, 0)),
                          [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
    assert [tree_util.keystr(p) for p, _ in tree.leaves_with_path(t)] == \
        ["['a'][0]", "['b'][0]", "['b'][1]"]
    assert tree.map_with_path(lambda p, x: len(p), t) == {"b": (2, 2), "a": [2]}


def test_one_level_helpers_match_jax():
    assert tree_util.flatten_one_level({"a": 1, "b": (2, 3)}) == ((1, (2, 3)), ("a", "b"))
    keyed, aux = tree_util.flatten_one_level_with_keys({"a": 1, "b": (2, 3)})
    assert keyed == ((tree_util.DictKey("a"), 1), (tree_util.DictKey("b"), (2, 3)))
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tree_util.flatten_one_level(1)
    assert tree_util.is_tree_node(tuple) and tree_util.is_tree_node(type(None))
    assert not tree_util.is_tree_node(int)


def test_broadcast_and_reduce_associative_match_jax():
    # JAX: tree_broadcast((1, {'a': 2}), ((1, 2), {'a': (3, 4)})) == ((1, 1), {'a': (2, 2)})
    assert tree.broadcast((1, {"a": 2}), ((1, 2), {"a": (3, 4)})) == ((1, 1), {"a": (2, 2)})
    # JAX nests a non-commutative reduction as ((1, 2), (3, (4, 5))).
    assert tree.reduce_associative(lambda a, b: (a, b), [1, 2, 3, 4, 5]) == \
        ((1, 2), (3, (4, 5)))
    assert tree.reduce_associative(lambda a, b: a + b, [1, 2, 3, 4, 5]) == 15
    assert tree.reduce_associative(lambda a, b: a + b, [], identity=0) == 0
    with pytest.raises(TypeError, match="identity"):
        tree.reduce_associative(lambda a, b: a + b, [])


def test_register_pytree_with_keys_class_and_static_dataclass_fields():
    @tree_util.register_pytree_with_keys_class
    class Pair:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def tree_flatten_with_keys(self):
            return ((tree_util.GetAttrKey("x"), self.x), (tree_util.GetAttrKey("y"), self.y)), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    pairs = tree.leaves_with_path({"p": Pair(1, 2)})
    assert [(tree_util.keystr(k), v) for k, v in pairs] == [("['p'].x", 1), ("['p'].y", 2)]
    doubled = tree.map(lambda v: v * 2, Pair(1, 2))
    assert (doubled.x, doubled.y) == (2, 4)

    @tree_util.register_dataclass
    @dataclasses.dataclass
    class Op:
        x: object
        name: str = tree.static(default="add")

    leaves, td = tree.flatten(Op(x=3, name="mul"))
    assert leaves == [3] and tree.unflatten(td, [5]) == Op(x=5, name="mul")


def test_ravel_pytree_values_dtypes_and_inverse():
    t = {"a": jnp.ones((2, 2), jnp.int32), "b": jnp.arange(3.0)}
    flat, unravel = ravel_pytree(t)
    np.testing.assert_array_equal(flat, [1, 1, 1, 1, 0, 1, 2])
    assert flat.dtype == jnp.float32
    back = unravel(flat + 1)
    assert back["a"].dtype == jnp.int32 and back["a"].shape == (2, 2)
    np.testing.assert_array_equal(back["b"], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="shape"):
        unravel(jnp.zeros(3))
    with pytest.raises(TypeError, match="dtype"):
        unravel(flat.astype(jnp.int32))
    empty, unravel_empty = ravel_pytree([])
    assert empty.shape == (0,) and empty.dtype == jnp.float32 and unravel_empty(empty) == []
    params = {"w": jnp.array([1.0, 2.0]), "b": jnp.array(3.0)}
    flat, unravel = ravel_pytree(params)
    g = minijax.grad(lambda f: jnp.sum(unravel(f)["w"] ** 2) + unravel(f)["b"])(flat)
    np.testing.assert_allclose(g, [1.0, 2.0, 4.0])   # b first (sorted keys): d/db = 1
