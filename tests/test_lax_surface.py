"""jax.lax surface added for issue 13: optimization_barrier, split, axis_size, collapse,
broadcast_to_rank, empty, mulhi and the special-function aliases (JAX 0.10.2 values)."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax


def test_optimization_barrier_identity_pytree_jit_grad_vmap():
    tree = {"a": jnp.arange(3.0), "b": (jnp.ones((2,), jnp.int32),)}
    out = lax.optimization_barrier(tree)
    np.testing.assert_array_equal(out["a"], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(out["b"][0], [1, 1])
    f = minijax.jit(lambda x: lax.optimization_barrier(x * 2.0) + 1.0)
    np.testing.assert_allclose(f(jnp.arange(3.0)), [1.0, 3.0, 5.0])
    # d/dx barrier(x^2) * 3 = 6x, also through jit and vmap
    g = minijax.grad(lambda x: lax.optimization_barrier(x * x) * 3.0)
    assert float(g(2.0)) == 12.0
    assert float(minijax.jit(g)(2.0)) == 12.0
    np.testing.assert_allclose(minijax.vmap(g)(jnp.arange(3.0)), [0.0, 6.0, 12.0])
    t = minijax.jvp(lambda x: lax.optimization_barrier((x, x * x)), (3.0,), (1.0,))[1]
    assert float(t[0]) == 1.0 and float(t[1]) == 6.0


def test_optimization_barrier_survives_lowering():
    text = minijax.jit(lambda x: lax.optimization_barrier(x * 2.0)).lower(
        jnp.ones(3)).as_text()
    assert "opt-barrier" in text


def test_split():
    x = jnp.arange(24).reshape(2, 12)
    parts = lax.split(x, (3, 0, 9), axis=1)
    assert [p.shape for p in parts] == [(2, 3), (2, 0), (2, 9)]
    np.testing.assert_array_equal(parts[2], np.arange(24).reshape(2, 12)[:, 3:])
    parts = lax.split(x, [1, 1], axis=-2)
    np.testing.assert_array_equal(parts[1], [np.arange(12, 24)])
    with pytest.raises(ValueError, match="sum to"):
        lax.split(x, [5, 5], axis=1)
    # split is linear: the gradient of sum(piece_i * i) is i on each piece
    g = minijax.grad(lambda v: sum(jnp.sum(p) * i for i, p in
                                   enumerate(lax.split(v, [2, 3]))))(jnp.ones(5))
    np.testing.assert_array_equal(g, [0, 0, 1, 1, 1])


def test_axis_size_under_vmap():
    out = minijax.vmap(lambda x: x * lax.axis_size("i"), axis_name="i")(jnp.ones(5))
    np.testing.assert_array_equal(out, [5.0] * 5)
    nested = minijax.vmap(minijax.vmap(lambda x: x * lax.axis_size(("i", "j")),
                                       axis_name="j"), axis_name="i")(jnp.ones((2, 3)))
    np.testing.assert_array_equal(nested, np.full((2, 3), 6.0))
    with pytest.raises(NameError):
        lax.axis_size("nope")


def test_collapse_broadcast_to_rank_empty():
    x = jnp.arange(24).reshape(2, 3, 4)
    assert lax.collapse(x, 1).shape == (2, 12)  # JAX: (2, 12)
    assert lax.collapse(x, 0, 2).shape == (6, 4)
    np.testing.assert_array_equal(lax.collapse(x, 0, 2), np.arange(24).reshape(6, 4))
    assert lax.broadcast_to_rank(jnp.ones(3), 3).shape == (1, 1, 3)  # JAX: (1, 1, 3)
    with pytest.raises(ValueError):
        lax.broadcast_to_rank(jnp.ones((2, 2)), 1)
    e = lax.empty((2, 3), jnp.float32)
    assert e.shape == (2, 3) and e.dtype == np.float32


def test_mulhi_matches_jax():
    # JAX 0.10.2: lax.mulhi on int8 / uint8 / int32 / uint32
    a8 = np.array([-128, 127, -1, 100, -77], np.int8)
    b8 = np.array([-128, 127, 5, -100, 33], np.int8)
    np.testing.assert_array_equal(lax.mulhi(a8, b8), [64, 63, -1, -40, -10])
    np.testing.assert_array_equal(lax.mulhi(a8.view(np.uint8), b8.view(np.uint8)),
                                  [64, 63, 4, 60, 23])
    assert int(lax.mulhi(jnp.uint32(0xFFFFFFFF), jnp.uint32(3))) == 2
    assert int(lax.mulhi(jnp.int32(-5), jnp.int32(7))) == -1
    assert int(lax.mulhi(jnp.int32(123456789), jnp.int32(987654321))) == 28389652
    f = minijax.jit(lambda x: lax.mulhi(x, x))
    np.testing.assert_array_equal(f(jnp.array([-3, 100000, -2**31], jnp.int32)),
                                  [0, 2, 2**30])
    with pytest.raises(TypeError, match="integer"):
        lax.mulhi(jnp.float32(1), jnp.float32(2))


def test_mulhi_random_against_python_ints():
    rng = np.random.default_rng(0)
    for dt in (np.int16, np.uint16, np.int32, np.uint32):
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, 50, endpoint=True).astype(dt)
        b = rng.integers(info.min, info.max, 50, endpoint=True).astype(dt)
        bits = info.bits
        want = [(int(x) * int(y)) >> bits for x, y in zip(a, b)]
        np.testing.assert_array_equal(np.asarray(lax.mulhi(a, b)).astype(np.int64), want)




def test_special_functions_match_jax():
    # JAX 0.10.2 float32 values
    np.testing.assert_allclose(lax.zeta(3.0, 2.0), 0.20205691, rtol=1e-5)
    np.testing.assert_allclose(lax.polygamma(2.0, 1.5), -0.8287969, rtol=1e-5)
    np.testing.assert_allclose(lax.igamma(2.0, 1.5), 0.44217455, rtol=1e-5)
    np.testing.assert_allclose(lax.igammac(2.0, 1.5), 0.55782545, rtol=1e-5)
    np.testing.assert_allclose(lax.betainc(2.0, 3.0, 0.4), 0.5248004, rtol=1e-5)
    np.testing.assert_allclose(lax.bessel_i0e(1.3), 0.40042493, rtol=1e-5)
    np.testing.assert_allclose(lax.bessel_i1e(-1.3), -0.21729757, rtol=1e-5)
    # they go through jit and grad: d/dx P(2, x) = x e^-x / Gamma(2)
    g = minijax.jit(minijax.grad(lambda x: lax.igamma(2.0, x)))(1.5)
    np.testing.assert_allclose(g, 1.5 * np.exp(-1.5), rtol=1e-4)
