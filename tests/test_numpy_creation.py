"""Array creation vs NumPy: dtypes under JAX's rules (32-bit default, weak types), shapes,
x64 truncation warning, and error paths."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp

SETTINGS = settings(max_examples=20, deadline=None)


def _eq(got, want, dtype=None):
    got = np.asarray(got)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_array_dtypes_and_weak_types():
    assert jnp.array([1, 2]).dtype == np.int32
    assert jnp.array([1.0, 2]).dtype == np.float32
    assert not jnp.array([1.0]).weak_type
    assert jnp.array(1.0).weak_type and jnp.array(1.0).dtype == np.float32
    assert not jnp.array(True).weak_type
    assert jnp.array([]).dtype == np.float32
    assert jnp.array(np.arange(3, dtype=np.int64)).dtype == np.int32
    assert jnp.array([1, 2], dtype=jnp.float16).dtype == np.float16
    assert jnp.array(3, dtype=float).dtype == np.float32
    _eq(jnp.array([[1, 2], [3, 4]], ndmin=3), np.array([[1, 2], [3, 4]], ndmin=3))


def test_array_from_nested_arrays_and_tracers():
    a, b = jnp.arange(3), jnp.ones(3)
    out = jnp.array([a, b])
    _eq(out, np.array([np.arange(3), np.ones(3)]), np.float32)
    out = jnp.array([[a, a], [a, a]])
    assert out.shape == (2, 2, 3)
    f = minijax.jit(lambda x: jnp.array([x, 2 * x, 1.0]))
    _eq(f(np.float32(2.0)), [2.0, 4.0, 1.0], np.float32)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        jnp.array([jnp.ones(2), jnp.ones(3)])


def test_x64_truncation_warning_once():
    from minijax import dtypes
    dtypes._warned_x64.discard(np.dtype(np.float64))
    with pytest.warns(UserWarning, match="jax_enable_x64"):
        x = jnp.array([1.0], dtype=np.float64)
    assert x.dtype == np.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jnp.array([1.0], dtype=np.float64)


def test_asarray_copy_and_constructors():
    x = jnp.asarray(np.arange(4))
    assert jnp.asarray(x) is x
    y = jnp.copy(x)
    assert y is not x
    _eq(y, np.arange(4))
    assert isinstance(jnp.float32(1.5), minijax.Array)
    assert jnp.float32(1.5).dtype == np.float32
    assert jnp.int8(3).dtype == np.int8
    assert jnp.zeros(2).dtype == jnp.float32
    assert np.dtype(jnp.float32) == np.float32
    assert jnp.issubdtype(jnp.float32, jnp.floating)
    assert not jnp.issubdtype(jnp.int32, jnp.floating)


@SETTINGS
@given(shape=st.one_of(st.integers(0, 4), st.tuples(st.integers(0, 3), st.integers(0, 3))),
       dtype=st.sampled_from([None, np.int32, np.float32, np.bool_, np.uint8, np.complex64]))
def test_filled_arrays(shape, dtype):
    for name in ("zeros", "ones", "empty"):
        got = getattr(jnp, name)(shape, dtype)
        want_dtype = np.float32 if dtype is None else dtype
        assert got.dtype == want_dtype and got.shape == np.zeros(shape).shape
        if name != "empty":
            _eq(got, getattr(np, name)(shape, want_dtype))
    _eq(jnp.full(shape, 7, dtype), np.full(shape, 7, dtype or np.int32))
    like = np.zeros(shape, np.int16)
    assert jnp.zeros_like(like).dtype == np.int16
    assert jnp.ones_like(like, dtype=np.float32).dtype == np.float32
    _eq(jnp.full_like(like, 3), np.full_like(like, 3))
    assert jnp.empty_like(like, shape=(2,)).shape == (2,)


def test_full_broadcasts_and_weak_fill():
    _eq(jnp.full((2, 3), np.array([1, 2, 3])), np.full((2, 3), [1, 2, 3]))
    assert jnp.full(3, 1.0).dtype == np.float32
    assert jnp.full(3, 1.0, dtype=jnp.int32).dtype == np.int32
    with pytest.raises(ValueError, match="negative dimensions"):
        jnp.zeros((2, -1))


@SETTINGS
@given(start=st.integers(-10, 10), stop=st.integers(-10, 20), step=st.integers(1, 4))
def test_arange_ints(start, stop, step):
    _eq(jnp.arange(start, stop, step), np.arange(start, stop, step), np.int32)
    _eq(jnp.arange(stop), np.arange(stop), np.int32)
    _eq(jnp.arange(stop, start, -step), np.arange(stop, start, -step), np.int32)


def test_arange_floats_and_errors():
    _eq(jnp.arange(0.0, 1.0, 0.1), np.arange(0.0, 1.0, 0.1), np.float32)
    _eq(jnp.arange(5, dtype=jnp.float32), np.arange(5.0), np.float32)
    _eq(jnp.arange(1, 4, 0.5), np.arange(1, 4, 0.5), np.float32)
    with pytest.raises(ZeroDivisionError):
        jnp.arange(0, 3, 0)
    with pytest.raises(minijax.errors.ConcretizationTypeError, match="arange"):
        minijax.jit(lambda n: jnp.arange(n))(3)


@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("num", [0, 1, 2, 7])
def test_linspace_family(num, endpoint):
    _eq(jnp.linspace(-1, 3, num, endpoint=endpoint), np.linspace(-1, 3, num,
                                                                 endpoint=endpoint), np.float32)
    got, step = jnp.linspace(0, 1, num, endpoint=endpoint, retstep=True)
    want, wstep = np.linspace(0, 1, num, endpoint=endpoint, retstep=True)
    _eq(got, want)
    if num > 1:
        _eq(step, wstep)
    start, stop = np.array([0.0, 1.0]), np.array([[2.0, 5.0], [1.0, 1.0]])
    _eq(jnp.linspace(start, stop, num, endpoint=endpoint, axis=-1),
        np.linspace(start, stop, num, endpoint=endpoint, axis=-1))
    _eq(jnp.linspace(0, 10, num, endpoint=endpoint, dtype=jnp.int32),
        np.linspace(0, 10, num, endpoint=endpoint, dtype=np.int32))
    np.testing.assert_allclose(np.asarray(jnp.logspace(0, 3, num, endpoint=endpoint)),
                               np.logspace(0, 3, num, endpoint=endpoint), rtol=1e-5)
    np.testing.assert_allclose(
        np.asarray(jnp.geomspace(1, 1000, num, endpoint=endpoint)),
        np.geomspace(1, 1000, num, endpoint=endpoint), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jnp.geomspace(-2, -32, num, endpoint=endpoint)),
                               np.geomspace(-2, -32, num, endpoint=endpoint), rtol=1e-5)
    with pytest.raises(ValueError, match="non-negative"):
        jnp.linspace(0, 1, -1)


@SETTINGS
@given(n=st.integers(0, 4), m=st.one_of(st.none(), st.integers(0, 4)), k=st.integers(-4, 4))
def test_matrices(n, m, k):
    _eq(jnp.eye(n, m, k), np.eye(n, m, k), np.float32)
    _eq(jnp.tri(n, m, k, dtype=jnp.int32), np.tri(n, m, k, dtype=np.int32))
    x = np.arange(1, n * (m or n) + 1, dtype=np.float32).reshape(n, m or n)
    _eq(jnp.tril(x, k), np.tril(x, k))
    _eq(jnp.triu(x, k), np.triu(x, k))
    _eq(jnp.diagonal(x, k), np.diagonal(x, k))
    _eq(jnp.diag(x, k), np.diag(x, k))
    _eq(jnp.trace(x, k), np.trace(x, k))
    v = np.arange(n, dtype=np.int32)
    _eq(jnp.diag(v, k), np.diag(v, k))
    _eq(jnp.identity(n), np.identity(n))


def test_diagonal_axes_and_batched_tril():
    x = np.arange(60).reshape(3, 4, 5)
    for off in (-2, 0, 1, 3):
        _eq(jnp.diagonal(x, off, 0, 2), np.diagonal(x, off, 0, 2))
        _eq(jnp.diagonal(x, off, -1, 1), np.diagonal(x, off, -1, 1))
        _eq(jnp.tril(x, off), np.tril(x, off))
    with pytest.raises(ValueError, match="at least two"):
        jnp.diagonal(np.ones(3))
    with pytest.raises(ValueError, match="1d or 2d"):
        jnp.diag(np.ones((2, 2, 2)))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid_and_indices(indexing, sparse):
    a, b, c = np.arange(3), np.arange(4.0), np.arange(2)
    for args in ((a,), (a, b), (a, b, c)):
        got = jnp.meshgrid(*args, indexing=indexing, sparse=sparse)
        want = np.meshgrid(*args, indexing=indexing, sparse=sparse)
        for g, w in zip(got, want):
            _eq(g, w)
    got = jnp.indices((2, 3), sparse=sparse)
    want = np.indices((2, 3), sparse=sparse)
    for g, w in zip(got, want):
        _eq(g, w)
    with pytest.raises(ValueError, match="indexing"):
        jnp.meshgrid(a, indexing="bogus")


def test_dtype_surface():
    assert jnp.finfo(jnp.float32).eps == np.finfo(np.float32).eps
    assert jnp.iinfo(jnp.int8).max == 127
    assert jnp.finfo(np.float64).bits == 32  # canonicalized without x64
    assert jnp.can_cast(jnp.int8, jnp.int32)
    assert not jnp.can_cast(jnp.float32, jnp.int32)
    assert jnp.dtype("float64") == np.float32
    assert jnp.dtype(int) == np.int32
    assert jnp.ndim([[1, 2]]) == 2 and jnp.shape(np.ones((2, 3))) == (2, 3)
    assert jnp.size(np.ones((2, 3)), axis=1) == 3
    assert jnp.pi == np.pi and jnp.newaxis is None and np.isnan(jnp.nan)
    assert jnp.isdtype(jnp.float32, "real floating")
    assert jnp.bool_(1).dtype == np.bool_
