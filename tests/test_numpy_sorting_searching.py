"""Sorting, searching, sets, counting (sorting_searching.py) and differences/signals/
covariance (signal_stats.py) against NumPy; jit with size=/length=; errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minijax
import minijax.numpy as jnp
from minijax.errors import ConcretizationTypeError
from minijax.test_util import check_grads

floats = st.one_of(st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0]),
                   st.floats(-5, 5, width=32))
float_arrays = hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                                       max_side=4), elements=floats)
int_arrays = hnp.arrays(np.int32, hnp.array_shapes(min_dims=1, max_dims=2, min_side=0,
                                                   max_side=6),
                        elements=st.integers(-3, 3))


def _eq(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- sorting


@settings(max_examples=40, deadline=None)
@given(x=st.one_of(float_arrays, int_arrays), data=st.data())
def test_sort_argsort(x, data):
    axis = data.draw(st.sampled_from([None, 0, -1]))
    _eq(jnp.sort(x, axis=axis), np.sort(x, axis=axis))
    _eq(jnp.argsort(x, axis=axis), np.argsort(x, axis=axis, kind="stable"))
    ref_axis = -1 if axis is None else axis
    flat = x.ravel() if axis is None else x
    # Descending: reversed ascending order (NaNs first), ties in ascending index order.
    _eq(jnp.sort(x, axis=axis, descending=True), np.flip(np.sort(flat, axis=ref_axis),
                                                         axis=ref_axis))
    got = np.asarray(jnp.argsort(x, axis=axis, descending=True))
    sorted_desc = np.take_along_axis(flat, got, axis=ref_axis)
    _eq(sorted_desc, np.flip(np.sort(flat, axis=ref_axis), axis=ref_axis))
    if x.dtype.kind == "i" and flat.size:
        keys = -flat.astype(np.int64)
        _eq(got, np.argsort(keys, axis=ref_axis, kind="stable"))


def test_sort_negative_zero_and_jit():
    x = np.array([0.0, -0.0, np.nan, -1.0, np.inf], np.float32)
    # -0.0 and 0.0 compare equal (stable order kept), NaNs last, as in JAX.
    out, perm = minijax.jit(lambda v: (jnp.sort(v), jnp.argsort(v)))(x)
    np.testing.assert_array_equal(np.signbit(np.asarray(out)[:3]), [True, False, True])
    np.testing.assert_array_equal(out, [-1.0, 0.0, -0.0, np.inf, np.nan])
    _eq(perm, [3, 0, 1, 4, 2])



@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_methods_are_the_functions(descending):
    """x.sort() / x.argsort() are jnp.sort / jnp.argsort, eagerly and on tracers (the
    methods were a copy that ordered -0.0 before 0.0). JAX 0.10.2's values hard-coded."""
    x = np.array([0.0, -0.0, 1.0, -0.0, 0.0], np.float32)
    want_perm = [2, 0, 1, 3, 4] if descending else [0, 1, 3, 4, 2]
    want_signbit = ([False, False, True, True, False] if descending
                    else [False, True, True, False, False])
    for fn in (lambda f: f, minijax.jit):
        out, perm = fn(lambda v: (v.sort(descending=descending),
                                  v.argsort(descending=descending)))(jnp.asarray(x))
        _eq(perm, want_perm)
        np.testing.assert_array_equal(np.signbit(np.asarray(out)), want_signbit)
        _eq(perm, jnp.argsort(x, descending=descending))
        np.testing.assert_array_equal(np.signbit(np.asarray(out)),
                                      np.signbit(np.asarray(jnp.sort(x, descending=descending))))

@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 8), k=st.integers(1, 3), seed=st.integers(0, 100))
def test_lexsort_partition(n, k, seed):
    rng = np.random.default_rng(seed)
    keys = [rng.integers(0, 3, n).astype(np.int32) for _ in range(k)]
    _eq(jnp.lexsort(keys), np.lexsort(keys))
    x = rng.standard_normal((2, n)).astype(np.float32)
    kth = n // 2
    part = np.asarray(jnp.partition(x, kth))
    np.testing.assert_array_equal(part[:, kth], np.partition(x, kth)[:, kth])
    idx = np.asarray(jnp.argpartition(x, kth))
    np.testing.assert_array_equal(np.take_along_axis(x, idx, -1)[:, kth],
                                  np.partition(x, kth)[:, kth])


