"""minijax.ops (jax.ops) segment reductions against JAX 0.10.2's values (hard-coded), a
Python-loop reference (hypothesis), and their gradients."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import ops

DATA = np.array([[1., 2.], [3., -4.], [5., 6.], [-7., 8.], [9., 0.5]], np.float32)
IDS = np.array([0, 2, 0, 3, 2])
INF = np.inf

# JAX 0.10.2: f(DATA, IDS, num_segments=5)
JAX_2D = {
    "segment_sum": [[6, 8], [0, 0], [12, -3.5], [-7, 8], [0, 0]],
    "segment_max": [[5, 6], [-INF, -INF], [9, 0.5], [-7, 8], [-INF, -INF]],
    "segment_min": [[1, 2], [INF, INF], [3, -4], [-7, 8], [INF, INF]],
    "segment_prod": [[5, 12], [1, 1], [27, -2], [-7, 8], [1, 1]],
}
# JAX: f([3, 1, 4, 1, 5] int32, IDS, 5)
JAX_INT = {"segment_sum": [7, 0, 6, 1, 0],
           "segment_max": [4, -2147483648, 5, 1, -2147483648],
           "segment_min": [3, 2147483647, 1, 1, 2147483647],
           "segment_prod": [12, 1, 5, 1, 1]}
# JAX: f(DATA[:, 0], [0, 7, -1, 1, 1], 3): ids 7 and -1 are out of range and dropped
JAX_OOB = {"segment_sum": [1, 2, 0], "segment_max": [1, 9, -INF],
           "segment_min": [1, -7, INF], "segment_prod": [1, -63, 1]}
# JAX: grad(lambda d: sum(f(d, IDS, 4) ** 2))(DATA)
JAX_GRAD = {"segment_sum": [[12, 16], [24, -7], [12, 16], [-14, 16], [24, -7]],
            "segment_max": [[0, 0], [0, 0], [10, 12], [-14, 16], [18, 1]],
            "segment_min": [[2, 4], [6, -8], [0, 0], [-14, 16], [0, 0]]}
NAMES = sorted(JAX_2D)


@pytest.mark.parametrize("name", NAMES)
def test_values_match_jax(name):
    f = getattr(ops, name)
    np.testing.assert_array_equal(f(DATA, IDS, num_segments=5), JAX_2D[name])
    np.testing.assert_array_equal(f(DATA, IDS), JAX_2D[name][:4])  # max(ids) + 1 segments
    got = f(jnp.array([3, 1, 4, 1, 5]), IDS, 5)
    assert got.dtype == jnp.int32
    np.testing.assert_array_equal(got, JAX_INT[name])
    np.testing.assert_array_equal(f(DATA[:, 0], np.array([0, 7, -1, 1, 1]), 3), JAX_OOB[name])


@pytest.mark.parametrize("name", NAMES)
def test_jit_vmap_and_buckets(name):
    f = getattr(ops, name)
    want = np.asarray(JAX_2D[name][:4], np.float32)
    got = minijax.jit(lambda d: f(d, IDS, 4, indices_are_sorted=False, unique_indices=False))(
        DATA)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(minijax.vmap(lambda d: f(d, IDS, 4))(DATA.T), want.T)
    np.testing.assert_array_equal(f(DATA[:, 0], IDS, 4, bucket_size=2), want[:, 0])


@pytest.mark.parametrize("name", sorted(JAX_GRAD))
def test_gradients_match_jax(name):
    f = getattr(ops, name)
    g = minijax.grad(lambda d: jnp.sum(f(d, IDS, 4) ** 2))(DATA)
    np.testing.assert_array_equal(g, JAX_GRAD[name])


def test_gradient_ties_and_unique_prod_match_jax():
    d = jnp.array([2., 5., 5., 1.])
    ids = jnp.array([0, 0, 0, 1])
    w = jnp.array([1., 3.])
    # JAX: tied maxima share the cotangent equally
    np.testing.assert_array_equal(
        minijax.grad(lambda d: jnp.sum(ops.segment_max(d, ids, 2) * w))(d), [0, 0.5, 0.5, 3])
    np.testing.assert_array_equal(
        minijax.grad(lambda d: jnp.sum(ops.segment_min(d, ids, 2) * w))(d), [1, 0, 0, 3])
    g = minijax.grad(lambda d: jnp.sum(ops.segment_prod(
        d, jnp.array([2, 0, 1, 3]), 4, unique_indices=True) * jnp.arange(4.)))(d)
    np.testing.assert_array_equal(g, [2, 0, 1, 3])
    with pytest.raises(NotImplementedError, match="unique_indices"):  # as JAX
        minijax.grad(lambda d: jnp.sum(ops.segment_prod(d, ids, 2)))(d)


def test_clip_mode_trailing_dims_and_errors():
    got = ops.segment_sum(jnp.array([1., 2., 3.]), jnp.array([0, 5, 1]), 2, mode="clip")
    np.testing.assert_array_equal(got, [1, 5])  # JAX: id 5 clipped to 1
    np.testing.assert_array_equal(ops.segment_sum(jnp.ones((3, 2, 2)), jnp.array([1, 1, 0]), 2),
                                  np.stack([np.ones((2, 2)), 2 * np.ones((2, 2))]))
    with pytest.raises(ValueError, match="one id per row"):
        ops.segment_sum(DATA, IDS[:3], 5)
    with pytest.raises(minijax.errors.ConcretizationTypeError, match="num_segments"):
        minijax.jit(lambda d, i: ops.segment_sum(d, i))(DATA, IDS)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-2, 6), min_size=1, max_size=12), st.integers(1, 6),
       st.sampled_from(NAMES))
def test_matches_python_loop(ids, n, name):
    rng = np.random.RandomState(len(ids))
    data = rng.uniform(-3, 3, (len(ids), 2)).astype(np.float32)
    reduce = {"segment_sum": np.add, "segment_prod": np.multiply,
              "segment_max": np.maximum, "segment_min": np.minimum}[name]
    init = {"segment_sum": 0.0, "segment_prod": 1.0, "segment_max": -np.inf,
            "segment_min": np.inf}[name]
    want = np.full((n, 2), init, np.float32)
    for row, s in zip(data, ids):
        if 0 <= s < n:
            want[s] = reduce(want[s], row)
    got = getattr(ops, name)(data, np.array(ids), n)
    np.testing.assert_allclose(got, want, rtol=1e-5)
