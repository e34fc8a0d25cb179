"""pmap's collectives over `axis_index_groups` (psum, pmean, pmax, pmin and their
derivatives): each group of axis indices reduces on its own, lowered to XLA's all-reduce
with one replica group per index group. Expected values are real JAX 0.10's (pmap over 4
forced host devices), hard-coded; they also equal the NumPy reductions per group."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.interpreters import axis_env
from minijax.lax import collectives_lowering

pytestmark = pytest.mark.skipif(len(minijax.devices()) < 4, reason="needs 4 CPU devices")

X = (np.arange(8.0, dtype=np.float32).reshape(4, 2)) ** 2


def _pmap(f):
    return minijax.pmap(f, axis_name="i", devices=minijax.devices()[:4])


def _by_groups(x, groups, reduce):
    out = np.empty_like(x)
    for g in groups:
        out[list(g)] = reduce(x[list(g)], axis=0)
    return out


@pytest.mark.parametrize("groups", [[[0, 2], [1, 3]], [[0, 1], [2, 3]], [[3, 1], [0, 2]],
                                    [[0], [1], [2], [3]], [[0, 1, 2, 3]]])
@pytest.mark.parametrize("name, reduce", [("psum", np.sum), ("pmax", np.max),
                                          ("pmin", np.min), ("pmean", np.mean)])
def test_group_reductions_equal_numpy_per_group(groups, name, reduce):
    op = getattr(lax, name)
    got = np.asarray(_pmap(lambda v: op(v, "i", axis_index_groups=groups))(X))
    np.testing.assert_array_equal(got, _by_groups(X, groups, reduce))


def test_values_and_grad_as_jax():
    g = [[0, 2], [1, 3]]
    # JAX 0.10: jax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=g), axis_name="i")(X)
    np.testing.assert_array_equal(
        np.asarray(_pmap(lambda v: lax.psum(v, "i", axis_index_groups=g))(X)),
        [[16, 26], [40, 58], [16, 26], [40, 58]])
    np.testing.assert_array_equal(
        np.asarray(_pmap(lambda v: lax.pmean(v, "i", axis_index_groups=g))(X)),
        [[8, 13], [20, 29], [8, 13], [20, 29]])
    # JAX 0.10: pmap(grad(lambda v: psum(sum(v * v), "i", axis_index_groups=g)))(X)
    grad = _pmap(minijax.grad(lambda v: lax.psum(jnp.sum(v * v), "i", axis_index_groups=g)))
    np.testing.assert_array_equal(np.asarray(grad(X)),
                                  [[0, 4], [16, 36], [64, 100], [144, 196]])
    # pmax's tangent goes to the group's maximum (ties share it); JAX 0.10 has no pmax
    # derivative. Each member's output depends on the maximum: its holder gets both
    # members' cotangents (psum's transpose is psum, as in the value above).
    gmax = _pmap(minijax.grad(lambda v: jnp.sum(lax.pmax(v, "i",
                                                          axis_index_groups=[[0, 1], [2, 3]]))))
    np.testing.assert_array_equal(np.asarray(gmax(X)), [[0, 0], [2, 2], [0, 0], [2, 2]])


def test_lowered_replica_groups_follow_the_index_groups():
    """Per group of the named axis (here axis "i" of a 2 x 4 mesh, stride 1), one replica
    group per index group: JAX writes replica_groups={{0,3},{1,2}} for 4 devices."""
    env = axis_env.SpmdAxes(("j", "i"), (2, 4))
    attrs = collectives_lowering._group_attrs(env, ("i",), ((0, 3), (1, 2)))
    assert attrs["replica_groups"] == "{{0,3},{1,2},{4,7},{5,6}}"
    assert collectives_lowering._group_attrs(env, ("i",))["replica_groups"] == \
        "{{0,1,2,3},{4,5,6,7}}"
    f = _pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 3], [1, 2]]))
    np.testing.assert_array_equal(np.asarray(f(X)), _by_groups(X, [[0, 3], [1, 2]], np.sum))


def test_errors_as_jax():
    with pytest.raises(ValueError, match="cover all indices exactly once"):
        _pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2]]))(X)
    with pytest.raises(ValueError, match="same size"):
        _pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0], [1, 2, 3]]))(X)
    with pytest.raises(NotImplementedError, match="not supported in vmap collectives"):
        minijax.vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]),
                     axis_name="i")(X)
