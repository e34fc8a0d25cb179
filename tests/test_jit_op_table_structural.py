"""The lax op table, part 2: structural ops, reductions, windows, sorting, contractions,
gather/scatter, control flow and collectives, each eager vs jit on "interpreter" and "cpu";
then fusion shapes through jit on "cpu" against NumPy.

Ops are batched per group (one jitted function returns every op's result for one input),
and the shape pools are small so hypothesis examples reuse compiled entries.
"""

import os
import re
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax as jax
from minijax import lax
from minijax.sharding import NamedSharding, PartitionSpec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_jit_op_table import (  # noqa: E402
    BACKENDS,
    BIG,
    assert_matches,
    float_values,
    int_values,
    jitted,
)

SHAPES = [(7,), (3, 4), (2, 0, 3), (3, 1, 5), (1,)]
GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers


def run_three_ways(key, fn, args, rtol=0.0, atol_scale=0.0):
    """Eager vs jit (both backends): exact, or within rtol + atol_scale * sum|args[0]|."""
    want = [np.asarray(w) for w in fn(*args)]
    a0 = np.abs(np.asarray(args[0], np.float64))
    atol = atol_scale * float(np.sum(a0[np.isfinite(a0)]) + 1.0)
    for backend in BACKENDS:
        got = jitted(key, fn, backend)(*args)
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            name = f"{key}[{k}] [{backend}]"
            if rtol == 0 or w.dtype.kind not in "fc":
                assert_matches(name, g, w)
            else:
                g = np.asarray(g)
                assert g.dtype == w.dtype and g.shape == w.shape, name
                np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)


def _structural(x, i):
    r, shape = x.ndim, x.shape
    starts = [d // 3 for d in shape]
    pads = [(1, 2, 1)] + [(-1 if d > 1 else 0, 1, 0) for d in shape[1:]]
    small = [min(d, 2) for d in shape]
    upd = lax.slice(x, [0] * r, small)
    idx = lax.clamp(np.int32(0), i, np.int32(shape[0] - 1)) if shape[0] else np.int32(0)
    return [
        lax.transpose(x, tuple(reversed(range(r)))),
        lax.transpose(x, tuple(range(1, r)) + (0,)),
        lax.rev(x, tuple(range(r))),
        lax.reshape(x, (x.size,)),
        lax.reshape(x, tuple(reversed(shape))),
        lax.broadcast_in_dim(x, (2,) + shape, tuple(range(1, r + 1))),
        lax.broadcast(x, (2,)),
        lax.slice(x, starts, shape, [2] * r),
        lax.pad(x, np.float32(-1.5), pads),
        lax.concatenate([x, lax.neg(x)], r - 1),
        lax.expand_dims(x, (0, r)),
        lax.dynamic_slice(x, [i] * r, [max(d - 1, 0) for d in shape]),
        lax.dynamic_update_slice(x, lax.mul(upd, np.float32(2)), [i] * r),
        lax.add(x, lax.convert_element_type(lax.broadcasted_iota(np.int32, shape, r - 1),
                                            np.float32)),
        lax.iota(np.int32, shape[0]),
        lax.dynamic_index_in_dim(x, idx, 0, keepdims=False) if shape[0] else x,
        lax.squeeze(lax.expand_dims(x, (1,)), (1,)),
    ]


@settings(max_examples=10, deadline=None)
@given(shape=st.sampled_from(SHAPES), i=st.sampled_from([0, 1, 5, -3]),
       seed=st.integers(0, 2**31))
def test_structural_ops(shape, i, seed):
    x = float_values(np.random.default_rng(seed), shape, np.float32)
    run_three_ways(("structural", shape), _structural, (x, np.int32(i)))


def _reductions(x):
    r = x.ndim
    outs = []
    for axes in [(a,) for a in range(r)] + [tuple(range(r)), (0, r - 1)]:
        axes = tuple(sorted(set(axes)))
        outs += [lax.reduce_sum(x, axes), lax.reduce_max(x, axes), lax.reduce_min(x, axes),
                 lax.reduce_prod(lax.clamp(np.float32(-1.5), x, np.float32(1.5)), axes)]
    for a in range(r):
        if x.shape[a] and x.size:
            outs += [lax.argmax(x, a, np.int32), lax.argmin(x, a, np.int32)]
        outs += [lax.cumsum(x, a), lax.cumsum(x, a, reverse=True), lax.cummax(x, a),
                 lax.cummin(x, a, reverse=True), lax.cumlogsumexp(x, a)]
    # a reducer lax cannot recognize as a monoid: the generic reduce with a region
    outs.append(lax.reduce(lax.abs(x), np.float32(0), lambda u, v: lax.max(v, u), (0,)))
    return outs


def _int_reductions(n, p):
    r = n.ndim
    outs = []
    for axes in [(a,) for a in range(r)] + [tuple(range(r))]:
        outs += [lax.reduce_sum(n, axes), lax.reduce_max(n, axes), lax.reduce_min(n, axes),
                 lax.reduce_prod(n, axes), lax.reduce_and(p, axes), lax.reduce_or(p, axes),
                 lax.reduce_xor(p, axes), lax.reduce_xor(n, axes)]
    outs += [lax.cumsum(n, 0), lax.cumprod(n, r - 1), lax.cummax(n, 0)]
    return outs


@settings(max_examples=10, deadline=None)
@given(shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**31))
def test_reductions_and_cumulative(shape, seed):
    rng = np.random.default_rng(seed)
    # finite values: float sums of infinities of both signs differ only in NaN order
    x = float_values(rng, shape, np.float32, "small")
    run_three_ways(("reductions", shape), _reductions, (x,), rtol=2e-5, atol_scale=1e-6)
    n = int_values(rng, shape, np.dtype(np.int32))
    run_three_ways(("int_reductions", shape), _int_reductions, (n, n % 3 == 0))


