"""JAX's 8-bit floats (ml_dtypes' float8_* types) as storage dtypes: creation, astype, finfo,
JAX's promotion (no implicit promotion to any other float), and arithmetic computed in float32
and rounded back after every operation, eagerly and under jit.

Expected values marked "JAX" were computed with JAX 0.10.2 on CPU.
"""

import ml_dtypes
import numpy as np
import pytest

import minijax as jax
import minijax.numpy as jnp
from minijax.dtypes import TypePromotionError

NAMES = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
         "float8_e4m3b11fnuz", "float8_e4m3", "float8_e3m4", "float8_e8m0fnu"]

XS = np.array([1.3, 2.7, 0.1, 7.0, 0.55], np.float32)
YS = np.array([0.7, 3.1, 0.2, 5.0, 1.9], np.float32)
NAN, INF = float("nan"), float("inf")
# JAX: x.astype(f8) as float32, then [x + y, x * y, x / y, sqrt(x)] as float32.
JAX_VALUES = {
    "float8_e4m3fn": ([1.25, 2.75, 0.1015625, 7.0, 0.5625], [
        [2.0, 6.0, 0.3125, 12.0, 2.5], [0.875, 8.0, 0.021484375, 36.0, 1.0],
        [1.875, 0.9375, 0.5, 1.375, 0.3125], [1.125, 1.625, 0.3125, 2.75, 0.75]]),
    "float8_e5m2": ([1.25, 2.5, 0.09375, 7.0, 0.5], [
        [2.0, 6.0, 0.25, 12.0, 2.5], [1.0, 8.0, 0.015625, 32.0, 1.0],
        [1.75, 0.875, 0.5, 1.5, 0.25], [1.0, 1.5, 0.3125, 2.5, 0.75]]),
    "float8_e4m3fnuz": ([1.25, 2.75, 0.1015625, 7.0, 0.5625], [
        [2.0, 6.0, 0.3125, 12.0, 2.5], [0.875, 8.0, 0.021484375, 36.0, 1.0],
        [1.875, 0.9375, 0.5, 1.375, 0.3125], [1.125, 1.625, 0.3125, 2.75, 0.75]]),
    "float8_e5m2fnuz": ([1.25, 2.5, 0.09375, 7.0, 0.5], [
        [2.0, 6.0, 0.25, 12.0, 2.5], [1.0, 8.0, 0.015625, 32.0, 1.0],
        [1.75, 0.875, 0.5, 1.5, 0.25], [1.0, 1.5, 0.3125, 2.5, 0.75]]),
    "float8_e4m3b11fnuz": ([1.25, 2.75, 0.1015625, 7.0, 0.5625], [
        [2.0, 6.0, 0.3125, 12.0, 2.5], [0.875, 8.0, 0.021484375, NAN, 1.0],
        [1.875, 0.9375, 0.5, 1.375, 0.3125], [1.125, 1.625, 0.3125, 2.75, 0.75]]),
    "float8_e4m3": ([1.25, 2.75, 0.1015625, 7.0, 0.5625], [
        [2.0, 6.0, 0.3125, 12.0, 2.5], [0.875, 8.0, 0.021484375, 36.0, 1.0],
        [1.875, 0.9375, 0.5, 1.375, 0.3125], [1.125, 1.625, 0.3125, 2.75, 0.75]]),
    "float8_e3m4": ([1.3125, 2.75, 0.09375, 7.0, 0.5625], [
        [2.0, 6.0, 0.296875, 12.0, 2.5], [0.90625, 8.5, 0.015625, INF, 1.0625],
        [1.9375, 0.875, 0.46875, 1.375, 0.296875], [1.125, 1.6875, 0.3125, 2.625, 0.75]]),
    "float8_e8m0fnu": ([1.0, 2.0, 0.125, 8.0, 0.5], [
        [2.0, 8.0, 0.5, 16.0, 2.0], [0.5, 8.0, 0.03125, 32.0, 1.0],
        [2.0, 0.5, 0.5, 2.0, 0.25], [1.0, 1.0, 0.25, 2.0, 0.5]]),
}
# JAX: finfo(dtype).max, .eps, .tiny
JAX_FINFO = {
    "float8_e4m3fn": (448.0, 0.125, 0.015625),
    "float8_e5m2": (57344.0, 0.25, 6.103515625e-05),
    "float8_e4m3fnuz": (240.0, 0.125, 0.0078125),
    "float8_e5m2fnuz": (57344.0, 0.25, 3.0517578125e-05),
    "float8_e4m3b11fnuz": (30.0, 0.125, 0.0009765625),
    "float8_e4m3": (240.0, 0.125, 0.015625),
    "float8_e3m4": (15.5, 0.0625, 0.25),
    "float8_e8m0fnu": (1.7014118346046923e+38, 1.0, 5.877471754111438e-39),
}


