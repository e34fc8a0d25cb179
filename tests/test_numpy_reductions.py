"""jnp reductions and statistics vs NumPy: axes (None, int, negative, tuples), keepdims,
dtype=, where=, ddof, empty arrays, NaNs, AxisError, and jit/grad/vmap."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minijax
import minijax.numpy as jnp
from minijax.test_util import check_grads, check_vmap

SETTINGS = settings(max_examples=12, deadline=None)


def _close(got, want, rtol=1e-5, atol=1e-5, dtype=None):
    got = np.asarray(got)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


@st.composite
def array_and_axis(draw, min_side=0, dtype=np.float32):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=min_side, max_side=4))
    if dtype == np.float32:
        elems = st.floats(-10, 10, width=32)
    else:
        elems = st.integers(-20, 20)
    x = draw(hnp.arrays(dtype, shape, elements=elems))
    ndim = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"])) if ndim else "none"
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-ndim, ndim - 1))
    else:
        axis = tuple(draw(st.sets(st.integers(0, ndim - 1), max_size=ndim)))
        axis = tuple(a - ndim if draw(st.booleans()) else a for a in axis)
    return x, axis, draw(st.booleans())


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std", "all", "any",
                                  "count_nonzero"])
@SETTINGS
@given(args=array_and_axis())
def test_reductions_with_identity(name, args):
    x, axis, keepdims = args
    if name == "prod":
        x = np.clip(x, -2, 2)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    got = getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
    _close(got, want, rtol=1e-4, atol=1e-4)
    assert np.shape(got) == np.shape(want)


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin", "ptp"])
@SETTINGS
@given(args=array_and_axis(min_side=1))
def test_extrema(name, args):
    x, axis, keepdims = args
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    _close(getattr(jnp, name)(x, axis=axis, keepdims=keepdims), want, dtype=want.dtype)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "cumsum", "cumprod"])
@SETTINGS
@given(args=array_and_axis(min_side=1, dtype=np.int32))
def test_integer_reductions(name, args):
    x, axis, keepdims = args
    x = np.clip(x, -3, 3).astype(np.int32)
    if name.startswith("cum"):
        axis = axis if isinstance(axis, int) else None
        want = getattr(np, name)(x, axis=axis).astype(np.int32)
        got = getattr(jnp, name)(x, axis=axis)
    else:
        want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
        got = getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
    assert np.asarray(got).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want).astype(np.int32))


@SETTINGS
@given(args=array_and_axis(min_side=1))
def test_argmax_argmin(args):
    x, axis, keepdims = args
    axis = axis if isinstance(axis, int) else None
    for name in ("argmax", "argmin"):
        want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
        got = getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
        np.testing.assert_array_equal(np.asarray(got), want)
        assert np.asarray(got).dtype == np.int32


def test_small_int_sums_promote_and_dtype_argument():
    x = np.arange(200, dtype=np.int8)
    assert jnp.sum(x).dtype == np.int32 and int(jnp.sum(x)) == int(x.astype(int).sum())
    assert jnp.sum(np.ones(3, np.uint8)).dtype == np.uint32
    assert jnp.sum(np.ones(3, bool)).dtype == np.int32
    assert jnp.sum(x, dtype=jnp.float32).dtype == np.float32
    assert jnp.mean(np.arange(4)).dtype == np.float32
    assert jnp.cumsum(np.ones(3, bool)).dtype == np.int32


def test_where_and_initial():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = x % 3 == 0
    _close(jnp.sum(x, axis=1, where=m), np.sum(x, axis=1, where=m))
    _close(jnp.mean(x, axis=0, where=m), np.mean(x, axis=0, where=m))
    _close(jnp.var(x, axis=1, where=m), np.var(x, axis=1, where=m))
    _close(jnp.max(x, axis=1, where=m, initial=-1), np.max(x, axis=1, where=m, initial=-1))
    _close(jnp.sum(x, initial=5.0), np.sum(x, initial=5.0))
    _close(jnp.min(x, axis=0, initial=2.0), np.min(x, axis=0, initial=2.0))
    with pytest.raises(ValueError, match="initial"):
        jnp.max(x, where=m)


def test_ddof_and_correction():
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    _close(jnp.var(x, axis=1, ddof=1), np.var(x, axis=1, ddof=1))
    _close(jnp.std(x, ddof=2), np.std(x, ddof=2))
    _close(jnp.var(x, correction=1), np.var(x, ddof=1))
    z = (x + 1j * x[::-1]).astype(np.complex64)
    _close(jnp.var(z), np.var(z))
    assert jnp.var(z).dtype == np.float32


def test_empty_reductions():
    e = np.zeros((0, 3), np.float32)
    _close(jnp.sum(e, axis=0), np.zeros(3))
    _close(jnp.prod(e), 1.0)
    with np.errstate(all="ignore"):
        _close(jnp.mean(e, axis=0), np.mean(e, axis=0))
    _close(jnp.max(e, axis=1), np.zeros((0,)))
    with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
        jnp.max(e)
    with pytest.raises(ValueError, match="empty sequence"):
        jnp.argmax(e)


def test_axis_errors():
    x = np.ones((2, 3))
    with pytest.raises(np.exceptions.AxisError):
        jnp.sum(x, axis=2)
    with pytest.raises(np.exceptions.AxisError):
        jnp.mean(x, axis=(0, -3))
    with pytest.raises(ValueError, match="duplicate"):
        jnp.sum(x, axis=(0, -2))
    with pytest.raises(TypeError, match="requires ndarray"):
        jnp.sum([1, 2, 3])


def test_nan_functions():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [4.0, 5.0, -1.0]],
                 np.float32)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        for name in ("nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanmedian"):
            _close(getattr(jnp, name)(x, axis=1), getattr(np, name)(x, axis=1))
    for name in ("nansum", "nanprod", "nancumsum", "nancumprod"):
        _close(getattr(jnp, name)(x, axis=1), getattr(np, name)(x, axis=1))
    _close(jnp.nanargmax(x[0]), np.nanargmax(x[0]))
    _close(jnp.nanquantile(x[2:], 0.3, axis=1), np.nanquantile(x[2:], 0.3, axis=1))


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_methods(method):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 7, 2)).astype(np.float32)
    q = np.array([0.0, 0.2, 0.5, 0.75, 1.0], np.float32)
    for axis in (None, 1, (0, 2), -1):
        for keepdims in (False, True):
            _close(jnp.quantile(x, q, axis=axis, method=method, keepdims=keepdims),
                   np.quantile(x, q, axis=axis, method=method, keepdims=keepdims))
    _close(jnp.percentile(x, 40.0, axis=1, method=method),
           np.percentile(x, 40.0, axis=1, method=method))
    _close(jnp.median(x, axis=(0, 1)), np.median(x, axis=(0, 1)))


def test_quantile_nan_and_errors():
    x = np.array([1.0, np.nan, 2.0], np.float32)
    assert np.isnan(float(jnp.median(x)))
    with pytest.raises(ValueError, match="method"):
        jnp.quantile(x, 0.5, method="bogus")


def test_average():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    w = np.array([1.0, 2.0, 0.5, 1.0], np.float32)
    _close(jnp.average(x), np.average(x))
    _close(jnp.average(x, axis=1, weights=w), np.average(x, axis=1, weights=w))
    _close(jnp.average(x, axis=0, weights=x), np.average(x, axis=0, weights=x))
    avg, wsum = jnp.average(x, axis=1, weights=w, returned=True)
    wavg, wwsum = np.average(x, axis=1, weights=w, returned=True)
    _close(avg, wavg)
    _close(wsum, wwsum)
    with pytest.raises(ValueError, match="Axis must be specified"):
        jnp.average(x, weights=w)


def test_cumulative_axes():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    for axis in (None, 0, 1, -1):
        _close(jnp.cumsum(x, axis=axis), np.cumsum(x, axis=axis))
        _close(jnp.cumprod(x, axis=axis), np.cumprod(x, axis=axis), rtol=1e-4)




def test_grads(x64):
    x = np.random.default_rng(2).standard_normal((3, 4))
    check_grads(lambda a: jnp.var(a, axis=1, ddof=1), (x,), order=1)
    check_grads(lambda a: jnp.max(a, axis=0), (x,), order=1)
    check_grads(lambda a: jnp.std(a), (x,), order=1)
    check_grads(lambda a: jnp.mean(a, axis=(0, 1), keepdims=True), (x,), order=2)


def test_jit_and_vmap():
    x = np.random.default_rng(3).standard_normal((5, 6)).astype(np.float32)
    f = minijax.jit(lambda a: jnp.std(a, axis=0) + jnp.argmax(a, axis=0) + jnp.median(a, 0))
    _close(f(x), np.std(x, axis=0) + np.argmax(x, axis=0) + np.median(x, axis=0))
    check_vmap(lambda a: jnp.quantile(a, 0.3) + jnp.cumsum(a)[-1], (x,), atol=1e-5)
