"""chex: shape/rank/type/tree assertions (passing and failing cases), chex.dataclass as a
pytree through jit and tree_map, assert_max_traces, and chex's own jit-aware variants."""

import chex
import jax
import jax.numpy as jnp
import numpy as np


@chex.dataclass
class State:
    w: chex.Array
    b: chex.Array
    step: int


def _outcome(fn, *args, **kwargs) -> int:
    """1 when the assertion passes, 0 when it raises AssertionError."""
    try:
        fn(*args, **kwargs)
        return 1
    except AssertionError:
        return 0


def run():
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    y = x + 1e-7
    ints = jnp.arange(3)
    tree = {"a": x, "b": [ints, jnp.ones(2)]}
    checks = [
        _outcome(chex.assert_shape, x, (2, 3)),
        _outcome(chex.assert_shape, x, (3, 2)),
        _outcome(chex.assert_shape, [x, x], (2, None)),
        _outcome(chex.assert_rank, x, 2),
        _outcome(chex.assert_rank, ints, {0, 2}),
        _outcome(chex.assert_type, x, float),
        _outcome(chex.assert_type, ints, int),
        _outcome(chex.assert_type, ints, float),
        _outcome(chex.assert_equal_shape, [x, y]),
        _outcome(chex.assert_equal_shape, [x, ints]),
        _outcome(chex.assert_trees_all_close, tree, jax.tree.map(lambda t: t * 1.0, tree)),
        _outcome(chex.assert_trees_all_close, x, y + 1.0),
        _outcome(chex.assert_trees_all_equal_shapes, tree, tree),
        _outcome(chex.assert_tree_all_finite, tree),
        _outcome(chex.assert_tree_all_finite, {"a": jnp.array([1.0, jnp.nan])}),
        _outcome(chex.assert_scalar_positive, 3),
        _outcome(chex.assert_axis_dimension, x, 1, 3),
        _outcome(chex.assert_tree_shape_prefix, tree, ()),
        _outcome(chex.assert_numerical_grads, lambda v: jnp.sum(jnp.sin(v)),
                 (jnp.array([0.3, 0.7]),), order=1),
        _outcome(chex.assert_trees_all_equal_dtypes, tree, tree),
        _outcome(chex.assert_tree_no_nones, tree),
        _outcome(chex.assert_is_broadcastable, (1, 3), (2, 3)),
    ]

    state = State(w=x, b=jnp.ones(3), step=2)

    @jax.jit
    def update(s):
        chex.assert_shape(s.w, (2, 3))      # runs at trace time inside jit
        return s.replace(w=s.w * 2.0 + s.b, b=s.b - 1.0)

    new = update(state)
    leaves = jax.tree.leaves(jax.tree.map(lambda t: t + 1, state))

    traced = []

    @jax.jit
    @chex.assert_max_traces(n=1)
    def square(v):
        traced.append(1)
        return v * v

    square(x)
    square(x + 1.0)
    retraced = _outcome(square, jnp.ones(4))   # a new shape would trace again: fails

    return {
        "checks": np.array(checks, np.int32),
        "new_w": new.w, "new_b": new.b, "new_step": np.array(new.step),
        "leaf_sum": np.array([float(jnp.sum(jnp.asarray(t))) for t in leaves], np.float32),
        "num_leaves": np.array(len(leaves)),
        "traces": np.array(len(traced)), "retrace_outcome": np.array(retraced),
    }
