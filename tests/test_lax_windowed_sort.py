"""reduce_window (sum/max/min and the generic form), sort, sort_key_val and top_k: values
against naive Python references written from XLA's semantics, gradients by finite
differences, vmap against a Python loop, lowered HLO against eager, and errors."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minijax
from minijax import lax
from minijax.test_util import check_grads, check_vmap
from minijax.test_util import evaluate_lowered as lowered

SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])






# --------------------------------------------------------------------------- reduce_window


def naive_window(x, init, op, window, strides, padding, base_dil, win_dil):
    """Loop over output positions and window offsets; holes and padding read `init`."""
    out_shape = []
    for n, k, s, (lo, hi), b, w in zip(x.shape, window, strides, padding, base_dil, win_dil):
        size = (0 if n == 0 else (n - 1) * b + 1) + lo + hi
        span = 0 if k == 0 else (k - 1) * w + 1
        out_shape.append(0 if size < span or k == 0 else (size - span) // s + 1)
    out = np.empty(out_shape, dtype=object)
    for o in itertools.product(*map(range, out_shape)):
        acc = init
        for k in itertools.product(*map(range, window)):
            idx = []
            for d in range(x.ndim):
                pos = o[d] * strides[d] + k[d] * win_dil[d] - padding[d][0]
                if pos % base_dil[d] or not 0 <= pos // base_dil[d] < x.shape[d]:
                    break
                idx.append(pos // base_dil[d])
            else:
                acc = op(acc, x[tuple(idx)])
                continue
            acc = op(acc, init)
        out[o] = acc
    return out


@st.composite
def window_problems(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0, 4)) for _ in range(ndim))
    window = tuple(draw(st.integers(1, 3)) for _ in range(ndim))
    strides = tuple(draw(st.integers(1, 2)) for _ in range(ndim))
    base = tuple(draw(st.integers(1, 2)) for _ in range(ndim))
    wdil = tuple(draw(st.integers(1, 2)) for _ in range(ndim))
    padding = draw(st.one_of(st.sampled_from(["VALID", "SAME"]), st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=ndim, max_size=ndim)))
    return shape, window, strides, padding, base, wdil


def _pads(shape, window, strides, padding, base, wdil):
    if not isinstance(padding, str):
        return padding
    return lax.padtype_to_pads([0 if n == 0 else (n - 1) * b + 1 for n, b in zip(shape, base)],
                               [(k - 1) * w + 1 for k, w in zip(window, wdil)], strides,
                               padding)


MONOIDS = {"sum": (lax.reduce_window_sum, lambda a, b: a + b, 0),
           "max": (lax.reduce_window_max, max, -math.inf),
           "min": (lax.reduce_window_min, min, math.inf)}


@pytest.mark.parametrize("kind", sorted(MONOIDS))
@SETTINGS
@given(problem=window_problems(), seed=st.integers(0, 2**16), integer=st.booleans())
def test_reduce_window_against_naive(kind, problem, seed, integer):
    shape, window, strides, padding, base, wdil = problem
    rng = np.random.default_rng(seed)
    dtype = np.int32 if integer else np.float32
    x = (rng.integers(-9, 9, shape) if integer else rng.standard_normal(shape)).astype(dtype)
    fn, op, init = MONOIDS[kind]
    if integer and kind != "sum":
        init = (np.iinfo(np.int32).min if kind == "max" else np.iinfo(np.int32).max)
    pads = _pads(shape, window, strides, padding, base, wdil)
    want = naive_window(x.astype(np.float64 if not integer else np.int64), init, op, window,
                        strides, pads, base, wdil).astype(dtype)
    got = fn(x, window, strides, padding, base, wdil)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    generic_op = {"sum": lax.add, "max": lax.max, "min": lax.min}[kind]
    via_generic = lax.reduce_window(x, dtype(init), generic_op, window, strides, padding,
                                    base, wdil)
    np.testing.assert_allclose(np.asarray(via_generic), want, rtol=1e-5, atol=1e-5)
    low = lowered(lambda a: fn(a, window, strides, padding, base, wdil), x)[0]
    np.testing.assert_allclose(low, want, rtol=1e-5, atol=1e-5)


def _sumsq(acc, v):
    return lax.add(acc, lax.mul(v, v))


@SETTINGS
@given(problem=window_problems(), seed=st.integers(0, 2**16))
def test_generic_reduce_window_against_naive(problem, seed):
    shape, window, strides, padding, base, wdil = problem
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    pads = _pads(shape, window, strides, padding, base, wdil)
    # init 1.0 is not an identity, so holes and padding contribute 1.0 each.
    want = naive_window(x.astype(np.float64), 1.0, lambda a, v: a + v * v, window, strides,
                        pads, base, wdil).astype(np.float32)
    got = lax.reduce_window(x, np.float32(1.0), _sumsq, window, strides, padding, base, wdil)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    low = lowered(lambda a: lax.reduce_window(a, np.float32(1.0), _sumsq, window, strides,
                                              padding, base, wdil), x)[0]
    np.testing.assert_allclose(low, want, rtol=1e-5, atol=1e-5)


def test_reduce_window_monoid_recognition_and_variadic():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for comp, init, prim in ((lax.add, 0.0, "reduce_window_sum"),
                             (lax.max, -np.inf, "reduce_window_max"),
                             (lax.min, np.inf, "reduce_window_min"),
                             (lax.add, 2.0, "reduce_window")):
        jaxpr = minijax.make_jaxpr(lambda a, c=comp, i=init: lax.reduce_window(
            a, np.float32(i), c, (2, 2), (1, 1), "VALID"))(x)
        assert [e.primitive.name for e in jaxpr.eqns] == [prim]
    s, m = lax.reduce_window((x, -x), (np.float32(0), np.float32(-np.inf)),
                             lambda a, b: (lax.add(a[0], b[0]), lax.max(a[1], b[1])),
                             (2, 2), (1, 2), "VALID")
    np.testing.assert_allclose(s, [[10, 18], [26, 34]])
    np.testing.assert_allclose(m, [[0, -2], [-4, -6]])


WINDOW_GRAD_CASES = [((2, 2), (1, 1), "VALID", None, None),
                     ((2, 3), (2, 1), [(1, 0), (0, 2)], None, None),
                     ((3, 2), (1, 2), "SAME", (2, 1), (1, 2))]


@pytest.mark.parametrize("case", range(len(WINDOW_GRAD_CASES)))
def test_reduce_window_gradients(x64, case):
    window, strides, padding, base, wdil = WINDOW_GRAD_CASES[case]
    x = np.random.default_rng(case).standard_normal((4, 5))
    for fn in (lax.reduce_window_sum, lax.reduce_window_max, lax.reduce_window_min):
        check_grads(lambda a, fn=fn: fn(a, window, strides, padding, base, wdil), (x,), 2)
    check_grads(lambda a: lax.reduce_window(a, 0.5, _sumsq, window, strides, padding, base,
                                            wdil), (x,), 2)


def test_max_pool_gradient_picks_first_max(x64):
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 3.0, -1.0, 4.0]])
    g = minijax.grad(lambda a: lax.reduce_sum(lax.reduce_window_max(
        a, (2, 2), (1, 1), "VALID"), (0, 1)))(x)
    np.testing.assert_allclose(g, [[0, 2, 0, 0], [0, 0, 0, 1]])


def test_pool_gradients_lowered_match_eager():
    x = np.random.default_rng(3).standard_normal((2, 5, 6)).astype(np.float32)
    for fn in (lax.reduce_window_max, lax.reduce_window_min, lax.reduce_window_sum):
        g = minijax.grad(lambda a, fn=fn: lax.reduce_sum(lax.mul(
            fn(a, (1, 3, 2), (1, 2, 2), "SAME"), 1.5), (0, 1, 2)))
        np.testing.assert_allclose(lowered(g, x)[0], np.asarray(g(x)), rtol=1e-5, atol=1e-6)
    jvp = lambda a, t: minijax.jvp(lambda u: lax.reduce_window_max(  # noqa: E731
        u, (2, 2, 2), (1, 1, 1), "VALID"), (a,), (t,))[1]
    np.testing.assert_allclose(lowered(jvp, x, x * 2)[0], np.asarray(jvp(x, x * 2)),
                               rtol=1e-6)


@SETTINGS
@given(seed=st.integers(0, 2**16), axis=st.integers(0, 2), out_axis=st.integers(0, 2))
def test_reduce_window_vmap(seed, axis, out_axis):
    x = np.random.default_rng(seed).standard_normal((3, 4, 5)).astype(np.float32)
    for fn in (lax.reduce_window_sum, lax.reduce_window_max, lax.reduce_window_min):
        check_vmap(lambda a, fn=fn: fn(a, (2, 3), (1, 2), "SAME", (1, 2), None), (x,), axis,
                   out_axis, atol=1e-5, rtol=1e-5)
    check_vmap(lambda a: lax.reduce_window(a, np.float32(0.5), _sumsq, (2, 2), (1, 1),
                                           "VALID"), (x,), axis, out_axis, atol=1e-5,
               rtol=1e-5)
    check_vmap(minijax.grad(lambda a: lax.reduce_sum(lax.reduce_window_max(
        a, (2, 2), (1, 1), "VALID"), (0, 1))), (x,), axis, out_axis)


# --------------------------------------------------------------------------- sort


def _total_key(v, zeros_tie):
    v = float(v)
    sign = () if zeros_tie else (not math.copysign(1.0, v) < 0,)
    return (math.isnan(v), 0.0 if math.isnan(v) else v) + sign


def _key(v, zeros_tie=True):
    """lax.sort's order (JAX: -0.0 ties with 0.0, NaNs last and equal); top_k's with
    zeros_tie=False (-0.0 below 0.0)."""
    if isinstance(v, (complex, np.complexfloating)):
        return _total_key(v.real, zeros_tie) + _total_key(v.imag, zeros_tie)
    if isinstance(v, (float, np.floating)):
        return _total_key(v, zeros_tie)
    return (int(v),)


def naive_sort(operands, axis, num_keys):
    """Stable sort of every lane along `axis` by the tuple of the first num_keys keys."""
    moved = [np.moveaxis(np.asarray(o), axis, -1) for o in operands]
    outs = [np.empty_like(m) for m in moved]
    for index in np.ndindex(*moved[0].shape[:-1]):
        lanes = [m[index] for m in moved]
        order = sorted(range(len(lanes[0])), key=lambda i: tuple(
            k for lane in lanes[:num_keys] for k in _key(lane[i])))
        for out, lane in zip(outs, lanes):
            out[index] = lane[order]
    return [np.moveaxis(o, -1, axis) for o in outs]


EDGE = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, np.nan, 1.0, 3e38])


def _values(rng, shape, dtype, edge):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        pool = EDGE if edge else rng.standard_normal(16)
        with np.errstate(over="ignore"):
            return rng.choice(pool, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.choice(EDGE, shape) + 1j * rng.choice([0.0, 1.0, -1.0], shape)).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    return rng.choice([info.min, info.max, 0, 1, 2, 1], shape).astype(dtype)


@SETTINGS
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple),
       seed=st.integers(0, 2**16), edge=st.booleans(),
       dtype=st.sampled_from(["float32", "int32", "uint8", "bool", "float16", "complex64"]))
def test_sort_against_naive(shape, seed, edge, dtype):
    rng = np.random.default_rng(seed)
    x = _values(rng, shape, dtype, edge)
    for axis in range(len(shape)):
        got = lax.sort(x, axis)
        (want,) = naive_sort([x], axis, 1)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(np.asarray(got), want)
        assert (np.signbit(np.asarray(got)) == np.signbit(want)).all() if x.dtype.kind == "f" \
            else True
        if x.dtype.kind != "c":
            np.testing.assert_array_equal(lowered(lambda a, axis=axis: lax.sort(a, axis),
                                                  x)[0], want)


@SETTINGS
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=2).map(tuple),
       seed=st.integers(0, 2**16), num_keys=st.integers(1, 2))
def test_sort_multiple_operands(shape, seed, num_keys):
    rng = np.random.default_rng(seed)
    a = rng.choice([0.0, 1.0, np.nan, -0.0], shape).astype(np.float32)
    b = rng.integers(0, 3, shape).astype(np.int32)
    c = rng.standard_normal(shape).astype(np.float32)
    for axis in range(len(shape)):
        got = lax.sort((a, b, c), axis, num_keys=num_keys)
        want = naive_sort([a, b, c], axis, num_keys)
        assert isinstance(got, tuple) and len(got) == 3
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)
        low = lowered(lambda u, v, w, axis=axis: lax.sort((u, v, w), axis, num_keys=num_keys),
                      a, b, c)
        for g, w in zip(low, want):
            np.testing.assert_array_equal(g, w)


def test_sort_key_val_and_stability():
    keys = np.array([3, 1, 2, 1, 3], np.int32)
    vals = np.arange(5, dtype=np.float32)
    k, v = lax.sort_key_val(keys, vals)
    np.testing.assert_array_equal(k, [1, 1, 2, 3, 3])
    np.testing.assert_array_equal(v, [1, 3, 2, 0, 4])
    k2, v2 = lax.sort_key_val(keys, vals, is_stable=False)
    np.testing.assert_array_equal(k2, k)
    assert lax.sort(np.array([2.0, 1.0], np.float32), dimension=0).shape == (2,)


# --------------------------------------------------------------------------- top_k


def naive_top_k(x, k):
    moved = np.asarray(x)
    vals = np.empty(moved.shape[:-1] + (k,), moved.dtype)
    idx = np.empty(moved.shape[:-1] + (k,), np.int32)
    for index in np.ndindex(*moved.shape[:-1]):
        lane = moved[index]
        order = sorted(range(len(lane)), key=lambda i: _key(lane[i], False),
                       reverse=True)[:k]
        vals[index], idx[index] = lane[order], order
    return vals, idx


@SETTINGS
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple),
       seed=st.integers(0, 2**16), edge=st.booleans(), k=st.integers(0, 5),
       dtype=st.sampled_from(["float32", "int32", "uint8"]))
def test_top_k_against_naive(shape, seed, edge, k, dtype):
    k = min(k, shape[-1])
    x = _values(np.random.default_rng(seed), shape, dtype, edge)
    values, indices = lax.top_k(x, k)
    want_v, want_i = naive_top_k(x, k)
    assert values.dtype == x.dtype and indices.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(values), want_v)
    np.testing.assert_array_equal(np.asarray(indices), want_i)
    low = lowered(lambda a: lax.top_k(a, k), x)
    np.testing.assert_array_equal(low[0], want_v)
    np.testing.assert_array_equal(low[1], want_i)


# --------------------------------------------------------------------------- transformations


def test_sort_and_top_k_gradients(x64):
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    check_grads(lambda a: lax.sort(a, 0), (x,), 2)
    check_grads(lambda a: lax.sort(a, 1), (x,), 2)
    check_grads(lambda a, b: lax.sort((a, b), 1, num_keys=1), (x, y), 2)
    check_grads(lambda a: lax.top_k(a, 3)[0], (x,), 2)
    keys = np.array([2.0, 0.0, 1.0])
    g = minijax.grad(lambda v: lax.reduce_sum(lax.mul(lax.sort_key_val(keys, v)[1],
                                                      np.array([1.0, 10.0, 100.0])), (0,)))(
        np.zeros(3))
    np.testing.assert_allclose(g, [100.0, 1.0, 10.0])


@SETTINGS
@given(seed=st.integers(0, 2**16), axis=st.integers(0, 2), out_axis=st.integers(0, 2))
def test_sort_and_top_k_vmap(seed, axis, out_axis):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    check_vmap(lambda a: lax.sort(a, 0), (x,), axis, out_axis)
    check_vmap(lambda a: lax.sort(a, -1), (x,), axis, out_axis)
    x3 = rng.standard_normal((3, 3, 3)).astype(np.float32)
    y3 = rng.integers(0, 3, (3, 3, 3)).astype(np.int32)
    check_vmap(lambda a, b: lax.sort((b, a), 1, num_keys=2), (x3, y3),
               (axis, (axis + 1) % 3), out_axis)
    check_vmap(lambda a: lax.top_k(a, 2), (x,), axis, out_axis)
    check_vmap(minijax.grad(lambda a: lax.reduce_sum(lax.top_k(a, 2)[0], (0, 1))), (x,), axis,
               out_axis)


def test_sort_gradient_lowered_matches_eager():
    x = np.random.default_rng(8).standard_normal((3, 6)).astype(np.float32)
    w = np.arange(18, dtype=np.float32).reshape(3, 6)

    def loss(a):
        return lax.reduce_sum(lax.mul(lax.sort(a, 1), w), (0, 1))
    for f in (minijax.grad(loss),
              minijax.grad(lambda a: lax.reduce_sum(lax.mul(lax.top_k(a, 2)[0], 3.0), (0, 1)))):
        np.testing.assert_allclose(lowered(f, x)[0], np.asarray(f(x)), rtol=1e-6)


# --------------------------------------------------------------------------- errors


def test_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"k argument to top_k must be no larger than minor "
                                         r"dimension; 4 vs f32\[2,3\]"):
        lax.top_k(x, 4)
    with pytest.raises(ValueError, match="k argument to top_k must be nonnegative"):
        lax.top_k(x, -1)
    with pytest.raises(TypeError, match=r"sort: all operands must have the same shape, got "
                                        r"f32\[2,3\], f32\[3\]"):
        lax.sort((x, np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="num_keys=3 must be between 1 and the number of "
                                         "operands"):
        lax.sort((x, x), num_keys=3)
    with pytest.raises(ValueError, match="sort: axis 2 is out of bounds"):
        lax.sort(x, 2)
    with pytest.raises(TypeError, match=r"reduce_window_sum: window_dimensions must have one "
                                        r"entry per operand dimension \(2"):
        lax.reduce_window_sum(x, (2,), (1,), "VALID")
    with pytest.raises(ValueError, match="window_strides must be >= 1"):
        lax.reduce_window_max(x, (2, 2), (0, 1), "VALID")
    with pytest.raises(TypeError, match="reduce_window: init values must be scalars"):
        lax.reduce_window(x, np.int32(0), lambda a, b: a, (1, 1), (1, 1), "VALID")
    with pytest.raises(RuntimeError, match="Unrecognized padding type"):
        lax.reduce_window_sum(x, (1, 1), (1, 1), "FULL")
    with pytest.raises(TypeError, match="reduce_window_max does not accept dtype complex64"):
        lax.reduce_window_max(x.astype(np.complex64), (1, 1), (1, 1), "VALID")