def _windows_and_sort(x):
    r = x.ndim
    ones = (1,) * r
    win = tuple(min(2, d) if d else 1 for d in x.shape)
    outs = [
        lax.reduce_window_sum(x, win, ones, "VALID"),
        lax.reduce_window_max(x, win, (2,) * r, "SAME"),
        lax.reduce_window_min(x, win, ones, [(1, 0)] * r, base_dilation=(2,) * r),
        lax.reduce_window_max(x, win, ones, [(0, 1)] * r, window_dilation=(2,) * r),
    ]
    for d in range(r):
        outs.append(lax.sort(x, dimension=d))
    outs += list(lax.sort((x, lax.neg(x)), dimension=r - 1, num_keys=1))
    outs += list(lax.sort_key_val(lax.floor(x), x, dimension=0))
    if x.shape[-1]:
        outs += list(lax.top_k(x, min(3, x.shape[-1])))
        outs += list(lax.approx_max_k(x, min(2, x.shape[-1])))
    if x.shape[0]:
        outs += list(lax.approx_min_k(x, min(2, x.shape[0]), reduction_dimension=0))
    outs.append(lax.composite(lambda v: lax.mul(v, v), "test.square")(x))
    return outs


@settings(max_examples=8, deadline=None)
@given(shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**31))
def test_windows_and_sorting(shape, seed):
    x = float_values(np.random.default_rng(seed), shape, np.float32)
    # sums of windows holding +inf and -inf: NaN in every order, so exact is fine
    run_three_ways(("windows", shape), _windows_and_sort, (x,), rtol=1e-5, atol_scale=1e-6)


def _contractions(a, b, lhs, rhs):
    return [
        lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
        lax.dot_general(b, a, (((1,), (2,)), ((0,), (0,)))),
        lax.dot_general(a, a, (((1, 2), (1, 2)), ((), ()))),
        lax.dot(a[0], b[0]),
        lax.conv_general_dilated(lhs, rhs, (1, 1), "SAME"),
        lax.conv_general_dilated(lhs, rhs, (2, 1), [(1, 0), (0, 2)], rhs_dilation=(1, 2)),
        lax.conv_general_dilated(lhs, rhs[:, :2], (1, 1), "VALID", lhs_dilation=(2, 1),
                                 feature_group_count=2),
    ]


@settings(max_examples=6, deadline=None)
@given(dims=st.sampled_from([(2, 3, 4, 5), (1, 1, 1, 1), (2, 0, 3, 4), (3, 5, 7, 2)]),
       seed=st.integers(0, 2**31))
def test_dot_and_conv(dims, seed):
    rng = np.random.default_rng(seed)
    bsz, m, k, n = dims
    a = rng.standard_normal((bsz, m, k)).astype(np.float32)
    b = rng.standard_normal((bsz, k, n)).astype(np.float32)
    if bsz == 0 or m == 0:
        return
    lhs = rng.standard_normal((bsz, 4, m + 2, k + 2)).astype(np.float32)
    rhs = rng.standard_normal((6, 4, 2, 3)).astype(np.float32)
    run_three_ways(("contractions", dims), _contractions, (a, b, lhs, rhs), rtol=1e-4,
                   atol_scale=1e-5)
    ai, bi = (int_values(rng, t.shape, np.dtype(np.int8)).astype(np.int32) for t in (a, b))
    run_three_ways(("int_dot", dims), lambda u, v: [lax.dot_general(
        u, v, (((2,), (1,)), ((0,), (0,))))], (ai, bi))


