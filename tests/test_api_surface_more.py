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

# --------------------------------------------------------------------------- lax additions


def test_approx_max_min_k_are_exact_as_jax_on_cpu():
    x = jnp.array([1., 5, 3, -0., 0., 5.])
    v, i = minijax.lax.approx_max_k(x, 4)
    np.testing.assert_array_equal(np.asarray(v), [5., 5., 3., 1.])   # JAX 0.10.2 (CPU)
    np.testing.assert_array_equal(np.asarray(i), [1, 5, 2, 0])
    v, i = minijax.lax.approx_min_k(x, 4)
    np.testing.assert_array_equal(np.asarray(i), [3, 4, 0, 2])   # -0.0 ties with 0.0
    assert np.signbit(np.asarray(v)[0]) and not np.signbit(np.asarray(v)[1])
    assert v.dtype == np.float32 and i.dtype == np.int32


@settings(max_examples=20)
@given(st.integers(1, 4), st.integers(1, 40), st.integers(0, 1), st.booleans())
def test_approx_top_k_matches_numpy_sort(rows, n, dim, largest):
    x = np.random.default_rng(rows * 100 + n).standard_normal((rows, n)).astype(np.float32)
    if dim == 0:
        x = x.T
    k = max(1, x.shape[dim] // 2)
    fn = minijax.lax.approx_max_k if largest else minijax.lax.approx_min_k
    v, i = fn(jnp.asarray(x), k, reduction_dimension=dim)
    order = np.argsort(-x if largest else x, axis=dim, kind="stable")
    want_i = np.take(order, np.arange(k), axis=dim)
    np.testing.assert_array_equal(np.asarray(i), want_i)
    np.testing.assert_array_equal(np.asarray(v), np.take_along_axis(x, want_i, axis=dim))


def test_approx_top_k_output_size_without_aggregation_matches_xla():
    from minijax.lax.ann import approx_top_k_output_size
    # (input size, rank, k, recall, override) -> XLA's ApproxTopKReductionOutputSize, from
    # JAX 0.10.2's jaxlib
    table = {(1024, 3, 2, 0.95, 2048): 128, (3000, 1, 100, 0.95, 6000): 2048,
             (1024, 3, 10, 0.99, 10240): 128, (129, 2, 10, 0.95, 1290): 256,
             (1000, 3, 100, 0.5, -1): 256, (1025, 1, 500, 0.5, 2050): 2048,
             (1025, 2, 10, 0.95, -1): 384, (5000, 2, 100, 0.95, -1): 2560,
             (100000, 1, 100, 0.95, -1): 4096, (100000, 2, 100, 0.95, 200000): 1664,
             (1000, 2, 100, 0.95, -1): 1000, (50, 2, 10, 0.95, -1): 50,
             (5000, 1, 1, 0.95, -1): 1024}
    for (n, rank, k, recall, override), want in table.items():
        assert approx_top_k_output_size(n, rank, k, recall, False, override) == want
        assert approx_top_k_output_size(n, rank, k, recall, True, override) == k
    x = jnp.asarray(np.random.default_rng(0).standard_normal((2, 1000)).astype(np.float32))
    v, i = minijax.lax.approx_max_k(x, 10, aggregate_to_topk=False)
    assert v.shape == i.shape == (2, 256)
    np.testing.assert_array_equal(np.asarray(v), np.asarray(minijax.lax.top_k(x, 256)[0]))


def test_approx_top_k_errors_grad_and_vmap():
    with pytest.raises(ValueError, match="k must be smaller than the size of reduction_dim"):
        minijax.lax.approx_max_k(jnp.ones(3), 4)
    with pytest.raises(ValueError, match="operand must be a floating type"):
        minijax.lax.approx_max_k(jnp.arange(3), 2)
    with pytest.raises(ValueError, match="k must be positive"):
        minijax.lax.approx_min_k(jnp.ones(3), 0)
    g = minijax.grad(lambda x: minijax.lax.approx_max_k(x, 2)[0].sum())(jnp.array([1., 5., 3.]))
    np.testing.assert_array_equal(np.asarray(g), [0., 1., 1.])
    v, i = minijax.vmap(lambda x: minijax.lax.approx_max_k(x, 2))(jnp.arange(12.).reshape(3, 4))
    np.testing.assert_array_equal(np.asarray(i), [[3, 2]] * 3)


def test_top_k_axis():
    x = jnp.array([[1., 7.], [4., 2.], [3., 9.]])
    v, i = minijax.lax.top_k(x, 2, axis=0)
    np.testing.assert_array_equal(np.asarray(v), [[4., 9.], [3., 7.]])   # JAX 0.10.2
    np.testing.assert_array_equal(np.asarray(i), [[1, 2], [2, 0]])
    v, i = minijax.lax.top_k(x, 1, axis=-1)
    np.testing.assert_array_equal(np.asarray(v), [[7.], [4.], [9.]])


def test_composite_traces_one_named_op_and_refuses_derivatives():
    @functools.partial(minijax.lax.composite, name="my.tangent")
    def tangent(x, *, scale=1.0):
        return scale * jnp.sin(x) / jnp.cos(x)

    assert tangent.__name__ == "tangent"
    np.testing.assert_allclose(float(tangent(jnp.array(0.5), scale=2.0)), 2 * np.tan(0.5),
                               rtol=1e-6)
    jaxpr = minijax.make_jaxpr(lambda x: tangent(x, scale=np.float32(3)))(1.)
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["composite"]
    assert jaxpr.jaxpr.eqns[0].params["name"] == "my.tangent"
    out = minijax.jit(lambda x: tangent(x, scale=np.full(2, 2., np.float32)))(jnp.ones(2))
    np.testing.assert_allclose(np.asarray(out), 2 * np.tan([1., 1.]), rtol=1e-6)
    with pytest.raises(ValueError, match="JVP rule for composite not implemented"):
        minijax.grad(tangent)(1.)
    with pytest.raises(minijax.errors.UnexpectedTracerError, match="as an attribute"):
        minijax.jit(lambda x, s: tangent(x, scale=s))(1., 2.)


def test_dot_dimension_numbers_and_out_sharding():
    a = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((2, 4, 5)).astype(np.float32)
    out = minijax.lax.dot(a, b, dimension_numbers=(((2,), (1,)), ((0,), (0,))))
    np.testing.assert_allclose(np.asarray(out), np.einsum("bij,bjk->bik", a, b), rtol=1e-5)
    dev = minijax.devices()[0]
    single = minijax.sharding.SingleDeviceSharding(dev)
    np.testing.assert_allclose(np.asarray(minijax.lax.dot(a[0], b[0], out_sharding=single)),
                               a[0] @ b[0], rtol=1e-5)


def test_dynamic_slice_allow_negative_indices():
    x = jnp.arange(5)
    np.testing.assert_array_equal(np.asarray(minijax.lax.dynamic_slice(x, (-2,), (2,))), [3, 4])
    # traced negative indices are clamped (to 0) instead of wrapped, as in JAX
    f = minijax.jit(lambda i: minijax.lax.dynamic_slice(x, (i,), (2,),
                                                        allow_negative_indices=False))
    np.testing.assert_array_equal(np.asarray(f(-2)), [0, 1])
    g = minijax.jit(lambda i: minijax.lax.dynamic_update_slice(
        x, jnp.array([9, 9]), (i,), allow_negative_indices=[False]))
    np.testing.assert_array_equal(np.asarray(g(-1)), [9, 9, 2, 3, 4])
    np.testing.assert_array_equal(
        np.asarray(minijax.lax.dynamic_index_in_dim(x, -1, keepdims=False)), 4)
    with pytest.raises(ValueError, match="allow_negative_indices=False"):
        minijax.lax.dynamic_slice_in_dim(x, -1, 1, allow_negative_indices=False)


def test_unary_accuracy_argument():
    lax = minijax.lax
    for fn in (lax.exp, lax.exp2, lax.expm1, lax.log, lax.log1p, lax.sin, lax.cos, lax.tan,
               lax.tanh, lax.logistic, lax.sqrt, lax.rsqrt, lax.cbrt):
        want = fn(0.5)
        assert float(fn(0.5, accuracy=lax.AccuracyMode.HIGHEST)) == float(want)
        assert float(fn(0.5, accuracy=lax.Tolerance(rtol=1e-3))) == float(want)
    with pytest.raises(NotImplementedError, match="Accuracy 3 not supported"):
        lax.exp(1., accuracy=3)
    with pytest.raises(ValueError, match="non-negative"):
        lax.Tolerance(atol=-1.)
    with pytest.raises(ValueError, match="At least one"):
        lax.Tolerance()

# --------------------------------------------------------------------------- numpy / random


def test_out_sharding_keyword():
    devices = minijax.devices()
    last = minijax.sharding.SingleDeviceSharding(devices[-1])
    z = jnp.zeros((2, 3), out_sharding=last)
    assert z.devices() == {devices[-1]}
    np.testing.assert_array_equal(np.asarray(jnp.arange(4, out_sharding=None)), np.arange(4))
    np.testing.assert_array_equal(
        np.asarray(jnp.reshape(jnp.arange(6), (2, 3), out_sharding=last)),
        np.arange(6).reshape(2, 3))
    key = minijax.random.PRNGKey(0)
    np.testing.assert_array_equal(
        np.asarray(minijax.random.normal(key, (3,), out_sharding=last)),
        np.asarray(minijax.random.normal(key, (3,))))
    assert "out_sharding" in str(__import__("inspect").signature(jnp.ones))
    np.testing.assert_array_equal(
        np.asarray(minijax.jit(lambda: jnp.ones(2, out_sharding=last))()), [1., 1.])
    if len(devices) > 1:
        mesh = minijax.sharding.Mesh(np.array(devices[:2]), ("x",))
        spread = minijax.sharding.NamedSharding(mesh, minijax.sharding.PartitionSpec("x"))
        with pytest.raises(NotImplementedError, match="device_put"):
            jnp.zeros(4, out_sharding=spread)
    with pytest.raises(NotImplementedError, match="shards the result"):
        jnp.zeros(4, out_sharding=minijax.sharding.PartitionSpec("x"))


def test_argsort_dtype_and_prngkey_impl():
    x = jnp.array([3., 1., 2.])
    out = jnp.argsort(x, dtype=jnp.uint8, descending=True)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(out), [0, 2, 1])
    assert jnp.argsort(x, dtype=jnp.float32).dtype == np.float32   # JAX allows any dtype
    np.testing.assert_array_equal(np.asarray(minijax.random.PRNGKey(3, impl="threefry2x32")),
                                  np.asarray(minijax.random.PRNGKey(3)))
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
        minijax.random.PRNGKey(0, impl="unknown")
    k = minijax.random.key(1, dtype=minijax.random.key_dtype())
    np.testing.assert_array_equal(np.asarray(minijax.random.key_data(k)), [0, 1])
    with pytest.raises(ValueError, match="Cannot specify both"):
        minijax.random.key(1, impl="threefry2x32", dtype=minijax.random.key_dtype())

