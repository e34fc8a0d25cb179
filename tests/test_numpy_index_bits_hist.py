"""minijax.numpy's flat-index helpers (unravel_index, ravel_multi_index), functional
writers (put, put_along_axis, place), packbits/unpackbits, spacing, trim_zeros, resize,
rollaxis, histogram2d/histogramdd, roots, fft.hfft/ihfft, host helpers and dtype names:
against NumPy (hypothesis for shapes) and JAX 0.10.2 where the two differ (hard-coded)."""

import io

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minijax
import minijax.numpy as jnp
from minijax.errors import ConcretizationTypeError

shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)


def _eq(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- flat indices


@settings(max_examples=25, deadline=None)
@given(shapes, st.data())
def test_unravel_and_ravel_round_trip_match_numpy(shape, data):
    size = int(np.prod(shape))
    flat = np.array(data.draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=6)))
    got = jnp.unravel_index(flat, shape)
    want = np.unravel_index(flat, shape)
    for g, w in zip(got, want, strict=True):
        _eq(g, w)
    order = data.draw(st.sampled_from(["C", "F"]))
    coords = np.unravel_index(flat, shape, order=order)
    _eq(jnp.ravel_multi_index(coords, shape, order=order), flat)


def test_unravel_index_clamps_like_jax():
    # JAX: out-of-range indices clamp; [-size, 0) counts from the end (NumPy raises).
    got = jnp.unravel_index(np.array([-1, 5, 25, -30]), (4, 6))
    _eq(got[0], [3, 0, 3, 0])
    _eq(got[1], [5, 5, 5, 0])
    assert got[0].dtype == np.int32
    got = jnp.unravel_index(np.array([3, 9], np.uint32), (2, 4))
    _eq(got[0], [0, 1]) and _eq(got[1], [3, 3])
    assert [int(v) for v in jnp.unravel_index(7, 3)] == [2]


def test_ravel_multi_index_modes():
    coords = (np.array([1, 5]), np.array([2, -1]))
    _eq(jnp.ravel_multi_index(coords, (4, 6), mode="clip"),
        np.ravel_multi_index(coords, (4, 6), mode="clip"))
    _eq(jnp.ravel_multi_index(coords, (4, 6), mode="wrap"),
        np.ravel_multi_index(coords, (4, 6), mode="wrap"))
    assert jnp.ravel_multi_index((np.array([1]), np.array([2])), (4, 6),
                                 dtype=np.int16).dtype == np.int16
    with pytest.raises(ValueError, match="invalid entry in coordinates array"):
        jnp.ravel_multi_index(coords, (4, 6))
    with pytest.raises(ConcretizationTypeError, match="mode='wrap' or mode='clip'"):
        minijax.jit(lambda i: jnp.ravel_multi_index((i, i), (4, 6)))(np.array([1]))
    f = minijax.jit(lambda i, j: jnp.ravel_multi_index((i, j), (4, 6), mode="clip"))
    _eq(f(np.array([1, 9]), np.array([2, 3])), [8, 21])
    with pytest.raises(ValueError, match="not large enough"):
        jnp.ravel_multi_index((np.array([1]), np.array([2])), (300, 300), dtype=np.int8)
    # As JAX: float coordinates make a float default dtype (ValueError), or with an int
    # dtype a TypeError.
    with pytest.raises(ValueError, match="is not an integer type"):
        jnp.ravel_multi_index((np.array([1.0]), np.array([2])), (4, 6), mode="clip")
    with pytest.raises(TypeError, match="only int indices"):
        jnp.ravel_multi_index((np.array([1.0]), np.array([2])), (4, 6), mode="clip",
                              dtype=np.int32)
    with pytest.raises(ValueError, match="invalid mode"):
        jnp.ravel_multi_index(coords, (4, 6), mode="nope")


# --------------------------------------------------------------------------- writers


def test_put_matches_numpy_and_needs_inplace_false():
    a = np.arange(10.0)
    for ind, v, mode in [([1, 3], [7.0, 8.0], None), ([12, -3], [5.0], "wrap"),
                         ([0, 4, 11], [1.0, 2.0], "clip")]:
        want = a.copy()
        np.put(want, ind, v, mode=mode or "clip")
        _eq(jnp.put(a, np.array(ind), np.array(v), mode=mode, inplace=False), want)
    with pytest.raises(ValueError, match="cannot modify arrays in-place"):
        jnp.put(a, 1, 2.0)
    with pytest.raises(NotImplementedError, match="'raise' mode"):
        jnp.put(a, 1, 2.0, mode="raise", inplace=False)
    f = minijax.jit(lambda a, i: jnp.put(a, i, -1.0, inplace=False))
    _eq(f(a, np.array([2, 5])), np.where(np.isin(np.arange(10), [2, 5]), -1.0, a))


