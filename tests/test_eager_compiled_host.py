"""Large eager binds of primitives whose NumPy reference is slow (erf_inv, lgamma, threefry,
...) run their compiled kernel on the CPU: same values as jit, bitwise, and close to the
float64 reference; small ones keep the NumPy path."""

import numpy as np
import pytest

import minijax as jax
import minijax.lax as lax
from minijax import dispatch, eager_compiled
from minijax.lax import special_math

SLOW_UNARY = {
    "erf_inv": (lax.erf_inv, special_math.erf_inv, (-0.999, 0.999)),
    "erf": (lax.erf, special_math.erf, (-4.0, 4.0)),
    "erfc": (lax.erfc, special_math.erfc, (-4.0, 6.0)),
    "lgamma": (lax.lgamma, special_math.lgamma, (0.01, 30.0)),
    "digamma": (lax.digamma, special_math.digamma, (0.01, 30.0)),
}


def _compiled_programs(name, shape):
    return [key for key in eager_compiled._cache
            if key[0].name == name and key[1][0].shape == shape]


@pytest.mark.parametrize("name", sorted(SLOW_UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_eager_bind_is_the_compiled_kernel(name, dtype, request):
    if dtype == np.float64:
        request.getfixturevalue("x64")
    fn, reference, (lo, hi) = SLOW_UNARY[name]
    threshold = next(size for prim, size in dispatch.compiled_from_size.items()
                     if prim.name == name)
    x = np.random.default_rng(0).uniform(lo, hi, threshold + 5).astype(dtype)
    eager = np.asarray(fn(x))
    assert eager.dtype == dtype
    assert _compiled_programs(name, x.shape)  # the eager bind ran a compiled program
    jitted = np.asarray(jax.jit(fn)(x))
    np.testing.assert_array_equal(eager, jitted)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(eager, reference(x.astype(np.float64)), rtol=tol, atol=tol)


def test_small_eager_bind_keeps_the_numpy_reference():
    x = np.linspace(-0.9, 0.9, 7, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(lax.erf_inv(x)),
                                  special_math.erf_inv(x).astype(np.float32))
    assert not _compiled_programs("erf_inv", x.shape)


def test_large_eager_random_normal_matches_jit():
    key = jax.random.PRNGKey(3)
    shape = (3, 5000)
    eager = np.asarray(jax.random.normal(key, shape))
    jitted = np.asarray(jax.jit(lambda k: jax.random.normal(k, shape))(key))
    np.testing.assert_array_equal(eager, jitted)
    assert abs(eager.mean()) < 0.05 and abs(eager.std() - 1) < 0.05


@pytest.mark.parametrize("y", [0.0, 1e-300, 0.5, 0.9999999, 1 - 1e-16, 1.0, -1.0, 1.5, np.nan])
def test_float64_erf_inv_inverts_erf(y):
    x = special_math.erf_inv(np.float64(y))
    if abs(y) > 1 or np.isnan(y):
        assert np.isnan(x)
    elif abs(y) == 1:
        assert x == np.copysign(np.inf, y)
    elif abs(y) >= 0.5:
        np.testing.assert_allclose(special_math.erfc(x), 1 - y, rtol=1e-14)
    else:
        np.testing.assert_allclose(special_math.erf(x), y, rtol=1e-14, atol=1e-310)
