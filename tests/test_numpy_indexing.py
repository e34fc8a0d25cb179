"""NumPy indexing vs NumPy: basic, advanced (axis placement), boolean masks, None/Ellipsis,
out-of-bounds rules (IndexError for static ints, clamp for gathers, drop for updates),
.at[] updates, take/take_along_axis/nonzero, and errors under jit."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax.errors import NonConcreteBooleanIndexError

SETTINGS = settings(max_examples=25, deadline=None)
X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


def _eq(got, want):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_array_equal(got, want)


def _slices(n):
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    step = st.one_of(st.none(), st.sampled_from([-3, -2, -1, 1, 2, 3]))
    return st.builds(slice, bound, bound, step)


@SETTINGS
@given(data=st.data())
def test_basic_indexing(data):
    idx = []
    for n in X.shape:
        kind = data.draw(st.sampled_from(["int", "slice", "none", "skip"]))
        if kind == "int":
            idx.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            idx.append(data.draw(_slices(n)))
        elif kind == "none":
            idx += [None, data.draw(_slices(n))]
        else:
            idx.append(slice(None))
    while idx and idx[-1] == slice(None) and data.draw(st.booleans()):
        idx.pop()
    if data.draw(st.booleans()) and len(idx) < 3:
        idx.insert(data.draw(st.integers(0, len(idx))), Ellipsis)
    idx = tuple(idx)
    _eq(jnp.asarray(X)[idx], X[idx])


@SETTINGS
@given(data=st.data())
def test_advanced_indexing_placement(data):
    b_shape = data.draw(st.sampled_from([(), (2,), (2, 1), (1, 3)]))
    entries = []
    for n in X.shape:
        kind = data.draw(st.sampled_from(["arr", "slice", "int", "none"]))
        if kind == "arr":
            entries.append(np.asarray(data.draw(st.lists(
                st.integers(-n, n - 1), min_size=int(np.prod(b_shape)),
                max_size=int(np.prod(b_shape))))).reshape(b_shape).astype(np.int32))
        elif kind == "slice":
            entries.append(data.draw(_slices(n)))
        elif kind == "int":
            entries.append(data.draw(st.integers(-n, n - 1)))
        else:
            entries += [None, slice(None)]
    idx = tuple(entries)
    _eq(jnp.asarray(X)[idx], X[idx])


def test_advanced_examples():
    x = jnp.asarray(X)
    i, j = np.array([0, 2]), np.array([[1], [3]])
    for idx in [(i,), (i, j), (slice(None), j, i[:1]), (i, slice(1, 3), i),
                (Ellipsis, i), (None, i, None, j), (1, slice(None), i), (i, None, 0),
                (np.array([[0, 1], [2, 0]]), Ellipsis, np.array([4, -1]))]:
        _eq(x[idx], X[idx])


def test_boolean_masks():
    x = jnp.asarray(X)
    m = X[:, :, 0] % 2 == 0
    _eq(x[m], X[m])
    _eq(x[X > 30], X[X > 30])
    _eq(x[1, X[1, :, 0] > 22], X[1, X[1, :, 0] > 22])
    _eq(x[:, np.array([True, False, True, True])], X[:, np.array([True, False, True, True])])
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.array([True, False])]


def test_boolean_mask_under_jit_errors():
    def f(a):
        return a[a > 3]
    with pytest.raises(NonConcreteBooleanIndexError) as info:
        minijax.jit(f)(np.arange(6.0))
    msg = str(info.value)
    assert "test_numpy_indexing.py" in msg and "jnp.where" in msg and "size=" in msg


def test_static_out_of_bounds_clamps_and_bad_indices_raise():
    x = jnp.asarray(X)
    # JAX clamps static out-of-bound integers (after wrapping negatives once).
    _eq(x[0, 4], X[0, 3])
    _eq(x[-4], X[0])
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        jnp.zeros((0, 2))[0]
    with pytest.raises(IndexError, match="Too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(TypeError, match="non-tuple sequence"):
        x[[0, 1]]
    with pytest.raises(TypeError, match="integer or boolean"):
        x[np.array([0.5])]


def test_gather_out_of_bounds_clamps_and_fill():
    x = jnp.arange(5.0)
    _eq(x[np.array([-7, 0, 9])], np.array([0.0, 0.0, 4.0]))
    _eq(x.at[np.array([1, 9])].get(mode="fill", fill_value=-1.0), np.array([1.0, -1.0]))
    _eq(jnp.take(x, np.array([1, 9])), np.array([1.0, np.nan]))
    _eq(jnp.take(x, np.array([1, 9]), mode="clip"), np.array([1.0, 4.0]))
    _eq(jnp.take(x, np.array([1, 9]), mode="wrap"), np.array([1.0, 4.0]))


def test_traced_scalar_index():
    f = minijax.jit(lambda a, i: a[i, ::-1] + a[-1, i])
    for i in (0, 2, -1):
        _eq(f(X[:, :, 0], i), X[i, ::-1, 0] + X[-1, i, 0])
    g = minijax.jit(lambda a, i: a[i])
    _eq(g(np.arange(4.0), 10), 3.0)  # clamped like XLA's dynamic_slice


@SETTINGS
@given(data=st.data())
def test_at_updates_match_numpy(data):
    op = data.draw(st.sampled_from(["set", "add", "multiply", "min", "max"]))
    idx = data.draw(st.sampled_from([
        (1,), (slice(None), 2), (slice(1, None, 2),), (np.array([0, 2]), slice(None), 1),
        (Ellipsis, np.array([4, 0])), (np.array([[0], [2]]), np.array([1, 3])),
        (slice(None, None, -1), 0, slice(1, 4)), (None, 1, np.array([0, 3]))]))
    want = X.copy()
    sub_shape = X[idx].shape
    vals = np.asarray(data.draw(st.lists(st.integers(-5, 5), min_size=int(np.prod(sub_shape)),
                                         max_size=int(np.prod(sub_shape)))),
                      np.float32).reshape(sub_shape)
    if op == "set":
        want[idx] = vals
    elif op == "add":
        want[idx] += vals
    elif op == "multiply":
        want[idx] *= vals
    elif op == "min":
        want[idx] = np.minimum(want[idx], vals)
    else:
        want[idx] = np.maximum(want[idx], vals)
    got = getattr(jnp.asarray(X).at[idx], op)(vals)
    _eq(got, want)


def test_at_semantics():
    x = jnp.zeros(5)
    _eq(x.at[np.array([0, 0, 1])].add(1.0), np.array([2.0, 1.0, 0, 0, 0]))
    _eq(x.at[np.array([1, 7])].set(3.0), np.array([0, 3.0, 0, 0, 0]))  # dropped
    _eq(x.at[np.array([1, 7])].set(3.0, mode="clip"), np.array([0, 3.0, 0, 0, 3.0]))
    _eq(x.at[-1].set(2.0), np.array([0, 0, 0, 0, 2.0]))
    y = jnp.arange(1.0, 6.0)
    _eq(y.at[1:3].divide(2.0), np.array([1, 1, 1.5, 4, 5]))
    _eq(y.at[0].power(3), np.array([1, 2, 3, 4, 5.0]))
    _eq(y.at[2].power(2), np.array([1, 2, 9, 4, 5.0]))
    _eq(y.at[::2].subtract(1.0), np.array([0, 2, 2, 4, 4.0]))
    _eq(y.at[np.array([1, 3])].apply(lambda v: -v), np.array([1, -2, 3, -4, 5.0]))
    _eq(y.at[:].set(0.0), np.zeros(5))
    _eq(y.at[0].get(), 1.0)
    i = jnp.arange(3)
    assert i.at[0].set(2.7).dtype == np.int32
    with pytest.raises(ValueError, match="Incompatible shapes"):
        y.at[1:3].set(np.ones(3))
    with pytest.raises(ValueError, match="mode"):
        y.at[0].set(1.0, mode="bogus")


def test_at_under_jit_and_grad():
    f = minijax.jit(lambda a, i, v: a.at[i].add(v))
    _eq(f(np.zeros(4, np.float32), np.array([1, 1, 3]), np.float32(2.0)),
        np.array([0, 4.0, 0, 2.0]))
    g = minijax.grad(lambda a: (a.at[np.array([0, 2])].multiply(3.0) ** 2).sum())
    _eq(g(np.ones(3, np.float32)), np.array([18.0, 2.0, 18.0]))
    h = minijax.grad(lambda a: a[np.array([0, 0, 2])].sum() + a[1:, None].sum())
    _eq(h(np.ones(3, np.float32)), np.array([2.0, 1.0, 2.0]))


def test_take_along_axis_and_take():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    for axis in (0, 1, -1):
        idx = np.argsort(a, axis=axis)
        _eq(jnp.take_along_axis(a, idx, axis), np.take_along_axis(a, idx, axis))
    idx = np.array([[[0, 1]]])
    _eq(jnp.take_along_axis(a, idx, axis=2), np.take_along_axis(a, idx, axis=2))
    _eq(jnp.take(a, np.array([[0, 2]]), axis=1), np.take(a, np.array([[0, 2]]), axis=1))
    _eq(jnp.take(a, np.array([7, 3])), np.take(a, np.array([7, 3])))
    with pytest.raises(ValueError, match="same number of dimensions"):
        jnp.take_along_axis(a, np.zeros((2, 2), np.int32), 0)


def test_nonzero_family():
    a = np.array([[0, 1, 0], [2, 0, 3]])
    _eq(jnp.nonzero(a)[0], np.nonzero(a)[0])
    _eq(jnp.nonzero(a)[1], np.nonzero(a)[1])
    _eq(jnp.flatnonzero(a), np.flatnonzero(a))
    _eq(jnp.argwhere(a), np.argwhere(a))
    f = minijax.jit(lambda v: jnp.nonzero(v, size=4, fill_value=-1))
    rows, cols = f(a)
    _eq(rows, np.array([0, 1, 1, -1]))
    _eq(cols, np.array([1, 0, 2, -1]))
    rows, _ = minijax.jit(lambda v: jnp.nonzero(v, size=2))(a)
    _eq(rows, np.array([0, 1]))
    with pytest.raises(minijax.errors.ConcretizationTypeError, match="size"):
        minijax.jit(jnp.nonzero)(a)
    with pytest.raises(ValueError, match="0d"):
        jnp.nonzero(np.float32(1))


def test_vmap_indexing():
    from minijax.test_util import check_vmap
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    check_vmap(lambda r: r[np.array([0, 5, 2])] + r[1:4].sum(), (x,))
    check_vmap(lambda r, i: r[i], (x, np.array([0, 5, 2, 1])))
    check_vmap(lambda r, i: jnp.asarray(r).at[i].add(1.0), (x, np.array([0, 5, 2, 1])))
