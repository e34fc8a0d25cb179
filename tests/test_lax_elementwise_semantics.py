"""lax elementwise primitives: edge semantics (XLA's integer division and shifts, NaN
propagation, rounding, signed zeros, pow special cases), dtypes and weak types, and error
messages. The op-table value tests are in test_lax_elementwise.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minijax
from minijax import lax

pytestmark = pytest.mark.usefixtures("x64")


# --------------------------------------------------------------------------- edge semantics


def test_integer_division_follows_xla():
    i32 = np.int32
    x = np.array([7, -7, 7, -7, 5, -5, np.iinfo(i32).min, 0], i32)
    y = np.array([2, 2, -2, -2, 0, 0, -1, 0], i32)
    np.testing.assert_array_equal(lax.div(x, y), [3, -3, -3, 3, -1, -1, np.iinfo(i32).min, -1])
    np.testing.assert_array_equal(lax.rem(x, y), [1, -1, 1, -1, 5, -5, 0, 0])
    u = np.array([7, 9], np.uint8)
    np.testing.assert_array_equal(lax.div(u, np.array([0, 2], np.uint8)), [255, 4])


def test_float_rem_is_fmod():
    np.testing.assert_array_equal(lax.rem(np.float32([-7.5, 7.5]), np.float32([2, -2])),
                                  np.float32([-1.5, 1.5]))


def test_shift_semantics():
    x = np.array([1, -8, -8, 5], np.int32)
    amount = np.array([32, 1, 40, -1], np.int32)
    np.testing.assert_array_equal(lax.shift_left(x, amount), [0, -16, 0, 0])
    np.testing.assert_array_equal(lax.shift_right_arithmetic(x, amount), [0, -4, -1, 0])
    np.testing.assert_array_equal(lax.shift_right_logical(x, amount),
                                  [0, (2 ** 32 - 8) >> 1, 0, 0])


def test_max_min_propagate_nan():
    x = np.float32([np.nan, 1.0, np.nan])
    y = np.float32([1.0, np.nan, np.nan])
    assert np.isnan(np.asarray(lax.max(x, y))).all()
    assert np.isnan(np.asarray(lax.min(x, y))).all()


def test_round_methods():
    x = np.float32([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997])
    np.testing.assert_array_equal(lax.round(x), [1, 2, 3, -1, -3, 0])
    np.testing.assert_array_equal(lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
                                  [0, 2, 2, -0, -2, 0])
    np.testing.assert_array_equal(lax.round(x, 1), [0, 2, 2, -0, -2, 0])


def test_sign_keeps_signed_zero_and_nan():
    out = np.asarray(lax.sign(np.float32([-0.0, 0.0, np.nan, -3, 2])))
    assert np.signbit(out[0]) and not np.signbit(out[1]) and np.isnan(out[2])
    np.testing.assert_array_equal(out[3:], [-1, 1])


def test_pow_special_cases():
    x = np.float32([0, 0, -2, 2])
    y = np.float32([0, -1, 0.5, 3])
    np.testing.assert_array_equal(lax.pow(x, y), np.float32([1, np.inf, np.nan, 8]))
    np.testing.assert_array_equal(lax.pow(np.complex64([0]), np.complex64([0])), [1])
    # integer exponents are accepted for float bases
    out = lax.pow(np.float32([2, 3]), np.int32([3, -1]))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [8, 1 / 3], rtol=1e-6)


@pytest.mark.parametrize("n", [1, 9, 1031])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow_half_of_negative_infinity_and_zero_eager_and_jit(n, dtype):
    """Found by tests/test_differential_jit.py: eager pow took NumPy's scalar-exponent 0.5
    path (sqrt), so pow(-inf, 0.5) was NaN and pow(-0, 0.5) was -0 wherever the exponent was
    a scalar or broadcast from size 1. IEEE pow, XLA and JAX: inf and +0."""
    x = np.resize(np.array([-np.inf, -0.0, 4.0, -4.0, np.inf, 0.0], dtype), n)
    want = np.resize(np.array([np.inf, 0.0, 2.0, np.nan, np.inf, 0.0], dtype), n)
    for y in (dtype(0.5), np.full((1,), 0.5, dtype), np.full((n,), 0.5, dtype)):  # jnp broadcasts
        for run in (minijax.numpy.power, minijax.jit(minijax.numpy.power)):
            got = np.asarray(run(x, y))
            np.testing.assert_array_equal(got, want)
            assert not np.signbit(got[np.asarray(want) == 0]).any()


def test_select_n_and_clamp():
    cases = [np.float32([1, 2, 3]), np.float32([4, 5, 6]), np.float32([7, 8, 9])]
    np.testing.assert_array_equal(lax.select_n(np.int32([2, 0, 1]), *cases), [7, 2, 6])
    np.testing.assert_array_equal(lax.select_n(np.int32(1), *cases), cases[1])
    np.testing.assert_array_equal(lax.select_n(np.array([True, False, True]), *cases[:2]),
                                  [4, 2, 6])
    np.testing.assert_array_equal(lax.select(np.array([True, False, True]), *cases[:2]),
                                  [1, 5, 3])
    np.testing.assert_array_equal(lax.select_n(np.array(True), cases[0]), cases[0])
    np.testing.assert_array_equal(lax.clamp(np.float32(0), np.float32([-1, 0.5, 2]),
                                            np.float32(1)), [0, 0.5, 1])
    np.testing.assert_array_equal(lax.clamp(np.int32([0, 1, 2]), np.int32([5, 5, 5]),
                                            np.int32([1, 3, 9])), [1, 3, 5])


def test_bitcast_convert_type_shapes():
    x = np.float32([1.0, -2.0])
    out = lax.bitcast_convert_type(x, np.int32)
    np.testing.assert_array_equal(out, x.view(np.int32))
    narrow = lax.bitcast_convert_type(x, np.uint8)
    assert narrow.shape == (2, 4)
    np.testing.assert_array_equal(narrow, x.view(np.uint8).reshape(2, 4))
    back = lax.bitcast_convert_type(narrow, np.float32)
    np.testing.assert_array_equal(back, x)
    wide = lax.bitcast_convert_type(np.float32([[1, 2]]), np.float64)
    assert wide.shape == (1,) and wide.dtype == np.float64


def test_population_count_and_clz_of_negative():
    x = np.array([-1, 0, 1, np.iinfo(np.int32).min], np.int32)
    np.testing.assert_array_equal(lax.population_count(x), [32, 0, 1, 1])
    np.testing.assert_array_equal(lax.clz(x), [0, 32, 31, 0])


def test_nextafter_edges():
    out = np.asarray(lax.nextafter(np.float32([0, 0, 1, 1, np.nan]),
                                   np.float32([1, -1, 2, 1, 0])))
    tiny = np.nextafter(np.float32(0), np.float32(1))
    np.testing.assert_array_equal(out[:4], [tiny, -tiny, np.nextafter(np.float32(1),
                                                                       np.float32(2)), 1])
    assert np.isnan(out[4])


def test_complex_parts():
    z = np.complex64([1 + 2j, -3 - 4j])
    np.testing.assert_array_equal(lax.real(z), [1, -3])
    np.testing.assert_array_equal(lax.imag(z), [2, -4])
    np.testing.assert_array_equal(lax.conj(z), np.conj(z))
    np.testing.assert_allclose(lax.abs(z), [math.sqrt(5), 5], rtol=1e-7)
    assert lax.conj(np.float32([1])).dtype == np.complex64
    assert lax.complex(np.float64(1), np.float64(2)).dtype == np.complex128


# --------------------------------------------------------------------------- dtypes, weak types


def test_weak_types_and_scalar_promotion():
    minijax.config.update("jax_enable_x64", False)
    x = np.float32([1, 2])
    out = lax.add(x, 2.0)
    assert out.dtype == np.float32 and not out.weak_type
    with pytest.raises(TypeError, match="same dtypes"):  # JAX: an int next to float32
        lax.add(x, 2)
    with pytest.raises(TypeError, match=r"lax.add requires .* int32, float32"):
        lax.add(1, 1.0)
    both = lax.mul(2.0, 3.0)
    assert both.dtype == np.float32 and both.weak_type
    assert lax.exp(2.0).weak_type
    cmp = lax.lt(x, 1.5)
    assert cmp.dtype == np.bool_ and not cmp.weak_type
    assert lax.abs(lax.complex(1.0, 2.0)).weak_type
    i = lax.div(np.int32([7]), 2)
    assert i.dtype == np.int32
    np.testing.assert_array_equal(i, [3])
    assert lax.is_finite(1.0).dtype == np.bool_


def test_make_jaxpr_names_the_primitives():
    jaxpr = minijax.make_jaxpr(lambda x: lax.lgamma(lax.select_n(lax.lt(x, 0.0), x,
                                                                  lax.neg(x))))(
        np.float32([1.0]))
    text = str(jaxpr)
    for name in ("lgamma", "select_n", "lt", "neg"):
        assert name in text


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("fn,name", [(lax.add, "add"), (lax.atan2, "atan2"),
                                     (lax.shift_left, "shift_left"), (lax.max, "max"),
                                     (lax.eq, "eq"), (lax.nextafter, "nextafter")])
def test_mismatched_shapes_error(fn, name):
    x = np.ones(3, np.int32 if name == "shift_left" else np.float32)
    y = np.ones(4, x.dtype)
    with pytest.raises(TypeError, match=rf"{name} got incompatible shapes.*\[3\].*\[4\]"):
        fn(x, y)


@pytest.mark.parametrize("fn,name", [(lax.sub, "sub"), (lax.div, "div"), (lax.rem, "rem"),
                                     (lax.bitwise_and, "and"), (lax.lt, "lt")])
def test_mismatched_dtypes_error(fn, name):
    with pytest.raises(TypeError, match=rf"{name} requires arguments of the same dtype.*"
                                        r"f32\[2\].*i32\[2\]"):
        fn(np.ones(2, np.float32), np.ones(2, np.int32))


@pytest.mark.parametrize("fn,arg,match", [
    (lax.exp, np.int32([1]), "exp does not accept dtype int32"),
    (lax.floor, np.int32([1]), "floor does not accept dtype int32"),
    (lax.lgamma, np.complex64([1]), "lgamma does not accept dtype complex64"),
    (lax.bitwise_not, np.float32([1]), "not does not accept dtype float32"),
    (lax.population_count, np.array([True]), "population_count does not accept dtype bool"),
    (lax.neg, np.array([True]), "neg does not accept dtype bool"),
    (lax.real, np.float32([1]), "real does not accept dtype float32"),
    (lambda x: lax.integer_pow(x, -1), np.int32([2]),
     r"Integers cannot be raised to negative powers.*integer_pow\(i32\[1\], -1\)"),
    (lambda x: lax.shift_left(x, x), np.array([True]), "shift_left requires integer"),
    (lambda x: lax.lt(x, x), np.complex64([1]), "lt does not accept dtype complex64"),
    (lambda x: lax.complex(x, x), np.float16([1]), "complex requires float32 or float64"),
    (lambda x: lax.bitcast_convert_type(x, np.float64), np.float32([1, 2, 3]),
     "trailing dimension of size 2"),
    (lambda x: lax.bitcast_convert_type(x, np.int8), np.array([True]),
     "bitcast_convert_type does not support bool"),
    (lambda x: lax.reduce_precision(x, 0, 3), np.float32([1]), "exponent_bits >= 1"),
])
def test_dtype_errors(fn, arg, match):
    with pytest.raises((TypeError, ValueError), match=match):
        fn(arg)


def test_select_n_errors():
    c = np.float32([1, 2])
    with pytest.raises(TypeError, match="select_n which must be boolean or int32"):
        lax.select_n(np.float32([0, 1]), c, c)
    with pytest.raises(TypeError, match="boolean which takes at most two cases"):
        lax.select_n(np.array([True, False]), c, c, c)
    with pytest.raises(TypeError, match=r"same shapes and dtypes.*f32\[2\].*f32\[3\]"):
        lax.select_n(np.int32(0), c, np.float32([1, 2, 3]))
    with pytest.raises(TypeError, match=r"which must be scalar or.*bool\[3\].*f32\[2\]"):
        lax.select_n(np.array([True, False, True]), c, c)
    with pytest.raises(ValueError, match="at least one case"):
        lax.select_n(np.int32(0))
    with pytest.raises(TypeError, match=r"clamp requires min and max.*f32\[2\]"):
        lax.clamp(c, np.float32([1, 2, 3]), np.float32(2))


def test_scalar_overflow_and_float_into_int_errors():
    minijax.config.update("jax_enable_x64", False)
    with pytest.raises(OverflowError, match="add"):
        lax.add(np.int8([1]), 300)
    with pytest.raises(TypeError, match="mul: cannot combine a Python float"):
        lax.mul(np.int32([1]), 1.5)
