"""Programs that raised in minijax where JAX computes (issue 14, "Raises where JAX computes").

Each case runs a small program against minijax and checks JAX's value, dtype and weak type
(hard-coded from JAX 0.10.2); when real JAX is importable the same program is also run on it
and compared, so the hard-coded values cannot drift from JAX's.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp

try:
    import jax as real_jax
    import jax.numpy as real_jnp
except Exception:  # pragma: no cover - CI has no JAX
    real_jax = real_jnp = None


def _grad(op):
    return lambda jax, np_: jax.grad(lambda x: np_.sum(op(np_, x)))(np_.ones(3) * 1.25)


def _jvp(op):
    return lambda jax, np_: jax.jvp(lambda x: op(np_, x), (np_.ones(3) * 1.25,),
                                    (np_.ones(3),))[1]


# name -> (program(jax, jnp), JAX's value, JAX's dtype, JAX's weak_type)
SCALAR_OPERAND_AD = {
    "grad x % 1.5": (_grad(lambda n, x: x % 1.5), [1, 1, 1], "float32", False),
    "grad 1.5 % x": (_grad(lambda n, x: 1.5 % x), [-1, -1, -1], "float32", False),
    "grad x // 1.5": (_grad(lambda n, x: x // 1.5), [0, 0, 0], "float32", False),
    "grad fmod(x, 1.5)": (_grad(lambda n, x: n.fmod(x, 1.5)), [1, 1, 1], "float32", False),
    "grad fmod(2.5, x)": (_grad(lambda n, x: n.fmod(2.5, x)), [-2, -2, -2], "float32", False),
    "grad remainder(x, 1.5)": (_grad(lambda n, x: n.remainder(x, 1.5)), [1, 1, 1],
                               "float32", False),
    "grad arctan2(x, 1.5)": (_grad(lambda n, x: n.arctan2(x, 1.5)), [0.39344263] * 3,
                             "float32", False),
    "grad arctan2(1.5, x)": (_grad(lambda n, x: n.arctan2(1.5, x)), [-0.39344263] * 3,
                             "float32", False),
    "grad 2.0 ** x": (_grad(lambda n, x: 2.0 ** x), [1.648591] * 3, "float32", False),
    "grad x ** 2.0": (_grad(lambda n, x: x ** 2.0), [2.5] * 3, "float32", False),
    "jvp x % 1.5": (_jvp(lambda n, x: x % 1.5), [1, 1, 1], "float32", False),
    "jvp 2.0 ** x": (_jvp(lambda n, x: 2.0 ** x), [1.648591] * 3, "float32", False),
    "jvp arctan2(1.5, x)": (_jvp(lambda n, x: n.arctan2(1.5, x)), [-0.39344263] * 3,
                            "float32", False),
}

OTHER_CASES = {
    # Python ints outside a narrow dtype wrap (they are weak int32 first).
    "uint32 > -1": (lambda jax, n: n.array([1, 2, 3], n.uint32) > -1, [False] * 3, "bool",
                    False),
    "uint32 + -1": (lambda jax, n: n.array(0, n.uint32) + -1, 4294967295, "uint32", False),
    "uint8 + 300": (lambda jax, n: n.array([1, 2], n.uint8) + 300, [45, 46], "uint8", False),
    "int8 - 200": (lambda jax, n: n.array([1, 2], n.int8) - 200, [57, 58], "int8", False),
    "300 - uint8": (lambda jax, n: 300 - n.array([1, 2], n.uint8), [43, 42], "uint8", False),
    "jit uint8 + 300": (lambda jax, n: jax.jit(lambda a: a + 300)(n.array([1, 2], n.uint8)),
                        [45, 46], "uint8", False),
    "full(-1, uint8)": (lambda jax, n: n.full(2, -1, n.uint8), [255, 255], "uint8", False),
    "at.set(300)": (lambda jax, n: n.array([1, 2], n.uint8).at[0].set(300), [44, 2], "uint8",
                    False),
    # zero-size softmax axes, boolean einsum, .at[].mul gradient
    "softmax zero axis": (lambda jax, n: jax.nn.softmax(n.ones((3, 0)), axis=-1),
                          np.zeros((3, 0)), "float32", False),
    "log_softmax zero axis": (lambda jax, n: jax.nn.log_softmax(n.ones((0, 3)), axis=0),
                              np.zeros((0, 3)), "float32", False),
    "grad softmax zero axis": (lambda jax, n: jax.grad(
        lambda x: n.sum(jax.nn.softmax(x)))(n.ones((2, 0))), np.zeros((2, 0)), "float32",
        False),
    "einsum ab-> bool": (lambda jax, n: n.einsum("ab->", n.array([[True, False], [False,
                                                                                 False]])),
                         True, "bool", False),
    "einsum ab->a bool": (lambda jax, n: n.einsum("ab->a", n.array([[True, False],
                                                                    [False, False]])),
                          [True, False], "bool", False),
    "einsum ii-> bool": (lambda jax, n: n.einsum("ii->", n.array([[False, True],
                                                                  [True, False]])),
                         False, "bool", False),
    "grad at[1].mul(y)": (lambda jax, n: jax.grad(
        lambda y: n.sum(n.arange(3.0).at[1].mul(y)))(2.0), 1.0, "float32", True),
    "grad at[0:2].mul(y)": (lambda jax, n: jax.grad(
        lambda y: n.sum(n.arange(1.0, 4.0).at[0:2].mul(y)))(n.float32(2.0)), 3.0, "float32",
        False),
    "grad at[i].mul(y) traced i": (lambda jax, n: jax.grad(
        lambda y, i: n.sum(n.arange(3.0).at[i].mul(y)))(2.0, n.int32(2)), 2.0, "float32",
        True),
    # weak types
    "grad wrt Python float": (lambda jax, n: jax.grad(lambda x: x * 2.0)(3.0), 2.0, "float32",
                              True),
    "grad wrt Python float via array": (lambda jax, n: jax.grad(
        lambda x: n.sum(x * n.ones(3)))(2.0), 3.0, "float32", True),
    "grad sin(Python float)": (lambda jax, n: jax.grad(n.sin)(2.0), -0.41614684, "float32",
                               True),
    "grad wrt float32": (lambda jax, n: jax.grad(lambda x: x * 2.0)(n.float32(3)), 2.0,
                         "float32", False),
    "vjp weak primal strong ct": (lambda jax, n: jax.vjp(lambda x: x * 2.0, 2.0)[1](
        n.float32(1))[0], 2.0, "float32", False),
    "jvp weak": (lambda jax, n: jax.jvp(lambda x: x * 2.0, (2.0,), (1.0,))[1], 2.0, "float32",
                 True),
    "mean(2.0)": (lambda jax, n: n.mean(2.0), 2.0, "float32", False),
    "sum(2)": (lambda jax, n: n.sum(2), 2, "int32", False),
    "max(2.0)": (lambda jax, n: n.max(2.0), 2.0, "float32", False),
    "var(2.0)": (lambda jax, n: n.var(2.0), 0.0, "float32", False),
    "cumsum(2.0)": (lambda jax, n: n.cumsum(2.0), [2.0], "float32", False),
    "jit mean(2.0)": (lambda jax, n: jax.jit(n.mean)(2.0), 2.0, "float32", False),
    "weak > 1.0": (lambda jax, n: n.asarray(2.0) > 1.0, True, "bool", True),
    "weak > float32": (lambda jax, n: n.asarray(2.0) > n.float32(1), True, "bool", False),
    "isfinite(weak)": (lambda jax, n: n.isfinite(n.asarray(2.0)), True, "bool", True),
    "isinf(weak)": (lambda jax, n: n.isinf(n.asarray(2.0)), False, "bool", False),
    "isnan(weak)": (lambda jax, n: n.isnan(n.asarray(2.0)), False, "bool", True),
    "any(weak > 1)": (lambda jax, n: n.any(n.asarray(2.0) > 1), True, "bool", False),
    "jit weak > 1.0": (lambda jax, n: jax.jit(lambda a: a > 1.0)(2.0), True, "bool", True),
}

CASES = {**SCALAR_OPERAND_AD, **OTHER_CASES}


def _check(out, want, dtype, weak):
    assert np.dtype(out.dtype) == np.dtype(dtype), (out.dtype, dtype)
    assert bool(getattr(out, "weak_type", False)) == weak
    np.testing.assert_allclose(np.asarray(out, dtype=np.float64) if dtype != "bool"
                               else np.asarray(out), np.asarray(want), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", list(CASES))
def test_case_matches_jax(name):
    program, want, dtype, weak = CASES[name]
    _check(program(minijax, jnp), want, dtype, weak)
    if real_jax is not None:
        _check(program(real_jax, real_jnp), want, dtype, weak)


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16"])
def test_cumsum_cumprod_keep_narrow_ints(dtype):
    x = jnp.full(4, 100, dtype)
    # JAX's values: the result keeps the dtype and wraps (int8: 100, 200 -> -56, ...).
    want = np.cumsum(np.full(4, 100, dtype), dtype=dtype)
    out = jnp.cumsum(x)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, want)
    assert jnp.cumprod(x).dtype == np.dtype(dtype)
    assert jnp.cumsum(x, dtype=jnp.int32).dtype == np.int32
    # The array API names promote, as JAX's do.
    assert jnp.cumulative_sum(x).dtype == np.dtype("int32" if dtype[0] == "i" else "uint32")
    assert jnp.cumsum(jnp.ones(3, bool)).dtype == np.int32


def test_python_int_outside_weak_range_raises():
    # JAX: an int that does not fit the weak int32 type is an OverflowError.
    with pytest.raises(OverflowError):
        jnp.ones(2, jnp.uint8) + 2**40
    with pytest.raises(OverflowError, match="300.*uint8"):
        jnp.array(300, jnp.uint8)


@given(st.sampled_from(["int8", "uint8", "int16", "uint16", "uint32"]),
       st.integers(-2**31, 2**31 - 1))
def test_python_int_wraps_like_numpy_cast(dtype, value):
    x = jnp.zeros(1, dtype)
    want = np.array([value], np.int64).astype(dtype)  # two's complement wrap
    np.testing.assert_array_equal(x + value, want)
    np.testing.assert_array_equal(x == value, want == 0)


@pytest.mark.parametrize("shape,axis", [((3, 0), -1), ((0, 3), 0), ((0,), 0),
                                        ((2, 0, 3), 1)])
def test_softmax_zero_size_axis(shape, axis):
    x = jnp.ones(shape)
    for f in (minijax.nn.softmax, minijax.nn.log_softmax):
        assert f(x, axis=axis).shape == shape
        assert minijax.jit(lambda a, f=f: f(a, axis=axis))(x).shape == shape


def test_error_classes_follow_jax():
    with pytest.raises(TypeError, match=r"dimension 0 for shapes \(2, 3\), \(2, 4\)"):
        jnp.concatenate([jnp.ones((2, 3)), jnp.ones((2, 4))])
    with pytest.raises(TypeError, match=r"different numbers of dimensions: got \(2, 3\), "
                                        r"\(2,\)"):
        jnp.concatenate([jnp.ones((2, 3)), jnp.ones(2)])
    with pytest.raises(TypeError, match=r"one unknown axis size.*\(-1, -1\)"):
        jnp.ones(6).reshape(-1, -1)
    with pytest.raises(TypeError, match=r"shape \(6,\) \(size 6\) into shape \(4, 2\)"):
        jnp.ones(6).reshape(4, 2)
    with pytest.raises(TypeError, match=r"permutation \(0, 0\) for operand shape \(2, 3\)"):
        jnp.ones((2, 3)).transpose((0, 0))
    with pytest.raises(TypeError, match=r"add got incompatible shapes.*\(3,\), \(4,\)"):
        jnp.ones(3) + jnp.ones(4)
    with pytest.raises(TypeError, match=r"one unknown axis size"):
        minijax.jit(lambda a: a.reshape(-1, -1))(jnp.ones(6))


def test_donated_buffers_are_deleted():
    f = minijax.jit(lambda x, y: x + y, donate_argnums=0)
    x, y = jnp.ones(3), jnp.ones(3)
    np.testing.assert_array_equal(f(x, y), [2, 2, 2])
    assert x.is_deleted() and not y.is_deleted()
    for use in (lambda: x + 1, lambda: np.asarray(x), lambda: repr(x), lambda: f(x, y),
                lambda: jnp.sum(x), lambda: minijax.jit(lambda a: a * 2)(x)):
        with pytest.raises(RuntimeError, match=r"Array has been deleted with "
                                               r"shape=float32\[3\]"):
            use()
    tree = {"a": jnp.ones(2)}
    minijax.jit(lambda t: t["a"] * 2, donate_argnums=0)(tree)
    assert tree["a"].is_deleted()


@pytest.mark.parametrize("dtype, value", [
    (jnp.uint32, 2**31), (jnp.uint32, 2**32 - 1), (jnp.float16, 2**40), (jnp.float32, 2**40),
    (jnp.int8, -2**31 - 1)])
def test_python_int_operand_outside_weak_int32_raises(dtype, value):
    """JAX 0.10.2 raises OverflowError for a Python int operand outside int32 (without x64)
    whatever the array's dtype; inside int32 it wraps into narrow ints."""
    x = jnp.zeros(2, dtype)
    with pytest.raises(OverflowError, match=str(value)):
        x + value
    with pytest.raises(OverflowError, match=str(value)):
        value * x
    np.testing.assert_array_equal(jnp.zeros(2, jnp.int8) + (-2**31), [0, 0])
    assert float(jnp.full((), 2**40, jnp.float32)) == 2.0**40  # creation is not an operand
