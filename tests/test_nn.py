"""minijax.nn: activations vs float64 NumPy formulas (incl. large and small inputs),
gradient conventions, check_grads, vmap, softmax family, one_hot, standardize, initializers."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import nn, random
from minijax.nn import initializers
from minijax.test_util import check_grads, check_vmap

try:
    import jax
except Exception:  # pragma: no cover
    jax = None




def _sigmoid(x):
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) /
                    (1 + np.exp(-np.abs(x))))


def _softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _erf(x):
    return np.vectorize(math.erf)(x)


SELU_A, SELU_S = 1.6732632423543772, 1.0507009873554805
REFERENCES = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.minimum(np.maximum(x, 0), 6),
    "sigmoid": _sigmoid,
    "softplus": _softplus,
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "silu": lambda x: x * _sigmoid(x),
    "swish": lambda x: x * _sigmoid(x),
    "log_sigmoid": lambda x: -_softplus(-x),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "celu": lambda x: np.maximum(x, 0) + np.expm1(np.minimum(x, 0)),
    "selu": lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(np.minimum(x, 0))),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "mish": lambda x: x * np.tanh(_softplus(x)),
}

EDGE = np.array([-1e4, -100.0, -30.0, -6.0, -1.0, -1e-7, -0.0, 0.0, 1e-7, 0.5, 1.0, 3.0,
                 6.0, 30.0, 100.0, 1e4], np.float32)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_activation_values(name):
    got = getattr(nn, name)(EDGE)
    assert got.dtype == np.float32 and got.shape == EDGE.shape
    want = REFERENCES[name](EDGE.astype(np.float64))
    # gelu's tanh form cancels in 1 + tanh(..) for x << 0 (as JAX's): absolute error ~ eps |x|
    atol = 2e-7 * np.abs(EDGE.astype(np.float64)) if name == "gelu" else 1e-30
    err = np.abs(np.asarray(got, np.float64) - want)
    assert np.all(err <= 2e-6 * np.abs(want) + atol), (got, want)
    assert np.all(np.isfinite(np.asarray(got))) or name == "log_sigmoid"


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(-50, 50, width=32), min_size=0, max_size=6))
def test_activation_values_hypothesis(xs):
    x = np.array(xs, np.float32)
    for name in ("relu", "sigmoid", "softplus", "elu", "silu"):
        np.testing.assert_allclose(np.asarray(getattr(nn, name)(x), np.float64),
                                   REFERENCES[name](x.astype(np.float64)), rtol=5e-6,
                                   atol=1e-37)


def test_gelu_exact():
    x = np.linspace(-6, 6, 25)
    want = 0.5 * x * (1 + _erf(x / np.sqrt(2)))
    np.testing.assert_allclose(nn.gelu(x.astype(np.float32), approximate=False), want,
                               rtol=1e-5, atol=1e-7)


def test_gradient_conventions():
    # relu and relu6 have derivative 0 at the kinks (JAX's custom JVP rules)
    assert float(minijax.grad(nn.relu)(0.0)) == 0.0
    assert float(minijax.grad(nn.relu)(2.0)) == 1.0
    assert float(minijax.grad(nn.relu6)(0.0)) == 0.0
    assert float(minijax.grad(nn.relu6)(6.0)) == 0.0
    assert float(minijax.grad(nn.relu6)(3.0)) == 1.0
    # stable forms: no nan/inf gradients for large inputs
    for f in (nn.softplus, nn.sigmoid, nn.log_sigmoid, nn.silu, nn.elu, nn.gelu):
        for v in (-1e4, 1e4):
            assert np.isfinite(float(minijax.grad(f)(np.float32(v)))), (f, v)
    g = minijax.grad(lambda x: nn.softmax(x)[0])(np.array([1000.0, 0.0, -1000.0], np.float32))
    assert np.all(np.isfinite(np.asarray(g)))


@pytest.mark.parametrize("name", ["sigmoid", "softplus", "soft_sign", "silu", "log_sigmoid",
                                  "elu", "celu", "selu", "gelu", "mish", "relu",
                                  "leaky_relu"])
def test_check_grads(name, x64):
    x = np.array([-2.3, -0.7, 0.4, 1.9])
    check_grads(getattr(nn, name), (x,), order=2 if name not in ("relu", "leaky_relu") else 1,
                atol=1e-5, rtol=1e-5)


def test_softmax_family(x64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5)) * 30
    for axis in (-1, 0):
        e = np.exp(x - x.max(axis, keepdims=True))
        want = e / e.sum(axis, keepdims=True)
        np.testing.assert_allclose(nn.softmax(x, axis=axis), want, rtol=1e-12)
        lse = x.max(axis) + np.log(np.exp(x - x.max(axis, keepdims=True)).sum(axis))
        np.testing.assert_allclose(nn.logsumexp(x, axis=axis), lse, rtol=1e-12)
        np.testing.assert_allclose(nn.log_softmax(x, axis=axis),
                                   x - np.expand_dims(lse, axis), rtol=1e-10, atol=1e-12)
    big = np.array([1e4, 1e4 - 1.0, -1e4], np.float32)
    np.testing.assert_allclose(nn.softmax(big), [1 / (1 + np.exp(-1)), np.exp(-1) /
                                                 (1 + np.exp(-1)), 0.0], rtol=1e-6)
    assert np.all(np.isfinite(np.asarray(nn.log_softmax(big))[:2]))
    where = np.array([[True, False, True, True, False]] * 3)
    sm = np.asarray(nn.softmax(x, where=where))
    assert np.all(sm[:, [1, 4]] == 0)
    np.testing.assert_allclose(sm.sum(-1), 1.0)
    lsm = np.asarray(nn.log_softmax(x, where=where))
    assert np.all(np.isneginf(lsm[:, [1, 4]]))
    check_grads(lambda v: nn.softmax(v, axis=0), (x[:, :2] / 30,), order=2, atol=1e-5,
                rtol=1e-5)
    check_grads(nn.log_softmax, (x[:2] / 30,), order=1, atol=1e-5, rtol=1e-5)
    check_vmap(nn.softmax, (x,), in_axes=1, out_axes=0)


def test_glu_one_hot_standardize():
    x = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(nn.glu(x), x[:, :2] * _sigmoid(x[:, 2:]), rtol=1e-6)
    with pytest.raises(ValueError, match="divisible by 2"):
        nn.glu(np.ones((2, 3)))
    oh = nn.one_hot(np.array([0, 2, 5, -1]), 3)
    np.testing.assert_array_equal(oh, [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
    assert oh.dtype == np.float32
    oh0 = nn.one_hot(np.array([[1, 0]]), 2, axis=0, dtype=jnp.int32)
    assert oh0.shape == (2, 1, 2) and oh0.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(oh0)[:, 0, :], [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="out of bounds"):
        nn.one_hot(np.array([1]), 3, axis=3)
    y = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32) * 5 + 3
    s = np.asarray(nn.standardize(y, axis=-1))
    want = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(s, want, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(jax is None, reason="JAX is not importable")
def test_against_jax():
    x = np.linspace(-8, 8, 17).astype(np.float32)
    for name in sorted(REFERENCES) + ["softmax", "log_softmax", "standardize"]:
        np.testing.assert_allclose(getattr(nn, name)(x), getattr(jax.nn, name)(x),
                                   rtol=2e-6, atol=1e-6 if name == "gelu" else 1e-7,
                                   err_msg=name)


# --------------------------------------------------------------------------- initializers


def _fans(shape):
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


@pytest.mark.parametrize("name,scale,mode,dist", [
    ("glorot_uniform", 1.0, "fan_avg", "uniform"),
    ("glorot_normal", 1.0, "fan_avg", "truncated_normal"),
    ("xavier_uniform", 1.0, "fan_avg", "uniform"),
    ("he_normal", 2.0, "fan_in", "truncated_normal"),
    ("kaiming_uniform", 2.0, "fan_in", "uniform"),
    ("lecun_normal", 1.0, "fan_in", "truncated_normal"),
    ("lecun_uniform", 1.0, "fan_in", "uniform"),
])
def test_initializer_variances(name, scale, mode, dist):
    shape = (3, 3, 64, 128)
    w = np.asarray(getattr(initializers, name)()(random.PRNGKey(0), shape), np.float64)
    assert w.shape == shape and w.dtype == np.float64 or w.dtype == np.float64
    fan_in, fan_out = _fans(shape)
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    var = scale / n
    # sample variance of N iid draws: std of the estimate ~ var * sqrt(2 / N) (kurtosis <= 3)
    assert abs(w.var() - var) < 5 * var * math.sqrt(2 / w.size), (w.var(), var)
    assert abs(w.mean()) < 5 * math.sqrt(var / w.size)
    if dist == "uniform":
        assert np.abs(w).max() <= math.sqrt(3 * var) * (1 + 1e-6)
    else:
        assert np.abs(w).max() <= 2 * math.sqrt(var) / 0.87962566103423978 * (1 + 1e-6)


def test_variance_scaling_options():
    key = random.PRNGKey(1)
    init = initializers.variance_scaling(2.0, "fan_out", "normal", in_axis=0, out_axis=1,
                                         batch_axis=2)
    w = np.asarray(init(key, (200, 50, 4)))
    assert abs(w.var() - 2.0 / 50) < 5 * (2.0 / 50) * math.sqrt(2 / w.size)
    with pytest.raises(ValueError, match="invalid mode"):
        initializers.variance_scaling(1.0, "fan_max", "normal")(key, (2, 2))
    with pytest.raises(ValueError, match="invalid distribution"):
        initializers.variance_scaling(1.0, "fan_in", "cauchy")(key, (2, 2))
    with pytest.raises(ValueError, match="Must be at least 2D"):
        initializers.glorot_normal()(key, (5,))


def test_simple_initializers():
    key = random.PRNGKey(2)
    np.testing.assert_array_equal(initializers.zeros(key, (2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(initializers.ones(key, (2,), jnp.int32), [1, 1])
    np.testing.assert_array_equal(initializers.constant(-2.5)(key, (3,)), [-2.5] * 3)
    u = np.asarray(initializers.uniform(0.5)(key, (10000,)))
    assert u.min() >= 0 and u.max() < 0.5
    nrm = np.asarray(initializers.normal(3.0)(key, (20000,)), np.float64)
    assert abs(nrm.std() - 3.0) < 5 * 3.0 / math.sqrt(2 * nrm.size)
    t = np.asarray(initializers.truncated_normal(2.0)(key, (1000,)))
    assert np.abs(t).max() < 4.0
    q = np.asarray(initializers.orthogonal()(key, (6, 4)), np.float64)
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-5)
    q3 = np.asarray(initializers.orthogonal(scale=2.0, column_axis=0)(key, (3, 2, 4)))
    m = np.moveaxis(q3, 0, -1).reshape(-1, 3)
    np.testing.assert_allclose(m.T @ m, 4 * np.eye(3), atol=1e-4)
    with pytest.raises(ValueError, match="at least a 2D shape"):
        initializers.orthogonal()(key, (3,))


@pytest.mark.skipif(jax is None, reason="JAX is not importable")
def test_initializers_against_jax():
    for name in ("glorot_uniform", "glorot_normal", "he_normal", "he_uniform", "lecun_normal",
                 "orthogonal"):
        got = getattr(initializers, name)()(random.PRNGKey(3), (5, 7))
        want = getattr(jax.nn.initializers, name)()(jax.random.PRNGKey(3), (5, 7))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
