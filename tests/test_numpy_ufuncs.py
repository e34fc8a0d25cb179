"""jnp elementwise functions vs NumPy: values, result dtypes (JAX promotion), broadcasting,
edge values (0, -0.0, inf, nan, integer extremes)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minijax
import minijax.numpy as jnp

SETTINGS = settings(max_examples=15, deadline=None)
FLOAT_EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3]


def _floats(shape):
    return hnp.arrays(np.float32, shape, elements=st.one_of(
        st.sampled_from(FLOAT_EDGES), st.floats(-20, 20, width=32)))


def _ints(shape, lo=-50, hi=50):
    return hnp.arrays(np.int32, shape, elements=st.integers(lo, hi))


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def _close(got, want, rtol=2e-5, atol=2e-6, dtype=None):
    got = np.asarray(got)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    np.testing.assert_allclose(got, np.asarray(want, dtype=got.dtype), rtol=rtol, atol=atol,
                               equal_nan=True)


UNARY_FLOAT = ["exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "cbrt", "sin", "cos",
               "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
               "arccosh", "arctanh", "deg2rad", "rad2deg", "exp2", "sinc", "floor", "ceil",
               "trunc", "fix", "rint", "negative", "positive", "abs", "sign", "square",
               "reciprocal", "isnan", "isinf", "isfinite", "isposinf", "isneginf",
               "signbit", "logical_not"]


@pytest.mark.parametrize("name", UNARY_FLOAT)
@SETTINGS
@given(x=shapes.flatmap(_floats))
def test_unary_float_vs_numpy(name, x):
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    got = getattr(jnp, name)(x)
    tol = 1e-4 if name in ("sinc", "tan", "arcsinh", "arccosh", "arctanh", "cosh", "sinh",
                           "exp2", "expm1") else 2e-5
    _close(got, want, rtol=tol, atol=1e-5, dtype=want.dtype)


UNARY_INT = ["negative", "abs", "sign", "square", "floor", "ceil", "trunc", "isnan",
             "isfinite", "bitwise_not", "invert", "logical_not", "signbit"]


@pytest.mark.parametrize("name", UNARY_INT)
@SETTINGS
@given(x=shapes.flatmap(_ints))
def test_unary_int_vs_numpy(name, x):
    want = getattr(np, name)(x)
    got = getattr(jnp, name)(x)
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)


def test_int_to_float_functions_promote():
    x = np.arange(1, 5, dtype=np.int32)
    assert jnp.sqrt(x).dtype == np.float32
    assert jnp.rint(x).dtype == np.float32
    assert jnp.true_divide(x, 2).dtype == np.float32
    _close(jnp.sqrt(x), np.sqrt(x.astype(np.float32)))


BINARY_FLOAT = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
                "fmax", "fmin", "arctan2", "hypot", "logaddexp", "logaddexp2", "copysign",
                "heaviside", "floor_divide", "remainder", "fmod", "equal", "not_equal",
                "less", "less_equal", "greater", "greater_equal", "logical_and",
                "logical_or", "logical_xor", "float_power", "nextafter"]


@pytest.mark.parametrize("name", BINARY_FLOAT)
@SETTINGS
@given(data=st.data())
def test_binary_float_broadcasting(name, data):
    s1, s2 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                         max_side=3)).input_shapes
    a, b = data.draw(_floats(s1)), data.draw(_floats(s2))
    if name in ("floor_divide", "remainder", "fmod", "power", "float_power"):
        b = np.where(b == 0, np.float32(1.5), b)
        a, b = np.clip(a, -10, 10), np.clip(b, -3, 3)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    got = getattr(jnp, name)(a, b)
    if name == "float_power":
        want = want.astype(np.float32)
    tol = 1e-4 if name in ("power", "float_power", "logaddexp2", "hypot") else 2e-5
    _close(got, want, rtol=tol, atol=1e-5, dtype=want.dtype)


INT_BINARY = ["add", "subtract", "multiply", "floor_divide", "remainder", "fmod", "maximum",
              "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "less",
              "greater_equal", "gcd_skip"]


@pytest.mark.parametrize("name", [n for n in INT_BINARY if n != "gcd_skip"])
@SETTINGS
@given(data=st.data())
def test_binary_int_numpy_semantics(name, data):
    s1, s2 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2,
                                                         max_side=4)).input_shapes
    a, b = data.draw(_ints(s1)), data.draw(_ints(s2))
    if name in ("floor_divide", "remainder", "fmod"):
        b = np.where(b == 0, 7, b).astype(np.int32)
    want = getattr(np, name)(a, b)
    got = getattr(jnp, name)(a, b)
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)


@SETTINGS
@given(a=_ints((5,), -6, 6), b=_ints((5,), 0, 6))
def test_integer_power_is_exact(a, b):
    want = np.power(a.astype(np.int64), b).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(jnp.power(a, b)), want)
    np.testing.assert_array_equal(np.asarray(jnp.power(a, 3)), a ** 3)


def test_integer_negative_power_errors():
    # JAX: a concrete negative integer scalar raises TypeError (integer_pow) ...
    with pytest.raises(TypeError, match="negative powers"):
        jnp.power(jnp.arange(3), -1)
    # ... an array exponent runs JAX's 6-bit binary exponentiation (JAX's values).
    np.testing.assert_array_equal(np.asarray(jnp.power(jnp.arange(3), jnp.array([1, -2, 0]))),
                                  [0, 1, 1])


def test_shifts_and_extremes():
    a = np.array([np.iinfo(np.int32).min, -8, -1, 0, 7, np.iinfo(np.int32).max], np.int32)
    np.testing.assert_array_equal(np.asarray(jnp.right_shift(a, 2)), np.right_shift(a, 2))
    np.testing.assert_array_equal(np.asarray(jnp.left_shift(a, 1)), np.left_shift(a, 1))
    np.testing.assert_array_equal(np.asarray(jnp.abs(a[1:])), np.abs(a[1:]))
    u = np.array([0, 1, 255], np.uint8)
    np.testing.assert_array_equal(np.asarray(jnp.right_shift(u, 1)), u >> 1)
    np.testing.assert_array_equal(np.asarray(jnp.sign(u)), np.sign(u))


def test_divmod_and_round():
    a = np.array([-7.5, -3.0, -0.5, 0.0, 2.5, 7.0], np.float32)
    q, r = jnp.divmod(a, np.float32(2.0))
    wq, wr = np.divmod(a, np.float32(2.0))
    _close(q, wq)
    _close(r, wr)
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1.234567, -2.345], np.float32)
    _close(jnp.round(x), np.round(x))
    _close(jnp.round(x, 2), np.round(x, 2), rtol=1e-6)
    _close(jnp.around(np.array([15, 25, -35]), -1), np.around(np.array([15, 25, -35]), -1))
    frac, whole = jnp.modf(x)
    wf, ww = np.modf(x)
    _close(frac, wf)
    _close(whole, ww)


def test_complex_parts():
    z = np.array([1 + 2j, -3 - 0.5j, 0j], np.complex64)
    _close(jnp.real(z), z.real)
    _close(jnp.imag(z), z.imag)
    _close(jnp.conj(z), np.conj(z))
    _close(jnp.angle(z), np.angle(z))
    _close(jnp.angle(z, deg=True), np.angle(z, deg=True), rtol=1e-5)
    _close(jnp.abs(z), np.abs(z))
    _close(jnp.imag(np.ones(3, np.float32)), np.zeros(3))


def test_isclose_allclose_array_equal():
    a = np.array([1.0, np.nan, np.inf, -np.inf, 1e-9, 1.0], np.float32)
    b = np.array([1.0 + 1e-7, np.nan, np.inf, np.inf, 0.0, 1.1], np.float32)
    np.testing.assert_array_equal(np.asarray(jnp.isclose(a, b)), np.isclose(a, b))
    np.testing.assert_array_equal(np.asarray(jnp.isclose(a, b, equal_nan=True)),
                                  np.isclose(a, b, equal_nan=True))
    assert bool(jnp.allclose(a[:1], b[:1]))
    assert not bool(jnp.allclose(a, b))
    assert bool(jnp.array_equal(a[2:4], a[2:4]))
    assert not bool(jnp.array_equal(a, a))
    assert bool(jnp.array_equal(a, a, equal_nan=True))
    assert not bool(jnp.array_equal(np.ones(2), np.ones(3)))
    assert bool(jnp.array_equiv(np.ones((2, 3)), np.ones(3)))
    assert not bool(jnp.array_equiv(np.ones((2, 3)), np.ones(2)))


def test_nan_to_num():
    x = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    _close(jnp.nan_to_num(x), np.nan_to_num(x))
    _close(jnp.nan_to_num(x, nan=1.0, posinf=2.0, neginf=3.0),
           np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=3.0))


def test_where_select_piecewise():
    x = np.linspace(-2, 2, 9).astype(np.float32)
    _close(jnp.where(x > 0, x, 0), np.where(x > 0, x, 0))
    assert jnp.where(x > 0, x, 0.0).dtype == np.float32
    conds = [x < -1, x > 1]
    _close(jnp.select(conds, [x * 2, x * 3], default=-1.0),
           np.select(conds, [x * 2, x * 3], default=-1.0))
    _close(jnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2]),
           np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2]))
    _close(jnp.piecewise(x, [x < 0], [0.0, lambda v: v + 1]),
           np.piecewise(x, [x < 0], [0.0, lambda v: v + 1]))
    with pytest.raises(ValueError, match="both or neither"):
        jnp.where(x > 0, x)
    np.testing.assert_array_equal(np.asarray(jnp.where(x > 0)[0]), np.where(x > 0)[0])


def test_clip_and_bool_arithmetic():
    x = np.arange(-3, 4, dtype=np.int32)
    np.testing.assert_array_equal(np.asarray(jnp.clip(x, -1, 2)), np.clip(x, -1, 2))
    np.testing.assert_array_equal(np.asarray(jnp.clip(x, max=0)), np.clip(x, None, 0))
    b = np.array([True, False, True])
    np.testing.assert_array_equal(np.asarray(jnp.add(b, b)), b + b)
    np.testing.assert_array_equal(np.asarray(jnp.multiply(b, ~b)), b * ~b)
    with pytest.raises(TypeError, match="boolean subtract"):
        jnp.subtract(b, b)


def test_list_arguments_rejected():
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        jnp.add([1, 2], 1)
    with pytest.raises(TypeError, match="only accepts integer or boolean"):
        jnp.bitwise_and(np.ones(2, np.float32), 1)


def test_weak_types_preserved():
    assert jnp.sin(1.0).weak_type
    assert not jnp.sin(np.float32(1.0)).weak_type
    assert jnp.add(1, 2).dtype == np.int32 and jnp.add(1, 2).weak_type


def test_ufuncs_under_jit_and_grad():
    f = minijax.jit(lambda x: jnp.logaddexp(x, 2.0) + jnp.hypot(x, 3.0) + jnp.remainder(x, 1.5))
    x = np.array([-2.0, 0.5, 4.0], np.float32)
    want = np.logaddexp(x, 2.0) + np.hypot(x, 3.0) + np.remainder(x, 1.5)
    _close(f(x), want, rtol=1e-5)
    g = minijax.grad(lambda x: jnp.sum(jnp.logaddexp(x, 1.0)))(x)
    _close(g, np.exp(x) / (np.exp(x) + np.e), rtol=1e-5)
