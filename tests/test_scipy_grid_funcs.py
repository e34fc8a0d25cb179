"""minijax.scipy.integrate.trapezoid, cluster.vq.vq, ndimage.map_coordinates and
interpolate.RegularGridInterpolator against scipy (hypothesis shapes) and JAX's values
(boundary modes, rounding), under jit, vmap and grad."""

import numpy as np
import pytest
import scipy.cluster.vq
import scipy.integrate
import scipy.interpolate
import scipy.ndimage
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax.scipy.cluster.vq import vq
from minijax.scipy.integrate import trapezoid
from minijax.scipy.interpolate import RegularGridInterpolator
from minijax.scipy.ndimage import map_coordinates


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_trapezoid_matches_scipy(shape, data):
    rng = np.random.RandomState(sum(shape))
    y = rng.normal(size=shape).astype(np.float32)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.cumsum(rng.uniform(0.1, 1, shape[axis])).astype(np.float32)
    np.testing.assert_allclose(trapezoid(y, axis=axis, dx=0.5),
                               scipy.integrate.trapezoid(y, axis=axis, dx=0.5), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(trapezoid(y, x, axis=axis),
                               scipy.integrate.trapezoid(y, x, axis=axis), rtol=1e-5,
                               atol=1e-6)
    assert trapezoid(np.arange(4)).dtype == np.float32


def test_trapezoid_grad_and_full_x():
    x = np.linspace(0, 1, 5, dtype=np.float32)
    g = minijax.grad(lambda y: trapezoid(y, x))(np.ones(5, np.float32))
    np.testing.assert_allclose(g, [0.125, 0.25, 0.25, 0.25, 0.125], rtol=1e-6)
    y = np.arange(6.0).reshape(2, 3)
    xs = np.array([[0, 1, 3], [0, 2, 3]], np.float64)
    np.testing.assert_allclose(trapezoid(y, xs), scipy.integrate.trapezoid(y, xs), rtol=1e-6)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 12), k=st.integers(1, 5), d=st.integers(1, 3))
def test_vq_matches_scipy(n, k, d):
    rng = np.random.RandomState(n * 7 + k)
    obs = rng.normal(size=(n, d)).astype(np.float32).astype(np.float64)
    book = rng.normal(size=(k, d)).astype(np.float32).astype(np.float64)
    codes, dist = vq(obs.astype(np.float32), book.astype(np.float32))
    want_codes, want_dist = scipy.cluster.vq.vq(obs, book)
    assert codes.dtype == np.int32
    np.testing.assert_array_equal(codes, want_codes)
    np.testing.assert_allclose(dist, want_dist, rtol=1e-5, atol=1e-6)
    c1, _ = vq(obs[:, 0], book[:, 0])
    np.testing.assert_array_equal(c1, scipy.cluster.vq.vq(obs[:, :1], book[:, :1])[0])
    with pytest.raises(ValueError, match="same rank"):
        vq(obs, book[:, 0])


X = np.arange(12.0, dtype=np.float32).reshape(3, 4)
C = [np.array([-1.5, -0.5, 0.3, 1.5, 2.5, 3.7], np.float32),
     np.array([-2.2, 0.5, 3.5, 4.5, 1.2, 5.1], np.float32)]
# JAX 0.10.2: map_coordinates(X, C, order, mode=mode, cval=-1 (order 1) / 0 (order 0))
JAX_MAP = {
    "constant": ([-1, -0.25, 1.6, -1, 4.1, -1], [0, 0, 0, 0, 0, 0]),
    "nearest": ([0, 0.5, 4.2, 9, 9.2, 11], [0, 1, 3, 11, 9, 11]),
    "wrap": ([7.8, 4.5, 2.7, 6.5, 5.2, 3.9], [6, 9, 0, 9, 1, 5]),
    "mirror": ([8.2, 2.5, 3.7, 7.5, 7.2, 2.1], [10, 5, 2, 9, 5, 1]),
    "reflect": ([3.2, 0.5, 4.2, 8.5, 9.2, 7.1], [5, 1, 3, 10, 9, 6]),
}