def _gather_scatter(x, idx, upd):
    r = x.ndim
    dn = GDN(offset_dims=tuple(range(1, r)), collapsed_slice_dims=(0,), start_index_map=(0,))
    sizes = (1,) + x.shape[1:]
    sdn = SDN(update_window_dims=tuple(range(1, r)), inserted_window_dims=(0,),
              scatter_dims_to_operand_dims=(0,))
    return [
        lax.gather(x, idx[:, None], dn, sizes, mode=lax.GatherScatterMode.CLIP),
        lax.gather(x, idx[:, None], dn, sizes, mode=lax.GatherScatterMode.FILL_OR_DROP,
                   fill_value=-7.0),
        lax.scatter_add(x, idx[:, None], upd, sdn, mode=lax.GatherScatterMode.FILL_OR_DROP),
        lax.scatter_mul(x, idx[:, None], upd, sdn, mode=lax.GatherScatterMode.CLIP),
        lax.scatter_max(x, idx[:, None], upd, sdn, mode=lax.GatherScatterMode.FILL_OR_DROP),
        lax.scatter_min(x, idx[:, None], upd, sdn, mode=lax.GatherScatterMode.CLIP),
        lax.scatter(x, idx[:1, None], upd[:1], sdn, mode=lax.GatherScatterMode.CLIP),
    ]


@settings(max_examples=6, deadline=None)
@given(shape=st.sampled_from([(5, 3), (7,), (4, 1, 2), (1, 3)]), seed=st.integers(0, 2**31))
def test_gather_scatter(shape, seed):
    rng = np.random.default_rng(seed)
    x = float_values(rng, shape, np.float32, "small")
    idx = rng.integers(-2, shape[0] + 2, 6).astype(np.int32)  # duplicates, out of bounds
    upd = rng.integers(-3, 4, (6,) + shape[1:]).astype(np.float32)  # exact sums
    run_three_ways(("gather", shape), _gather_scatter, (x, idx, upd))


def _control_flow(x, n, k):
    def body(i, c):
        return lax.add(lax.mul(c, np.float32(0.5)), lax.convert_element_type(i, np.float32))

    def step(c, xi):
        c = lax.add(c, xi)
        return c, lax.mul(c, xi)
    carry, ys = lax.scan(step, lax.full_like(x[0], 0.0), x)
    rcarry, rys = lax.scan(step, lax.full_like(x[0], 1.0), x, reverse=True)
    w = lax.while_loop(lambda c: lax.lt(c[0], n), lambda c: (c[0] + 1, lax.sin(c[1])),
                       (np.int32(0), x))
    return [
        lax.fori_loop(0, n, body, x),
        lax.fori_loop(0, 3, body, x),
        w[0], w[1],
        lax.cond(lax.gt(n, 2), lambda v: lax.exp(v), lambda v: lax.neg(v), x),
        lax.switch(k, [lambda v: v, lambda v: lax.mul(v, v), lambda v: lax.abs(v)], x),
        carry, ys, rcarry, rys,
        lax.map(lambda v: lax.reduce_sum(v, (0,)) if v.ndim else v, x),
        lax.associative_scan(lax.add, x, axis=0),
        lax.associative_scan(lax.max, x, axis=0, reverse=True),
        jax.vmap(lambda v: lax.psum(v, "i"), axis_name="i")(x),
        jax.vmap(lambda v: lax.pmax(v, "i"), axis_name="i")(x),
    ]


@settings(max_examples=6, deadline=None)
@given(shape=st.sampled_from([(4,), (3, 5), (1, 2)]), n=st.sampled_from([0, 1, 4]),
       k=st.sampled_from([-1, 0, 1, 2, 7]), seed=st.integers(0, 2**31))
def test_control_flow_and_collectives(shape, n, k, seed):
    x = float_values(np.random.default_rng(seed), shape, np.float32, "small")
    run_three_ways(("control", shape), _control_flow, (x, np.int32(n), np.int32(k)),
                   rtol=2e-6, atol_scale=1e-6)