@settings(max_examples=40, deadline=None)
@given(a=hnp.arrays(np.float32, st.integers(0, 8), elements=floats),
       v=hnp.arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=2, max_side=4),
                    elements=floats),
       side=st.sampled_from(["left", "right"]),
       method=st.sampled_from(["scan", "compare_all"]))
def test_searchsorted(a, v, side, method):
    a = np.sort(a)
    want = np.searchsorted(a, v, side=side)
    _eq(jnp.searchsorted(a, v, side=side, method=method), want.astype(np.int32))


def test_searchsorted_jit():
    a = np.array([-np.inf, -1, 0, 0, 2, 2, 2, 5, np.nan], np.float32)
    v = np.array([[np.nan, -np.inf, 0, 2], [1, 6, -0.0, 7]], np.float32)

    def all_combos(p, q):
        return [jnp.searchsorted(p, q, side=s, method=m)
                for s in ("left", "right") for m in ("scan", "compare_all")]
    got = minijax.jit(all_combos)(a, v)
    want = [np.searchsorted(a, v, side=s) for s in ("left", "right") for _ in range(2)]
    for g, w in zip(got, want, strict=True):
        _eq(g, w.astype(np.int32))


def test_searchsorted_sorter_and_digitize():
    a = np.array([3, 1, 2, 5], np.float32)
    sorter = np.argsort(a).astype(np.int32)
    v = np.array([0, 2, 2.5, 6], np.float32)
    _eq(jnp.searchsorted(a, v, sorter=sorter), np.searchsorted(a, v, sorter=sorter))
    x = np.linspace(-1, 8, 19).astype(np.float32)
    for bins in (np.array([0, 2, 5, 7.0], np.float32), np.array([7, 5, 2, 0.0], np.float32)):
        for right in (False, True):
            _eq(jnp.digitize(x, bins, right), np.digitize(x, bins, right))
    bins = np.array([7, 5, 2, 0.0], np.float32)
    both = minijax.jit(lambda p, q: (jnp.digitize(p, q), jnp.digitize(p, q, True)))(x, bins)
    _eq(both[0], np.digitize(x, bins))
    _eq(both[1], np.digitize(x, bins, True))


# --------------------------------------------------------------------------- unique and sets


@settings(max_examples=30, deadline=None)
@given(x=st.one_of(int_arrays, float_arrays), flags=st.tuples(st.booleans(), st.booleans(),
                                                               st.booleans()))
def test_unique_eager(x, flags):
    ri, rv, rc = flags
    got = jnp.unique(x, return_index=ri, return_inverse=rv, return_counts=rc)
    want = np.unique(x, return_index=ri, return_inverse=rv, return_counts=rc)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want, strict=True):
        _eq(g, w)


def test_unique_axis_and_array_api():
    x = np.array([[1, 2], [3, 4], [1, 2]], np.int32)
    _eq(jnp.unique(x, axis=0), np.unique(x, axis=0))
    vals, counts = jnp.unique_counts(x)
    _eq(vals, [1, 2, 3, 4])
    _eq(counts, [2, 2, 1, 1])
    vals, inv = jnp.unique_inverse(x)
    _eq(np.asarray(vals)[np.asarray(inv)], x)
    assert len(jnp.unique_all(x)) == 4
    _eq(jnp.unique_values(x), [1, 2, 3, 4])


def _traced(fn, *args):
    """Run fn's traced code path without compiling: trace to a jaxpr, evaluate it eagerly."""
    closed = minijax.make_jaxpr(fn)(*args)
    return closed(*args)


@settings(max_examples=25, deadline=None)
@given(x=st.one_of(int_arrays, float_arrays), size=st.integers(1, 8))
def test_unique_traced_with_size(x, size):
    want_vals, want_idx, want_inv, want_cnt = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True)
    k = min(size, len(want_vals))
    vals, idx, inv, cnt = _traced(lambda a: jnp.unique(
        a, return_index=True, return_inverse=True, return_counts=True, size=size,
        fill_value=7), x)
    np.testing.assert_array_equal(vals, jnp.unique(x, size=size, fill_value=7))
    np.testing.assert_array_equal(np.asarray(vals)[:k], want_vals[:k])
    assert (np.asarray(vals)[k:] == 7).all()
    np.testing.assert_array_equal(np.asarray(idx)[:k], want_idx[:k])
    np.testing.assert_array_equal(np.asarray(cnt)[:k], want_cnt[:k])
    assert (np.asarray(cnt)[k:] == 0).all()
    if size >= len(want_vals):
        np.testing.assert_array_equal(np.asarray(inv).reshape(-1), want_inv.reshape(-1))


