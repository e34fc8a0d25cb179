"""Structural and slicing lax primitives against NumPy: values (hypothesis shapes, incl.
zero-size), gradients by finite differences, vmap against a loop, lowered HLO against
eager, and the error messages."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minijax
from minijax import lax
from minijax.lax.structural import concatenate_p
from minijax.test_util import check_grads, check_vmap
from minijax.test_util import evaluate_lowered as lowered

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])






def assert_same(got, want):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "f":  # -0.0 must stay -0.0
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


shapes = st.lists(st.integers(0, 4), min_size=1, max_size=4).map(tuple)


def arr(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)

# --------------------------------------------------------------------------- reference pad


def ref_pad(x, pv, config):
    """XLA Pad written element by element: element i of a dim lands at lo + i*(interior+1)."""
    out_shape = [lo + hi + n + max(n - 1, 0) * it for n, (lo, hi, it) in zip(x.shape, config)]
    out = np.full(out_shape, pv, x.dtype)
    for idx in np.ndindex(*x.shape):
        pos = [lo + i * (it + 1) for i, (lo, _, it) in zip(idx, config)]
        if all(0 <= p < n for p, n in zip(pos, out_shape)):
            out[tuple(pos)] = x[idx]
    return out

# --------------------------------------------------------------------------- values


@SETTINGS
@given(shapes, st.data())
def test_slice_matches_numpy(shape, data):
    x = arr(shape)
    start = [data.draw(st.integers(0, n)) for n in shape]
    limit = [data.draw(st.integers(s, n)) for s, n in zip(start, shape)]
    strides = [data.draw(st.integers(1, 3)) for _ in shape]
    want = x[tuple(slice(s, lim, st_) for s, lim, st_ in zip(start, limit, strides))]
    assert_same(lax.slice(x, start, limit, strides), want)
    assert_same(lowered(lambda x: lax.slice(x, start, limit, strides), x)[0], want)


def test_slice_in_dim_and_index_in_dim():
    x = arr((4, 5))
    assert_same(lax.slice_in_dim(x, 1, None, 2, axis=1), x[:, 1::2])
    assert_same(lax.slice_in_dim(x, -3, -1, axis=0), x[-3:-1])
    assert_same(lax.index_in_dim(x, -1, 1), x[:, -1:])
    assert_same(lax.index_in_dim(x, 2, 0, keepdims=False), x[2])


@SETTINGS
@given(shapes, st.data())
def test_pad_matches_elementwise_reference(shape, data):
    x = arr(shape)
    config = []
    for n in shape:
        it = data.draw(st.integers(0, 2))
        size = n + max(n - 1, 0) * it
        lo = data.draw(st.integers(-size, 3))
        hi = data.draw(st.integers(-(size + lo) if size + lo > 0 else 0, 3))
        config.append((lo, hi, it))
    want = ref_pad(x, np.float32(-2.5), config)
    assert_same(lax.pad(x, np.float32(-2.5), config), want)
    assert_same(lowered(lambda x: lax.pad(x, np.float32(-2.5), config), x)[0], want)


def test_pad_weak_scalar_and_int():
    x = np.arange(3, dtype=np.int32)
    assert_same(lax.pad(x, 7, [(1, 1, 1)]), np.array([7, 0, 7, 1, 7, 2, 7], np.int32))


@SETTINGS
@given(shapes, st.data())
def test_concatenate_matches_numpy(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    xs = []
    for k, n in enumerate(sizes):
        s = list(shape)
        s[axis] = n
        xs.append(arr(s, k))
    want = np.concatenate(xs, axis)
    assert_same(lax.concatenate(xs, axis), want)
    assert_same(lowered(lambda *xs: lax.concatenate(xs, axis), *xs)[0], want)


@SETTINGS
@given(shapes, st.data())
def test_dynamic_slice_clamps_like_xla(shape, data):
    x = arr(shape)
    sizes = [data.draw(st.integers(0, n)) for n in shape]
    starts = [data.draw(st.integers(-n - 2, n + 2)) for n in shape]
    wrapped = [s + n if s < 0 else s for s, n in zip(starts, shape)]
    clamped = [min(max(s, 0), n - k) for s, n, k in zip(wrapped, shape, sizes)]
    want = x[tuple(slice(c, c + k) for c, k in zip(clamped, sizes))]
    assert_same(lax.dynamic_slice(x, starts, sizes), want)
    idx = [np.int32(s) for s in starts]
    assert_same(lax.dynamic_slice(x, idx, sizes), want)

    def f(x, *i):
        return lax.dynamic_slice(x, i, sizes)
    assert_same(lowered(f, x, *idx)[0], want)
    # traced negative indices wrap as well (JAX's convention)
    batched = minijax.vmap(f, in_axes=(None,) + (0,) * len(shape))(
        x, *[np.array([s], np.int32) for s in starts])
    assert_same(np.asarray(batched)[0], want)


@SETTINGS
@given(shapes, st.data())
def test_dynamic_update_slice_clamps_like_xla(shape, data):
    x = arr(shape)
    ushape = [data.draw(st.integers(0, n)) for n in shape]
    u = arr(ushape, 1)
    starts = [data.draw(st.integers(-2, n + 2)) for n in shape]
    starts_nn = [s + n if s < 0 else s for s, n in zip(starts, shape)]
    want = x.copy()
    clamped = [min(max(s, 0), n - k) for s, n, k in zip(starts_nn, shape, ushape)]
    want[tuple(slice(c, c + k) for c, k in zip(clamped, ushape))] = u
    assert_same(lax.dynamic_update_slice(x, u, starts), want)
    idx = [np.int32(s) for s in starts]
    assert_same(lowered(lambda x, u, *i: lax.dynamic_update_slice(x, u, i), x, u, *idx)[0],
                want)


def test_dynamic_in_dim_helpers():
    x = arr((4, 5))
    assert_same(lax.dynamic_slice_in_dim(x, np.int32(3), 2, axis=0), x[2:4])
    assert_same(lax.dynamic_index_in_dim(x, 1, axis=1, keepdims=False), x[:, 1])
    assert_same(lax.dynamic_slice(x, np.array([1, 2], np.int32), (2, 2)), x[1:3, 2:4])
    row = np.ones(5, np.float32)
    want = x.copy()
    want[2] = row
    assert_same(lax.dynamic_update_index_in_dim(x, row, 2, 0), want)
    want = x.copy()
    want[:, 3:5] = 0
    assert_same(lax.dynamic_update_slice_in_dim(x, np.zeros((4, 2), np.float32), 4, 1), want)


def test_mixed_index_dtypes_are_unified():
    x = arr((4, 5))
    out = lax.dynamic_slice(x, (np.int64(1), 2), (1, 1))
    assert_same(out, x[1:2, 2:3])


@SETTINGS
@given(shapes, st.data())
def test_squeeze_expand_dims_rev(shape, data):
    x = arr(shape)
    ones = [i for i, n in enumerate(shape) if n == 1]
    dims = data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    assert_same(lax.squeeze(x, dims), np.squeeze(x, tuple(dims)) if dims else x)
    new = data.draw(st.lists(st.integers(-len(shape) - 1, len(shape)), unique=True,
                             max_size=2))
    canon = {d % (len(shape) + len(new)) for d in new}
    if len(canon) == len(new):
        assert_same(lax.expand_dims(x, new), np.expand_dims(x, tuple(new)))
    rdims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True))
    assert_same(lax.rev(x, rdims), np.flip(x, tuple(rdims)))
    if dims:
        assert_same(lowered(lambda x: lax.squeeze(x, dims), x)[0], np.squeeze(x, tuple(dims)))
    assert_same(lowered(lambda x: lax.rev(x, rdims), x)[0], np.flip(x, tuple(rdims)))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32, np.complex64])
def test_iota_and_broadcasted_iota(dtype):
    assert_same(lax.iota(dtype, 5), np.arange(5, dtype=dtype))
    want = np.broadcast_to(np.arange(3, dtype=dtype)[None, :, None], (2, 3, 4))
    assert_same(lax.broadcasted_iota(dtype, (2, 3, 4), 1), want)
    assert_same(lax.broadcasted_iota(dtype, (2, 3, 4), -2), want)
    assert_same(lowered(lambda: lax.broadcasted_iota(dtype, (2, 3, 4), 1))[0], want)
    assert_same(lax.iota(dtype, 0), np.zeros(0, dtype))


def test_full_full_like_zeros_like_array():
    a = lax.full((2, 3), 1.5)
    assert a.weak_type and a.dtype == np.float32
    assert_same(a, np.full((2, 3), 1.5, np.float32))
    b = lax.full((2,), 3, np.int8)
    assert not b.weak_type and b.dtype == np.int8
    x = np.ones((2, 2), np.int32)
    assert_same(lax.full_like(x, 7), np.full((2, 2), 7, np.int32))
    assert_same(lax.full_like(x, 7, np.float32, (3,)), np.full((3,), 7, np.float32))
    assert_same(lax.zeros_like_array(x), np.zeros((2, 2), np.int32))
    assert lax.full_like(a, 2).weak_type
    assert_same(lax.full((0, 2), 1.0), np.zeros((0, 2), np.float32))

@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32, np.int32, np.float16,
                                   np.float32, np.complex64])
def test_dtypes_and_edge_values_are_copied_exactly(dtype):
    if np.dtype(dtype).kind == "f":
        base = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5], dtype)
    elif np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        base = np.array([info.min, info.max, 0, 1, 2, 3], dtype)
    else:
        base = np.arange(6).astype(dtype)
    x = base.reshape(2, 3)
    pv = np.zeros((), dtype)
    funs = {
        "slice": (lambda x: lax.slice(x, (0, 1), (2, 3)), x[:, 1:]),
        "rev": (lambda x: lax.rev(x, (1,)), x[:, ::-1]),
        "concatenate": (lambda x: lax.concatenate([x, x], 0), np.concatenate([x, x])),
        "pad": (lambda x: lax.pad(x, pv, [(0, 0, 0), (0, 1, 0)]),
                np.concatenate([x, np.zeros((2, 1), dtype)], 1)),
        "dynamic_slice": (lambda x: lax.dynamic_slice(x, (np.int32(1), np.int32(1)), (1, 2)),
                          x[1:, 1:]),
        "dynamic_update_slice": (
            lambda x: lax.dynamic_update_slice(x, lax.slice(x, (0, 0), (1, 3)),
                                               (np.int32(1), np.int32(0))),
            x[[0, 0]]),
    }
    for f, want in funs.values():
        assert_same(f(x), want)
        assert_same(lowered(f, x)[0], want)


# --------------------------------------------------------------------------- gradients


def _ds(x):
    return lax.dynamic_slice(x, (1, np.int32(2), -1), (2, 2, 3))


def _dus(x):
    return lax.dynamic_update_slice(x, lax.mul(lax.slice(x, (0, 0, 0), (2, 2, 2)), 3.0),
                                    (2, 1, -1))


def _scalar_of(x):
    return lax.reshape(lax.slice(x, (0, 0, 0), (1, 1, 1)), ())


LINEAR_FUNS = {
    "slice": lambda x: lax.slice(x, (0, 1, 1), (3, 4, 5), (2, 1, 3)),
    "pad": lambda x: lax.pad(x, 1.5, [(1, -1, 1), (0, 2, 0), (-2, 1, 2)]),
    "pad_value": lambda x: lax.pad(x, lax.mul(_scalar_of(x), 2.0),
                                   [(1, -1, 1), (-4, 2, 0), (-2, -1, 2)]),
    "rev": lambda x: lax.rev(x, (0, 2)),
    "squeeze": lambda x: lax.squeeze(lax.slice(x, (0, 0, 0), (1, 4, 5)), (0,)),
    "expand_dims": lambda x: lax.expand_dims(x, (0, 3)),
    "concatenate": lambda x: lax.concatenate([x, lax.mul(x, x), x], 1),
    "dynamic_slice": _ds,
    "dynamic_update_slice": _dus,
    "broadcast_in_dim": lambda x: lax.broadcast_in_dim(
        lax.slice(x, (0, 0, 0), (3, 1, 5)), (2, 3, 4, 5), (1, 2, 3)),
    "transpose": lambda x: lax.transpose(x, (2, 0, 1)),
    "reshape": lambda x: lax.reshape(x, (5, 12)),
    "full_like": lambda x: lax.add(x, lax.full_like(x, 2.0)),
}


@pytest.mark.parametrize("name", sorted(LINEAR_FUNS))
def test_grads(x64, name):
    x = arr((3, 4, 5), 3, np.float64)
    check_grads(LINEAR_FUNS[name], (x,), 1)


@pytest.mark.parametrize("name", sorted(LINEAR_FUNS))
@pytest.mark.parametrize("axis", [0, 1, 3])
def test_vmap(name, axis):
    x = arr((2, 3, 4, 5), 4)
    check_vmap(LINEAR_FUNS[name], (np.moveaxis(x, 0, axis),), in_axes=axis,
               out_axes=axis % 2)


def test_grad_of_zero_size_slice(x64):
    x = arr((3, 4), 0, np.float64)
    g = minijax.grad(lambda x: lax.reduce_sum(lax.mul(lax.slice(x, (1, 0), (1, 4)), 2.0),
                                              (0, 1)))(x)
    assert_same(g, np.zeros((3, 4)))


def test_pad_value_gradient_counts_padding(x64):
    g = minijax.grad(lambda v: lax.reduce_sum(
        lax.pad(np.ones((3,)), v, [(2, -1, 1)]), (0,)))(1.0)
    # output: [v, v, 1, v, 1, v]  (the last 1 cropped): four copies of v
    assert float(g) == 4.0


def test_dynamic_slice_index_grads_are_zero(x64):
    x = arr((5,), 0, np.float64)
    g = minijax.grad(lambda x, i: lax.reduce_sum(lax.dynamic_slice(x, (i,), (2,)), (0,)))(
        x, np.int32(4))
    assert_same(g, np.array([0, 0, 0, 1, 1.0]))

# --------------------------------------------------------------------------- vmap with batched
# indices and values


@pytest.mark.parametrize("seed", range(4))
def test_dynamic_slice_vmap_batched_indices(seed):
    rng = np.random.default_rng(seed)
    x = arr((3, 6, 5), seed)
    i = rng.integers(-7, 8, (3,)).astype(np.int32)
    j = rng.integers(-2, 8, (3,)).astype(np.int32)

    def f(x, i, j):
        return lax.dynamic_slice(x, (i, j), (2, 3))
    axes = [int(a) for a in rng.integers(0, 3, 1)]
    xs = np.moveaxis(x, 0, axes[0])
    for in_axes in [(axes[0], 0, 0), (None, 0, None), (axes[0], None, 0), (axes[0], None, None)]:
        args = [xs if in_axes[0] is not None else x[0], i if in_axes[1] is not None else i[0],
                j if in_axes[2] is not None else j[0]]
        check_vmap(f, args, in_axes=in_axes)


@pytest.mark.parametrize("seed", range(4))
def test_dynamic_update_slice_vmap_batched_indices(seed):
    rng = np.random.default_rng(seed)
    x, u = arr((3, 6, 5), seed), arr((3, 2, 3), seed + 1)
    i = rng.integers(-7, 8, (3,)).astype(np.int32)

    def f(x, u, i):
        return lax.dynamic_update_slice(x, u, (i, np.int32(1)))
    for in_axes in [(0, 0, 0), (None, 0, 0), (0, None, 0), (None, None, 0), (2, 1, None),
                    (None, 2, None)]:
        args = [np.moveaxis(a, 0, ax) if ax is not None else a[0]
                for a, ax in zip((x, u, i), in_axes)]
        check_vmap(f, args, in_axes=in_axes)


def test_lowered_batched_dynamic_slice_and_update():
    rng = np.random.default_rng(0)
    x, u = arr((3, 6, 5), 0), arr((3, 2, 3), 1)
    i = rng.integers(-7, 8, (3,)).astype(np.int32)
    ds = minijax.vmap(lambda x, i: lax.dynamic_slice(x, (i, np.int32(4)), (2, 3)))
    assert_same(lowered(ds, x, i)[0], np.asarray(ds(x, i)))
    dus = minijax.vmap(lambda x, u, i: lax.dynamic_update_slice(x, u, (np.int32(1), i)))
    assert_same(lowered(dus, x, u, i)[0], np.asarray(dus(x, u, i)))
    pad = minijax.vmap(lambda x, v: lax.pad(x, v, [(1, -2, 1), (0, 1, 0)]))
    v = arr((3,), 2)
    assert_same(lowered(pad, x, v)[0], np.asarray(pad(x, v)))


def test_pad_vmap_batched_padding_value():
    x, v = arr((3, 4), 0), arr((3,), 1)
    f = lambda x, v: lax.pad(x, v, [(1, -1, 2)])  # noqa: E731
    check_vmap(f, (x, v), in_axes=(0, 0))
    check_vmap(f, (x[0], v), in_axes=(None, 0))


def test_concatenate_vmap_mixed():
    x, y = arr((2, 3), 0), arr((4, 2, 3), 1)
    check_vmap(lambda x, y: lax.concatenate([x, y, x], 0), (x, y), in_axes=(None, 1))

# --------------------------------------------------------------------------- errors


def test_slice_errors():
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(TypeError, match=r"slice start_indices \(0,\) and limit_indices"):
        lax.slice(x, (0,), (1,))
    with pytest.raises(TypeError, match="slice limit_indices must be less than or equal"):
        lax.slice(x, (0, 0), (4, 4))
    with pytest.raises(TypeError, match="greater than or equal to start_indices"):
        lax.slice(x, (2, 0), (1, 4))
    with pytest.raises(TypeError, match="slice start_indices must be greater than or equal"):
        lax.slice(x, (-1, 0), (1, 4))
    with pytest.raises(TypeError, match="slice strides must be positive"):
        lax.slice(x, (0, 0), (1, 4), (0, 1))
    with pytest.raises(IndexError, match="index_in_dim: index 3 is out of bounds"):
        lax.index_in_dim(x, 3)


def test_dynamic_slice_errors():
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(TypeError, match="dynamic_slice: got 1 start indices for an operand"):
        lax.dynamic_slice(x, (0,), (1, 1))
    with pytest.raises(TypeError, match=r"dynamic_slice: slice_sizes \(4, 1\) must be"):
        lax.dynamic_slice(x, (0, 0), (4, 1))
    with pytest.raises(TypeError, match="start indices must be integer scalars"):
        lax.dynamic_slice(x, (np.float32(0), 0), (1, 1))
    with pytest.raises(TypeError, match=r"dynamic_update_slice: update f32\[4,1\] must not"):
        lax.dynamic_update_slice(x, np.zeros((4, 1), np.float32), (0, 0))
    with pytest.raises(TypeError, match=r"dynamic_update_slice: update i32\[1,1\] must have"):
        lax.dynamic_update_slice(x, np.zeros((1, 1), np.int32), (0, 0))
    with pytest.raises(TypeError, match="must have the same rank"):
        lax.dynamic_update_slice(x, np.zeros((1,), np.float32), (0, 0))


def test_concatenate_errors():
    a, b = np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32)
    with pytest.raises(TypeError, match="concatenate requires a non-empty sequence"):
        concatenate_p.bind(dimension=0)
    with pytest.raises(TypeError, match=r"shapes that differ.*f32\[2,3\], f32\[2,4\]"):
        lax.concatenate([a, b], 0)
    with pytest.raises(TypeError, match="different numbers of dimensions"):
        lax.concatenate([a, np.zeros(3, np.float32)], 0)
    with pytest.raises(TypeError, match="different dtypes"):
        lax.concatenate([a, a.astype(np.int32)], 0)
    with pytest.raises(TypeError, match="dimension out of bounds"):
        lax.concatenate([a, a], 2)


def test_pad_errors():
    x = np.zeros((3,), np.float32)
    with pytest.raises(TypeError, match="pad: padding_value must be a scalar"):
        lax.pad(x, np.zeros(1, np.float32), [(0, 0, 0)])
    with pytest.raises(TypeError, match="pad: operand and padding_value must have the same"):
        lax.pad(x, np.int32(0), [(0, 0, 0)])
    with pytest.raises(TypeError, match="pad: cannot combine a Python float with an int32"):
        lax.pad(x.astype(np.int32), 1.5, [(0, 0, 0)])
    with pytest.raises(TypeError, match="interior padding .* must be non-negative"):
        lax.pad(x, 0.0, [(0, 0, -1)])
    with pytest.raises(TypeError, match="dimension size after padding is negative"):
        lax.pad(x, 0.0, [(-2, -2, 0)])
    with pytest.raises(TypeError, match="one \\(low, high, interior\\) entry per dimension"):
        lax.pad(x, 0.0, [(0, 0, 0), (0, 0, 0)])


def test_shape_op_errors():
    x = np.zeros((2, 1), np.float32)
    with pytest.raises(ValueError, match="cannot select an axis to squeeze out"):
        lax.squeeze(x, (0,))
    with pytest.raises(ValueError, match="squeeze: axis 2 is out of bounds"):
        lax.squeeze(x, (2,))
    with pytest.raises(ValueError, match="repeated axis in lax.expand_dims"):
        lax.expand_dims(x, (1, -3))
    with pytest.raises(TypeError, match=r"rev dimensions must be unique"):
        lax.rev(x, (0, 0))
    with pytest.raises(TypeError, match=r"rev dimensions must be in \[0, ndim\)"):
        lax.rev(x, (2,))
    with pytest.raises(ValueError, match="iota dimension must be between 0 and len"):
        lax.broadcasted_iota(np.int32, (2, 3), 2)
    with pytest.raises(TypeError, match="iota does not accept dtype bool"):
        lax.iota(np.bool_, 3)
    with pytest.raises(TypeError, match="full must be called with scalar fill_value"):
        lax.full((2,), np.ones(2))