@settings(max_examples=20, deadline=None)
@given(shapes, st.data())
def test_put_along_axis_matches_numpy(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a = rng.standard_normal(shape).astype(np.float32)
    # Distinct indices per slice so the written value is unambiguous.
    order = np.argsort(rng.random(shape), axis=axis)
    k = data.draw(st.integers(1, shape[axis]))
    idx = np.take(order, np.arange(k), axis=axis)
    vals = rng.standard_normal(idx.shape).astype(np.float32)
    want = a.copy()
    np.put_along_axis(want, idx, vals, axis)
    _eq(jnp.put_along_axis(a, idx, vals, axis, inplace=False), want)


def test_put_along_axis_details():
    with pytest.raises(ValueError, match="cannot modify arrays in-place"):
        jnp.put_along_axis(np.zeros((2, 3)), np.array([[1], [0]]), 5.0, axis=1)
    # axis=None: flat positions; indices broadcast along other axes.
    _eq(jnp.put_along_axis(np.arange(6.0).reshape(2, 3), np.array([5, 0]),
                           np.array([-1.0, -2.0]), axis=None, inplace=False),
        [[-2.0, 1, 2], [3, 4, -1]])
    _eq(jnp.put_along_axis(np.zeros((3, 4)), np.array([[1, 2, 0, 1]]), np.arange(4.0),
                           axis=0, inplace=False),
        [[0, 0, 2, 0], [0, 0, 0, 3], [0, 1, 0, 0]])
    with pytest.raises(ValueError, match="must have same ndim"):
        jnp.put_along_axis(np.zeros((2, 3)), np.array([1]), 1.0, 1, inplace=False)


def test_place_matches_numpy():
    for arr, mask, vals in [(np.zeros(4), [1, 0, 1, 1], [1.0, 2.0]),
                            (np.arange(6).reshape(2, 3), [[1, 0, 1], [0, 1, 1]], [7, 8, 9])]:
        want = np.array(arr)
        np.place(want, np.array(mask, bool), vals)
        _eq(jnp.place(arr, np.array(mask, bool), np.array(vals), inplace=False), want)
    with pytest.raises(ValueError, match="cannot modify arrays in-place"):
        jnp.place(np.zeros(3), np.ones(3, bool), 1.0)
    with pytest.raises(ValueError, match="same size"):
        jnp.place(np.zeros(3), np.ones(2, bool), 1.0, inplace=False)
    with pytest.raises(ValueError, match="empty array"):
        jnp.place(np.zeros(3), np.ones(3, bool), np.zeros(0), inplace=False)
    f = minijax.jit(lambda a, m: jnp.place(a, m, np.array([5.0, 6.0]), inplace=False))
    _eq(f(np.zeros(5), np.array([0, 1, 1, 0, 1], bool)), [0, 5, 6, 0, 5])


# --------------------------------------------------------------------------- bits


@settings(max_examples=25, deadline=None)
@given(shapes, st.data())
def test_packbits_unpackbits_match_numpy(shape, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    axis = data.draw(st.sampled_from([None, *range(len(shape))]))
    order = data.draw(st.sampled_from(["big", "little"]))
    a = rng.integers(0, 3, shape)
    _eq(jnp.packbits(a, axis=axis, bitorder=order), np.packbits(a, axis=axis, bitorder=order))
    b = rng.integers(0, 256, shape).astype(np.uint8)
    n = b.size * 8 if axis is None else b.shape[axis] * 8
    count = data.draw(st.sampled_from([None, -3, 0, n - 1, n + 5]))
    got = jnp.unpackbits(b, axis=axis, count=count, bitorder=order)
    assert got.dtype == np.uint8
    _eq(got, np.unpackbits(b, axis=axis, count=count, bitorder=order))


def test_bits_errors():
    with pytest.raises(TypeError, match="integer or boolean"):
        jnp.packbits(np.array([1.0, 0.0]))
    with pytest.raises(TypeError, match="unsigned byte"):
        jnp.unpackbits(np.array([3], np.int32))
    with pytest.raises(ValueError, match="'little' or 'big'"):
        jnp.packbits(np.array([1]), bitorder="middle")


def test_spacing():
    with np.errstate(invalid="ignore"):
        _check_spacing()
    assert jnp.spacing(np.array([1, 2])).dtype == np.float32
    with pytest.raises(ValueError, match="not defined for complex"):
        jnp.spacing(np.array([1j]))


def _check_spacing():
    for dt in (np.float32, np.float64, np.float16):
        x = np.array([1.0, -1.0, 0.0, 3e-39, -7.5, 1e4, np.inf, np.nan], dt)
        minijax.config.update("jax_enable_x64", dt == np.float64)
        try:
            got = jnp.spacing(x)
        finally:
            minijax.config.update("jax_enable_x64", False)
        assert got.dtype == dt
        np.testing.assert_array_equal(got, np.spacing(x))


# --------------------------------------------------------------------------- shapes


def test_trim_zeros():
    _eq(jnp.trim_zeros(np.array([0, 0, 1, 2, 0, 3, 0])), [1, 2, 0, 3])
    _eq(jnp.trim_zeros(np.array([0, 0, 1, 2, 0]), "b"), [0, 0, 1, 2])
    _eq(jnp.trim_zeros(np.array([0, 0, 1, 2, 0]), "F"), [1, 2, 0])
    _eq(jnp.trim_zeros(np.zeros(3)), np.zeros(0))
    a = np.array([[0, 0, 0], [0, 1, 2], [0, 0, 0]])
    _eq(jnp.trim_zeros(a), [[1, 2]])                           # every axis by default
    _eq(jnp.trim_zeros(a, axis=1), [[0, 0], [1, 2], [0, 0]])
    with pytest.raises(ConcretizationTypeError, match="trim_zeros"):
        minijax.jit(jnp.trim_zeros)(np.array([0, 1]))


@settings(max_examples=25, deadline=None)
@given(shapes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
def test_resize_matches_numpy(shape, new_shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    _eq(jnp.resize(a, new_shape), np.resize(a, new_shape))


def test_resize_edge_cases():
    _eq(jnp.resize(np.arange(0), 3), np.zeros(3, np.int32))   # JAX: zeros (NumPy too)
    _eq(jnp.resize(np.arange(3), 5), [0, 1, 2, 0, 1])
    with pytest.raises(ValueError, match="non-negative"):
        jnp.resize(np.arange(3), (2, -1))


@settings(max_examples=25, deadline=None)
@given(hnp.array_shapes(min_dims=1, max_dims=4, max_side=4), st.data())
def test_rollaxis_matches_numpy(shape, data):
    n = len(shape)
    axis = data.draw(st.integers(-n, n - 1))
    start = data.draw(st.integers(-n, n))
    a = np.arange(int(np.prod(shape))).reshape(shape)
    _eq(jnp.rollaxis(a, axis, start), np.rollaxis(a, axis, start))


def test_rollaxis_start_error():
    with pytest.raises(ValueError, match="start=4 must satisfy -2<=start<=2"):
        jnp.rollaxis(np.ones((2, 3)), 0, 4)


# --------------------------------------------------------------------------- histograms


def test_histogram2d_matches_numpy():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(60), rng.standard_normal(60) * 2
    w = rng.random(60)
    for kw in [dict(bins=4), dict(bins=(3, 5)), dict(bins=[np.linspace(-2, 2, 5),
                                                           np.linspace(-3, 3, 4)]),
               dict(bins=np.linspace(-3, 3, 7)), dict(bins=3, range=[(-1, 1), None]),
               dict(bins=4, weights=w), dict(bins=4, density=True)]:
        got = jnp.histogram2d(x.astype(np.float32), y.astype(np.float32), **kw)
        want = np.histogram2d(x.astype(np.float32), y.astype(np.float32), **kw)
        for g, v in zip(got, want, strict=True):
            np.testing.assert_allclose(g, v, rtol=1e-5, atol=1e-6)
    # Counts are integers without weights (JAX: int32); points on the last edge count.
    h, ex, ey = jnp.histogram2d(np.array([0., .5, 1, 2]), np.array([1., 1, 3, 0]), bins=2)
    assert h.dtype == np.int32
    _eq(h, [[2, 0], [1, 1]])
    _eq(ex, [0.0, 1.0, 2.0])
    _eq(ey, [0.0, 1.5, 3.0])


def test_histogramdd_matches_numpy():
    rng = np.random.default_rng(4)
    s = rng.standard_normal((80, 3)).astype(np.float32)
    for kw in [dict(bins=(2, 3, 4)), dict(bins=3, density=True),
               dict(bins=3, weights=rng.random(80).astype(np.float32)),
               dict(bins=2, range=[(-1, 1), None, (0, 2)])]:
        got_h, got_e = jnp.histogramdd(s, **kw)
        want_h, want_e = np.histogramdd(s, **kw)
        np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)
        for g, v in zip(got_e, want_e, strict=True):
            np.testing.assert_allclose(g, v, rtol=1e-6)
    with pytest.raises(ValueError, match="should be a bin for each dimension"):
        jnp.histogramdd(s, bins=(2, 3))
    with pytest.raises(ValueError, match="one weight for each sample"):
        jnp.histogramdd(s, weights=np.ones(3))
    with pytest.raises(ValueError, match="range must be a sequence of 3 pairs"):
        jnp.histogramdd(s, range=[(0, 1)])


# --------------------------------------------------------------------------- roots


def _sorted_roots(r):
    r = np.asarray(r)
    return r[np.lexsort((np.round(r.imag, 4), np.round(r.real, 4)))]


@pytest.mark.parametrize("p", [[1., -3, 2], [1, 0, 4], [1., -6, 11, -6],
                               [1., 2, 3, 4, 5, 6, 7], [3., 0, 0, 0, 0, -1],
                               [0., 0, 2, -3, 1], [1., -3, 2, 0, 0], [2.5]])
def test_roots_match_numpy(p):
    got = jnp.roots(np.array(p, np.float32))
    assert got.dtype == np.complex64
    want = np.roots(p)
    assert got.shape == want.shape
    np.testing.assert_allclose(_sorted_roots(got), _sorted_roots(want), atol=2e-5)


def test_roots_double_precision_random_polynomials():
    rng = np.random.default_rng(0)
    minijax.config.update("jax_enable_x64", True)
    try:
        for n in (3, 6, 9):
            r = rng.standard_normal(n) + 1j * rng.standard_normal(n)
            got = jnp.roots(np.poly(r))
            assert got.dtype == np.complex128
            np.testing.assert_allclose(_sorted_roots(got), _sorted_roots(r), atol=1e-10)
    finally:
        minijax.config.update("jax_enable_x64", False)


def test_roots_without_stripping_under_jit():
    # JAX: each leading zero gives a nan root; the rest are the roots.
    f = minijax.jit(lambda p: jnp.roots(p, strip_zeros=False))
    got = np.asarray(f(np.array([0., 0, 1, -3, 2], np.float32)))
    assert got.shape == (4,) and np.isnan(got[2:]).all()
    np.testing.assert_allclose(np.sort(got[:2].real), [1, 2], atol=1e-5)
    assert np.isnan(np.asarray(jnp.roots(np.zeros(3), strip_zeros=False))).all()
    with pytest.raises(ConcretizationTypeError, match="strip_zeros=False"):
        minijax.jit(jnp.roots)(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="rank-1"):
        jnp.roots(np.ones((2, 2)))


# --------------------------------------------------------------------------- fft, host, dtypes


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_hfft_ihfft_match_numpy(norm):
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))).astype(np.complex64)
    np.testing.assert_allclose(jnp.fft.hfft(a, norm=norm), np.fft.hfft(a, norm=norm),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(jnp.fft.hfft(a, n=7, axis=0, norm=norm),
                               np.fft.hfft(a, n=7, axis=0, norm=norm), rtol=1e-4, atol=1e-4)
    r = rng.standard_normal((4, 6)).astype(np.float32)
    got = jnp.fft.ihfft(r, norm=norm)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, np.fft.ihfft(r, norm=norm), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jnp.fft.ihfft(r, n=5, axis=0, norm=norm),
                               np.fft.ihfft(r, n=5, axis=0, norm=norm), rtol=1e-5, atol=1e-6)


