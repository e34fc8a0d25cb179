"""jnp.result_type / promote_types and operator results against JAX's published promotion
table ("Type promotion semantics", docs.jax.dev/en/latest/type_promotion.html), x64 on so
that 64-bit entries are not canonicalized, and the x64-off canonicalization."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

# Rows/columns of JAX's table without bfloat16 (minijax has no bfloat16).
_NAMES = ["b1", "u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "f2", "f4", "f8", "c8", "c16",
          "i*", "f*", "c*"]
_TABLE = """
b1  b1 u1 u2 u4 u8 i1 i2 i4 i8 f2 f4 f8 c8 c16 i* f* c*
u1  u1 u1 u2 u4 u8 i2 i2 i4 i8 f2 f4 f8 c8 c16 u1 f* c*
u2  u2 u2 u2 u4 u8 i4 i4 i4 i8 f2 f4 f8 c8 c16 u2 f* c*
u4  u4 u4 u4 u4 u8 i8 i8 i8 i8 f2 f4 f8 c8 c16 u4 f* c*
u8  u8 u8 u8 u8 u8 f* f* f* f* f2 f4 f8 c8 c16 u8 f* c*
i1  i1 i2 i4 i8 f* i1 i2 i4 i8 f2 f4 f8 c8 c16 i1 f* c*
i2  i2 i2 i4 i8 f* i2 i2 i4 i8 f2 f4 f8 c8 c16 i2 f* c*
i4  i4 i4 i4 i8 f* i4 i4 i4 i8 f2 f4 f8 c8 c16 i4 f* c*
i8  i8 i8 i8 i8 f* i8 i8 i8 i8 f2 f4 f8 c8 c16 i8 f* c*
f2  f2 f2 f2 f2 f2 f2 f2 f2 f2 f2 f4 f8 c8 c16 f2 f2 c8
f4  f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f8 c8 c16 f4 f4 c8
f8  f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 c16 c16 f8 f8 c16
c8  c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c16 c8 c16 c8 c8 c8
c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16
i*  i* u1 u2 u4 u8 i1 i2 i4 i8 f2 f4 f8 c8 c16 i* f* c*
f*  f* f* f* f* f* f* f* f* f* f2 f4 f8 c8 c16 f* f* c*
c*  c* c* c* c* c* c* c* c* c* c8 c8 c16 c8 c16 c* c* c*
"""
_DTYPES = {"b1": np.bool_, "u1": np.uint8, "u2": np.uint16, "u4": np.uint32, "u8": np.uint64,
           "i1": np.int8, "i2": np.int16, "i4": np.int32, "i8": np.int64, "f2": np.float16,
           "f4": np.float32, "f8": np.float64, "c8": np.complex64, "c16": np.complex128}
_WEAK_DEFAULT = {"i*": np.int64, "f*": np.float64, "c*": np.complex128}
_PY = {"i*": 1, "f*": 1.0, "c*": 1j}


def _rows():
    out = {}
    for line in _TABLE.strip().splitlines():
        row, *cells = line.split()
        out[row] = dict(zip(_NAMES, cells))
    return out


TABLE = _rows()




def _value(name):
    if name in _PY:
        return _PY[name]
    return jnp.zeros((2,), _DTYPES[name])


def _expected(cell):
    return np.dtype(_WEAK_DEFAULT.get(cell, _DTYPES.get(cell))), cell.endswith("*")


@pytest.mark.parametrize("a", _NAMES)
def test_result_type_matches_table(x64, a):
    for b in _NAMES:
        want, weak = _expected(TABLE[a][b])
        got = jnp.result_type(_value(a), _value(b))
        assert got == want, (a, b, got, want)


@pytest.mark.parametrize("a", [n for n in _NAMES if n not in ("u8",)])
def test_operator_results_follow_table(x64, a):
    for b in _NAMES:
        if "u8" in (a, b) or a == "b1" and b == "b1":
            continue
        want, weak = _expected(TABLE[a][b])
        out = _value(a) * _value(b) if (a, b) != ("b1", "b1") else None
        out = minijax.numpy.asarray(out)
        assert out.dtype == want, (a, b, out.dtype, want)
        assert out.weak_type == weak, (a, b)


def test_promote_types_builtin_scalars_are_weak():
    assert jnp.promote_types("uint8", int) == np.uint8
    assert jnp.promote_types("float16", float) == np.float16
    assert jnp.promote_types(jnp.int32, jnp.float32) == np.float32


def test_x64_off_canonicalizes():
    assert jnp.result_type(jnp.float32, 1.0) == np.float32
    assert jnp.result_type(jnp.int32, 1.5) == np.float32
    assert jnp.result_type(np.int64) == np.int32
    assert jnp.result_type(int) == np.int32


def test_weak_type_operator_examples():
    f = jnp.ones(3, jnp.float32)
    i = jnp.arange(3)
    assert (f * 2.0).dtype == np.float32 and not (f * 2.0).weak_type
    assert (i + 1.5).dtype == np.float32
    assert (i + 1).dtype == np.int32 and not (i + 1).weak_type
    h = jnp.ones(3, jnp.float16)
    assert (h + 1.0).dtype == np.float16
    u = jnp.ones(3, jnp.uint8)
    assert (u + 1).dtype == np.uint8
    b = jnp.ones(3, bool)
    assert (b + 1).dtype == np.int32 and (b + 1).weak_type
    assert (2 * jnp.float32(3)).dtype == np.float32


def test_python_int_overflow_into_small_dtype():
    # JAX's values: the int is a weak int32 first, then wraps into the narrow dtype.
    np.testing.assert_array_equal(jnp.ones(3, jnp.int8) + 300, np.full(3, 45, np.int8))
    assert (jnp.ones(3, jnp.int8) + 300).dtype == np.int8
    with pytest.raises(OverflowError):  # outside the weak int32 range: JAX raises too
        jnp.ones(3, jnp.int8) + 2**40


def test_operators_return_notimplemented_for_unknown_types():
    x = jnp.ones(3)
    assert x.__add__("a") is NotImplemented
    assert x.__eq__(object()) is NotImplemented
    with pytest.raises(TypeError):
        x + "a"
    assert (x == None) is False  # noqa: E711


def test_result_type_accepts_numpy_arrays():
    assert jnp.result_type(jnp.ones(2), np.ones(2, np.int32)) == np.float32
    assert jnp.result_type(jnp.ones(2, jnp.int32), np.ones(2, np.int8)) == np.int32


def test_jnp_dtype_of_numpy_dtype_objects():
    assert jnp.dtype(np.dtype("float32")) == np.float32
    assert jnp.dtype(np.dtype("float64")) == np.float32  # x64 off: canonicalized
    assert jnp.dtype(float) == np.float32 and jnp.dtype(int) == np.int32
