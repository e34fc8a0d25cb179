"""Structural jnp functions (unique, nonzero, pad, partition, ...) that gave values or
shapes different from JAX's (a differential campaign against JAX 0.10.2 on CPU), eagerly
and under jit.

JAX's values are hard-coded; where real JAX is importable the same programs also run on it.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp

try:
    import jax as real_jax
    import jax.numpy as real_jnp
except Exception:  # pragma: no cover - CI has no JAX
    real_jax = real_jnp = None

needs_jax = pytest.mark.skipif(real_jax is None, reason="real JAX is not installed")


def _modes(fn):
    """fn eagerly and under jit."""
    return [fn, minijax.jit(fn)]


def _assert_same(got, want):
    got, want = minijax.tree_util.tree_leaves(got), list(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        np.testing.assert_array_equal(g, w)


# --- unique -----------------------------------------------------------------------------------

_M2 = np.array([[3, 1, 3], [1, 2, 0], [3, 1, 3], [0, 0, 0]], np.int32)


@pytest.mark.parametrize("fn", _modes(lambda x: jnp.unique(
    x, axis=1, size=5, fill_value=-1, return_index=True, return_inverse=True,
    return_counts=True)))
def test_unique_axis_1_with_size_pads_along_that_axis(fn):
    # JAX 0.10.2 gives the unique columns padded to 5 columns (minijax padded rows)
    want_vals = np.array([[1, 3, 3, -1, -1], [2, 0, 1, -1, -1], [1, 3, 3, -1, -1],
                          [0, 0, 0, -1, -1]], np.int32)
    _assert_same(fn(_M2), [want_vals, np.array([1, 2, 0, 1, 1], np.int32),
                           np.array([2, 0, 1], np.int32), np.array([1, 1, 1, 0, 0], np.int32)])


@pytest.mark.parametrize("fn", _modes(lambda x: jnp.unique(
    x, size=5, fill_value=-1, return_index=True, return_inverse=True, return_counts=True)))
def test_unique_pads_indices_with_the_first_unique_index(fn):
    # JAX 0.10.2 gives indices [3, 1, 0, 3, 3]: padding repeats the smallest value's index
    x = np.array([5, 3, 5, 1], np.int32)
    _assert_same(fn(x), [np.array([1, 3, 5, -1, -1], np.int32), np.array([3, 1, 0, 3, 3],
                                                                          np.int32),
                         np.array([2, 1, 2, 0], np.int32), np.array([1, 1, 2, 0, 0], np.int32)])


def test_unique_axis_merges_rows_with_nans_at_the_same_places():
    # JAX 0.10.2 gives [[1, nan], [nan, 0]] (NumPy keeps the two [1, nan] rows apart)
    x = np.array([[1.0, np.nan], [1.0, np.nan], [np.nan, 0.0]], np.float32)
    for fn in _modes(lambda x: jnp.unique(x, axis=0, size=2, return_counts=True)):
        vals, counts = fn(x)
        np.testing.assert_array_equal(vals, np.array([[1, np.nan], [np.nan, 0]], np.float32))
        np.testing.assert_array_equal(counts, [2, 1])
    assert jnp.unique(x, axis=0, equal_nan=False).shape == (3, 2)


def test_unique_of_empty_input_with_size_needs_fill_value():
    with pytest.raises(ValueError, match="fill_value"):
        jnp.unique(jnp.zeros((0,)), size=3)
    np.testing.assert_array_equal(jnp.unique(jnp.zeros((0,)), size=2, fill_value=7.0), [7, 7])


def _unique_rows_reference(x, axis, equal_nan):
    """unique slices with JAX's semantics, by a Python loop over the slices."""
    rows = np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
    keyed = []
    for i, r in enumerate(rows):
        key = tuple((1, 0.0) if np.isnan(v) else (0, float(v) + 0.0) for v in r.astype(float))
        keyed.append((key, i))
    keyed.sort()
    groups = []
    for key, i in keyed:
        same = groups and groups[-1][0] == key
        if same and not equal_nan and any(k[0] for k in key):
            same = False
        if same:
            groups[-1][2] += 1
        else:
            groups.append([key, i, 1])
    first = [g[1] for g in groups]
    vals = np.moveaxis(rows[first].reshape((len(first),) + np.moveaxis(x, axis, 0).shape[1:]),
                       0, axis)
    return vals, np.array(first), np.array([g[2] for g in groups])


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_unique_axis_matches_a_python_loop(data):
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    elems = st.sampled_from([0.0, -0.0, 1.0, np.nan])
    x = np.array(data.draw(st.lists(elems, min_size=int(np.prod(shape)),
                                    max_size=int(np.prod(shape)))), np.float32).reshape(shape)
    axis = data.draw(st.integers(0, ndim - 1))
    equal_nan = data.draw(st.booleans())
    vals, idx, counts = jnp.unique(x, axis=axis, return_index=True, return_counts=True,
                                   equal_nan=equal_nan)
    want_vals, want_idx, want_counts = _unique_rows_reference(x, axis, equal_nan)
    np.testing.assert_array_equal(vals, want_vals)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(counts, want_counts)