# --------------------------------------------------------------------------- tree_util, dtypes,
# errors, live arrays


def test_tree_with_path_is_leaf_takes_path():
    tree = {"a": [1, 2], "b": [3]}

    def stop_at_a(path, x):
        return len(path) == 1 and path[0].key == "a"

    leaves = minijax.tree_util.tree_leaves_with_path(tree, is_leaf=stop_at_a,
                                                     is_leaf_takes_path=True)
    assert [x for _, x in leaves] == [[1, 2], 3]   # JAX 0.10.2
    out = minijax.tree_util.tree_map_with_path(lambda p, x: len(p), tree, is_leaf=stop_at_a,
                                               is_leaf_takes_path=True)
    assert out == {"a": 1, "b": [2]}
    pairs, treedef = minijax.tree_util.tree_flatten_with_path(
        tree, is_leaf=lambda x: isinstance(x, list))
    assert treedef.num_leaves == 2 and [x for _, x in pairs] == [[1, 2], [3]]


def test_dtypes_itemsize_bits():
    import ml_dtypes
    # JAX 0.10.2's jax.dtypes.itemsize_bits
    cases = {np.bool_: 8, np.int8: 8, np.int64: 64, np.uint16: 16, np.float16: 16,
             ml_dtypes.bfloat16: 16, ml_dtypes.int4: 4, ml_dtypes.uint2: 2,
             ml_dtypes.float4_e2m1fn: 4, ml_dtypes.float8_e4m3fn: 8, np.complex64: 64,
             np.complex128: 128}
    for dtype, bits in cases.items():
        assert minijax.dtypes.itemsize_bits(dtype) == bits, dtype
    with pytest.raises(ValueError, match="cannot be None"):
        minijax.dtypes.itemsize_bits(None)


