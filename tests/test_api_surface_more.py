"""JAX API surface: jnp.ufunc / frompyfunc, custom_jvp / custom_vjp nondiff_argnames, and
the smaller lax / numpy / tree_util / dtypes / errors additions.

References: NumPy's ufunc methods, finite differences, and JAX 0.10.2's values (hard-coded,
plus live comparisons that skip when jax is not importable).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp

# --------------------------------------------------------------------------- jnp.ufunc

_UFUNC_NAMES = ["add", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2",
                "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
                "negative", "subtract"]
# JAX 0.10.2: (nin, nout, nargs, identity) of each jnp function that is a jnp.ufunc
_JAX_UFUNC_PROPS = {
    "add": (2, 1, 2, 0), "bitwise_and": (2, 1, 2, -1), "bitwise_or": (2, 1, 2, 0),
    "bitwise_xor": (2, 1, 2, 0), "logaddexp": (2, 1, 2, -np.inf),
    "logaddexp2": (2, 1, 2, -np.inf), "logical_and": (2, 1, 2, True),
    "logical_or": (2, 1, 2, False), "logical_xor": (2, 1, 2, False),
    "maximum": (2, 1, 2, None), "minimum": (2, 1, 2, None), "multiply": (2, 1, 2, 1),
    "negative": (1, 1, 1, None), "subtract": (2, 1, 2, None)}


def test_jnp_ufunc_objects_have_jax_properties():
    found = sorted(n for n in dir(jnp) if isinstance(getattr(jnp, n), jnp.ufunc))
    assert found == _UFUNC_NAMES
    for name, props in _JAX_UFUNC_PROPS.items():
        u = getattr(jnp, name)
        assert (u.nin, u.nout, u.nargs, u.identity) == props, name
        assert repr(u) == f"<jnp.ufunc '{name}'>" and u.__name__ == name
    assert isinstance(jnp.sin, type(lambda: 0))   # unary math is a plain function, as in JAX
    assert hash(jnp.add) == hash(jnp.add) and jnp.add != jnp.multiply
    with pytest.raises(AttributeError):
        jnp.add.identity = 1


_INTS = np.array([[3, 1, 4, 1], [5, 9, 2, 6], [5, 3, 5, 8]], np.int32)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "bitwise_and",
                                  "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
                                  "logical_xor"])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_ufunc_reduce_matches_numpy(name, axis):
    got = getattr(jnp, name).reduce(jnp.asarray(_INTS), axis=axis)
    want = getattr(np, name).reduce(_INTS, axis=axis)
    if name in ("add", "multiply"):   # JAX sums ints in the default int type
        want = want.astype(np.int32)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert np.asarray(got).dtype == want.dtype


def test_ufunc_reduce_keepdims_initial_where_and_errors():
    x = np.array([[1., -2., 3.], [4., 5., -6.]], np.float32)
    mask = x > 0
    np.testing.assert_allclose(
        np.asarray(jnp.add.reduce(x, axis=1, keepdims=True, where=mask)),
        np.add.reduce(x, axis=1, keepdims=True, where=mask))
    np.testing.assert_allclose(np.asarray(jnp.maximum.reduce(x, axis=0, initial=4.5)),
                               np.maximum.reduce(x, axis=0, initial=4.5))
    np.testing.assert_allclose(np.asarray(jnp.logaddexp.reduce(x, axis=0)),
                               np.logaddexp.reduce(x, axis=0), rtol=1e-6)
    with pytest.raises(ValueError, match="does not have an identity"):
        jnp.maximum.reduce(x, where=mask)
    with pytest.raises(ValueError, match="where argument must have dtype=bool"):
        jnp.add.reduce(x, where=x)
    with pytest.raises(ValueError, match="reduce only supported for binary ufuncs"):
        jnp.negative.reduce(x)
    with pytest.raises(NotImplementedError):
        jnp.add(x, x, out=x)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "subtract", "bitwise_xor",
                                  "logaddexp"])
def test_ufunc_accumulate_matches_numpy(name):
    x = _INTS.astype(np.float32) if name == "logaddexp" else _INTS
    for axis in (0, 1, -1):
        got = getattr(jnp, name).accumulate(jnp.asarray(x), axis=axis)
        want = getattr(np, name).accumulate(x, axis=axis)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_ufunc_at_matches_numpy_with_repeated_indices():
    idx = np.array([0, 2, 2, 4])
    for name in ("add", "multiply", "subtract", "maximum"):
        a = np.arange(1., 6.)
        want = a.copy()
        getattr(np, name).at(want, idx, np.array([10., 2., 3., -1.]))
        got = getattr(jnp, name).at(jnp.asarray(a), idx, jnp.array([10., 2., 3., -1.]),
                                    inplace=False)
        np.testing.assert_allclose(np.asarray(got), want)
    want = np.arange(6)
    np.negative.at(want, [1, 3])
    np.testing.assert_array_equal(
        np.asarray(jnp.negative.at(jnp.arange(6), jnp.array([1, 3]), inplace=False)), want)
    flags = jnp.add.at(jnp.zeros(3, bool), jnp.array([1, 1]), True, inplace=False)
    np.testing.assert_array_equal(np.asarray(flags), [False, True, False])
    with pytest.raises(NotImplementedError, match="inplace=False"):
        jnp.add.at(jnp.zeros(3), 0, 1.)


@settings(max_examples=15)
@given(st.integers(1, 6), st.lists(st.integers(0, 5), min_size=1, max_size=5))
def test_ufunc_reduceat_matches_numpy(n, starts):
    x = np.arange(n * 3, dtype=np.float32).reshape(3, n) ** 1.5
    idx = np.array([s % n for s in starts])
    for name in ("add", "maximum"):
        np.testing.assert_allclose(
            np.asarray(getattr(jnp, name).reduceat(x, jnp.asarray(idx), axis=1)),
            getattr(np, name).reduceat(x, idx, axis=1), rtol=1e-6)


def test_ufunc_outer_matches_numpy():
    a, b = np.arange(6).reshape(2, 3), np.arange(4)
    for name in ("multiply", "subtract", "maximum"):
        got = getattr(jnp, name).outer(a, b)
        np.testing.assert_array_equal(np.asarray(got), getattr(np, name).outer(a, b))
        assert got.shape == (2, 3, 4)


def test_frompyfunc_methods_match_jax():
    f = jnp.frompyfunc(lambda x, y: x * y + 1, nin=2, nout=1)
    assert (f.nin, f.nout, f.identity) == (2, 1, None)
    # JAX 0.10.2 values
    np.testing.assert_array_equal(np.asarray(f(jnp.arange(3), 2)), [1, 3, 5])
    assert int(f.reduce(jnp.arange(1, 4))) == 10
    np.testing.assert_array_equal(np.asarray(f.accumulate(jnp.arange(1, 4))), [1, 3, 10])
    np.testing.assert_array_equal(
        np.asarray(f.at(jnp.arange(4), jnp.array([1, 1]), 2, inplace=False)), [0, 7, 2, 3])
    np.testing.assert_array_equal(
        np.asarray(f.reduceat(jnp.arange(6), jnp.array([0, 2, 5]))), [1, 29, 5])
    np.testing.assert_allclose(
        np.asarray(f.reduceat(jnp.arange(12.).reshape(3, 4), jnp.array([0, 3, 1]), axis=1)),
        [[3., 3., 10.], [127., 7., 218.], [731., 11., 1002.]])
    np.testing.assert_array_equal(np.asarray(f.outer(jnp.arange(2), jnp.arange(3))),
                                  [[1, 1, 1], [1, 2, 3]])
    with pytest.raises(ValueError, match="zero-size array"):
        f.reduce(jnp.zeros((0,)))
    two = jnp.frompyfunc(lambda x: (x + 1, x * 2), nin=1, nout=2)
    lo, hi = two(jnp.arange(3.))
    np.testing.assert_array_equal(np.asarray(lo), [1., 2., 3.])
    np.testing.assert_array_equal(np.asarray(hi), [0., 2., 4.])


def test_ufunc_methods_under_jit_grad_and_as_static_argument():
    x = jnp.array([1., 2., 3.])
    out = minijax.jit(lambda v: jnp.multiply.accumulate(v) + jnp.maximum.reduce(v))(x)
    np.testing.assert_allclose(np.asarray(out), [4., 5., 9.])
    g = minijax.grad(lambda v: jnp.frompyfunc(lambda a, b: a * b, 2, 1).reduce(v))(x)
    np.testing.assert_allclose(np.asarray(g), [6., 3., 2.])

    @functools.partial(minijax.jit, static_argnums=0)
    def apply(u, v):
        return u.reduce(v)
    assert float(apply(jnp.add, x)) == 6. and float(apply(jnp.multiply, x)) == 6.


def test_ufunc_live_jax_comparison():
    jax = pytest.importorskip("jax")
    x = np.array([[0.5, -1.5, 2.], [3., 0.25, -4.]], np.float32)
    for name in ("add", "multiply", "maximum", "logaddexp", "subtract"):
        for method, args in (("accumulate", (x,)), ("outer", (x[0], x[1])),
                             ("reduceat", (x, np.array([0, 1]))),
                             ("at", (x, (0, np.array([0, 2, 0])), 1.5))):
            kw = {"inplace": False} if method == "at" else {}
            want = getattr(getattr(jax.numpy, name), method)(*args, **kw)
            got = getattr(getattr(jnp, name), method)(*args, **kw)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6,
                                       err_msg=f"{name}.{method}")

# --------------------------------------------------------------------------- nondiff_argnames


def test_custom_vjp_nondiff_argnames():
    @functools.partial(minijax.custom_vjp, nondiff_argnames=("f",))
    def apply(x, f):
        return f(x)

    apply.defvjp(lambda x, f: (f(x), x), lambda f, x, g: (3. * g * x ** 2,))
    assert apply.nondiff_argnums == (1,)
    # the custom rule (3 x^2) differs from the true derivative (2 x): it must be used
    assert float(minijax.grad(apply)(2., lambda v: v ** 2)) == 12.
    assert float(minijax.grad(lambda x: apply(x, f=jnp.sin))(2.)) == 12.


def test_custom_jvp_nondiff_argnames_joins_argnums():
    @functools.partial(minijax.custom_jvp, nondiff_argnums=(2,), nondiff_argnames="n")
    def power(x, n, scale):
        return scale * x ** n

    @power.defjvp
    def _(n, scale, primals, tangents):
        (x,), (t,) = primals, tangents
        return power(x, n, scale), scale * n * x ** (n - 1) * t * 10.

    assert power.nondiff_argnums == (1, 2)
    assert float(minijax.grad(power)(2., 3, 1.)) == 120.
    assert float(minijax.jvp(lambda x: power(x, n=2, scale=0.5), (3.,), (1.,))[1]) == 30.
    # names that are not positional-or-keyword parameters are ignored, as in JAX
    assert minijax.custom_jvp(lambda x, *a, k=1: x, nondiff_argnames=("k", "a")) \
        .nondiff_argnums == ()