def test_unique_jit_with_size():
    x = np.array([[2.0, np.nan, 1.0], [2.0, np.nan, -3.0]], np.float32)
    vals, inv, cnt = minijax.jit(lambda a: jnp.unique(
        a, return_inverse=True, return_counts=True, size=5))(x)
    want_vals, want_inv, want_cnt = np.unique(x, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(vals, np.append(want_vals, -3.0))
    np.testing.assert_array_equal(np.asarray(inv).reshape(-1), want_inv.reshape(-1))
    np.testing.assert_array_equal(cnt, np.append(want_cnt, 0))


def test_value_dependent_sizes_under_jit_raise():
    x = np.array([1, 2, 2], np.int32)
    for name, call in [("unique", lambda a: jnp.unique(a)),
                       ("intersect1d", lambda a: jnp.intersect1d(a, a)),
                       ("setdiff1d", lambda a: jnp.setdiff1d(a, a))]:
        with pytest.raises(ConcretizationTypeError,
                           match=rf"(?s)jnp.{name} \(called at "
                                 rf"test_numpy_sorting_searching.py:\d+\).*size=N"):
            minijax.jit(call)(x)
    with pytest.raises(ConcretizationTypeError, match=r"(?s)jnp.bincount \(called at .*length=N"):
        minijax.jit(jnp.bincount)(x)


_SET_OPS = ("union1d", "intersect1d", "setdiff1d", "setxor1d")


@pytest.mark.parametrize("size", [3])
def test_set_operations_jit(size):
    a = np.array([3, 1, 3, 0, 5, 1], np.int32)
    b = np.array([1, 4, 4, 6], np.int32)

    def all_ops(p, q):
        return [getattr(jnp, n)(p, q, size=size, fill_value=-1) for n in _SET_OPS] + [
            jnp.isin(p, q)]
    got = minijax.jit(all_ops)(a, b)
    for g, name in zip(got, _SET_OPS, strict=False):
        want = getattr(np, name)(a, b)
        k = min(size, len(want))
        np.testing.assert_array_equal(np.asarray(g)[:k], want[:k])
        assert (np.asarray(g)[k:] == -1).all()
    _eq(got[-1], np.isin(a, b))


@settings(max_examples=30, deadline=None)
@given(a=hnp.arrays(np.int32, st.integers(0, 7), elements=st.integers(0, 5)),
       b=hnp.arrays(np.int32, st.integers(0, 7), elements=st.integers(0, 5)))
def test_set_operations(a, b):
    for name in _SET_OPS:
        _eq(getattr(jnp, name)(a, b), getattr(np, name)(a, b))
    _eq(jnp.isin(a, b), np.isin(a, b))
    _eq(jnp.isin(a, b, invert=True), np.isin(a, b, invert=True))
    vals, ia, ib = jnp.intersect1d(a, b, return_indices=True)
    wv, wa, wb = np.intersect1d(a, b, return_indices=True)
    _eq(vals, wv)
    _eq(ia, wa)
    _eq(ib, wb)


# --------------------------------------------------------------------------- counting


@settings(max_examples=30, deadline=None)
@given(x=hnp.arrays(np.int32, st.integers(0, 8), elements=st.integers(0, 6)),
       minlength=st.integers(0, 9), weighted=st.booleans())
def test_bincount(x, minlength, weighted):
    w = np.arange(len(x), dtype=np.float32) if weighted else None
    _eq(jnp.bincount(x, w, minlength=minlength), np.bincount(x, w, minlength=minlength))


def test_bincount_jit_length():
    x = np.array([0, 3, 1, 3, 9], np.int32)
    w = np.arange(5, dtype=np.float32)
    got = minijax.jit(lambda a, b: (jnp.bincount(a, length=5), jnp.bincount(a, b, length=5)))(
        x, w)
    _eq(got[0], np.bincount(x, minlength=10)[:5].astype(np.int32))
    np.testing.assert_allclose(got[1], np.bincount(x, w, minlength=10)[:5])


def test_bincount_negative_clips_and_errors():
    _eq(jnp.bincount(np.array([-1, 0, 2], np.int32), length=3), [2, 0, 1])
    with pytest.raises(TypeError, match="bincount: x must be an integer array"):
        jnp.bincount(np.array([1.0], np.float32))


@pytest.mark.parametrize("kw", [{}, {"bins": 5, "range": (-1, 1)},
                                {"bins": np.array([-2, 0, 0.5, 3.0])}, {"density": True},
                                {"weights": np.arange(40.0)}, {"bins": 3, "density": True,
                                                               "weights": np.arange(40.0)}])
def test_histogram(kw):
    data = np.random.default_rng(0).standard_normal(40)
    got, edges = jnp.histogram(data, **kw)
    want, want_edges = np.histogram(data, **kw)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(edges, want_edges, rtol=1e-5)
    if "bins" in kw and "density" not in kw:
        jit_counts, _ = minijax.jit(lambda d: jnp.histogram(d, **kw))(data)
        np.testing.assert_allclose(jit_counts, want, rtol=1e-5)


def test_histogram_constant_data_and_bin_edges():
    got, edges = jnp.histogram(np.ones(4, np.float32), bins=2)
    want, want_edges = np.histogram(np.ones(4, np.float32), bins=2)
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(edges, want_edges)
    np.testing.assert_allclose(jnp.histogram_bin_edges(np.arange(5.0), 4),
                               np.histogram_bin_edges(np.arange(5.0), 4))


# --------------------------------------------------------------------------- signal_stats


@settings(max_examples=30, deadline=None)
@given(x=float_arrays.filter(lambda a: a.ndim >= 1), n=st.integers(0, 2), data=st.data())
def test_diff(x, n, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    with np.errstate(invalid="ignore"):
        want = np.diff(x, n, axis=axis)
    np.testing.assert_array_equal(jnp.diff(x, n, axis=axis), want)


def test_diff_prepend_append_bool_ediff1d():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3) ** 2
    _eq(jnp.diff(x, prepend=1.0, append=x[:, :1]), np.diff(x, prepend=1.0, append=x[:, :1]))
    b = np.array([True, False, False, True])
    _eq(jnp.diff(b), np.diff(b))
    _eq(jnp.ediff1d(x, to_end=np.array([1.0, 2.0], np.float32), to_begin=0.0),
        np.ediff1d(x, to_end=[1.0, 2.0], to_begin=0.0).astype(np.float32))
    with pytest.raises(ValueError, match="order must be non-negative"):
        jnp.diff(x, -1)


@pytest.mark.parametrize("n,m", [(5, 3), (3, 5), (4, 4), (1, 3), (6, 1), (2, 5)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_correlate(n, m, mode):
    rng = np.random.default_rng(n * 10 + m)
    a, v = rng.standard_normal(n).astype(np.float32), rng.standard_normal(m).astype(np.float32)
    np.testing.assert_allclose(jnp.convolve(a, v, mode), np.convolve(a, v, mode), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(jnp.correlate(a, v, mode), np.correlate(a, v, mode), rtol=1e-5,
                               atol=1e-5)
    ac = (a + 1j * a[::-1]).astype(np.complex64)
    vc = (v - 2j * v).astype(np.complex64)
    np.testing.assert_allclose(jnp.correlate(ac, vc, mode), np.correlate(ac, vc, mode),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(jnp.convolve(ac, vc, mode), np.convolve(ac, vc, mode),
                               rtol=1e-4, atol=1e-4)


def test_convolve_int_grad_and_errors():
    _eq(jnp.convolve(np.arange(4, dtype=np.int32), np.arange(3, dtype=np.int32)),
        np.convolve(np.arange(4), np.arange(3)).astype(np.int32))
    minijax.config.update("jax_enable_x64", True)
    try:
        rng = np.random.default_rng(0)
        check_grads(lambda a, v: jnp.convolve(a, v, "same"),
                    [rng.standard_normal(5), rng.standard_normal(3)], order=1)
    finally:
        minijax.config.update("jax_enable_x64", False)
    with pytest.raises(ValueError, match="mode must be one of"):
        jnp.convolve(np.ones(3), np.ones(2), "bad")
    with pytest.raises(ValueError, match=r"convolve\(\) only supports 1-dimensional"):
        jnp.convolve(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="cannot be empty"):
        jnp.correlate(np.ones(0), np.ones(2))


def test_interp_polyval_trapezoid_vander():
    xp = np.array([0, 1, 2.5, 4.0], np.float32)
    fp = np.array([1.0, 3, 2, 0], np.float32)
    x = np.linspace(-1, 5, 13).astype(np.float32)
    np.testing.assert_allclose(jnp.interp(x, xp, fp), np.interp(x, xp, fp), rtol=1e-6)
    np.testing.assert_allclose(jnp.interp(x, xp, fp, -1, 9), np.interp(x, xp, fp, -1, 9),
                               rtol=1e-6)
    np.testing.assert_allclose(jnp.interp(x, xp, fp, period=3), np.interp(x, xp, fp,
                                                                          period=3), rtol=1e-5)
    np.testing.assert_allclose(minijax.jit(jnp.interp)(x, xp, fp), np.interp(x, xp, fp),
                               rtol=1e-6)
    p = np.array([1, -2, 3.0], np.float32)
    np.testing.assert_allclose(jnp.polyval(p, x), np.polyval(p, x), rtol=1e-5)
    y = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_allclose(jnp.trapezoid(y), np.trapezoid(y), rtol=1e-5)
    xs = np.array([0, 1, 3, 4, 7.0], np.float32)
    np.testing.assert_allclose(jnp.trapezoid(y, x=xs), np.trapezoid(y, x=xs), rtol=1e-5)
    np.testing.assert_allclose(jnp.trapezoid(y, dx=0.5, axis=0), np.trapezoid(y, dx=0.5,
                                                                              axis=0),
                               rtol=1e-5)
    _eq(jnp.vander(np.arange(4, dtype=np.int32)), np.vander(np.arange(4)).astype(np.int32))
    np.testing.assert_allclose(jnp.vander(np.arange(1.0, 4.0, dtype=np.float32), 5, True),
                               np.vander(np.arange(1.0, 4.0), 5, True))


def test_cov_corrcoef_unwrap():
    a = np.random.default_rng(2).standard_normal((3, 5))
    np.testing.assert_allclose(jnp.cov(a), np.cov(a), rtol=1e-5)
    np.testing.assert_allclose(jnp.cov(a, rowvar=False, bias=True),
                               np.cov(a, rowvar=False, bias=True), rtol=1e-5)
    fw, aw = np.array([1, 2, 1, 3, 1]), np.array([0.5, 1, 2, 1, 1.0])
    np.testing.assert_allclose(jnp.cov(a, fweights=fw, aweights=aw),
                               np.cov(a, fweights=fw, aweights=aw), rtol=1e-5)
    np.testing.assert_allclose(jnp.cov(a[0], a[1]), np.cov(a[0], a[1]), rtol=1e-5)
    np.testing.assert_allclose(jnp.cov(a[0]), np.cov(a[0]), rtol=1e-5)
    np.testing.assert_allclose(jnp.corrcoef(a), np.corrcoef(a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jnp.corrcoef(a[0], a[2]), np.corrcoef(a[0], a[2]), rtol=1e-5)
    phase = np.cumsum(np.random.default_rng(3).uniform(0, 2, 20))
    wrapped = np.mod(phase, 2 * np.pi)
    np.testing.assert_allclose(jnp.unwrap(wrapped), np.unwrap(wrapped), rtol=1e-5)
    np.testing.assert_allclose(jnp.unwrap(wrapped, period=4), np.unwrap(wrapped, period=4),
                               rtol=1e-5)


# --------------------------------------------------------------------------- coverage, hints


def test_missing_names_raise_with_alternative():
    assert not hasattr(jnp, "putmask")
    with pytest.raises(NotImplementedError, match=r"jnp.where\(mask, values, x\)"):
        jnp.putmask  # noqa: B018
    with pytest.raises(NotImplementedError, match="x.at\\[index\\].set"):
        jnp.copyto  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'not_a_numpy_name'"):
        jnp.not_a_numpy_name  # noqa: B018


def test_numpy_coverage_tool(capsys):
    from minijax.tools import numpy_coverage
    rows = dict(numpy_coverage.coverage())
    assert rows["einsum"] == rows["sort"] == rows["linalg"] == "yes"
    assert rows["putmask"] == "hint" and rows["loadtxt"] == "n/a"
    assert rows["roots"] == rows["put"] == "yes"
    assert numpy_coverage.main(["--missing-only", "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("minijax.numpy provides ") and "putmask" in out
    assert "einsum " not in out
    numpy_coverage.main([])
    assert "| `einsum` | yes |" in capsys.readouterr().out
