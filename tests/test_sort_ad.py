"""Derivatives of sorting: lax.sort / sort_key_val / top_k and the jnp functions built on them
(sort, argsort + take_along_axis, median, quantile, percentile). Gradients are checked against
finite differences and against the permutation computed by NumPy, eagerly, under jit and
under vmap."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.test_util import check_grads, check_vmap

SETTINGS = settings(max_examples=15, deadline=None)
SHAPES = st.sampled_from([(0,), (1,), (5,), (3, 7), (2, 1), (4, 0), (2, 3, 5)])


def _distinct(rng, shape):
    """Values without ties, so the sort is differentiable everywhere near them."""
    return rng.permutation(np.prod(shape, dtype=int)).reshape(shape) * 0.37 + \
        rng.uniform(0, 0.1, shape)


def _sort_grad_reference(x, w, axis):
    """d/dx sum(w * sort(x, axis)): w scattered back through NumPy's sorting permutation."""
    perm = np.argsort(x, axis=axis, kind="stable")
    g = np.zeros_like(x)
    np.put_along_axis(g, perm, w, axis=axis)
    return g


@SETTINGS
@given(shape=SHAPES, seed=st.integers(0, 2**16), use_jit=st.booleans())
def test_sort_gradient_against_permutation(shape, seed, use_jit):
    rng = np.random.default_rng(seed)
    x = _distinct(rng, shape).astype(np.float32)
    w = rng.standard_normal(shape).astype(np.float32)
    for axis in range(len(shape)):
        def loss(a, axis=axis):
            return jnp.sum(lax.sort(a, axis) * w)
        g = minijax.grad(loss)
        g = minijax.jit(g) if use_jit else g
        np.testing.assert_allclose(np.asarray(g(x)), _sort_grad_reference(x, w, axis),
                                   rtol=1e-6)


@SETTINGS
@given(shape=SHAPES, seed=st.integers(0, 2**16), k=st.integers(0, 7), use_jit=st.booleans())
def test_top_k_gradient_against_permutation(shape, seed, k, use_jit):
    k = min(k, shape[-1])
    rng = np.random.default_rng(seed)
    x = _distinct(rng, shape).astype(np.float32)
    w = rng.standard_normal(shape[:-1] + (k,)).astype(np.float32)
    g = minijax.grad(lambda a: jnp.sum(lax.top_k(a, k)[0] * w))
    g = minijax.jit(g) if use_jit else g
    perm = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    want = np.zeros_like(x)
    np.put_along_axis(want, perm, w, axis=-1)
    np.testing.assert_allclose(np.asarray(g(x)), want, rtol=1e-6)


def test_sort_gradient_over_threading_threshold():
    # Eager only: the CPU backend's compiled sort is far too slow at this size for a test.
    rng = np.random.default_rng(0)
    n = (1 << 19) + 3
    x = rng.permutation(2 * n).reshape(2, n).astype(np.float32)
    w = rng.standard_normal((2, n)).astype(np.float32)
    g = minijax.grad(lambda a: jnp.sum(lax.sort(a, 1) * w))
    np.testing.assert_array_equal(np.asarray(g(x)), _sort_grad_reference(x, w, 1))


JNP_FUNCTIONS = {
    "sort": lambda a: jnp.sort(a, axis=1),
    "sort_descending": lambda a: jnp.sort(a, axis=0, descending=True),
    "sort_flat": lambda a: jnp.sort(a, axis=None),
    "argsort_take": lambda a: jnp.take_along_axis(a, jnp.argsort(a, axis=1), axis=1),
    "median": lambda a: jnp.median(a, axis=1),
    "quantile": lambda a: jnp.quantile(a, np.array([0.1, 0.5, 0.9]), axis=0),
    "percentile": lambda a: jnp.percentile(a, 30.0),
    "top_k": lambda a: lax.top_k(a, 3)[0],
    "sort_key_val": lambda a: lax.sort_key_val(a[0], a[1] * a[2])[1],
    "sort_two_keys": lambda a: lax.sort((a[0] * 0 + 1, a[1], a[2]), num_keys=2)[2],
}


@pytest.mark.parametrize("name", sorted(JNP_FUNCTIONS))
@pytest.mark.parametrize("use_jit", [False, True])
def test_sorting_functions_check_grads(x64, name, use_jit):
    f = JNP_FUNCTIONS[name]
    f = minijax.jit(f) if use_jit else f
    x = _distinct(np.random.default_rng(3), (3, 5))
    check_grads(f, (x,), 2)


@pytest.mark.parametrize("name", sorted(JNP_FUNCTIONS))
def test_sorting_function_gradients_vmap(name):
    f = JNP_FUNCTIONS[name]
    xs = np.stack([_distinct(np.random.default_rng(s), (3, 5)) for s in range(4)])
    xs = xs.astype(np.float32)
    check_vmap(minijax.grad(lambda a: jnp.sum(f(a) ** 2)), (xs,), 0, 0, atol=1e-4, rtol=1e-4)
    check_vmap(minijax.jit(minijax.grad(lambda a: jnp.sum(jnp.sin(f(a))))), (xs,), 2, 1,
               atol=1e-4, rtol=1e-4)
