"""Python array API pieces of minijax.numpy, with JAX 0.10.2's results (recorded) and NumPy
references: __array_namespace_info__, DLPack, to_device / asarray(device=), unique_* named
tuples (NaNs kept distinct), cumulative_sum/prod(include_initial=), unstack, floor_divide by
zero, 0-d boolean indices."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp


def test_namespace_info_follows_jax():
    info = jnp.__array_namespace_info__()
    assert info.capabilities() == {"boolean indexing": False, "data-dependent shapes": False,
                                   "max dimensions": 64}
    assert info.default_device() is None
    assert minijax.devices()[0] in info.devices()
    assert info.default_dtypes() == {"real floating": np.dtype("float32"),
                                     "complex floating": np.dtype("complex64"),
                                     "integral": np.dtype("int32"),
                                     "indexing": np.dtype("int32")}
    # JAX 0.10.2 without x64: no 64-bit types
    assert sorted(info.dtypes()) == ["bool", "complex64", "float32", "int16", "int32", "int8",
                                     "uint16", "uint32", "uint8"]
    assert sorted(info.dtypes(kind="integral")) == ["int16", "int32", "int8", "uint16",
                                                    "uint32", "uint8"]
    assert sorted(info.dtypes(kind=("bool", "real floating"))) == ["bool", "float32"]
    with pytest.raises(ValueError, match="unknown kind"):
        info.dtypes(kind="strings")


def test_namespace_info_x64(x64):
    info = jnp.__array_namespace_info__()
    assert info.default_dtypes()["integral"] == np.dtype("int64")
    assert "float64" in info.dtypes() and "uint64" in info.dtypes(kind="unsigned integer")


def test_dlpack_round_trip_with_numpy():
    x = jnp.arange(6.0).reshape(2, 3)
    assert x.__dlpack_device__() == (1, 0)  # kDLCPU
    np.testing.assert_array_equal(np.from_dlpack(x), np.arange(6.0).reshape(2, 3))
    back = jnp.from_dlpack(np.arange(4, dtype=np.int16))
    assert isinstance(back, minijax.Array) and back.dtype == np.int16
    np.testing.assert_array_equal(back, np.arange(4))
    assert jnp.from_dlpack(x) is not None and np.array_equal(jnp.from_dlpack(x), x)
    with pytest.raises(TypeError, match="__dlpack__"):
        jnp.from_dlpack([1, 2])
    dev = minijax.devices()[0]
    assert jnp.from_dlpack(np.ones(2), device=dev).committed


def test_to_device_and_asarray_device():
    dev = minijax.devices()[0]
    x = jnp.arange(3)
    y = x.to_device(dev)
    assert y.device == dev and y.committed and not x.committed
    z = jnp.asarray([1.0, 2.0], device=dev)
    assert z.committed and z.device == dev
    assert jnp.array([1, 2], device=dev).committed
    assert not jnp.asarray([1, 2]).committed
    with pytest.raises(ValueError, match="Device"):
        jnp.asarray([1, 2], device="cpu:0")


def test_unique_functions_return_named_tuples_and_keep_nans_distinct():
    x = jnp.array([np.nan, np.nan, 1.0])
    # JAX 0.10.2:
    # _UniqueAllResult(values=[1., nan, nan], indices=[2, 0, 1], inverse_indices=[1, 2, 0],
    #                  counts=[1, 1, 1])
    res = jnp.unique_all(x)
    assert type(res).__name__ == "_UniqueAllResult" and isinstance(res, tuple)
    np.testing.assert_array_equal(res.values, [1.0, np.nan, np.nan])
    np.testing.assert_array_equal(res.indices, [2, 0, 1])
    np.testing.assert_array_equal(res.inverse_indices, [1, 2, 0])
    np.testing.assert_array_equal(res.counts, [1, 1, 1])
    counts = jnp.unique_counts(x)
    assert counts._fields == ("values", "counts")
    np.testing.assert_array_equal(counts.counts, [1, 1, 1])
    inv = jnp.unique_inverse(jnp.array([[3, 1], [3, 2]]))
    assert inv._fields == ("values", "inverse_indices")
    np.testing.assert_array_equal(inv.values, [1, 2, 3])
    np.testing.assert_array_equal(inv.inverse_indices, [[2, 0], [2, 1]])
    np.testing.assert_array_equal(jnp.unique_values(x), [1.0, np.nan, np.nan])
    # jnp.unique keeps NumPy's default (NaNs merged) and honours equal_nan=False
    np.testing.assert_array_equal(jnp.unique(x), [1.0, np.nan])
    np.testing.assert_array_equal(jnp.unique(x, equal_nan=False), [1.0, np.nan, np.nan])
    # under jit (size= given), NaNs stay distinct too
    jitted = minijax.jit(lambda v: jnp.unique_all(v, size=3))(x)
    np.testing.assert_array_equal(jitted.values, [1.0, np.nan, np.nan])
    np.testing.assert_array_equal(jitted.counts, [1, 1, 1])


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), data=st.data(),
       prod=st.booleans())
def test_cumulative_include_initial_matches_numpy(shape, data, prod):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 5 + 1
    fn = jnp.cumulative_prod if prod else jnp.cumulative_sum
    ref = np.cumulative_prod if prod else np.cumulative_sum
    got = fn(x, axis=axis, include_initial=True)
    np.testing.assert_allclose(got, ref(x, axis=axis, include_initial=True), rtol=1e-6)
    np.testing.assert_allclose(fn(x, axis=axis), ref(x, axis=axis), rtol=1e-6)


def test_cumulative_include_initial_jit_grad_dtype():
    # JAX 0.10.2: cumulative_sum(int8, include_initial=True) is int32; [[0 0 1 3] [0 3 7 12]]
    got = jnp.cumulative_sum(jnp.arange(6).reshape(2, 3), axis=1, include_initial=True)
    np.testing.assert_array_equal(got, [[0, 0, 1, 3], [0, 3, 7, 12]])
    assert jnp.cumulative_sum(jnp.arange(3, dtype=jnp.int8), include_initial=True).dtype \
        == np.int32
    f = minijax.jit(lambda v: jnp.cumulative_prod(v, include_initial=True))
    np.testing.assert_array_equal(f(jnp.array([1.0, 2.0, 3.0])), [1, 1, 2, 6])
    g = minijax.grad(lambda v: jnp.cumulative_prod(v, include_initial=True).sum())
    np.testing.assert_allclose(g(jnp.array([1.0, 2.0, 3.0])), [9.0, 4.0, 2.0])
    with pytest.raises(ValueError, match="non-scalar"):
        jnp.cumulative_sum(jnp.array(3.0), include_initial=True)


def test_unstack():
    x = np.arange(24).reshape(2, 3, 4)
    for axis in (0, 1, 2, -1):
        got = jnp.unstack(x, axis=axis)
        assert isinstance(got, tuple) and len(got) == x.shape[axis]
        for g, w in zip(got, np.moveaxis(x, axis, 0), strict=True):
            np.testing.assert_array_equal(g, w)
    out = minijax.jit(jnp.unstack)(jnp.ones((2, 3)))
    assert len(out) == 2 and out[0].shape == (3,)
    with pytest.raises(ValueError, match="0-d"):
        jnp.unstack(jnp.array(1.0))


def test_floor_divide_by_zero_gives_signed_inf():
    # JAX 0.10.2 (and NumPy): [inf, -inf, nan, -inf]
    a, b = jnp.array([1.0, -1.0, 0.0, 5.0]), jnp.array([0.0, 0.0, 0.0, -0.0])
    want = [np.inf, -np.inf, np.nan, -np.inf]
    np.testing.assert_array_equal(jnp.floor_divide(a, b), want)
    np.testing.assert_array_equal(minijax.jit(jnp.floor_divide)(a, b), want)
    np.testing.assert_array_equal(a // 0.0, [np.inf, -np.inf, np.nan, np.inf])


def test_zero_dim_boolean_indices():
    x = jnp.arange(6.0).reshape(2, 3)
    a = np.arange(6.0).reshape(2, 3)
    # shapes recorded from JAX 0.10.2 (= NumPy's)
    for idx in (True, False, (True, 1), (..., True), (1, False), (..., False, 0),
                (False, slice(1, None)), np.bool_(True), np.bool_(False)):
        got = x[idx]
        np.testing.assert_array_equal(got, a[idx])
    assert x[jnp.bool_(True)].shape == (1, 2, 3)
    assert x[jnp.array(False)].shape == (0, 2, 3)
    assert jnp.array(5.0)[True].shape == (1,) and jnp.array(5.0)[False].shape == (0,)
    assert minijax.jit(lambda v: v[True])(x).shape == (1, 2, 3)
    assert minijax.jit(lambda v: v[False, 1:])(x).shape == (0, 1, 3)
    with pytest.raises(minijax.errors.NonConcreteBooleanIndexError):
        minijax.jit(lambda v, m: v[m])(x, jnp.array(True))