@needs_jax
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("size", [1, 3, 6])
def test_unique_axis_against_jax(axis, size):
    rng = np.random.default_rng(axis + 10 * size)
    x = rng.integers(0, 2, (4, 3, 2)).astype(np.float32)
    x[rng.random(x.shape) < 0.2] = np.nan
    kw = dict(axis=axis, size=size, return_index=True, return_inverse=True,
              return_counts=True)
    want = real_jnp.unique(x, **kw)
    for fn in _modes(lambda x: jnp.unique(x, **kw)):
        _assert_same(fn(x), [np.asarray(w) for w in want])


# --- nonzero ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", _modes(lambda x: (
    jnp.nonzero(x, size=3, fill_value=(7, 8)), jnp.argwhere(x, size=2, fill_value=5),
    jnp.flatnonzero(x, size=2, fill_value=9))))
def test_nonzero_of_an_empty_array_gives_zeros(fn):
    # JAX 0.10.2 gives zeros for a zero-size input, whatever fill_value says
    z = np.zeros(3, np.int32)
    _assert_same(fn(np.zeros((2, 0), np.float32)), [z, z, np.zeros((2, 2), np.int32),
                                                    np.zeros(2, np.int32)])


# --- top_k total order, partition -------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("jit", [False, True])
def test_top_k_puts_negative_nan_last(dtype, jit):
    # JAX 0.10.2 (XLA's total order): +NaN largest, -NaN smallest, -0.0 below 0.0
    x = np.array([np.nan, -np.nan, 1.0, -0.0, 0.0, -2.0, -np.inf], dtype)
    def fn(x):
        return minijax.lax.top_k(x, 7)

    vals, idx = (minijax.jit(fn) if jit else fn)(x)
    np.testing.assert_array_equal(idx, [0, 2, 4, 3, 5, 6, 1])
    assert np.signbit(np.asarray(vals)[[3, 6]]).all()


_PX = np.array([[3.0, 1.0, np.nan, 2.0, -0.0], [1.0, -np.nan, 0.0, np.inf, -1.0]], np.float32)


@pytest.mark.parametrize("fn", _modes(lambda x: (jnp.partition(x, 1), jnp.argpartition(x, 1),
                                                 jnp.partition(x, -2, axis=0))))
def test_partition_order_as_jax(fn):
    # JAX 0.10.2 builds partition from two top_k calls: the part after kth is descending
    part, arg, part0 = fn(_PX)
    np.testing.assert_array_equal(part, np.array([[-0.0, 1, np.nan, 3, 2],
                                                  [np.nan, -1, np.inf, 1, 0]], np.float32))
    np.testing.assert_array_equal(arg, np.array([[4, 1, 0, 2, 3], [1, 4, 0, 2, 3]], np.int32))
    np.testing.assert_array_equal(part0, np.array([[1, np.nan, 0, 2, -1],
                                                   [3, 1, np.nan, np.inf, -0.0]], np.float32))


@pytest.mark.parametrize("fn", _modes(lambda u, i: (jnp.partition(u, 2), jnp.argpartition(u, 2),
                                                    jnp.argpartition(i, 1))))
def test_partition_of_unsigned_and_ties_as_jax(fn):
    u = np.array([3, 0, 255, 1, 0], np.uint8)
    i = np.array([2, 1, 2, 1, 2], np.int32)
    _assert_same(fn(u, i), [np.array([0, 0, 1, 255, 3], np.uint8),
                            np.array([1, 4, 3, 0, 2], np.int32),
                            np.array([1, 3, 0, 2, 4], np.int32)])


@needs_jax
@pytest.mark.parametrize("seed", range(6))
def test_partition_against_jax(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, (3, 6)).astype(np.float32)
    x[rng.random(x.shape) < 0.2] = np.nan
    x[rng.random(x.shape) < 0.1] = -np.nan
    x[rng.random(x.shape) < 0.2] = -0.0
    k = int(rng.integers(-6, 6))
    for fn in _modes(lambda x: (jnp.partition(x, k), jnp.argpartition(x, k))):
        got = fn(x)
        want = (real_jnp.partition(x, k), real_jnp.argpartition(x, k))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g).view(np.int32) if g.dtype == np.float32
                                          else g, np.asarray(w).view(np.int32)
                                          if w.dtype == np.float32 else w)


# --- pad: linear_ramp, statistic modes, odd reflections; linspace -------------------------------

_A = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5 - 4
_I = np.arange(6, dtype=np.int32).reshape(2, 3) - 2