def _ops(x, y):
    return x + y, x * y, x / y, jnp.sqrt(x)


def _as_f32(values):
    return [np.asarray(v.astype(jnp.float32)) for v in values]


@pytest.mark.parametrize("name", NAMES)
def test_values_match_jax_eager_and_jit(name):
    dtype = getattr(jnp, name)
    x = jnp.asarray(XS).astype(dtype)
    y = jnp.asarray(YS).astype(dtype)
    assert x.dtype == np.dtype(getattr(ml_dtypes, name)) and x.dtype.name == name
    cast, expected = JAX_VALUES[name]
    np.testing.assert_array_equal(np.asarray(x.astype(jnp.float32)), np.float32(cast))
    for got in (_as_f32(_ops(x, y)), _as_f32(jax.jit(lambda a, b: _ops(a, b))(x, y))):
        assert all(g.dtype == np.float32 for g in got)
        np.testing.assert_array_equal(np.stack(got), np.float32(expected))
    assert all(r.dtype == x.dtype for r in _ops(x, y))
    assert all(r.dtype == x.dtype for r in jax.jit(lambda a, b: _ops(a, b))(x, y))


@pytest.mark.parametrize("name", NAMES)
def test_every_value_rounds_as_float32_arithmetic(name):
    """All 256 bit patterns against an independent reference: the float32 result of NumPy's
    arithmetic rounded to the 8-bit type by ml_dtypes (eager and jit agree bitwise)."""
    dtype = np.dtype(getattr(ml_dtypes, name))
    xs = np.arange(256, dtype=np.uint8).view(dtype)
    ys = np.roll(xs, 37)
    xf, yf = xs.astype(np.float32), ys.astype(np.float32)
    with np.errstate(all="ignore"):
        want = [(xf + yf).astype(dtype), (xf * yf).astype(dtype), (xf / yf).astype(dtype),
                np.maximum(xf, yf).astype(dtype), (-xf).astype(dtype)]

    def f(a, b):
        return a + b, a * b, a / b, jnp.maximum(a, b), -a

    for got in (f(jnp.asarray(xs), jnp.asarray(ys)), jax.jit(f)(xs, ys)):
        for g, w in zip(got, want):
            assert g.dtype == dtype
            np.testing.assert_array_equal(np.asarray(g).astype(np.float32), w.astype(np.float32))


@pytest.mark.parametrize("name", NAMES)
def test_creation_astype_finfo(name):
    dtype = getattr(jnp, name)
    np_dtype = np.dtype(getattr(ml_dtypes, name))
    for z in (jnp.zeros(3, dtype), jnp.zeros(3, name), jnp.ones((2,), np_dtype)):
        assert z.dtype == np_dtype
    assert jnp.dtype(dtype) == np_dtype == jnp.dtype(name)
    assert dtype(2.0).dtype == np_dtype and float(dtype(2.0)) == 2.0
    assert jnp.issubdtype(dtype, jnp.floating) and jnp.issubdtype(np_dtype, jnp.inexact)
    assert not jnp.issubdtype(dtype, jnp.bfloat16)
    assert not jnp.issubdtype(jnp.float32, dtype)
    back = jnp.array([0.5, 1.0, 4.0], jnp.float32).astype(dtype).astype(jnp.float32)
    np.testing.assert_array_equal(np.asarray(back), [0.5, 1.0, 4.0])
    fi = jnp.finfo(dtype)
    assert (float(fi.max), float(fi.eps), float(fi.tiny)) == JAX_FINFO[name]
    assert fi.bits == 8