def _misc(x, i, lhs, rhs):
    """The remaining exported ops: *_in_dim helpers, convs, collectives, stop_gradient."""
    n = x.shape[0]
    sdn = SDN(update_window_dims=(1,), inserted_window_dims=(0,),
              scatter_dims_to_operand_dims=(0,))
    idx = np.array([[0], [n - 1], [0]], np.int32)
    return [
        lax.zeros_like_array(x), lax.full((2, 3), 1.5, np.float32),
        lax.index_in_dim(x, n - 1, 0), lax.slice_in_dim(x, 0, n, 2, 0),
        lax.dynamic_slice_in_dim(x, i, 1, 0), lax.dynamic_index_in_dim(x, i, 1),
        lax.dynamic_update_slice_in_dim(x, lax.neg(x[:1]), i, 0),
        lax.dynamic_update_index_in_dim(x, lax.mul(x[0], np.float32(3)), i, 0),
        lax.scatter_sub(x, idx, lax.broadcast(x[0], (3,)), sdn),
        lax.stop_gradient(lax.sin(x)),
        lax.reduce_window(x, np.float32(-np.inf), lax.max, (2, 1), (1, 1), "SAME"),
        lax.conv(lhs, rhs, (1, 1), "VALID"),
        lax.conv_with_general_padding(lhs, rhs, (1, 2), [(1, 1), (0, 1)], (1, 1), (2, 1)),
        jax.vmap(lambda v: lax.pmean(v, "i"), axis_name="i")(x),
        jax.vmap(lambda v: lax.pmin(v, "i"), axis_name="i")(x),
        jax.vmap(lambda v: lax.all_gather(v, "i"), axis_name="i")(x),
        jax.vmap(lambda v: lax.ppermute(v, "i", [(k, (k + 1) % n) for k in range(n)]),
                 axis_name="i")(x),
        jax.vmap(lambda v: lax.add(v, lax.convert_element_type(lax.axis_index("i"),
                                                                np.float32)),
                 axis_name="i")(x),
        jax.vmap(lambda v: lax.psum_scatter(v, "i", tiled=True), axis_name="i")(
            lax.broadcast(x[:, 0], (n,))),
        jax.vmap(lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="i")(
            lax.mul(lax.broadcast(x[:, 0], (n,)),
                    lax.transpose(lax.broadcast(x[:, 1], (n,)), (1, 0)))),
        jax.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")(
            lax.broadcast(x[:, 2], (n,))),
        lax.with_sharding_constraint(lax.sin(x), NamedSharding(jax.make_mesh((1,), ("d",)),
                                                               PartitionSpec("d"))),
    ]


@settings(max_examples=4, deadline=None)
@given(n=st.sampled_from([1, 4]), i=st.sampled_from([0, 2, -1]), seed=st.integers(0, 2**31))
def test_remaining_exported_ops(n, i, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, (n, 3)).astype(np.float32)
    lhs = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    rhs = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    run_three_ways(("misc", n), _misc, (x, np.int32(i), lhs, rhs), rtol=1e-5,
                   atol_scale=1e-6)


_NOT_OPS = {"ConvDimensionNumbers", "Precision", "GatherDimensionNumbers",
            "ScatterDimensionNumbers", "GatherScatterMode", "RoundingMethod",
            "conv_dimension_numbers", "conv_general_permutations", "padtype_to_pads",
            "FftType", "broadcast_shapes", "AccuracyMode", "Tolerance"}


def _ffts(x):
    c = lax.complex(x, lax.neg(x))
    n = x.shape[-1]
    outs = [lax.fft(c, "FFT", (n,)), lax.fft(c, lax.FftType.IFFT, x.shape[-2:]),
            lax.fft(x, "RFFT", (n,))]
    outs.append(lax.fft(outs[-1], "IRFFT", (n,)))
    return outs


