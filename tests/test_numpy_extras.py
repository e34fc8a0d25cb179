"""Less common jnp functions (extras.py, extras_index.py, extras_poly.py, functional.py)
against NumPy; gradients by finite differences; vmap against a loop; jit; errors."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minijax
import minijax.numpy as jnp
from minijax.errors import ConcretizationTypeError
from minijax.test_util import check_grads, check_vmap

shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)
edge_floats = st.one_of(
    st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-40, 1.2e-38, 3.4e38]),
    st.floats(width=32, allow_nan=True, allow_infinity=True))
f32_arrays = hnp.arrays(np.float32, shapes, elements=edge_floats)


def _eq(got, want, dtype=True):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if dtype:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- float bits


@settings(max_examples=30)
@given(x=f32_arrays)
def test_frexp_matches_numpy_bitwise(x):
    m, e = jnp.frexp(x)
    mn, en = np.frexp(x)
    _eq(m, mn)
    _eq(e, en)
    np.testing.assert_array_equal(np.signbit(np.asarray(m)), np.signbit(mn))


@settings(max_examples=30)
@given(x=f32_arrays, e=st.integers(-400, 400))
def test_ldexp_matches_numpy(x, e):
    exps = np.full(x.shape, e, np.int32)
    with np.errstate(over="ignore"):
        want = np.ldexp(x, exps)
    got = np.asarray(jnp.ldexp(x, exps))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_ldexp_frexp_roundtrip_jit_vmap_and_dtypes():
    x = np.array([0.3, -7.5, 1e-39, 6e4], np.float32)
    m, e = minijax.jit(jnp.frexp)(x)
    _eq(minijax.jit(jnp.ldexp)(m, e), x)
    check_vmap(jnp.ldexp, (x, np.array([1, -3, 20, 0], np.int32)))
    check_vmap(lambda v: jnp.frexp(v)[1], (x,))
    assert jnp.ldexp(3, 2).dtype == np.float32 and float(jnp.ldexp(3, 2)) == 12.0
    _eq(jnp.frexp(np.float16(6.0))[0], np.float16(0.75))
    _eq(jnp.fabs(np.array([-1, 2], np.int32)), np.fabs(np.array([-1, 2], np.float32)))
    _eq(jnp.fabs(np.array([-0.0, -3.5], np.float32)), np.array([0.0, 3.5], np.float32))


def test_ldexp_frexp_gradients(x64):
    x = np.array([0.3, -1.7, 5.0])
    check_grads(lambda v: jnp.ldexp(v, np.array([2, -1, 3])), (x,), order=2)
    check_grads(lambda v: jnp.frexp(v)[0], (x,), order=1)
    g = minijax.grad(lambda v: jnp.ldexp(v, 3))(1.5)
    assert float(g) == 8.0


def test_float_bit_errors():
    with pytest.raises(TypeError, match="fabs' does not support complex"):
        jnp.fabs(np.array([1j]))
    with pytest.raises(TypeError, match="frexp does not support complex"):
        jnp.frexp(np.array([1j], np.complex64))
    with pytest.raises(ValueError, match="ldexp not supported for input types"):
        jnp.ldexp(np.float32(1), np.float32(2))
    with pytest.raises(TypeError, match="requires ndarray or scalar"):
        jnp.ldexp([1.0], 2)


# --------------------------------------------------------------------------- integer bits


int_pairs = hnp.arrays(np.int32, hnp.array_shapes(min_dims=1, max_dims=2, min_side=0,
                                                  max_side=5),
                       elements=st.integers(-60, 60))


@settings(max_examples=30)
@given(a=int_pairs, data=st.data())
def test_gcd_lcm(a, data):
    b = data.draw(hnp.arrays(np.int32, a.shape[-1:], elements=st.integers(-60, 60)))
    _eq(jnp.gcd(a, b), np.gcd(a, b))
    _eq(jnp.lcm(a, b), np.lcm(a, b))


def test_gcd_lcm_scalars_dtypes_vmap_jit():
    assert int(jnp.gcd(12, 18)) == 6 and int(jnp.lcm(4, 6)) == 12
    _eq(jnp.gcd(np.uint8([12, 0]), np.uint8([8, 0])), np.gcd(np.uint8([12, 0]), np.uint8([8, 0])))
    _eq(jnp.gcd(np.int8(-128), np.int8(6)), np.gcd(np.int8(-128), np.int8(6)))
    a = np.array([[12, 7, 0], [9, -4, 5]], np.int32)
    b = np.array([[18, 21, 3], [6, 10, 0]], np.int32)
    check_vmap(jnp.gcd, (a, b))
    check_vmap(jnp.lcm, (a, b), in_axes=(1, 1))
    _eq(minijax.jit(jnp.gcd)(a, b), np.gcd(a, b))
    with pytest.raises(ValueError, match="Arguments to jax.numpy.gcd must be integers"):
        jnp.gcd(np.float32(1), 2)
    with pytest.raises(ValueError, match="Arguments to jax.numpy.lcm must be integers"):
        jnp.lcm(1.5, 2)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint32])
def test_bitwise_count(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, 7, info.max, info.min, 64, info.max // 3], dtype)
    _eq(jnp.bitwise_count(x), np.bitwise_count(x))


def test_bitwise_count_bool_and_error():
    _eq(jnp.bitwise_count(np.array([True, False])), np.array([1, 0], np.uint8))
    with pytest.raises(TypeError, match="bitwise_count only accepts integer"):
        jnp.bitwise_count(np.float32(1))


# --------------------------------------------------------------------------- index builders


@pytest.mark.parametrize("n,k,m", [(0, 0, None), (3, 0, None), (4, -1, 2), (3, 2, 5),
                                   (2, -5, None)])
def test_tril_triu_indices(n, k, m):
    for fn in ("tril_indices", "triu_indices"):
        got = getattr(jnp, fn)(n, k, m)
        want = getattr(np, fn)(n, k, m)
        assert len(got) == 2
        for g, w in zip(got, want, strict=True):
            _eq(g, w.astype(np.int32))
    a = np.zeros((n, n if m is None else m))
    for fn in ("tril_indices_from", "triu_indices_from"):
        for g, w in zip(getattr(jnp, fn)(a, k), getattr(np, fn)(a, k), strict=True):
            _eq(g, w.astype(np.int32))


def test_diag_and_mask_indices():
    for g, w in zip(jnp.diag_indices(4, 3), np.diag_indices(4, 3), strict=True):
        _eq(g, w.astype(np.int32))
    assert jnp.diag_indices(0)[0].shape == (0,)
    for g, w in zip(jnp.diag_indices_from(np.zeros((3, 3))),
                    np.diag_indices_from(np.zeros((3, 3))), strict=True):
        _eq(g, w.astype(np.int32))
    for g, w in zip(jnp.mask_indices(3, jnp.triu, 1), np.mask_indices(3, np.triu, 1),
                    strict=True):
        _eq(g, w.astype(np.int32))
    got = jnp.mask_indices(3, jnp.tril, size=8)
    assert got[0].shape == (8,)
    with pytest.raises(ValueError, match="n argument to diag_indices must be nonnegative"):
        jnp.diag_indices(-1)
    with pytest.raises(ValueError, match="at least 2-d"):
        jnp.diag_indices_from(np.zeros(3))
    with pytest.raises(ValueError, match="All dimensions of input must be of equal length"):
        jnp.diag_indices_from(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="must be 2-d"):
        jnp.tril_indices_from(np.zeros(3))


def test_ix_mgrid_ogrid_r_c_s():
    a, b = np.array([0, 2]), np.array([1, 3, 4])
    for g, w in zip(jnp.ix_(a, b), np.ix_(a, b), strict=True):
        _eq(g, w.astype(np.int32))
    x = np.arange(20).reshape(4, 5)
    _eq(jnp.asarray(x)[jnp.ix_(a, b)], x[np.ix_(a, b)].astype(np.int32))
    assert jnp.ix_() == ()
    _eq(jnp.mgrid[0:3, 1:5:2], np.mgrid[0:3, 1:5:2].astype(np.int32))
    np.testing.assert_allclose(jnp.mgrid[0:1:5j, 0:2], np.mgrid[0:1:5j, 0:2], rtol=1e-6)
    _eq(jnp.mgrid[2:6], np.mgrid[2:6].astype(np.int32))
    np.testing.assert_allclose(jnp.mgrid[-1:1:0.5], np.mgrid[-1:1:0.5])
    for g, w in zip(jnp.ogrid[0:3, 0:4], np.ogrid[0:3, 0:4], strict=True):
        _eq(g, w.astype(np.int32))
    _eq(jnp.r_[1:4, 0, jnp.array([7, 8])], np.r_[1:4, 0, np.array([7, 8])].astype(np.int32))
    _eq(jnp.c_[np.array([1, 2]), np.array([3, 4])],
        np.c_[np.array([1, 2]), np.array([3, 4])].astype(np.int32))
    for directive in ("0,2,1", "0,3,0", "-1,3,0", "1,2", "0,3,-1"):
        want = np.r_[directive, [1, 2], [3, 4]].astype(np.int32)
        _eq(jnp.r_[directive, np.array([1, 2]), np.array([3, 4])], want)
    assert jnp.s_[1:3, ::2] == np.s_[1:3, ::2] and jnp.index_exp[2] == (2,)
    with pytest.raises(ValueError, match="must be one-dimensional"):
        jnp.ix_(np.zeros((2, 2), np.int32))
    with pytest.raises(NotImplementedError, match="Boolean arguments"):
        jnp.ix_(np.array([True]))
    with pytest.raises(NotImplementedError, match="matrix output"):
        jnp.r_["r", [1, 2]]
    with pytest.raises(ValueError, match="could not understand directive"):
        jnp.r_["a,b", [1]]


# --------------------------------------------------------------------------- structural


@settings(max_examples=30)
@given(x=hnp.arrays(np.int32, shapes, elements=st.integers(-9, 9)), data=st.data())
def test_insert_delete(x, data):
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    n = x.size if axis is None else x.shape[axis]
    idx = data.draw(st.lists(st.integers(-n, n), min_size=0, max_size=3))
    obj = data.draw(st.sampled_from(["list", "scalar", "slice"])) if idx else "slice"
    if obj == "scalar":
        idx = idx[0]
    elif obj == "slice":
        idx = slice(0, n, 2)
    _eq(jnp.insert(x, idx, 7, axis=axis), np.insert(x, idx, 7, axis=axis))
    if obj == "list":
        idx = sorted({i % n for i in idx if -n <= i < n}) if n else []
    elif obj == "scalar":
        if not -n <= idx < n:
            return
    _eq(jnp.delete(x, idx, axis=axis), np.delete(x, idx, axis=axis))


def test_insert_values_and_traced_indices():
    a = np.arange(12).reshape(3, 4)
    for obj, vals, axis in [(1, [7, 8, 9, 10], None), (2, [[7], [8], [9]], 1),
                            ([1, 1, 3], [7, 8, 9], 1), ([0, 3], 5.7, 0), (-1, 1, 1)]:
        _eq(jnp.insert(a, obj, vals, axis=axis),
            np.insert(a, obj, vals, axis=axis).astype(np.int32))
    ins = minijax.jit(lambda x, i: jnp.insert(x, i, -1, axis=1))
    _eq(ins(a, np.array([3, 0])), np.insert(a, [3, 0], -1, axis=1).astype(np.int32))
    dele = minijax.jit(lambda x, i: jnp.delete(x, i, axis=1, assume_unique_indices=True))
    _eq(dele(a, np.array([3, 0])), np.delete(a, [3, 0], axis=1).astype(np.int32))
    mask = np.array([True, False, True])
    _eq(jnp.delete(a, mask, axis=0), np.delete(a, mask, axis=0).astype(np.int32))
    with pytest.raises(ConcretizationTypeError, match="assume_unique_indices"):
        minijax.jit(lambda x, i: jnp.delete(x, i))(a, np.array([1]))
    with pytest.raises(IndexError):
        jnp.delete(a, 12)
    with pytest.raises(ValueError, match="obj must be a slice, a one-dimensional array"):
        jnp.insert(a, np.zeros((1, 1), np.int32), 1)
    with pytest.raises(TypeError, match="index array must be integer"):
        jnp.insert(a, 1.5, 1)


@settings(max_examples=25)
@given(x=hnp.arrays(np.float32, shapes, elements=st.floats(-3, 3, width=32)), data=st.data())
def test_compress_extract(x, data):
    axis = data.draw(st.sampled_from([None] + list(range(x.ndim))))
    n = x.size if axis is None else x.shape[axis]
    cond = np.array(data.draw(st.lists(st.booleans(), min_size=0, max_size=n)), bool)
    _eq(jnp.compress(cond, x, axis=axis), np.compress(cond, x, axis=axis))
    mask = x > 0
    _eq(jnp.extract(mask, x), np.extract(mask, x))
    got = minijax.jit(lambda m, v: jnp.extract(m, v, size=5, fill_value=-1))(mask, x)
    want = np.concatenate([np.extract(mask, x), np.full(5, -1, np.float32)])[:5]
    _eq(got, want)


def test_compress_errors():
    with pytest.raises(ValueError, match="condition must be a 1D array"):
        jnp.compress(np.ones((2, 2), bool), np.ones(4))
    with pytest.raises(ValueError, match="more than the 2"):
        jnp.compress(np.array([1, 0, 1], bool), np.ones(2))
    _eq(jnp.compress(np.array([1, 1, 0], bool), np.ones(2, np.float32)), np.ones(2, np.float32))
    with pytest.raises(NotImplementedError, match="'out' argument"):
        jnp.compress(np.array([True]), np.ones(1), out=np.ones(1))


def test_choose():
    a = np.array([[0, 1, 2], [2, 1, 0]])
    choices = [np.arange(3), np.array([10.0]), np.array([[5], [6]])]
    _eq(jnp.choose(a, choices), np.choose(a, choices).astype(np.float32))
    bad = np.array([0, 3, -1, 5])
    cs = [np.arange(4) * 10, np.arange(4) * 100, np.arange(4) * 1000]
    for mode in ("wrap", "clip"):
        _eq(jnp.choose(bad, cs, mode=mode), np.choose(bad, cs, mode=mode).astype(np.int32))
    _eq(minijax.jit(lambda i: jnp.choose(i, cs, mode="clip"))(bad),
        np.choose(bad, cs, mode="clip").astype(np.int32))
    with pytest.raises(ValueError, match="invalid entry in choice array"):
        jnp.choose(bad, cs)
    with pytest.raises(ConcretizationTypeError, match="mode='wrap' or mode='clip'"):
        minijax.jit(lambda i: jnp.choose(i, cs))(bad)
    with pytest.raises(ValueError, match="mode='bogus' not understood"):
        jnp.choose(bad, cs, mode="bogus")


def test_block():
    a, b = np.ones((2, 2)), np.zeros((2, 1))
    c = np.full((1, 3), 2.0)
    for arrays in ([[a, b], [c]], [a, a], [[1, 2], [3, 4]], [np.ones(2), np.zeros(3)],
                   np.float32(5), [[[np.ones((1, 1, 2))], [np.zeros((1, 1, 2))]]]):
        want = np.block(arrays)
        np.testing.assert_array_equal(jnp.block(arrays), want)
        assert jnp.block(arrays).shape == want.shape
    with pytest.raises(TypeError, match="is a tuple"):
        jnp.block([(a, b)])
    with pytest.raises(ValueError, match=r"List at arrays\[1\] cannot be empty"):
        jnp.block([[a], []])
    with pytest.raises(ValueError, match="List depths are mismatched"):
        jnp.block([[a], b])


def test_diagflat_fill_diagonal():
    v = np.arange(4.0).reshape(2, 2)
    for k in (-2, 0, 1):
        _eq(jnp.diagflat(v, k), np.diagflat(v, k).astype(np.float32))
    for shape, val in [((3, 4), 5.0), ((4, 3), np.array([1.0, 2.0])), ((3, 3, 3), 7.0),
                       ((0, 2), 1.0), ((2, 2), np.arange(5.0))]:
        a = np.zeros(shape, np.float32)
        want = a.copy()
        np.fill_diagonal(want, val)
        _eq(jnp.fill_diagonal(a, val, inplace=False), want)
    with pytest.raises(NotImplementedError, match="must use inplace=False"):
        jnp.fill_diagonal(np.zeros((2, 2)), 1.0)
    with pytest.raises(NotImplementedError, match="wrap=True"):
        jnp.fill_diagonal(np.zeros((2, 2)), 1.0, wrap=True, inplace=False)
    with pytest.raises(ValueError, match="at least 2-d"):
        jnp.fill_diagonal(np.zeros(2), 1.0, inplace=False)
    with pytest.raises(ValueError, match="equal length"):
        jnp.fill_diagonal(np.zeros((2, 2, 3)), 1.0, inplace=False)


def test_matvec_vecmat():
    rng = np.random.default_rng(0)
    m = rng.standard_normal((2, 3, 4)).astype(np.float32)
    v = rng.standard_normal((4,)).astype(np.float32)
    np.testing.assert_allclose(jnp.matvec(m, v), np.einsum("bij,j->bi", m, v), rtol=1e-5)
    w = (rng.standard_normal((3,)) + 1j * rng.standard_normal((3,))).astype(np.complex64)
    np.testing.assert_allclose(jnp.vecmat(w, m), np.einsum("i,bij->bj", w.conj(), m),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="matvec: expected x1.ndim >= 2"):
        jnp.matvec(v, v)
    with pytest.raises(ValueError, match="vecmat: expected x1.ndim >= 1 and x2.ndim >= 2"):
        jnp.vecmat(v, v)


# --------------------------------------------------------------------------- functional


def test_apply_along_over_axes():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    for axis in (0, 1, -1):
        _eq(jnp.apply_along_axis(jnp.cumsum, axis, x),
            np.apply_along_axis(np.cumsum, axis, x))
        _eq(jnp.apply_along_axis(lambda r, s: jnp.sum(r) * s, axis, x, 2.0),
            np.apply_along_axis(lambda r, s: np.sum(r) * s, axis, x, 2.0))
    _eq(jnp.apply_over_axes(jnp.sum, x, [0, 2]), np.apply_over_axes(np.sum, x, [0, 2]))
    _eq(jnp.apply_over_axes(jnp.max, x, 1), np.apply_over_axes(np.max, x, 1))
    with pytest.raises(ValueError, match="not returning an array of the correct shape"):
        jnp.apply_over_axes(lambda a, axis: jnp.sum(a), x, [1])


def test_vectorize():
    def f(a, b):
        return a * 2 + b if a > 0 else b

    g = jnp.vectorize(lambda a, b: jnp.where(a > 0, a * 2 + b, b))
    a = np.array([[-1.0, 2.0, 3.0]], np.float32)
    b = np.array([[1.0], [10.0]], np.float32)
    _eq(g(a, b), np.vectorize(f)(a, b).astype(np.float32))
    mv = jnp.vectorize(jnp.dot, signature="(n,m),(m)->(n)")
    m = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    v = np.ones((5, 1, 4), np.float32)
    np.testing.assert_allclose(mv(m, v), np.einsum("bij,cdj->cbi", m, v).reshape(5, 2, 3))
    two = jnp.vectorize(lambda x: (jnp.sum(x), jnp.max(x)), signature="(n)->(),()")
    s, mx = two(m)
    _eq(s, m.sum(-1))
    _eq(mx, m.max(-1))
    scale = jnp.vectorize(lambda x, power: x ** power, excluded={1})
    _eq(scale(np.array([1.0, 2.0], np.float32), 3), np.array([1.0, 8.0], np.float32))
    kw = jnp.vectorize(lambda x, *, c: x + c, excluded={"c"})
    _eq(kw(np.zeros(2, np.float32), c=1.5), np.full(2, 1.5, np.float32))
    _eq(jnp.vectorize(lambda x: x + 1)(np.zeros((0, 2), np.float32)),
        np.zeros((0, 2), np.float32))
    _eq(minijax.jit(g)(a, b), np.vectorize(f)(a, b).astype(np.float32))
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'm'"):
        mv(m, np.ones(3, np.float32))
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        mv(np.ones(3, np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        jnp.vectorize(jnp.dot, signature="(n->m")
    with pytest.raises(ValueError, match="does not match core dimensions"):
        jnp.vectorize(lambda x: x, signature="(n)->()")(np.ones(3))
    with pytest.raises(TypeError, match="can only exclude integer or string"):
        jnp.vectorize(jnp.dot, excluded={1.5})
    with pytest.raises(ValueError, match="contains negative numbers"):
        jnp.vectorize(jnp.dot, excluded={-1})


def test_fromfunction_frombuffer_fromstring():
    want = np.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=np.int32)
    _eq(jnp.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=np.int32), want)
    got = jnp.fromfunction(lambda i, j, c: i - j + c, (2, 2), c=0.5)
    _eq(got, np.fromfunction(lambda i, j: i - j + 0.5, (2, 2)).astype(np.float32))
    assert jnp.fromfunction(lambda i: i, (0,)).shape == (0,)
    buf = np.arange(4, dtype=np.int16).tobytes()
    _eq(jnp.frombuffer(buf, dtype=np.int16, offset=2), np.frombuffer(buf, np.int16, offset=2))
    _eq(jnp.fromstring("1 2 3", dtype=np.int32, sep=" "), np.array([1, 2, 3], np.int32))


def test_predicates_astype_aliases():
    for v, want in [(1.0, True), (np.float32(2), True), ("s", True), (np.array(1.0), True),
                    (jnp.array(1.0), True), (jnp.ones(2), False), ([1], False), (None, False)]:
        assert jnp.isscalar(v) is want, v
    assert minijax.jit(lambda x: jnp.int32(jnp.isscalar(x)))(1.0) == 1
    assert jnp.iscomplexobj(jnp.ones(2, np.complex64)) and not jnp.iscomplexobj(1.0)
    assert jnp.iscomplexobj(1j) and jnp.isrealobj(np.ones(2)) and not jnp.iscomplexobj(None)
    assert jnp.iterable(jnp.ones(2)) and not jnp.iterable(3)
    _eq(jnp.astype(np.array([1.7, -2.2], np.float32), np.int32), np.array([1, -2], np.int32))
    assert jnp.astype(jnp.ones(2), jnp.bool).dtype == np.bool_
    assert jnp.bool is jnp.bool_
    with pytest.raises(TypeError, match="astype requires ndarray"):
        jnp.astype([1], np.int32)


def test_remaining_hints():
    with pytest.raises(NotImplementedError, match="jnp.fromiter\\(\\) is not implemented"):
        jnp.fromiter(range(3), int)  # a function that raises, as JAX's
    with pytest.raises(NotImplementedError, match="immutable"):
        jnp.putmask  # noqa: B018
    with pytest.raises(NotImplementedError, match="immutable"):
        jnp.copyto  # noqa: B018
    assert not hasattr(jnp, "intp")


# --------------------------------------------------------------------------- polynomials


coeffs = hnp.arrays(np.float32, st.integers(1, 5), elements=st.floats(-4, 4, width=32))


@settings(max_examples=30)
@given(p=coeffs, q=coeffs)
def test_poly_arithmetic(p, q):
    np.testing.assert_allclose(jnp.polyadd(p, q), np.polyadd(p, q), rtol=1e-6)
    np.testing.assert_allclose(jnp.polysub(p, q), np.polysub(p, q), rtol=1e-6)
    # NumPy's polymul trims leading zeros; JAX's does so only when asked.
    np.testing.assert_allclose(jnp.polymul(p, q), np.convolve(p, q), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jnp.polymul(p, q, trim_leading_zeros=True), np.polymul(p, q),
                               rtol=1e-5, atol=1e-5)
    # XLA's CPU kernels flush float32 subnormals to zero (JAX gives polyint([1.4e-44, 1]) =
    # [0, 1, 0] where NumPy keeps 7e-45), hence the absolute tolerance at that scale.
    for m in (0, 1, 2):
        np.testing.assert_allclose(jnp.polyder(p, m), np.polyder(p, m), rtol=1e-6, atol=1e-37)
        np.testing.assert_allclose(jnp.polyint(p, m), np.polyint(p, m), rtol=1e-6, atol=1e-37)
    if abs(q[0]) > 0.5:
        quot, rem = jnp.polydiv(p, q)
        wq, wr = np.polydiv(p.astype(np.float64), q.astype(np.float64))
        np.testing.assert_allclose(quot, wq, rtol=1e-4, atol=1e-4)
        # JAX keeps the remainder's leading (zero) coefficients unless asked to trim.
        np.testing.assert_allclose(np.asarray(rem)[len(rem) - len(wr):], wr, rtol=1e-4,
                                   atol=1e-3)


def test_poly_misc():
    # JAX's polyder is inexact (float32 for integer input), unlike NumPy's
    _eq(jnp.polyder(np.array([1, 2, 3, 4]), 2), np.polyder(np.array([1, 2, 3, 4]), 2)
        .astype(np.float32))
    np.testing.assert_allclose(jnp.polyint(np.array([3.0, 2, 1]), 2, [1.0, 2]),
                               np.polyint(np.array([3.0, 2, 1]), 2, [1.0, 2]), rtol=1e-6)
    np.testing.assert_allclose(jnp.poly(np.array([1.0, -2, 3])), np.poly([1.0, -2, 3]))
    roots = np.array([1 + 2j, 1 - 2j, 3])
    got = jnp.poly(roots)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.poly(roots), rtol=1e-6)
    _eq(jnp.polymul(np.array([0, 0, 1.0]), np.array([2.0]), trim_leading_zeros=True),
        np.array([2.0], np.float32))
    q, r = jnp.polydiv(np.array([1.0, 3, 2]), np.array([1.0, 1]), trim_leading_zeros=True)
    _eq(r, np.array([0.0], np.float32))
    with pytest.raises(ValueError, match="Order of derivative must be positive"):
        jnp.polyder(np.ones(3), -1)
    with pytest.raises(ValueError, match="Order of integral must be positive"):
        jnp.polyint(np.ones(3), -1)
    with pytest.raises(ValueError, match="k must be a scalar or a rank-1 array"):
        jnp.polyint(np.ones(3), 2, k=[1.0, 2, 3])
    with pytest.raises(ValueError, match="input must be 1d or non-empty square 2d"):
        jnp.poly(np.ones((2, 3)))
    # a square matrix: its characteristic polynomial, complex as in JAX 0.10.2
    np.testing.assert_allclose(np.asarray(jnp.poly(np.array([[1., 2], [3, 4]]))),
                               [1., -5., -2.], rtol=1e-5, atol=1e-5)
    assert jnp.poly(np.array([[0., -1], [1, 0]])).dtype == np.complex64
    with pytest.raises(ConcretizationTypeError, match="trim_leading_zeros"):
        minijax.jit(lambda a: jnp.polymul(a, a, trim_leading_zeros=True))(np.ones(2))


def test_polyfit(x64):
    rng = np.random.default_rng(1)
    x = np.linspace(-2, 3, 12)
    y = 1.5 * x ** 3 - x + 0.5 + 0.01 * rng.standard_normal(12)
    y2 = np.stack([y, 2 * y + 1], axis=1)
    w = rng.uniform(0.5, 2, 12)
    for deg in (0, 1, 3):
        np.testing.assert_allclose(jnp.polyfit(x, y, deg), np.polyfit(x, y, deg), rtol=1e-9,
                                   atol=1e-10)
        np.testing.assert_allclose(jnp.polyfit(x, y2, deg, w=w), np.polyfit(x, y2, deg, w=w),
                                   rtol=1e-9, atol=1e-10)
    c, res, rank, sv, rcond = jnp.polyfit(x, y, 2, full=True)
    wc, wres, wrank, wsv, wrcond = np.polyfit(x, y, 2, full=True)
    np.testing.assert_allclose(res, wres, rtol=1e-8)
    assert int(rank) == wrank
    np.testing.assert_allclose(sv, wsv, rtol=1e-10)
    for cov in (True, "unscaled"):
        c, v = jnp.polyfit(x, y, 2, cov=cov)
        wc, wv = np.polyfit(x, y, 2, cov=cov)
        np.testing.assert_allclose(v, wv, rtol=1e-7, atol=1e-14)
    fitted = minijax.jit(lambda a, b: jnp.polyval(jnp.polyfit(a, b, 2), a))(x, y)
    np.testing.assert_allclose(fitted, np.polyval(np.polyfit(x, y, 2), x), rtol=1e-9)
    check_grads(lambda b: jnp.polyval(jnp.polyfit(x, b, 2), 0.7), (y,), order=1)


def test_polyfit_errors():
    with pytest.raises(ValueError, match="expected deg >= 0"):
        jnp.polyfit(np.ones(3), np.ones(3), -1)
    with pytest.raises(TypeError, match="expected 1D vector for x"):
        jnp.polyfit(np.ones((3, 1)), np.ones(3), 1)
    with pytest.raises(TypeError, match="expected non-empty vector for x"):
        jnp.polyfit(np.ones(0), np.ones(0), 1)
    with pytest.raises(TypeError, match="expected 1D or 2D array for y"):
        jnp.polyfit(np.ones(3), np.ones((3, 1, 1)), 1)
    with pytest.raises(TypeError, match="expected x and y to have same length"):
        jnp.polyfit(np.ones(3), np.ones(4), 1)
    with pytest.raises(ValueError, match="number of data points must exceed order"):
        jnp.polyfit(np.arange(3.0), np.ones(3), 2, cov=True)


# --------------------------------------------------------------------------- gradient


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(f=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=2,
                                                 max_side=5),
                    elements=st.floats(-10, 10)), data=st.data())
def test_gradient_matches_numpy(x64, f, data):
    axis = data.draw(st.sampled_from([None, 0, -1]))
    axes = range(f.ndim) if axis is None else [axis]
    kind = data.draw(st.sampled_from(["none", "scalar", "coords"]))
    if kind == "none":
        spacing = ()
    elif kind == "scalar":
        spacing = (0.5,)
    else:
        spacing = tuple(np.cumsum(data.draw(hnp.arrays(np.float64, f.shape[a],
                                                       elements=st.floats(0.1, 2))))
                        for a in axes)
    got = jnp.gradient(f, *spacing, axis=axis)
    want = np.gradient(f, *spacing, axis=axis)
    if isinstance(want, tuple):
        assert isinstance(got, list) and len(got) == len(want)
    else:
        got, want = [got], [want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


def test_gradient_grads_dtype_errors(x64):
    f = np.array([[1.0, 2.5, 4.0], [0.5, -1.0, 3.0]])
    check_grads(lambda a: jnp.gradient(a, axis=1), (f,), order=1)
    xs = np.array([0.0, 0.4, 1.5])
    check_grads(lambda a: jnp.gradient(a, xs, axis=1), (f,), order=1)
    # JAX 0.10.2 with x64: int32 input gives float32 (int64 would give float64)
    assert jnp.gradient(np.array([1, 4, 9], np.int32)).dtype == np.float32
    assert jnp.gradient(np.array([1, 4, 9], np.int64)).dtype == np.float64
    check_vmap(lambda a: jnp.gradient(a), (f,))
    with pytest.raises(ValueError, match="Shape of array too small"):
        jnp.gradient(np.ones((1, 3)))
    with pytest.raises(NotImplementedError, match="edge_order"):
        jnp.gradient(np.ones(3), edge_order=2)
    with pytest.raises(TypeError, match="invalid number of arguments"):
        jnp.gradient(np.ones((3, 3)), 1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match="distances must match the length"):
        jnp.gradient(np.ones(3), np.arange(4.0))


# --------------------------------------------------------------------------- i0, windows


def test_i0(x64):
    x = np.concatenate([np.linspace(-30, 30, 61), [0.0, 1e-8, 19.99, 20.01, 100.0, 700.0]])
    np.testing.assert_allclose(jnp.i0(x), np.i0(x), rtol=1e-12)
    x32 = x.astype(np.float32)[:-2]  # i0(100) overflows float32
    np.testing.assert_allclose(jnp.i0(x32), np.i0(x32.astype(np.float64)), rtol=2e-6)
    check_grads(jnp.i0, (np.array([-3.0, 0.0, 0.5, 12.0, 25.0]),), order=2)
    np.testing.assert_allclose(minijax.grad(jnp.i0)(0.0), 0.0)
    check_vmap(jnp.i0, (np.array([[0.5, 25.0], [-3.0, 1.0]]),))
    np.testing.assert_allclose(minijax.jit(jnp.i0)(x), np.i0(x), rtol=1e-12)
    assert jnp.i0(np.int32(1)).dtype == np.float32  # JAX 0.10.2 with x64
    assert jnp.i0(np.int64(1)).dtype == np.float64
    with pytest.raises(ValueError, match="Unsupported input type to jax.numpy.i0"):
        jnp.i0(np.array([1j]))


@pytest.mark.parametrize("M", [0, 1, 2, 5, 8, 17])
def test_windows(M):
    for name in ("bartlett", "blackman", "hamming", "hanning"):
        got = getattr(jnp, name)(M)
        assert got.dtype == np.float32 and got.shape == (M,)
        np.testing.assert_allclose(got, getattr(np, name)(M), rtol=1e-5, atol=1e-6)
    for beta in (0.0, 3.0, 14.0):
        np.testing.assert_allclose(jnp.kaiser(M, beta), np.kaiser(M, beta), rtol=1e-5,
                                   atol=1e-6)


def test_kaiser_grad_and_errors(x64):
    check_grads(lambda b: jnp.kaiser(7, b), (np.array(4.0),), order=2)
    np.testing.assert_allclose(minijax.jit(jnp.kaiser, static_argnums=0)(9, 5.0),
                               np.kaiser(9, 5.0), rtol=1e-12)
    with pytest.raises(TypeError):
        minijax.jit(jnp.hamming)(5)