@pytest.mark.parametrize("name", NAMES)
def test_promotion_as_jax(name):
    dtype = np.dtype(getattr(ml_dtypes, name))
    # JAX: integers, bool and weak Python scalars promote to the 8-bit float...
    for other in (jnp.int8, jnp.int32, jnp.uint8, jnp.bool_, dtype):
        assert jnp.promote_types(dtype, other) == dtype
        assert jnp.promote_types(other, dtype) == dtype
    x = jnp.ones(2, dtype)
    assert (x + 1).dtype == dtype and (x * 2.5).dtype == dtype
    assert (x + jnp.ones(2, jnp.int32)).dtype == dtype
    # ...and no other float is reachable implicitly (JAX's TypePromotionError, a ValueError).
    others = [jnp.float32, jnp.bfloat16, jnp.float16, jnp.complex64]
    others += [n for n in NAMES if n != name]
    for other in others:
        with pytest.raises(TypePromotionError, match="8-bit floats do not support implicit"):
            jnp.promote_types(dtype, other)
    with pytest.raises(ValueError, match="no available implicit dtype promotion path"):
        x + jnp.ones(2, jnp.float32)


def test_live_jax_comparison():
    real = pytest.importorskip("jax")
    rjnp = pytest.importorskip("jax.numpy")
    for name in NAMES:
        rx = rjnp.asarray(XS).astype(getattr(rjnp, name))
        ry = rjnp.asarray(YS).astype(getattr(rjnp, name))
        want = [np.asarray(v.astype("float32")) for v in real.jit(
            lambda a, b: (a + b, a * b, a / b, rjnp.sqrt(a)))(rx, ry)]
        x = jnp.asarray(XS).astype(getattr(jnp, name))
        y = jnp.asarray(YS).astype(getattr(jnp, name))
        np.testing.assert_array_equal(np.stack(_as_f32(_ops(x, y))), np.stack(want))
        for other in ("int8", "bool", "float32", "bfloat16"):
            try:
                rt = rjnp.promote_types(getattr(rjnp, name), other)
            except ValueError:
                with pytest.raises(ValueError):
                    jnp.promote_types(getattr(jnp, name), other)
            else:
                assert jnp.promote_types(getattr(jnp, name), other) == rt


@pytest.mark.parametrize("name", NAMES)
def test_jit_converts_to_and_from_float32(name):
    dtype = getattr(jnp, name)
    np_dtype = np.dtype(getattr(ml_dtypes, name))
    xs = np.array([1.3, 2.7, 0.4], np.float32)

    @jax.jit
    def f(x32):
        x8 = x32.astype(dtype)
        return x8, (x8.astype(jnp.float32) * 3).astype(dtype), x8.astype(jnp.float32)

    x8, y8, back = f(xs)
    assert x8.dtype == y8.dtype == np_dtype and back.dtype == np.float32
    want8 = xs.astype(np_dtype)
    np.testing.assert_array_equal(np.asarray(x8).astype(np.float32), want8.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(back), want8.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(y8).astype(np.float32),
                                  (want8.astype(np.float32) * 3).astype(np_dtype)
                                  .astype(np.float32))
    if name == "float8_e4m3fn":  # JAX: [1.25, 2.75, 0.40625] and three times, rounded
        np.testing.assert_array_equal(np.asarray(back), np.float32([1.25, 2.75, 0.40625]))
        np.testing.assert_array_equal(np.asarray(y8).astype(np.float32),
                                      np.float32([3.75, 8.0, 1.25]))
