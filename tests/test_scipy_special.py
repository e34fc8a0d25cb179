"""minijax.scipy.special vs SciPy in float64 (values, tails), gradients (finite where JAX's
are), logsumexp options and vmap."""

import numpy as np
import pytest
import scipy.special as ss
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
from minijax.scipy import special
from minijax.test_util import check_grads, check_vmap

UNARY = {
    "erf": (ss.erf, np.linspace(-5, 5, 41)),
    "erfc": (ss.erfc, np.linspace(-5, 25, 61)),
    "erfinv": (ss.erfinv, np.linspace(-0.999, 0.999, 41)),
    "gammaln": (ss.gammaln, np.linspace(0.05, 50, 41)),
    "digamma": (ss.digamma, np.linspace(0.1, 30, 41)),
    "expit": (ss.expit, np.linspace(-700, 700, 41)),
    "logit": (ss.logit, np.linspace(0.001, 0.999, 41)),
    "ndtr": (ss.ndtr, np.linspace(-30, 10, 81)),
    "log_ndtr": (ss.log_ndtr, np.concatenate([np.linspace(-100, 30, 131), [-1e3, 1e3]])),
    "ndtri": (ss.ndtri, np.concatenate([np.logspace(-300, -1, 30), np.linspace(0.1, 0.9, 9),
                                        1 - np.logspace(-12, -1, 12)])),
    "entr": (ss.entr, np.array([0.0, 1e-300, 0.1, 0.5, 1.0, 10.0, -1.0])),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float64(name, x64):
    ref, x = UNARY[name]
    got = np.asarray(getattr(special, name)(x))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, ref(x), rtol=1e-9 if name != "digamma" else 1e-8,
                               atol=1e-300)


@pytest.mark.parametrize("name", ["erf", "erfc", "expit", "ndtr", "log_ndtr", "ndtri",
                                  "gammaln", "erfinv"])
def test_unary_float32(name):
    ref, x = UNARY[name]
    x32 = x.astype(np.float32)
    if name == "ndtri":  # subnormal probabilities are clipped to the smallest normal
        x32 = x32[(x32 >= np.finfo(np.float32).tiny) & (x32 < 1)]
    got = np.asarray(getattr(special, name)(x32))
    assert got.dtype == np.float32
    want = ref(x32.astype(np.float64))
    finite = np.isfinite(want) & (np.abs(want) < 3e38)
    np.testing.assert_allclose(got[finite], want[finite], rtol=5e-5, atol=1e-37)


def test_ndtri_edges():
    out = np.asarray(special.ndtri(np.array([0.0, 1.0, 0.5, -0.1, 1.1, np.nan])))
    assert out[0] == -np.inf and out[1] == np.inf and out[2] == 0
    assert np.all(np.isnan(out[3:]))


@settings(max_examples=30, deadline=None)
@given(st.floats(1e-300, 1.0, exclude_max=True))
def test_ndtri_inverts_ndtr(p):
    old = minijax.config.jax_enable_x64
    minijax.config.update("jax_enable_x64", True)
    try:
        np.testing.assert_allclose(float(special.ndtri(p)), ss.ndtri(p), rtol=1e-9,
                                   atol=1e-12)
    finally:
        minijax.config.update("jax_enable_x64", old)


def test_xlogy_xlog1py(x64):
    x = np.array([0.0, 0.0, 1.5, 2.0, -1.0])
    y = np.array([0.0, 3.0, 2.0, 0.0, 0.5])
    np.testing.assert_allclose(special.xlogy(x, y), ss.xlogy(x, y))
    y1 = np.array([-1.0, 3.0, 2.0, -0.5, 1e-20])
    np.testing.assert_allclose(special.xlog1py(x, y1), ss.xlog1py(x, y1))
    # the gradients are finite at x = 0 (the reason for xlogy)
    gx = minijax.grad(lambda a: special.xlogy(a, 2.0))(0.0)
    np.testing.assert_allclose(gx, np.log(2.0))
    gy = minijax.grad(lambda b: special.xlogy(0.0, b))(2.0)
    assert float(gy) == 0.0
    check_grads(special.xlogy, (np.array([0.5, 2.0]), np.array([1.5, 3.0])), order=2,
                atol=1e-6, rtol=1e-6)
    check_grads(special.xlog1py, (np.array([0.5, 2.0]), np.array([1.5, 3.0])), order=1,
                atol=1e-6, rtol=1e-6)


def test_logsumexp(x64):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)) * 50
    b = rng.uniform(0.1, 2.0, (3, 4))
    for axis in (None, 0, 1, (0, 1)):
        for keepdims in (False, True):
            np.testing.assert_allclose(special.logsumexp(a, axis=axis, keepdims=keepdims),
                                       ss.logsumexp(a, axis=axis, keepdims=keepdims),
                                       rtol=1e-12)
            np.testing.assert_allclose(special.logsumexp(a, axis=axis, b=b, keepdims=keepdims),
                                       ss.logsumexp(a, axis=axis, b=b, keepdims=keepdims),
                                       rtol=1e-12)
    sb = np.array([1.0, -2.0, 0.5])
    va = np.array([0.0, 1.0, 2.0])
    got, sign = special.logsumexp(va, b=sb, return_sign=True)
    want, wsign = ss.logsumexp(va, b=sb, return_sign=True)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert float(sign) == wsign
    assert np.isnan(float(special.logsumexp(np.array([0.0, 1.0]), b=np.array([1.0, -1.0]))))
    big = np.array([1e308, 1e308])
    np.testing.assert_allclose(special.logsumexp(big), 1e308 + np.log(2))
    assert float(special.logsumexp(np.array([-np.inf, -np.inf]))) == -np.inf


def test_logsumexp_gradients(x64):
    a = np.array([0.3, -1.2, 2.0])
    check_grads(special.logsumexp, (a,), order=2, atol=1e-6, rtol=1e-6)
    g = np.asarray(minijax.grad(special.logsumexp)(np.array([0.0, -np.inf, 1.0])))
    assert np.all(np.isfinite(g)) and g[1] == 0
    np.testing.assert_allclose(g[[0, 2]], ss.softmax([0.0, 1.0]))
    g_big = np.asarray(minijax.grad(special.logsumexp)(np.array([1e4, 1e4])))
    np.testing.assert_allclose(g_big, [0.5, 0.5])
    check_vmap(lambda v: special.logsumexp(v), (a.reshape(1, 3).repeat(2, 0),), in_axes=0)


def test_gradients_of_special_functions(x64):
    x = np.array([0.3, 0.7, 1.4])
    for f in (special.erf, special.erfc, special.expit, special.ndtr, special.log_ndtr,
              special.gammaln, special.logit):
        check_grads(f, (x / 2,), order=1, atol=1e-6, rtol=1e-6)
    check_grads(special.ndtri, (np.array([0.1, 0.4, 0.8]),), order=1, atol=1e-6, rtol=1e-6)
    g = float(minijax.grad(special.log_ndtr)(-50.0))
    np.testing.assert_allclose(g, 50.0, rtol=1e-3)  # d/dx log Phi(x) ~ -x as x -> -inf