@settings(max_examples=6, deadline=None)
@given(shape=st.sampled_from([(3, 4), (2, 5), (1, 1), (2, 3, 6)]), seed=st.integers(0, 2**31))
def test_fft(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    run_three_ways(("fft", shape), _ffts, (x,), rtol=1e-5, atol_scale=1e-6)


def test_the_table_covers_every_exported_lax_op():
    here = os.path.dirname(os.path.abspath(__file__))
    source = ""
    for name in ("test_jit_op_table.py", "test_jit_op_table_structural.py"):
        with open(os.path.join(here, name)) as f:
            source += f.read()
    missing = [n for n in lax.__all__
               if n not in _NOT_OPS and not re.search(rf"lax\.{n}\b", source)]
    assert not missing, f"lax ops missing from the jit op table: {missing}"


# --------------------------------------------------------------------------- fusion shapes

def _fusion_cases(x, y, v):
    """Fusion shapes with NumPy float64 references: (jax_fn, numpy_fn) pairs."""
    e = np.float32(0.5)
    return {
        "chain": (lambda: lax.tanh(lax.add(lax.mul(x, y), lax.exp(lax.neg(lax.abs(x))))),
                  lambda x, y, v: np.tanh(x * y + np.exp(-np.abs(x)))),
        "broadcast_row": (lambda: lax.mul(x, lax.broadcast_in_dim(v, x.shape, (1,))),
                          lambda x, y, v: x * v[None, :]),
        "broadcast_col": (lambda: lax.add(x, lax.broadcast_in_dim(x[:, 0], x.shape, (0,))),
                          lambda x, y, v: x + x[:, :1]),
        "transpose": (lambda: lax.add(lax.transpose(lax.mul(x, e), (1, 0)),
                                      lax.transpose(y, (1, 0))),
                      lambda x, y, v: (x * 0.5).T + y.T),
        "sum_axis0": (lambda: lax.reduce_sum(lax.mul(x, y), (0,)),
                      lambda x, y, v: (x * y).sum(0)),
        "sum_axis1": (lambda: lax.reduce_sum(lax.mul(x, y), (1,)),
                      lambda x, y, v: (x * y).sum(1)),
        "sum_all": (lambda: lax.reduce_sum(lax.add(x, lax.mul(y, y)), (0, 1)),
                    lambda x, y, v: (x + y * y).sum()),
        "max_axis1": (lambda: lax.reduce_max(lax.sub(x, y), (1,)),
                      lambda x, y, v: (x - y).max(1, initial=-np.inf)),
        "slice": (lambda: lax.add(lax.slice(x, (0, min(1, x.shape[1])), x.shape, (1, 2)),
                                  np.float32(1)),
                  lambda x, y, v: x[:, 1::2] + 1),
        "pad": (lambda: lax.pad(lax.mul(x, y), np.float32(0), [(1, 2, 0), (0, 1, 1)]),
                lambda x, y, v: _np_pad(x * y)),
        "concat": (lambda: lax.exp(lax.concatenate([x, lax.neg(y)], 1)),
                   lambda x, y, v: np.exp(np.concatenate([x, -y], 1))),
    }


def _np_pad(a):
    out = np.zeros((a.shape[0] + 3, max(2 * a.shape[1], 1) if a.shape[1] else 1), a.dtype)
    out[1:1 + a.shape[0], : 2 * a.shape[1] - 1 if a.shape[1] else 0:2] = a
    return out


def _multi_output(x):
    return [lax.reduce_sum(x, (1,)), lax.reduce_max(x, (1,)), lax.mul(x, np.float32(2)),
            lax.reduce_sum(lax.mul(x, x), (0, 1))]


@settings(max_examples=8, deadline=None)
@given(shape=st.sampled_from([(1, 1), (3, 5), (0, 4), (4, 0), (17, 9), (8, 33)]),
       seed=st.integers(0, 2**31))
def test_fusion_shapes_on_cpu_match_numpy(shape, seed):
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    v = rng.standard_normal(shape[1]).astype(np.float32)
    x64, y64, v64 = (t.astype(np.float64) for t in (x, y, v))
    for name, (_, ref) in _fusion_cases(x, y, v).items():
        if name == "broadcast_col" and shape[1] == 0:
            continue

        def f(x, y, v, name=name):
            return _fusion_cases(x, y, v)[name][0]()
        got = np.asarray(jitted(("fusion", name), f, "cpu")(x, y, v))
        want = ref(x64, y64, v64)
        assert got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-5 * (1 + shape[0]),
                                   err_msg=name)
    got = jitted("multi", _multi_output, "cpu")(x)
    want = [x64.sum(1), x64.max(1, initial=-np.inf), 2 * x64, (x64 * x64).sum()]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=1e-5 * (1 + x.size))