def test_error_classes_follow_jax_hierarchy():
    errors = minijax.errors
    assert issubclass(errors.JAXIndexError, IndexError)
    assert issubclass(errors.NonConcreteBooleanIndexError, errors.JAXIndexError)
    assert issubclass(errors.JaxprTypeError, TypeError)
    from minijax import core
    assert core.JaxprTypeError is errors.JaxprTypeError
    with pytest.raises(errors.JAXIndexError):
        minijax.jit(lambda x: x[x > 0])(jnp.arange(3))


def test_live_arrays_and_shard():
    x, y = jnp.arange(3), jnp.ones(2)
    live = minijax.live_arrays()
    assert any(a is x for a in live) and any(a is y for a in live)
    y.delete()
    assert not any(a is y for a in minijax.live_arrays())
    assert minijax.live_arrays(platform="no-such-platform") == []
    shard = x.addressable_shards[0]
    assert isinstance(shard, minijax.Shard)
    np.testing.assert_array_equal(np.asarray(shard.data), [0, 1, 2])


def test_tree_util_default_registry():
    reg = minijax.tree_util.default_registry
    tree = {"a": [1, 2], "b": 3}
    leaves, treedef = reg.flatten(tree)
    assert leaves == [1, 2, 3] and treedef == minijax.tree_util.tree_structure(tree)
    # JAX 0.10.2's answers
    assert reg.flatten_one_level(tree) == (([1, 2], 3), ("a", "b"))
    assert reg.flatten_one_level(3) is None
    keyed, aux = reg.flatten_one_level_with_keys(tree)
    assert [k.key for k, _ in keyed] == ["a", "b"] and aux == ("a", "b")
    paths, _ = reg.flatten_with_path({"a": [1, 2]})
    assert [len(p) for p, _ in paths] == [2, 2]
    assert reg.is_node(dict) and not reg.is_node(int)

    class Box:
        def __init__(self, x):
            self.x = x

    reg.register_node(Box, lambda b: ((b.x,), None), lambda aux, ch: Box(*ch))
    assert minijax.tree_util.tree_leaves([Box(4), Box(5)]) == [4, 5]


def test_approx_top_k_of_empty_batches():
    x = np.zeros((2, 0, 3), np.float32)
    for fn in (minijax.lax.approx_max_k, minijax.lax.approx_min_k):
        v, i = fn(x, 2)
        assert v.shape == i.shape == (2, 0, 2)
        v, i = minijax.jit(lambda a, fn=fn: fn(a, 2))(x)
        assert v.shape == (2, 0, 2) and i.dtype == np.int32
