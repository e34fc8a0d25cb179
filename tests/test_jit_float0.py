"""float0 (the gradient of integer and boolean inputs, grad(..., allow_int=True)) through jit:
float0 results come back as NumPy arrays of dtype float0 with the input's shape, as in JAX;
float0 arguments are accepted (their shape is part of the cache key, no buffer is passed).
References: the eager transformation and NumPy for the float gradients."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import tree_util
from minijax.dtypes import float0

SHAPES = st.sampled_from([(), (0,), (1,), (5,), (3, 4)])


def _assert_float0(x, shape):
    assert type(x) is np.ndarray and x.dtype == float0 and x.shape == shape


def test_float0_is_jaxs_dtype():
    assert float0 == np.dtype([("float0", np.void, 0)]) and float0.itemsize == 0
    assert minijax.api.float0 is float0


@settings(max_examples=20, deadline=None)
@given(shape=SHAPES, int_dtype=st.sampled_from([np.int32, np.uint8, np.bool_]),
       seed=st.integers(0, 2**16))
def test_jit_grad_allow_int(shape, int_dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    n = rng.integers(0, 2, shape).astype(int_dtype)

    def f(x, n):
        return jnp.sum(x * x * n.astype(np.float32))
    g = minijax.grad(f, argnums=(0, 1), allow_int=True)
    gx, gn = minijax.jit(g)(x, n)
    np.testing.assert_allclose(np.asarray(gx), 2 * x * n.astype(np.float32), rtol=1e-6)
    _assert_float0(gn, shape)
    ex, en = g(x, n)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(ex), rtol=1e-6)
    assert en.dtype == gn.dtype and en.shape == gn.shape


def test_jit_value_and_grad_pytree_and_compiled():
    params = {"w": np.array([1.0, -2.0], np.float32), "steps": np.int32(3),
              "mask": np.array([True, False])}

    def loss(p):
        return jnp.sum(p["w"] * p["w"] * p["mask"] * p["steps"])
    vg = minijax.jit(minijax.value_and_grad(loss, allow_int=True))
    value, grads = vg(params)
    assert float(value) == pytest.approx(3.0)
    np.testing.assert_allclose(np.asarray(grads["w"]), [6.0, 0.0])
    _assert_float0(grads["steps"], ())
    _assert_float0(grads["mask"], (2,))
    compiled = vg.lower(params).compile()
    value2, grads2 = compiled(params)
    assert float(value2) == float(value)
    _assert_float0(grads2["mask"], (2,))
    assert tree_util.tree_structure(grads2) == tree_util.tree_structure(grads)


def test_jit_vjp_and_vmapped_grad_of_integers():
    n = np.arange(4, dtype=np.int32)
    (ct,) = minijax.jit(lambda n: minijax.vjp(lambda m: m * 2, n)[1](np.ones(4, np.int32)))(n)
    _assert_float0(ct, (4,))
    gx, gn = minijax.jit(minijax.vmap(minijax.grad(lambda x, k: x * k, argnums=(0, 1),
                                                   allow_int=True)))(np.ones(4, np.float32), n)
    np.testing.assert_allclose(np.asarray(gx), n.astype(np.float32))
    _assert_float0(gn, (4,))


def test_float0_arguments_sgd_update():
    params = {"w": np.array([1.0, 2.0], np.float32), "count": np.int32(0)}
    grads = minijax.grad(lambda p: jnp.sum(p["w"] ** 2) * p["count"].astype(np.float32),
                         allow_int=True)(params)
    _assert_float0(grads["count"], ())

    @minijax.jit
    def update(p, g):
        return tree_util.tree_map(lambda a, b: a if b.dtype == float0 else a - 0.1 * b, p, g)
    new = update(params, grads)
    np.testing.assert_allclose(np.asarray(new["w"]), params["w"])
    assert int(new["count"]) == 0
    update(params, grads)
    assert update.cache_stats.compiles == 1
    # The float0 argument's shape is part of the signature; no buffer is passed for it.
    ident = minijax.jit(lambda a, b: (a, b + 1.0))
    a, b = ident(np.zeros(3, float0), np.float32(1.0))
    _assert_float0(a, (3,))
    assert float(b) == 2.0
    a, _ = ident(np.zeros((2, 2), float0), np.float32(1.0))
    _assert_float0(a, (2, 2))
    assert ident.cache_stats.compiles == 2
    text = ident.lower(np.zeros(3, float0), np.float32(1.0)).as_text()
    assert text.count("parameter(") == 1 and "f32[] parameter(0)" in text


def test_eval_shape_of_float0_result():
    out = minijax.jit(minijax.grad(lambda x, n: jnp.sum(x * n), argnums=(0, 1),
                                   allow_int=True)
                      ).eval_shape(np.float32(1.0), np.arange(3, dtype=np.int32))
    assert out[1].shape == (3,) and out[1].dtype == float0
    assert out[0].shape == () and out[0].dtype == np.float32