def test_fusion_shapes_above_threading_threshold():
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal(BIG).astype(np.float32) for _ in range(2))
    v = rng.standard_normal(BIG[1]).astype(np.float32)
    x64, y64, v64 = (t.astype(np.float64) for t in (x, y, v))
    for name in ["chain", "transpose", "sum_axis0", "sum_axis1", "sum_all", "pad"]:
        def f(x, y, v, name=name):
            return _fusion_cases(x, y, v)[name][0]()
        got = np.asarray(jax.jit(f, backend="cpu")(x, y, v))
        np.testing.assert_allclose(got, _fusion_cases(x, y, v)[name][1](x64, y64, v64),
                                   rtol=2e-5, atol=1e-3, err_msg=name)
    got = jax.jit(_multi_output, backend="cpu")(x)
    np.testing.assert_allclose(np.asarray(got[0]), x64.sum(1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(got[3]), (x64 * x64).sum(), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_of_jit_and_python_scalars(backend):
    inner = jax.jit(lambda a, s: lax.mul(a, s), backend=backend)
    outer = jax.jit(lambda a: inner(lax.add(a, 1.0), 2.0), backend=backend)
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(outer(x)), (x + 1) * 2)
    assert outer(x).dtype == np.float32


# --------------------------------------------------------------------------- newer lax names

def _newer_ops(x, m, lhs, rhs):
    """lax functions added with JAX's later API: each eager vs jit on both backends."""
    pos = lax.add(lax.abs(x), np.float32(0.5))
    unit = lax.div(pos, lax.add(pos, np.float32(1)))
    spd = lax.add(lax.dot(m, lax.transpose(m, (1, 0))), lax.mul(np.float32(3),
                  lax.convert_element_type(lax.eq(lax.broadcasted_iota(np.int32, (3, 3), 0),
                                                  lax.broadcasted_iota(np.int32, (3, 3), 1)),
                                           np.float32)))
    b = x[:, 0]

    def newton_sqrt(f, guess):        # solve f(y) = y^2 - pos = 0 by a fixed Newton count
        return lax.fori_loop(0, 20, lambda _, y: lax.sub(y, lax.div(f(y), lax.mul(
            np.float32(2), y))), guess)

    ints = lax.convert_element_type(lax.mul(x, np.float32(1000)), np.int32)
    return [
        jax.vmap(lambda v: lax.mul(v, np.float32(lax.axis_size("i"))), axis_name="i")(x),
        lax.optimization_barrier((lax.sin(x), lax.cos(x)))[1],
        lax.broadcast_to_rank(x, 4),
        lax.collapse(lhs, 1, 3),
        lax.full_like(lax.empty(x.shape, np.float32), 1.5),     # contents unspecified
        lax.mulhi(ints, lax.mul(ints, np.int32(77777))),
        *lax.split(lhs, (1, 2), axis=1),
        lax.batch_matmul(lhs, lax.transpose(lhs, (0, 1, 3, 2))),
        lax.conv_general_dilated_patches(lhs, (2, 2), (1, 1), "VALID"),
        lax.conv_transpose(lhs, rhs, (2, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")),
        lax.custom_linear_solve(lambda v: lax.dot(spd, v), b,
                                lambda mv, r: lax.dot(_inverse3(spd), r), symmetric=True),
        lax.custom_root(lambda y: lax.sub(lax.mul(y, y), pos), pos, newton_sqrt,
                        lambda g, y: lax.div(y, np.float32(2))),
        lax.bessel_i0e(x), lax.bessel_i1e(x),
        lax.betainc(pos, lax.add(pos, np.float32(1)), unit),
        lax.igamma(pos, pos), lax.igammac(pos, pos),
        lax.polygamma(np.float32(1), pos), lax.zeta(lax.add(pos, np.float32(1.5)), pos),
    ]


def _inverse3(a):
    """The inverse of a 3x3 matrix by its adjugate (lax ops only)."""
    def c(i, j):
        return a[i % 3, j % 3]
    rows = []
    for i in range(3):
        rows.append([lax.sub(lax.mul(c(j + 1, i + 1), c(j + 2, i + 2)),
                             lax.mul(c(j + 1, i + 2), c(j + 2, i + 1))) for j in range(3)])
    adj = lax.concatenate([lax.broadcast_in_dim(lax.concatenate(
        [lax.broadcast_in_dim(v, (1,), ()) for v in row], 0), (1, 3), (1,)) for row in rows], 0)
    det = lax.reduce_sum(lax.mul(a[0], adj[:, 0]), (0,))
    return lax.div(adj, det)


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_newer_exported_ops(seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    m = rng.standard_normal((3, 3)).astype(np.float32)
    lhs = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    rhs = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    run_three_ways(("newer",), _newer_ops, (x, m, lhs, rhs), rtol=2e-5, atol_scale=1e-6)
