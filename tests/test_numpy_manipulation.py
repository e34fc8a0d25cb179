"""Shape manipulation vs NumPy (hypothesis shapes incl. 0-size and scalars), error paths,
and jit/vmap/grad of the structural functions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minijax
import minijax.numpy as jnp
from minijax.test_util import check_grads, check_vmap

SETTINGS = settings(max_examples=15, deadline=None)
shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)


def _eq(got, want):
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _eq(g, w)
        return
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_array_equal(got, want)


def _arr(shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


@SETTINGS
@given(shape=shapes, data=st.data())
def test_reshape_transpose_family(shape, data):
    x = _arr(shape)
    ndim = len(shape)
    _eq(jnp.reshape(x, (-1,)), x.reshape(-1))
    _eq(jnp.reshape(x, shape[::-1], order="F"), x.reshape(shape[::-1], order="F"))
    _eq(jnp.ravel(x, order="F"), x.ravel(order="F"))
    perm = data.draw(st.permutations(range(ndim)))
    _eq(jnp.transpose(x, perm), np.transpose(x, perm))
    _eq(jnp.transpose(x), x.T)
    src = data.draw(st.integers(-ndim, ndim - 1))
    dst = data.draw(st.integers(-ndim, ndim - 1))
    _eq(jnp.moveaxis(x, src, dst), np.moveaxis(x, src, dst))
    _eq(jnp.swapaxes(x, src, dst), np.swapaxes(x, src, dst))
    ax = data.draw(st.integers(-ndim - 1, ndim))
    _eq(jnp.expand_dims(x, ax), np.expand_dims(x, ax))
    _eq(jnp.squeeze(jnp.expand_dims(x, ax)), np.squeeze(np.expand_dims(x, ax)))
    _eq(jnp.atleast_3d(x), np.atleast_3d(x))
    _eq(jnp.flip(x, src), np.flip(x, src))
    _eq(jnp.flip(x), np.flip(x))


def test_reshape_errors():
    x = np.ones((2, 3))
    with pytest.raises(TypeError, match="cannot reshape"):
        jnp.reshape(x, (4, 2))
    with pytest.raises(TypeError, match="one unknown"):  # JAX's error class
        jnp.reshape(x, (-1, -1))
    with pytest.raises(ValueError, match="squeeze"):
        jnp.squeeze(x, 0)
    with pytest.raises(np.exceptions.AxisError):
        jnp.moveaxis(x, 2, 0)
    with pytest.raises(TypeError, match=r"isn't a permutation.*\(0, 0\).*\(2, 3\)"):
        jnp.transpose(x, (0, 0))


def test_broadcasting():
    _eq(jnp.broadcast_to(np.arange(3), (2, 3)), np.broadcast_to(np.arange(3), (2, 3)))
    _eq(jnp.broadcast_arrays(np.ones((2, 1)), np.ones(3)),
        np.broadcast_arrays(np.ones((2, 1)), np.ones(3)))
    assert jnp.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
    with pytest.raises(ValueError, match="Incompatible shapes"):
        jnp.broadcast_to(np.ones(3), (2, 4))
    with pytest.raises(ValueError, match="Incompatible shapes"):
        jnp.broadcast_shapes((2,), (3,))
    _eq(jnp.atleast_1d(1.0), np.atleast_1d(1.0))
    _eq(jnp.atleast_2d(np.ones(3)), np.atleast_2d(np.ones(3)))


@SETTINGS
@given(shape=shapes, n=st.integers(1, 3), data=st.data())
def test_joining(shape, n, data):
    arrays = [_arr(shape) + i for i in range(n)]
    ndim = len(shape)
    ax = data.draw(st.integers(-ndim, ndim - 1))
    _eq(jnp.concatenate(arrays, ax), np.concatenate(arrays, ax))
    _eq(jnp.concatenate(arrays, axis=None), np.concatenate(arrays, axis=None))
    sax = data.draw(st.integers(-ndim - 1, ndim))
    _eq(jnp.stack(arrays, sax), np.stack(arrays, sax))
    _eq(jnp.vstack(arrays), np.vstack(arrays))
    _eq(jnp.hstack(arrays), np.hstack(arrays))
    _eq(jnp.dstack(arrays), np.dstack(arrays))
    _eq(jnp.append(arrays[0], arrays[-1]), np.append(arrays[0], arrays[-1]))


def test_joining_promotes_and_errors():
    out = jnp.concatenate([np.ones(2, np.int32), np.ones(2, np.float32)])
    assert out.dtype == np.float32
    _eq(jnp.column_stack([np.arange(3), np.arange(3)]),
        np.column_stack([np.arange(3), np.arange(3)]))
    with pytest.raises(ValueError, match="Zero-dimensional"):
        jnp.concatenate([np.float32(1), np.float32(2)])
    with pytest.raises(TypeError, match=r"differ in dimensions.*\(2, 3\), \(3, 2\)"):
        jnp.concatenate([np.ones((2, 3)), np.ones((3, 2))])
    with pytest.raises(ValueError, match="same shape"):
        jnp.stack([np.ones(2), np.ones(3)])


@SETTINGS
@given(n=st.integers(0, 9), sections=st.integers(1, 4),
       idx=st.lists(st.integers(-10, 10), max_size=3))
def test_split(n, sections, idx):
    x = _arr((n, 2)).T
    _eq(jnp.array_split(x, sections, axis=1), np.array_split(x, sections, axis=1))
    _eq(jnp.split(x, sorted(idx), axis=-1), np.split(x, sorted(idx), axis=-1))
    if n % sections == 0:
        _eq(jnp.split(x, sections, axis=1), np.split(x, sections, axis=1))
    else:
        with pytest.raises(ValueError, match="equal division"):
            jnp.split(x, sections, axis=1)


@SETTINGS
@given(shape=shapes, reps=st.lists(st.integers(0, 3), min_size=1, max_size=4),
       r=st.integers(0, 3))
def test_tile_repeat(shape, reps, r):
    x = _arr(shape)
    _eq(jnp.tile(x, reps), np.tile(x, reps))
    _eq(jnp.tile(x, r), np.tile(x, r))
    _eq(jnp.repeat(x, r), np.repeat(x, r))
    _eq(jnp.repeat(x, r, axis=-1), np.repeat(x, r, axis=-1))
    counts = np.arange(shape[0]) % 3
    _eq(jnp.repeat(x, counts, axis=0), np.repeat(x, counts, axis=0))


def test_repeat_under_jit():
    f = minijax.jit(lambda x, r: jnp.repeat(x, r, total_repeat_length=7))
    _eq(f(np.arange(4), np.array([2, 0, 3, 2])), np.repeat(np.arange(4), [2, 0, 3, 2]))
    g = minijax.jit(lambda x: jnp.repeat(x, 2, total_repeat_length=5))
    _eq(g(np.arange(3)), np.repeat(np.arange(3), 2)[:5])
    with pytest.raises(minijax.errors.ConcretizationTypeError, match="total_repeat_length"):
        minijax.jit(lambda x, r: jnp.repeat(x, r))(np.arange(3), np.array([1, 1, 1]))
    with pytest.raises(ValueError, match="negative"):
        jnp.repeat(np.arange(3), -1)


@SETTINGS
@given(shape=shapes, shift=st.integers(-7, 7), data=st.data())
def test_roll_rot90(shape, shift, data):
    x = _arr(shape)
    ndim = len(shape)
    ax = data.draw(st.integers(-ndim, ndim - 1))
    _eq(jnp.roll(x, shift), np.roll(x, shift))
    _eq(jnp.roll(x, shift, axis=ax), np.roll(x, shift, axis=ax))
    _eq(jnp.roll(x, (shift, 1), axis=(ax, 0)), np.roll(x, (shift, 1), axis=(ax, 0)))
    if ndim >= 2:
        k = data.draw(st.integers(-5, 5))
        _eq(jnp.rot90(x, k), np.rot90(x, k))
        _eq(jnp.rot90(x, k, axes=(1, 0)), np.rot90(x, k, axes=(1, 0)))
        _eq(jnp.fliplr(x), np.fliplr(x))
    _eq(jnp.flipud(x), np.flipud(x))


def test_roll_traced_shift():
    f = minijax.jit(lambda x, s: jnp.roll(x, s, axis=1))
    x = _arr((2, 5))
    for s in (-7, -1, 0, 3, 12):
        _eq(f(x, s), np.roll(x, s, axis=1))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
@SETTINGS
@given(shape=hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4), data=st.data())
def test_pad_modes(mode, shape, data):
    x = _arr(shape)
    widths = [(data.draw(st.integers(0, 6)), data.draw(st.integers(0, 6))) for _ in shape]
    _eq(jnp.pad(x, widths, mode=mode), np.pad(x, widths, mode=mode))
    w = data.draw(st.integers(0, 3))
    _eq(jnp.pad(x, w, mode=mode), np.pad(x, w, mode=mode))


def test_pad_forms_and_errors():
    x = _arr((2, 3))
    _eq(jnp.pad(x, (1, 2), constant_values=(5, 6)), np.pad(x, (1, 2), constant_values=(5, 6)))
    _eq(jnp.pad(x, ((1, 0), (0, 2)), constant_values=((1, 2), (3, 4))),
        np.pad(x, ((1, 0), (0, 2)), constant_values=((1, 2), (3, 4))))
    _eq(jnp.pad(x, [[1, 1]]), np.pad(x, [[1, 1]]))
    with pytest.raises(ValueError, match="negative"):
        jnp.pad(x, -1)
    with pytest.raises(ValueError, match="not supported"):
        jnp.pad(x, 1, mode="bogus")
    with pytest.raises(ValueError, match="empty axis"):
        jnp.pad(np.ones((0, 2)), 1, mode="edge")




def test_grads_and_vmap(x64):
    x = np.random.default_rng(0).standard_normal((3, 4))
    check_grads(lambda a: jnp.pad(a, ((1, 2), (2, 1)), mode="reflect") ** 2, (x,), order=1)
    check_grads(lambda a: jnp.roll(jnp.tile(a, (2, 1)), 3, axis=0), (x,), order=1)
    check_grads(lambda a: jnp.concatenate([a, a[::-1]], axis=1).sum(0), (x,), order=1)
    check_vmap(lambda a: jnp.stack([jnp.flip(a), jnp.roll(a, 1)]), (x,))
    check_vmap(lambda a: jnp.repeat(a, 2, axis=0), (x,), in_axes=1)
