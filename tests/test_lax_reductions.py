"""lax reductions (reduce_sum/max/min/prod/and/or/xor, argmax/argmin, the generic reduce) and
cumulative reductions: values against NumPy over every axis combination, gradients by
finite differences, vmap against a Python loop, lowered HLO against eager, and errors."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minijax
from minijax import lax
from minijax.test_util import check_grads, check_vmap
from minijax.test_util import evaluate_lowered as lowered

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])






def all_axes(ndim):
    return [c for r in range(ndim + 1) for c in itertools.combinations(range(ndim), r)]


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -50), min(info.max, 50), shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# --------------------------------------------------------------------------- values


def _np_max(x, axes):
    if any(x.shape[a] == 0 for a in axes):
        kept = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        fill = -np.inf if x.dtype.kind == "f" else (
            False if x.dtype == np.bool_ else np.iinfo(x.dtype).min)
        return np.full(kept, fill, x.dtype)
    return np.max(x, axis=axes)


def _np_min(x, axes):
    if any(x.shape[a] == 0 for a in axes):
        kept = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        fill = np.inf if x.dtype.kind == "f" else (
            True if x.dtype == np.bool_ else np.iinfo(x.dtype).max)
        return np.full(kept, fill, x.dtype)
    return np.min(x, axis=axes)


REDUCERS = {
    "reduce_sum": (lax.reduce_sum, lambda x, a: np.sum(x, axis=a, dtype=x.dtype),
                   ["float32", "int32", "uint8", "complex64"]),
    "reduce_prod": (lax.reduce_prod, lambda x, a: np.prod(x, axis=a, dtype=x.dtype),
                    ["float32", "int32", "int8"]),
    "reduce_max": (lax.reduce_max, _np_max, ["float32", "int16", "uint32", "bool"]),
    "reduce_min": (lax.reduce_min, _np_min, ["float32", "int8", "uint8", "bool"]),
    "reduce_and": (lax.reduce_and, lambda x, a: np.bitwise_and.reduce(x, axis=a).astype(
        x.dtype) if a else x, ["bool", "int32", "uint8"]),
    "reduce_or": (lax.reduce_or, lambda x, a: np.bitwise_or.reduce(x, axis=a).astype(x.dtype)
                  if a else x, ["bool", "int32", "uint16"]),
    "reduce_xor": (lax.reduce_xor, lambda x, a: np.bitwise_xor.reduce(x, axis=a).astype(
        x.dtype) if a else x, ["bool", "int8", "uint32"]),
}


@pytest.mark.parametrize("name", sorted(REDUCERS))
@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2**16), dtype_index=st.integers(0, 3))
def test_reduction_values_every_axis_combination(name, shape, seed, dtype_index):
    fn, ref, dtype_names = REDUCERS[name]
    dtype = np.dtype(dtype_names[dtype_index % len(dtype_names)])
    x = rand(np.random.default_rng(seed), shape, dtype)
    for axes in all_axes(len(shape)):
        got = fn(x, axes)
        want = ref(x, axes)
        assert got.dtype == dtype and got.shape == np.shape(want), (name, axes)
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-5)


def test_reductions_negative_axes_and_weak_type():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(lax.reduce_max(x, (-1,)), x.max(-1))
    w = lax.reduce_max(lax.broadcast_in_dim(2.0, (3,), ()), (0,))
    assert w.weak_type


def test_max_min_nan_and_signed_zero():
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, -1.0, np.inf]], np.float32)
    np.testing.assert_array_equal(lax.reduce_max(x, (1,)), [np.nan, np.inf])
    np.testing.assert_array_equal(lax.reduce_min(x, (1,)), [np.nan, -np.inf])
    i = np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max], np.int32)
    assert int(lax.reduce_max(i, (0,))) == np.iinfo(np.int32).max
    assert int(lax.reduce_min(i, (0,))) == np.iinfo(np.int32).min


def test_integer_sum_and_prod_wrap():
    x = np.array([2**30, 2**30, 2**30], np.int32)
    assert int(lax.reduce_sum(x, (0,))) == np.sum(x, dtype=np.int32)
    assert int(lax.reduce_prod(np.array([2**16, 2**16], np.int32), (0,))) == 0


@SETTINGS
@given(shape=nonempty_shapes, seed=st.integers(0, 2**16), ties=st.booleans())
def test_argmax_argmin_against_numpy(shape, seed, ties):
    rng = np.random.default_rng(seed)
    x = (rng.integers(0, 3, shape) if ties else rng.standard_normal(shape)).astype(np.float32)
    for axis in range(len(shape)):
        for fn, ref in ((lax.argmax, np.argmax), (lax.argmin, np.argmin)):
            got = fn(x, axis, np.int32)
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got, ref(x, axis=axis))
            np.testing.assert_array_equal(lowered(lambda a, fn=fn, axis=axis: fn(
                a, axis, np.int32), x)[0], ref(x, axis=axis))


def test_argmax_first_nan_wins():
    x = np.array([[1.0, np.nan, 5.0, np.nan], [np.inf, 2.0, np.inf, 0.0]], np.float32)
    for fn in (lax.argmax, lax.argmin):
        got = np.asarray(fn(x, 1, np.int32))
        np.testing.assert_array_equal(got[0], 1)
        np.testing.assert_array_equal(lowered(lambda a, fn=fn: fn(a, 1, np.int32), x)[0][0], 1)
    np.testing.assert_array_equal(np.asarray(lax.argmax(x, 1, np.int32))[1], 0)
    np.testing.assert_array_equal(lax.argmin(x, 1, np.uint8), [1, 3])
    assert lax.argmin(x, 1, np.uint8).dtype == np.uint8


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2**16), reverse=st.booleans())
def test_cumulative_values(name, shape, seed, reverse):
    rng = np.random.default_rng(seed)
    dtypes_ = {"cumsum": [np.float32, np.int32], "cumprod": [np.float32, np.int16],
               "cummax": [np.float32, np.uint8], "cummin": [np.int32, np.float32],
               "cumlogsumexp": [np.float32]}[name]
    accumulate = {"cumsum": lambda v, a: np.cumsum(v, a, dtype=v.dtype),
                  "cumprod": lambda v, a: np.cumprod(v, a, dtype=v.dtype),
                  "cummax": lambda v, a: np.maximum.accumulate(v, a),
                  "cummin": lambda v, a: np.minimum.accumulate(v, a),
                  "cumlogsumexp": lambda v, a: np.logaddexp.accumulate(
                      v.astype(np.float64), a)}[name]
    for dtype in dtypes_:
        x = rand(rng, shape, dtype)
        for axis in range(len(shape)):
            got = getattr(lax, name)(x, axis, reverse=reverse)
            if x.size == 0:
                want = x
            elif reverse:
                want = np.flip(accumulate(np.flip(x, axis), axis), axis)
            else:
                want = accumulate(x, axis)
            assert got.dtype == x.dtype and got.shape == x.shape
            np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-5)
            low = lowered(lambda a, axis=axis: getattr(lax, name)(a, axis, reverse=reverse), x)
            np.testing.assert_allclose(low[0], np.asarray(got), rtol=2e-5, atol=1e-5)


def test_cumulative_edge_values():
    x = np.array([1.0, np.nan, 2.0], np.float32)
    np.testing.assert_array_equal(lax.cummax(x), [1.0, np.nan, np.nan])
    y = np.array([-np.inf, -np.inf, 0.0, np.inf], np.float32)
    np.testing.assert_array_equal(lax.cumlogsumexp(y), [-np.inf, -np.inf, 0.0, np.inf])
    np.testing.assert_array_equal(lax.cumsum(np.array([True, True]).astype(np.int32)), [1, 2])
    np.testing.assert_array_equal(lax.cumsum(np.arange(4, dtype=np.int32), -1), [0, 1, 3, 6])


# --------------------------------------------------------------------------- generic reduce


def test_reduce_recognizes_monoids():
    x = np.ones((3, 4), np.float32)
    cases = [(lax.add, 0.0, "reduce_sum"), (lax.mul, 1.0, "reduce_prod"),
             (lax.max, -np.inf, "reduce_max"), (lax.min, np.inf, "reduce_min")]
    for comp, init, prim in cases:
        jaxpr = minijax.make_jaxpr(lambda a, c=comp, i=init: lax.reduce(
            a, np.float32(i), c, (1,)))(x)
        assert [e.primitive.name for e in jaxpr.eqns] == [prim]
    b = np.ones((3,), bool)
    for comp, init, prim in ((lax.bitwise_and, True, "reduce_and"),
                             (lax.bitwise_or, False, "reduce_or")):
        jaxpr = minijax.make_jaxpr(lambda a, c=comp, i=init: lax.reduce(
            a, np.bool_(i), c, (0,)))(b)
        assert [e.primitive.name for e in jaxpr.eqns] == [prim]
    # A non-identity init is not the monoid: it must go through the generic reducer.
    jaxpr = minijax.make_jaxpr(lambda a: lax.reduce(a, np.float32(1.0), lax.add, (1,)))(x)
    assert [e.primitive.name for e in jaxpr.eqns] == ["reduce"]
    np.testing.assert_allclose(lax.reduce(x, np.float32(1.0), lax.add, (1,)), [5.0] * 3)


def _poly(u, v):
    return lax.add(lax.mul(u, 0.5), lax.mul(v, v))


def _ref_fold(x, init, axes, fn):
    kept = [d for d in range(x.ndim) if d not in axes]
    k = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    moved = np.transpose(x, kept + list(axes)).reshape([x.shape[d] for d in kept] + [k])
    acc = np.full(moved.shape[:-1], init, np.float64)
    # XLA leaves the order unspecified: only associative, commutative reducers are compared.
    for k in range(moved.shape[-1]):
        acc = fn(acc, moved[..., k])
    return acc


@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_reduce_generic_and_variadic(shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(shape).astype(np.float32)

    def comp(a, b):
        return (lax.add(a[0], b[0]), lax.max(a[1], b[1]))
    for axes in all_axes(len(shape)):
        s, m = lax.reduce((x, y), (np.float32(2.0), np.float32(-np.inf)), comp, axes)
        np.testing.assert_allclose(s, _ref_fold(x, 2.0, axes, np.add), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(m, _ref_fold(y, -np.inf, axes, np.maximum), rtol=1e-6)
        got = lowered(lambda a, b, axes=axes: lax.reduce(
            (a, b), (np.float32(2.0), np.float32(-np.inf)), comp, axes), x, y)
        np.testing.assert_allclose(got[0], s, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[1], m)


def test_reduce_generic_dict_pytree():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = lax.reduce({"a": x, "b": x}, {"a": np.float32(0), "b": np.float32(1)},
                     lambda u, v: {"a": lax.add(u["a"], v["a"]), "b": lax.mul(u["b"], v["b"])},
                     (1,))
    np.testing.assert_allclose(out["a"], x.sum(1))
    np.testing.assert_allclose(out["b"], x.prod(1))


# --------------------------------------------------------------------------- gradients


def test_reduction_gradients(x64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4))
    for axes in [(0,), (1,), (0, 1)]:
        check_grads(lambda a, axes=axes: lax.reduce_sum(a, axes), (x,), 2)
        check_grads(lambda a, axes=axes: lax.reduce_max(a, axes), (x,), 2)
        check_grads(lambda a, axes=axes: lax.reduce_min(a, axes), (x,), 2)
        check_grads(lambda a, axes=axes: lax.reduce_prod(a, axes), (x,), 2)


def test_reduce_max_ties_share_the_gradient(x64):
    x = np.array([1.0, 3.0, 3.0, 2.0])
    g = minijax.grad(lambda a: lax.reduce_max(a, (0,)))(x)
    np.testing.assert_allclose(g, [0.0, 0.5, 0.5, 0.0])


def test_reduce_prod_gradient_with_zeros(x64):
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.5, -2.0, 4.0]])
    g = minijax.grad(lambda a: lax.reduce_sum(lax.reduce_prod(a, (1,)), (0,)))(x)
    np.testing.assert_allclose(g, [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [-8.0, 6.0, -3.0]])
    check_grads(lambda a: lax.reduce_prod(a, (1,)), (x,), 2)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
def test_cumulative_gradients(x64, name):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5))
    x[1, 2] = 0.0
    for axis, reverse in [(0, False), (1, True), (1, False)]:
        check_grads(lambda a, axis=axis, reverse=reverse: getattr(lax, name)(
            a, axis, reverse=reverse), (x,), 2)


def test_generic_reduce_gradients(x64):
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    check_grads(lambda a: lax.reduce(a, 0.0, _poly, (1,)), (x,), 2)
    check_grads(lambda a, b: lax.reduce((a, b), (0.0, 1.0), lambda u, v: (
        lax.add(u[0], v[0]), lax.mul(u[1], v[1])), (0,)), (x, y), 1)


# --------------------------------------------------------------------------- vmap


@SETTINGS
@given(seed=st.integers(0, 2**16), axis=st.integers(0, 2))
def test_reductions_vmap(seed, axis):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    ints = rng.integers(-5, 5, (2, 3, 4)).astype(np.int32)
    red = int(rng.integers(0, 2))
    for fn in (lax.reduce_sum, lax.reduce_max, lax.reduce_min, lax.reduce_prod):
        check_vmap(lambda a, fn=fn: fn(a, (red,)), (x,), axis, atol=1e-5, rtol=1e-5)
    for fn in (lax.reduce_and, lax.reduce_or, lax.reduce_xor):
        check_vmap(lambda a, fn=fn: fn(a, (red,)), (ints,), axis)
    for fn in (lax.argmax, lax.argmin):
        check_vmap(lambda a, fn=fn: fn(a, red, np.int32), (x,), axis)
    for name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
        check_vmap(lambda a, name=name: getattr(lax, name)(a, red, reverse=True), (x,), axis,
                   atol=1e-5, rtol=1e-5)
    check_vmap(lambda a: lax.reduce(a, np.float32(0), _poly, (red,)), (x,), axis,
               atol=1e-5, rtol=1e-5)
    check_vmap(lambda a: lax.reduce_max(a, (0,)), (x,), axis, out_axes=1)


# --------------------------------------------------------------------------- lowering


def test_reductions_lowered_match_eager():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.random((3, 4)) < 0.5
    i = rng.integers(-20, 20, (3, 4)).astype(np.int32)
    cases = [(lax.reduce_sum, x), (lax.reduce_max, x), (lax.reduce_min, x),
             (lax.reduce_prod, x), (lax.reduce_max, b), (lax.reduce_min, b),
             (lax.reduce_and, b), (lax.reduce_or, i), (lax.reduce_xor, i)]
    for fn, v in cases:
        for axes in [(0,), (1,), (0, 1), ()]:
            got = lowered(lambda a, fn=fn, axes=axes: fn(a, axes), v)[0]
            np.testing.assert_allclose(got, np.asarray(fn(v, axes)), rtol=1e-5)


def test_gradients_lowered_match_eager():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4)).astype(np.float32)

    def loss(a):
        return lax.reduce_sum(lax.mul(lax.cumprod(a, 1), lax.broadcast_in_dim(
            lax.reduce_max(a, (1,)), (3, 4), (0,))), (0, 1))
    g = minijax.grad(loss)
    np.testing.assert_allclose(lowered(g, x)[0], np.asarray(g(x)), rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- errors


def test_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"reduce_max: axis 2 is out of bounds for f32\[2,3\]"):
        lax.reduce_max(x, (2,))
    with pytest.raises(ValueError, match="duplicate"):
        lax.reduce_sum(x, (0, 0))
    with pytest.raises(TypeError, match="reduce_sum does not accept dtype bool"):
        lax.reduce_sum(np.ones(3, bool), (0,))
    with pytest.raises(TypeError, match="reduce_and does not accept dtype float32"):
        lax.reduce_and(x, (0,))
    with pytest.raises(ValueError, match=r"argmax requires a non-empty reduced dimension.*"
                                         r"f32\[2,0\]"):
        lax.argmax(np.ones((2, 0), np.float32), 1, np.int32)
    with pytest.raises(TypeError, match="index_dtype must be an integer type"):
        lax.argmin(x, 0, np.float32)
    with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
        lax.cumlogsumexp(np.ones(3, np.int32))
    with pytest.raises(ValueError, match=r"cumsum: axis 5 is out of bounds"):
        lax.cumsum(x, 5)
    with pytest.raises(ValueError, match="same structure"):
        lax.reduce((x, x), np.float32(0), lax.add, (0,))
    with pytest.raises(TypeError, match="init values must be scalars of the operand dtypes"):
        lax.reduce(x, np.int32(0), lambda a, b: a, (0,))
    with pytest.raises(TypeError, match="must return 2 value"):
        lax.reduce((x, x), (np.float32(0), np.float32(0)), lambda a, b: a[0], (0,))


def test_python_scalar_init_values_take_the_operand_dtype(x64):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = lax.reduce(x, 0, lax.add, (1,))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [3.0, 12.0])
    out = lax.reduce(x, 1.0, _poly, (1,))
    assert out.dtype == np.float32
    win = lax.reduce_window(x, -np.inf, lax.max, (1, 2), (1, 1), "VALID")
    np.testing.assert_array_equal(win, [[1.0, 2.0], [4.0, 5.0]])
