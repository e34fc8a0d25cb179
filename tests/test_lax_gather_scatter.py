"""lax.gather and the scatter family against a Python-loop reference written from XLA's
operation semantics; gradients by finite differences, vmap against a loop, lowered HLO
against eager, and the error messages."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minijax
from minijax import lax
from minijax.lax.gather_scatter import gather_p, scatter_add_p
from minijax.test_util import check_grads, check_vmap
from minijax.test_util import evaluate_lowered as lowered

GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers
MODES = [lax.GatherScatterMode.CLIP, lax.GatherScatterMode.FILL_OR_DROP,
         lax.GatherScatterMode.PROMISE_IN_BOUNDS]





# --------------------------------------------------------------------------- references


def _window_dims(ndim, removed, batching):
    return [d for d in range(ndim) if d not in removed and d not in batching]


def _start(shape, vec, batch_idx, start_map, op_batch, idx_batch, sizes, clamp):
    """Full window start in operand coordinates; `clamp` clamps like XLA/CLIP."""
    start = [0] * len(shape)
    for k, d in enumerate(start_map):
        v = int(vec[k])
        start[d] = min(max(v, 0), shape[d] - sizes[d]) if clamp else v
    for o, i in zip(op_batch, idx_batch):
        start[o] = batch_idx[i]
    return start


def ref_gather(operand, indices, dn, slice_sizes, mode, fill_value):
    operand, indices = np.asarray(operand), np.asarray(indices)
    window = _window_dims(operand.ndim, dn.collapsed_slice_dims, dn.operand_batching_dims)
    out_rank = len(dn.offset_dims) + indices.ndim - 1
    batch_out = [p for p in range(out_rank) if p not in dn.offset_dims]
    shape, bi, oi = [], iter(indices.shape[:-1]), iter(slice_sizes[d] for d in window)
    for p in range(out_rank):
        shape.append(next(oi) if p in dn.offset_dims else next(bi))
    out = np.zeros(shape, operand.dtype)
    for out_idx in np.ndindex(*shape):
        batch_idx = [out_idx[p] for p in batch_out]
        vec = indices[tuple(batch_idx)]
        raw = _start(operand.shape, vec, batch_idx, dn.start_index_map,
                     dn.operand_batching_dims, dn.start_indices_batching_dims, slice_sizes,
                     False)
        in_bounds = all(0 <= raw[d] <= operand.shape[d] - slice_sizes[d]
                        for d in dn.start_index_map)
        if mode == lax.GatherScatterMode.FILL_OR_DROP and not in_bounds:
            out[out_idx] = fill_value
            continue
        start = _start(operand.shape, vec, batch_idx, dn.start_index_map,
                       dn.operand_batching_dims, dn.start_indices_batching_dims, slice_sizes,
                       True)
        full = list(start)
        for k, d in enumerate(window):
            full[d] += out_idx[dn.offset_dims[k]]
        out[out_idx] = operand[tuple(full)]
    return out


COMBINE = {
    "scatter": lambda a, b: b, "scatter_add": lambda a, b: a + b,
    "scatter_mul": lambda a, b: a * b, "scatter_min": min, "scatter_max": max,
}


def ref_scatter(kind, operand, indices, updates, dn, mode):
    operand, indices, updates = map(np.asarray, (operand, indices, updates))
    out = operand.copy()
    window = _window_dims(operand.ndim, dn.inserted_window_dims, dn.operand_batching_dims)
    extent = [1] * operand.ndim
    for k, d in enumerate(window):
        extent[d] = updates.shape[dn.update_window_dims[k]]
    scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    for u_idx in np.ndindex(*updates.shape):
        batch_idx = [u_idx[d] for d in scatter_dims]
        vec = indices[tuple(batch_idx)]
        start = _start(operand.shape, vec, batch_idx, dn.scatter_dims_to_operand_dims,
                       dn.operand_batching_dims, dn.scatter_indices_batching_dims, extent,
                       mode == lax.GatherScatterMode.CLIP)
        if not all(0 <= start[d] <= operand.shape[d] - extent[d] for d in range(operand.ndim)):
            continue  # XLA drops a window that does not fit
        full = list(start)
        for k, d in enumerate(window):
            full[d] += u_idx[dn.update_window_dims[k]]
        out[tuple(full)] = COMBINE[kind](out[tuple(full)], updates[u_idx])
    return out

# --------------------------------------------------------------------------- random configs


@st.composite
def gather_configs(draw):
    rank = draw(st.integers(0, 3))
    shape = [draw(st.integers(0, 4)) for _ in range(rank)]
    dims = list(range(rank))
    op_batch, idx_batch = [], []
    n_batch_idx = draw(st.integers(0, 2))
    batch_shape = [draw(st.integers(0, 3)) for _ in range(n_batch_idx)]
    if n_batch_idx and dims and draw(st.booleans()):
        o = draw(st.sampled_from(dims))
        i = draw(st.integers(0, n_batch_idx - 1))
        op_batch, idx_batch = [o], [i]
        batch_shape[i] = shape[o]
    free = [d for d in dims if d not in op_batch]
    start_map = draw(st.permutations(free))[:draw(st.integers(0, len(free)))]
    collapsed = sorted(d for d in free if shape[d] >= 1 and draw(st.booleans()))
    sizes = []
    for d in dims:
        if d in collapsed or d in op_batch:
            sizes.append(1 if shape[d] else 0)
        else:
            sizes.append(draw(st.integers(0, shape[d])))
    window = _window_dims(rank, collapsed, op_batch)
    out_rank = len(window) + n_batch_idx
    offset = sorted(draw(st.permutations(range(out_rank)))[:len(window)])
    lo = [-2] * len(start_map)
    hi = [shape[d] + 2 for d in start_map]
    idx_shape = tuple(batch_shape) + (len(start_map),)
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    indices = (rng.integers(np.array(lo or [0]), np.array(hi or [1]),
                            size=idx_shape[:-1] + (max(len(start_map), 1),))
               [..., :len(start_map)].astype(np.int32))
    operand = rng.standard_normal(shape).astype(np.float32)
    dn = GDN(tuple(offset), tuple(collapsed), tuple(start_map), tuple(op_batch),
             tuple(idx_batch))
    return operand, indices, dn, tuple(sizes)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gather_configs(), st.sampled_from(MODES))
def test_gather_matches_loop_reference(config, mode):
    operand, indices, dn, sizes = config
    got = lax.gather(operand, indices, dn, sizes, mode=mode, fill_value=-7.0
                     if mode == lax.GatherScatterMode.FILL_OR_DROP else None)
    want = ref_gather(operand, indices, dn, sizes, mode, -7.0)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)


def scatter_config_from(gather_config):
    """Turn a gather configuration into the scatter that writes the same windows."""
    operand, indices, dn, sizes = gather_config
    out_shape = gather_p.abstract_eval(
        minijax.core.get_aval(operand), minijax.core.get_aval(indices), dimension_numbers=dn,
        slice_sizes=sizes, unique_indices=False, indices_are_sorted=False,
        mode=lax.GatherScatterMode.CLIP, fill_value=None).shape
    sdn = SDN(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
              dn.operand_batching_dims, dn.start_indices_batching_dims)
    updates = np.random.default_rng(len(out_shape)).standard_normal(out_shape)
    return operand, indices, updates.astype(np.float32), sdn


SCATTERS = {"scatter": lax.scatter, "scatter_add": lax.scatter_add,
            "scatter_mul": lax.scatter_mul, "scatter_min": lax.scatter_min,
            "scatter_max": lax.scatter_max}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gather_configs(), st.sampled_from(MODES), st.sampled_from(sorted(SCATTERS)))
def test_scatter_matches_loop_reference(config, mode, kind):
    operand, indices, updates, sdn = scatter_config_from(config)
    got = SCATTERS[kind](operand, indices, updates, sdn, mode=mode)
    want = ref_scatter(kind, operand, indices, updates, sdn, mode)
    if kind == "scatter":
        # Which of several updates to one position wins is unspecified: compare the rest.
        writes = ref_scatter("scatter_add", np.zeros_like(operand), indices,
                             np.ones_like(updates), sdn, mode)
        got, want = np.where(writes > 1, 0, got), np.where(writes > 1, 0, want)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gather_configs(), st.sampled_from(MODES))
def test_lowered_gather_and_scatter_add_match_eager(config, mode):
    operand, indices, dn, sizes = config

    def f(x, i):
        return lax.gather(x, i, dn, sizes, mode=mode)
    want = np.asarray(f(operand, indices))
    np.testing.assert_array_equal(lowered(f, operand, indices)[0], want)
    operand, indices, updates, sdn = scatter_config_from(config)

    def g(x, i, u):
        return lax.scatter_add(x, i, u, sdn, mode=mode)
    want = np.asarray(g(operand, indices, updates))
    np.testing.assert_allclose(lowered(g, operand, indices, updates)[0], want, rtol=1e-6)

# --------------------------------------------------------------------------- fixed examples

ROWS = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
ROWS_S = SDN(update_window_dims=(1,), inserted_window_dims=(0,),
             scatter_dims_to_operand_dims=(0,))


def test_gather_default_mode_and_fill_values():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0], [5]], np.int32)
    # lax.gather defaults to PROMISE_IN_BOUNDS, which clamps like XLA.
    np.testing.assert_array_equal(lax.gather(x, idx, ROWS, (1, 4)), x[[0, 2]])
    filled = np.asarray(lax.gather(x, idx, ROWS, (1, 4), mode="fill"))
    assert np.isnan(filled[1]).all() and (filled[0] == x[0]).all()
    for dtype, fill in [(np.int32, np.iinfo(np.int32).min), (np.uint8, 255), (np.bool_, True)]:
        out = np.asarray(lax.gather(x.astype(dtype), idx, ROWS, (1, 4), mode="fill"))
        assert (out[1] == fill).all() and out.dtype == dtype
    clipped = lax.gather(x, np.array([[-3]], np.int32), ROWS, (1, 4), mode="clip")
    np.testing.assert_array_equal(clipped, x[:1])


def test_scatter_default_mode_drops_out_of_bounds():
    x = np.zeros((3, 2), np.float32)
    idx = np.array([[1], [3], [-1]], np.int32)
    out = lax.scatter_add(x, idx, np.ones((3, 2), np.float32), ROWS_S)
    np.testing.assert_array_equal(out, [[0, 0], [1, 1], [0, 0]])
    clipped = lax.scatter_add(x, idx, np.ones((3, 2), np.float32), ROWS_S, mode="clip")
    np.testing.assert_array_equal(clipped, [[1, 1], [1, 1], [1, 1]])


def test_scatter_repeated_indices_combine():
    x = np.full((3,), 2.0, np.float32)
    dn = SDN(update_window_dims=(), inserted_window_dims=(0,),
             scatter_dims_to_operand_dims=(0,))
    idx = np.array([[0], [0], [2]], np.int32)
    upd = np.array([3.0, 5.0, -1.0], np.float32)
    np.testing.assert_array_equal(lax.scatter_add(x, idx, upd, dn), [10, 2, 1])
    np.testing.assert_array_equal(lax.scatter_mul(x, idx, upd, dn), [30, 2, -2])
    np.testing.assert_array_equal(lax.scatter_min(x, idx, upd, dn), [2, 2, -1])
    np.testing.assert_array_equal(lax.scatter_max(x, idx, upd, dn), [5, 2, 2])
    np.testing.assert_array_equal(lax.scatter_sub(x, idx, upd, dn), [-6, 2, 3])
    nan = lax.scatter_max(x, idx, np.array([np.nan, 1, 1], np.float32), dn)
    assert np.isnan(np.asarray(nan)[0])
    ints = lax.scatter_add(np.array([2**31 - 1], np.int32), np.array([[0]], np.int32),
                           np.array([1], np.int32), dn)
    assert int(np.asarray(ints)[0]) == -2**31  # wraps like XLA


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", sorted(SCATTERS))
def test_lowered_scatters_match_eager(kind, mode):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    # out of bounds on both sides; repeats only where the combiner is order-independent
    idx = np.array([[0], [3], [7], [-1]] if kind == "scatter" else
                   [[0], [3], [3], [7], [-1]], np.int32)
    u = rng.standard_normal((len(idx), 2)).astype(np.float32)

    def f(x, i, u):
        return SCATTERS[kind](x, i, u, ROWS_S, mode=mode)
    want = np.asarray(f(x, idx, u))
    np.testing.assert_allclose(lowered(f, x, idx, u)[0], want, rtol=1e-6)
    b = (np.asarray(x) > 0)
    if kind != "scatter_mul":
        got = lowered(lambda b, i, u: SCATTERS[kind](b, i, u, ROWS_S, mode=mode), b, idx,
                      np.asarray(u) > 0)[0]
        np.testing.assert_array_equal(got, np.asarray(
            SCATTERS[kind](b, idx, np.asarray(u) > 0, ROWS_S, mode=mode)))


def test_lowered_vmap_and_grad_programs_match_eager():
    x = np.random.default_rng(0).standard_normal((3, 6, 4)).astype(np.float32)
    idx = np.array([[[0], [5]], [[2], [2]], [[9], [-3]]], np.int32)

    def f(x, i):
        return lax.gather(x, i, ROWS, (1, 3), mode="clip")
    vf = minijax.vmap(f)
    np.testing.assert_allclose(lowered(vf, x, idx)[0], np.asarray(vf(x, idx)))
    gf = minijax.grad(lambda x, i: lax.reduce_sum(vf(x, i), (0, 1, 2)))
    np.testing.assert_allclose(lowered(gf, x, idx)[0], np.asarray(gf(x, idx)))


def test_gather_preserves_weak_type_and_dtype():
    x = lax.full((3,), 1.0)
    assert x.weak_type
    out = lax.gather(x, np.array([[1]], np.int32), GDN((), (0,), (0,)), (1,))
    assert out.weak_type and out.dtype == np.float32

# --------------------------------------------------------------------------- gradients


IDX = np.array([[0], [2], [2], [4]], np.int32)


@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_gather_grads(x64, mode):
    x = np.random.default_rng(0).standard_normal((5, 3))
    idx = np.array([[0], [2], [7], [2]], np.int32)
    check_grads(lambda x: lax.gather(x, idx, ROWS, (1, 3), mode=mode, fill_value=3.0), (x,), 1)
    check_grads(lambda x: lax.gather(x, IDX, ROWS, (1, 3), mode="promise_in_bounds"),
                (x,), 1)


@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
@pytest.mark.parametrize("kind", ["scatter", "scatter_add", "scatter_min", "scatter_max"])
def test_scatter_grads(x64, mode, kind):
    rng = np.random.default_rng(1)
    x, u = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    check_grads(lambda x, u: SCATTERS[kind](x, IDX, u, ROWS_S, mode=mode), (x, u), 1)


def test_scatter_unique_indices_grads(x64):
    rng = np.random.default_rng(2)
    x, u = rng.standard_normal((5, 3)), rng.standard_normal((2, 3))
    idx = np.array([[3], [1]], np.int32)
    for kind in ("scatter", "scatter_mul"):
        check_grads(lambda x, u, k=kind: SCATTERS[k](x, idx, u, ROWS_S, unique_indices=True),
                    (x, u), 1)
    check_grads(lambda x: lax.scatter_mul(x, IDX, u[:1].repeat(4, 0), ROWS_S), (x,), 1)


def test_scatter_min_max_ties_average_tangents(x64):
    dn = SDN((), (0,), (0,))
    x, u = np.array([1.0, 5.0]), np.array([1.0, 1.0])
    idx = np.array([[0], [0]], np.int32)
    _, t = minijax.jvp(lambda x, u: lax.scatter_min(x, idx, u, dn), (x, u),
                       (np.array([3.0, 1.0]), np.array([6.0, 9.0])))
    np.testing.assert_allclose(t, [(3 + 6 + 9) / 3, 1.0])


def test_scatter_mul_updates_grad_needs_unique_indices(x64):
    x, u = np.ones((5, 3)), np.ones((4, 3))
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        minijax.grad(lambda u: lax.reduce_sum(lax.scatter_mul(x, IDX, u, ROWS_S), (0, 1)))(u)


def test_gather_transpose_is_scatter_add(x64):
    x = np.ones((5, 3))
    closed = minijax.make_jaxpr(minijax.grad(
        lambda x: lax.reduce_sum(lax.gather(x, IDX, ROWS, (1, 3)), (0, 1))))(x)
    prims = [e.primitive for e in closed.eqns]
    assert scatter_add_p in prims

# --------------------------------------------------------------------------- vmap


def _axes(draw_seed, n):
    rng = np.random.default_rng(draw_seed)
    return [int(a) for a in rng.integers(0, 3, n)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
def test_gather_vmap(seed, mode):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    idx = rng.integers(-1, 6, (2, 4, 1)).astype(np.int32)
    ax_x, ax_i = _axes(seed, 2)
    xs, ids = np.moveaxis(x, 0, ax_x), np.moveaxis(idx, 0, ax_i)

    def f(x, i):
        return lax.gather(x, i, ROWS, (1, 2), mode=mode)
    for in_axes in [(ax_x, ax_i), (ax_x, None), (None, ax_i)]:
        args = (xs if in_axes[0] is not None else x[0], ids if in_axes[1] is not None
                else idx[0])
        check_vmap(f, args, in_axes=in_axes, out_axes=seed % 2)
        if in_axes[0] is not None:  # nested: inner vmap over a stack of index arrays
            check_vmap(minijax.vmap(f, in_axes=(None, 0)), (args[0], np.stack([args[1]] * 2)),
                       in_axes=(in_axes[0], None))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", sorted(SCATTERS))
def test_scatter_vmap(seed, kind):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    idx = rng.permutation(6)[:4].reshape(4, 1)
    idx = np.stack([idx, rng.permutation(6)[:4].reshape(4, 1)]).astype(np.int32)
    u = rng.standard_normal((2, 4, 3)).astype(np.float32)
    axes = _axes(seed + 10, 3)
    args = [np.moveaxis(a, 0, ax) for a, ax in zip((x, idx, u), axes)]
    for mask in itertools.product([True, False], repeat=3):
        if not any(mask):
            continue
        in_axes = tuple(ax if m else None for ax, m in zip(axes, mask))
        call = [a if m else b[0] for a, b, m in zip(args, (x, idx, u), mask)]
        check_vmap(lambda x, i, u: SCATTERS[kind](x, i, u, ROWS_S), call, in_axes=in_axes)


def test_vmap_of_grad_of_gather(x64):
    x = np.random.default_rng(3).standard_normal((3, 5, 2))

    def loss(x, i):
        return lax.reduce_sum(lax.gather(x, i, ROWS, (1, 2), mode="clip"), (0, 1))
    idx = np.array([[[0], [4]], [[1], [1]], [[9], [3]]], np.int32)
    check_vmap(minijax.grad(loss), (x, idx))

# --------------------------------------------------------------------------- errors


def test_gather_errors():
    x = np.zeros((3, 4), np.float32)
    idx = np.zeros((2, 1), np.int32)
    with pytest.raises(TypeError, match=r"gather: indices must have an integer dtype.*f32"):
        lax.gather(x, idx.astype(np.float32), ROWS, (1, 4))
    with pytest.raises(TypeError, match=r"gather: start_index_map has 2 entries.*size 1"):
        lax.gather(x, idx, GDN((1,), (0,), (0, 1)), (1, 4))
    with pytest.raises(TypeError, match=r"gather: slice_sizes \(1, 5\) must be"):
        lax.gather(x, idx, ROWS, (1, 5))
    with pytest.raises(TypeError, match=r"gather: offset_dims must have 2 entries"):
        lax.gather(x, idx, GDN((1,), (), (0,)), (1, 4))
    with pytest.raises(TypeError, match=r"gather: slice_sizes\[0\] = 2 but collapsed"):
        lax.gather(x, idx, ROWS, (2, 4))
    with pytest.raises(TypeError, match=r"gather: offset_dims \(1, 1\) must be sorted"):
        lax.gather(x, idx, GDN((1, 1), (), (0,)), (1, 4))
    with pytest.raises(TypeError, match="operand batching dimension 0 has size 3"):
        lax.gather(x, np.zeros((2, 1), np.int32), GDN((1,), (), (1,), (0,), (0,)), (1, 1))
    with pytest.raises(TypeError, match="dimension_numbers must be a lax.GatherDimension"):
        lax.gather(x, idx, ((1,), (0,), (0,)), (1, 4))
    with pytest.raises(ValueError, match='Unknown gather mode "wrap"'):
        lax.gather(x, idx, ROWS, (1, 4), mode="wrap")


def test_scatter_errors():
    x = np.zeros((3, 4), np.float32)
    idx = np.zeros((2, 1), np.int32)
    with pytest.raises(TypeError, match=r"scatter-add: updates i32\[2,4\] must have the same"):
        lax.scatter_add(x, idx, np.zeros((2, 4), np.int32), ROWS_S)
    with pytest.raises(TypeError, match=r"scatter: the scatter dimensions of updates"):
        lax.scatter(x, idx, np.zeros((3, 4), np.float32), ROWS_S)
    with pytest.raises(TypeError, match=r"scatter-max: update window dimension 1"):
        lax.scatter_max(x, idx, np.zeros((2, 5), np.float32), ROWS_S)
    with pytest.raises(TypeError, match=r"scatter-min: inserted_window_dims \(2,\) must be"):
        lax.scatter_min(x, idx, np.zeros((2, 4), np.float32), SDN((1,), (2,), (0,)))