@pytest.mark.parametrize("mode", sorted(JAX_MAP))
def test_map_coordinates_matches_jax(mode):
    linear, nearest = JAX_MAP[mode]
    np.testing.assert_allclose(map_coordinates(X, C, 1, mode=mode, cval=-1.0), linear,
                               atol=1e-5)
    np.testing.assert_allclose(map_coordinates(X, C, 0, mode=mode), nearest)


@settings(max_examples=15, deadline=None)
@given(mode=st.sampled_from(["nearest", "wrap", "mirror", "reflect", "constant"]),
       order=st.sampled_from([0, 1]), seed=st.integers(0, 100))
def test_map_coordinates_inside_matches_scipy(mode, order, seed):
    rng = np.random.RandomState(seed)
    img = rng.normal(size=(4, 5))
    # inside the grid and away from half-integers, every mode agrees with scipy
    coords = np.stack([rng.uniform(0, 3, 7), rng.uniform(0, 4, 7)])
    coords = np.where(np.abs(coords % 1 - 0.5) < 0.05, coords + 0.1, coords)
    np.testing.assert_allclose(
        map_coordinates(img, list(coords), order, mode=mode),
        scipy.ndimage.map_coordinates(img, coords, order=order, mode=mode), rtol=1e-5,
        atol=1e-6)


def test_map_coordinates_integer_grad_vmap_and_errors():
    # JAX rounds integer results half away from zero
    np.testing.assert_array_equal(map_coordinates(np.arange(5), [np.array([0.5, 1.5, 2.6])],
                                                  1), [1, 2, 3])
    g = minijax.grad(lambda c: map_coordinates(X, [c, np.float32(1.0)], 1).sum())(
        np.float32(0.5))
    np.testing.assert_allclose(g, 4.0)  # rows differ by 4
    out = minijax.jit(minijax.vmap(lambda c: map_coordinates(X, [c, c], 1)))(C[0])
    np.testing.assert_allclose(out, map_coordinates(X, [C[0], C[0]], 1))
    with pytest.raises(NotImplementedError, match="order"):
        map_coordinates(X, C, 3)
    with pytest.raises(ValueError, match="length"):
        map_coordinates(X, C[:1], 1)


GRID = (np.array([0.0, 1, 3]), np.array([0.0, 2, 3, 5]))


def test_regular_grid_interpolator_matches_jax_and_scipy():
    pts = np.array([[0.5, 1.0], [2.0, 4.0], [-1, 0], [3, 5], [1.5, 2.5]])
    ours = RegularGridInterpolator(GRID, X)
    # JAX 0.10.2's values
    np.testing.assert_allclose(ours(pts), [2.5, 8.5, np.nan, 11, 6.5])
    np.testing.assert_allclose(ours(pts, method="nearest"), [0, 6, np.nan, 11, 5])
    for method in ("linear", "nearest"):
        ref = scipy.interpolate.RegularGridInterpolator(GRID, X.astype(np.float64),
                                                        method=method, bounds_error=False)
        inside = np.random.RandomState(0).uniform([0, 0], [3, 5], size=(10, 2))
        np.testing.assert_allclose(ours(inside, method=method), ref(inside), rtol=1e-5)
    extra = RegularGridInterpolator(GRID[:1], X, fill_value=None)
    np.testing.assert_allclose(extra(np.array([[4.0], [0.5]])), [[10, 11, 12, 13],
                                                                  [2, 3, 4, 5]])
    with pytest.raises(ValueError, match="method"):
        RegularGridInterpolator(GRID, X, method="cubic")


def test_regular_grid_interpolator_is_a_pytree_under_jit_and_grad():
    interp = RegularGridInterpolator(GRID, jnp.asarray(X))
    pts = jnp.array([[0.5, 1.0], [2.0, 4.0]])
    np.testing.assert_allclose(minijax.jit(lambda f, p: f(p))(interp, pts), [2.5, 8.5])
    # d/dx of the bilinear interpolant on the first cell: (X[1] - X[0]) / 1 along rows
    g = minijax.grad(lambda p: interp(p[None])[0])(jnp.array([0.5, 1.0]))
    np.testing.assert_allclose(g, [4.0, 0.5])