def test_host_helpers():
    x = jnp.arange(3.0) / 3
    with jnp.printoptions(precision=2):
        assert jnp.get_printoptions()["precision"] == 2
        assert repr(x) == "Array([0.  , 0.33, 0.67], dtype=float32)"
    assert jnp.array_str(jnp.arange(3.0)) == "[0. 1. 2.]"
    assert jnp.array_repr(jnp.arange(3)) == "Array([0, 1, 2], dtype=int32)"
    f = io.BytesIO()
    jnp.save(f, jnp.array([2, 4, 6], dtype=jnp.bfloat16))
    f.seek(0)
    y = jnp.load(f)
    assert isinstance(y, minijax.Array) and y.dtype == jnp.bfloat16
    _eq(y.astype(np.float32), [2, 4, 6])
    with pytest.raises(NotImplementedError, match="jnp.fromiter"):
        jnp.fromiter(range(3), int)
    with pytest.raises(NotImplementedError, match="jnp.fromfile"):
        jnp.fromfile("x")
    assert jnp.ComplexWarning is np.exceptions.ComplexWarning


def test_sub_byte_dtype_names():
    for name in ("int1", "int2", "int4", "uint1", "uint2", "uint4", "float4_e2m1fn",
                 "float6_e2m3fn", "float6_e3m2fn"):
        t = getattr(jnp, name)
        assert np.dtype(t) == np.dtype(getattr(ml_dtypes, name))
        assert t == getattr(ml_dtypes, name)
    assert jnp.object_ is np.object_
    with pytest.raises(TypeError, match="does not support dtype int4"):
        jnp.zeros(3, jnp.int4)