# JAX 0.10.2 gives these (each axis padded from the array padded so far)
_PAD_CASES = [
    (lambda x, i: jnp.pad(x[:2, :3], ((1, 2), (2, 1)), mode="linear_ramp",
                          end_values=((7, 8), (9, -10))),
     np.array([[9, 8, 7, 7, 7, -10], [9, 2.5, -4, -2.5, -1, -10], [9, 5.5, 2, 3.5, 5, -10],
               [9, 7, 5, 5.75, 6.5, -10], [9, 8.5, 8, 8, 8, -10]], np.float32)),
    (lambda x, i: jnp.pad(i, ((2, 1), (1, 2)), mode="mean"),
     np.array([[1, 0, 0, 2, 1, 1], [1, 0, 0, 2, 1, 1], [-1, -2, -1, 0, -1, -1],
               [2, 1, 2, 3, 2, 2], [1, 0, 0, 2, 1, 1]], np.int32)),
    (lambda x, i: jnp.pad(i, ((2, 1), (1, 2)), mode="median", stat_length=((1, 2), (2, 1))),
     np.array([[-2, -2, -1, 0, 0, 0], [-2, -2, -1, 0, 0, 0], [-2, -2, -1, 0, 0, 0],
               [2, 1, 2, 3, 3, 3], [0, 0, 0, 2, 2, 2]], np.int32)),
    (lambda x, i: jnp.pad(x[:2, :3], ((1, 2), (2, 1)), mode="maximum", stat_length=2),
     np.array([[3.5, 3.5, 2, 3.5, 5, 5], [-2.5, -2.5, -4, -2.5, -1, -1],
               [3.5, 3.5, 2, 3.5, 5, 5], [3.5, 3.5, 2, 3.5, 5, 5],
               [3.5, 3.5, 2, 3.5, 5, 5]], np.float32)),
    (lambda x, i: jnp.pad(x[0, :3] * 0 + jnp.array([1.0, 2.0, 4.0]), (7, 5), mode="reflect",
                          reflect_type="odd"),
     np.array([-10, -8, -6, -5, -4, -2, 0, 1, 2, 4, 6, 7, 8, 10, 12], np.float32)),
    (lambda x, i: jnp.pad(jnp.array([1, 2, 4], jnp.int32), (7, 5), mode="symmetric",
                          reflect_type="odd"),
     np.array([-5, -5, -4, -2, -2, 0, 1, 1, 2, 4, 4, 6, 7, 7, 8], np.int32)),
    (lambda x, i: jnp.pad(jnp.array([200, 10], jnp.uint8), 3, mode="linear_ramp",
                          end_values=0),
     np.array([0, 66, 133, 200, 10, 6, 3, 0], np.uint8)),
]


@pytest.mark.parametrize("case", range(len(_PAD_CASES)))
@pytest.mark.parametrize("jit", [False, True])
def test_pad_modes_as_jax(case, jit):
    fn, want = _PAD_CASES[case]
    got = (minijax.jit(fn) if jit else fn)(_A, _I)
    _assert_same([got], [want])


@needs_jax
@pytest.mark.parametrize("mode", ["linear_ramp", "maximum", "minimum", "mean", "median",
                                  "reflect", "symmetric"])
@pytest.mark.parametrize("x", [_A, _I, np.array([[7]], np.uint8)], ids=["f32", "i32", "u8"])
def test_pad_modes_against_jax(mode, x):
    widths = ((5, 7), (9, 2))
    kw = {"reflect_type": "odd"} if mode in ("reflect", "symmetric") else {}
    if mode == "linear_ramp":
        kw = {"end_values": ((1, 2), (3, 4))}
    want = real_jnp.pad(x, widths, mode=mode, **kw)
    for fn in _modes(lambda x: jnp.pad(x, widths, mode=mode, **kw)):
        got = fn(x)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=1e-6)


def test_pad_statistic_modes_refuse_empty_axes():
    with pytest.raises(ValueError, match="empty axis"):
        jnp.pad(jnp.zeros((0, 3)), 1, mode="mean")
    with pytest.raises(ValueError, match="stat_length of 0"):
        jnp.pad(jnp.ones(3), 1, mode="maximum", stat_length=0)


@pytest.mark.parametrize("jit", [False, True])
def test_linspace_integer_and_float_samples_as_jax(jit):
    # JAX 0.10.2 computes start * (1 - t) + stop * t, t = i / div, then floors integers
    # (XLA:CPU's arithmetic still rounds some samples differently by an ulp)
    def fn():
        return (jnp.linspace(0, 1, 7), jnp.linspace(5.0, -2.0, 7, endpoint=False, dtype=int),
                jnp.linspace(0.0, 3.0, 4, retstep=True)[1])
    t, ints, step = (minijax.jit(fn) if jit else fn)()
    np.testing.assert_array_equal(np.asarray(t).view(np.int32), np.array(
        [0.0, 0.16666667, 0.33333334, 0.5, 0.6666667, 0.8333334, 1.0], np.float32).view(np.int32))
    # JAX 0.10.2 gives [5, 4, 3, 1, 0, -1, -2]; the old start + i * step gave [.., 3, 2, 1, 0, -1]
    np.testing.assert_array_equal(np.asarray(ints)[2:], [3, 1, 0, -1, -2])
    assert step == 1.0 and not step.weak_type
