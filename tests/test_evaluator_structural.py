"""The HLO evaluator's shape, reduction, window, linear-algebra, indexing, sort and control
flow opcodes against independent references written as explicit Python loops here."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minijax.compiler.evaluator import (
    EvaluatorError,
    evaluate_instruction,
    evaluate_module,
    register_custom_call,
)
from minijax.compiler.hlo.ir import Instruction, Shape, element_type_of
from minijax.compiler.hlo.parser import parse_module

SETTINGS = settings(max_examples=30, deadline=None)
rng = np.random.default_rng(0)


def ts(dtype, shape) -> str:
    return f"{element_type_of(np.dtype(dtype))}[{','.join(map(str, shape))}]"


def run(lines: str, args, comps: str = ""):
    """Evaluate an entry whose parameters p0.. come from args and whose last line is ROOT."""
    args = [np.asarray(a) for a in args]
    params = "\n".join(f"  p{i} = {ts(a.dtype, a.shape)} parameter({i})"
                       for i, a in enumerate(args))
    body = [ln.strip() for ln in lines.strip().splitlines()]
    body[-1] = "ROOT " + body[-1]
    text = f"HloModule t\n{comps}\nENTRY e {{\n{params}\n  " + "\n  ".join(body) + "\n}\n"
    out = evaluate_module(parse_module(text), args)
    return out[0] if len(out) == 1 else out


ADD_F32 = ("add_f {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
           " ROOT s = f32[] add(a, b)\n}\n")
ADD_S32 = ("add_i {\n a = s32[] parameter(0)\n b = s32[] parameter(1)\n"
           " ROOT s = s32[] add(a, b)\n}\n")
MAX_F32 = ("max_f {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
           " ROOT s = f32[] maximum(a, b)\n}\n")
GE_F32 = ("ge_f {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
          " ROOT s = pred[] compare(a, b), direction=GE\n}\n")


# ------------------------------------------------------------------------- shape opcodes


def test_iota_broadcast_reshape_transpose():
    got = run("r = s32[2,3] iota(), iota_dimension=1", [])
    np.testing.assert_array_equal(got, [[0, 1, 2], [0, 1, 2]])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = run("r = f32[3,4,2] broadcast(p0), dimensions={2,0}", [x])
    want = np.empty((3, 4, 2), np.float32)
    for i, j, k in np.ndindex(3, 4, 2):
        want[i, j, k] = x[k, i]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(run("r = f32[3,2] reshape(p0)", [x]),
                                  [[0, 1], [2, 3], [4, 5]])
    y = rng.standard_normal((2, 3, 4)).astype(np.float32)
    got = run("r = f32[4,2,3] transpose(p0), dimensions={2,0,1}", [y])
    for i, j, k in np.ndindex(4, 2, 3):
        assert got[i, j, k] == y[j, k, i]
    s = run("r = f32[] constant(2.5)\n b = f32[0,3] broadcast(r), dimensions={}", [])
    assert s.shape == (0, 3) and s.dtype == np.float32


def test_slice_concat_reverse():
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    got = run("r = s32[2,2] slice(p0), slice={[1:4:2], [0:5:3]}", [x])
    np.testing.assert_array_equal(got, [[5, 8], [15, 18]])
    got = run("r = s32[4,10] concatenate(p0, p0), dimensions={1}", [x])
    np.testing.assert_array_equal(got[:, 5:], x)
    got = run("r = s32[4,5] reverse(p0), dimensions={0,1}", [x])
    np.testing.assert_array_equal(got, [[x[3 - i, 4 - j] for j in range(5)] for i in range(4)])


@SETTINGS
@given(n=st.integers(0, 5), lo=st.integers(-3, 3), hi=st.integers(-3, 3),
       interior=st.integers(0, 2))
def test_pad_negative_and_interior(n, lo, hi, interior):
    dilated = (n - 1) * (interior + 1) + 1 if n else 0
    size = lo + dilated + hi
    if size < 0:
        return
    x = np.arange(1, n + 1, dtype=np.float32)
    got = run(f"v = f32[] constant(-1)\n r = f32[{size}] pad(p0, v), "
              f"padding={lo}_{hi}_{interior}", [x])
    want = []
    for pos in range(size):
        q = pos - lo  # position in the interior-padded array
        if 0 <= q < dilated and q % (interior + 1) == 0:
            want.append(x[q // (interior + 1)])
        else:
            want.append(-1.0)
    np.testing.assert_array_equal(got, np.array(want, np.float32))


def test_dynamic_slice_and_update_clamp():
    x = np.arange(25, dtype=np.float32).reshape(5, 5)
    for i, j in [(1, 2), (-3, 4), (9, 9), (4, -1)]:
        ci, cj = min(max(i, 0), 3), min(max(j, 0), 2)
        got = run(f"i = s32[] constant({i})\n j = s32[] constant({j})\n"
                  f" r = f32[2,3] dynamic-slice(p0, i, j), dynamic_slice_sizes={{2,3}}", [x])
        np.testing.assert_array_equal(got, x[ci:ci + 2, cj:cj + 3])
        u = -np.ones((2, 3), np.float32)
        got = run(f"i = s32[] constant({i})\n j = s32[] constant({j})\n"
                  f" r = f32[5,5] dynamic-update-slice(p0, p1, i, j)", [x, u])
        want = x.copy()
        want[ci:ci + 2, cj:cj + 3] = -1
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------- reductions


@SETTINGS
@given(data=st.data())
def test_reduce_sum_and_max(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    x = data.draw(hnp.arrays(np.int32, shape, elements=st.integers(-2**31, 2**31 - 1)))
    kept = [d for d in range(len(shape)) if d not in dims]
    out_shape = [shape[d] for d in kept]
    dim_s = ",".join(map(str, dims))
    got = run(f"z = s32[] constant(7)\n r = {ts(np.int32, out_shape)} reduce(p0, z), "
              f"dimensions={{{dim_s}}}, to_apply=add_i", [x], ADD_S32)
    want = np.full(out_shape, 7, dtype=np.int64)
    for idx in np.ndindex(*shape):
        want[tuple(idx[d] for d in kept)] += int(x[idx])
    want = ((want + 2**31) % 2**32 - 2**31).astype(np.int32)  # wrapping sum
    np.testing.assert_array_equal(got, want)


def test_reduce_float_nan_and_empty():
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, -1.0, 0.0]], np.float32)
    got = run("z = f32[] constant(-inf)\n r = f32[2] reduce(p0, z), dimensions={1}, "
              "to_apply=max_f", [x], MAX_F32)
    np.testing.assert_array_equal(got, [np.nan, 0.0])
    e = np.zeros((3, 0), np.float32)
    got = run("z = f32[] constant(5)\n r = f32[3] reduce(p0, z), dimensions={1}, "
              "to_apply=add_f", [e], ADD_F32)
    np.testing.assert_array_equal(got, [5, 5, 5])


ARGMAX = """argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT
  eq = pred[] compare(v0, v1), direction=EQ
  lt = pred[] compare(i0, i1), direction=LT
  tie = pred[] and(eq, lt)
  first = pred[] or(gt, tie)
  v = f32[] select(first, v0, v1)
  i = s32[] select(first, i0, i1)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
"""


@SETTINGS
@given(data=st.data())
def test_variadic_reduce_argmax(data):
    rows, cols = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 9))
    x = data.draw(hnp.arrays(np.float32, (rows, cols), elements=st.sampled_from(
        [0.0, 1.0, 2.0, -1.0])))
    idx = np.broadcast_to(np.arange(cols, dtype=np.int32), (rows, cols)).copy()
    vals, args = run("a = f32[] constant(-inf)\n b = s32[] constant(0)\n"
                     f" r = (f32[{rows}], s32[{rows}]) reduce(p0, p1, a, b), dimensions={{1}}, "
                     "to_apply=argmax\n"
                     f" gv = f32[{rows}] get-tuple-element(r), index=0\n"
                     f" gi = s32[{rows}] get-tuple-element(r), index=1\n"
                     f" t = (f32[{rows}], s32[{rows}]) tuple(gv, gi)", [x, idx], ARGMAX)
    for r in range(rows):
        best = max(range(cols), key=lambda c: (x[r, c], -c))
        assert vals[r] == x[r, best] and args[r] == best


def window_reference(x, init, fn, size, stride, pad, lhs_dil=None, rhs_dil=None):
    rank = x.ndim
    lhs_dil = lhs_dil or (1,) * rank
    rhs_dil = rhs_dil or (1,) * rank
    base = [(n - 1) * d + 1 if n else 0 for n, d in zip(x.shape, lhs_dil)]
    padded = [b + lo + hi for b, (lo, hi) in zip(base, pad)]
    span = [(k - 1) * d + 1 for k, d in zip(size, rhs_dil)]
    out_shape = [max((p - s) // st + 1, 0) if p >= s else 0
                 for p, s, st in zip(padded, span, stride)]
    out = np.empty(out_shape, x.dtype)
    for o in np.ndindex(*out_shape):
        acc = init
        for w in np.ndindex(*size):
            pos = [oi * s + wi * d - lo for oi, s, wi, d, (lo, _) in
                   zip(o, stride, w, rhs_dil, pad)]
            if all(0 <= p < b and p % ld == 0 for p, b, ld in zip(pos, base, lhs_dil)):
                acc = fn(acc, x[tuple(p // ld for p, ld in zip(pos, lhs_dil))])
        out[o] = acc
    return out


@SETTINGS
@given(data=st.data())
def test_reduce_window(data):
    rank = 2
    shape = data.draw(hnp.array_shapes(min_dims=rank, max_dims=rank, min_side=0, max_side=5))
    size = data.draw(st.tuples(*[st.integers(1, 3)] * rank))
    stride = data.draw(st.tuples(*[st.integers(1, 2)] * rank))
    pad = data.draw(st.tuples(*[st.tuples(st.integers(0, 2), st.integers(0, 2))] * rank))
    lhs = data.draw(st.tuples(*[st.integers(1, 2)] * rank))
    rhs = data.draw(st.tuples(*[st.integers(1, 2)] * rank))
    x = rng.standard_normal(shape).astype(np.float32)
    want = window_reference(x, np.float32(-np.inf), max, size, stride, pad, lhs, rhs)
    fmt = lambda v: "x".join(map(str, v))  # noqa: E731
    window = (f"size={fmt(size)} stride={fmt(stride)} "
              f"pad={'x'.join(f'{a}_{b}' for a, b in pad)} lhs_dilate={fmt(lhs)} "
              f"rhs_dilate={fmt(rhs)}")
    got = run(f"z = f32[] constant(-inf)\n r = {ts(np.float32, want.shape)} "
              f"reduce-window(p0, z), window={{{window}}}, to_apply=max_f", [x], MAX_F32)
    np.testing.assert_array_equal(got, want)


def test_select_and_scatter_maxpool_grad():
    x = np.array([[1, 5, 2, 2], [3, 4, 2, 7], [0, 0, 9, 1], [8, 8, 1, 1]], np.float32)
    src = np.array([[10, 20], [30, 40]], np.float32)
    got = run("z = f32[] constant(0)\n r = f32[4,4] select-and-scatter(p0, p1, z), "
              "window={size=2x2 stride=2x2}, select=ge_f, scatter=add_f", [x, src],
              GE_F32 + ADD_F32)
    want = np.zeros((4, 4), np.float32)
    for bi, bj in np.ndindex(2, 2):
        best = None
        for i, j in itertools.product(range(2), range(2)):
            pos = (2 * bi + i, 2 * bj + j)
            if best is None or not x[best] >= x[pos]:
                best = pos
        want[best] += src[bi, bj]
    np.testing.assert_array_equal(got, want)
    # overlapping windows scatter twice into the same element
    x1 = np.array([1, 9, 1, 1], np.float32)
    got = run("z = f32[] constant(0)\n r = f32[4] select-and-scatter(p0, p1, z), "
              "window={size=2 stride=1}, select=ge_f, scatter=add_f",
              [x1, np.array([1, 2, 4], np.float32)], GE_F32 + ADD_F32)
    np.testing.assert_array_equal(got, [0, 3, 4, 0])


# ------------------------------------------------------------------------ dot, conv


def test_dot_general_batch_and_int_wrap():
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((2, 5, 3)).astype(np.float32)
    got = run("r = f32[2,4,5] dot(p0, p1), lhs_batch_dims={0}, rhs_batch_dims={0}, "
              "lhs_contracting_dims={1}, rhs_contracting_dims={2}", [a, b])
    want = np.zeros((2, 4, 5))
    for n, i, j, k in np.ndindex(2, 4, 5, 3):
        want[n, i, j] += float(a[n, k, i]) * float(b[n, j, k])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    x = np.full((2, 3), 100, np.int8)
    got = run("r = s32[2,2] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
              [x, x.T.copy()])
    np.testing.assert_array_equal(got, np.full((2, 2), 30000))
    got = run("r = s8[2,2] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
              [x, x.T.copy()])
    np.testing.assert_array_equal(got, np.full((2, 2), (30000 + 128) % 256 - 128))


def conv_reference(lhs, rhs, stride, pad, lhs_dil, rhs_dil, groups):
    """NHWC input, HWIO kernel, NHWC output, by definition."""
    n, h, w, c = lhs.shape
    kh, kw, ci, co = rhs.shape
    base = [(h - 1) * lhs_dil[0] + 1, (w - 1) * lhs_dil[1] + 1]
    padded = [base[0] + sum(pad[0]), base[1] + sum(pad[1])]
    span = [(kh - 1) * rhs_dil[0] + 1, (kw - 1) * rhs_dil[1] + 1]
    oh, ow = [(p - s) // st + 1 if p >= s else 0 for p, s, st in zip(padded, span, stride)]
    out = np.zeros((n, oh, ow, co))
    per_out = co // groups
    for b, y, x, o in np.ndindex(n, oh, ow, co):
        g = o // per_out
        for dy, dx, i in np.ndindex(kh, kw, ci):
            py = y * stride[0] + dy * rhs_dil[0] - pad[0][0]
            px = x * stride[1] + dx * rhs_dil[1] - pad[1][0]
            if 0 <= py < base[0] and 0 <= px < base[1] and py % lhs_dil[0] == 0 \
                    and px % lhs_dil[1] == 0:
                out[b, y, x, o] += (lhs[b, py // lhs_dil[0], px // lhs_dil[1], g * ci + i]
                                    * rhs[dy, dx, i, o])
    return out


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_convolution(data):
    groups = data.draw(st.sampled_from([1, 2]))
    ci, co = data.draw(st.integers(1, 2)), groups * data.draw(st.integers(1, 2))
    n, h, w = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 5)), data.draw(
        st.integers(1, 5))
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    stride = data.draw(st.tuples(st.integers(1, 2), st.integers(1, 2)))
    pad = data.draw(st.tuples(*[st.tuples(st.integers(-1, 2), st.integers(0, 2))] * 2))
    lhs_dil = data.draw(st.tuples(st.integers(1, 2), st.integers(1, 2)))
    rhs_dil = data.draw(st.tuples(st.integers(1, 2), st.integers(1, 2)))
    lhs = rng.standard_normal((n, h, w, ci * groups)).astype(np.float32)
    rhs = rng.standard_normal((kh, kw, ci, co)).astype(np.float32)
    want = conv_reference(lhs, rhs, stride, pad, lhs_dil, rhs_dil, groups)
    if min(want.shape) < 0 or any(a < 0 for (a, _) in pad):
        if any((s - 1) * 1 + 1 + lo + hi < 0 for s, (lo, hi) in zip((h, w), pad)):
            return
    window = (f"size={kh}x{kw} stride={stride[0]}x{stride[1]} "
              f"pad={pad[0][0]}_{pad[0][1]}x{pad[1][0]}_{pad[1][1]} "
              f"lhs_dilate={lhs_dil[0]}x{lhs_dil[1]} rhs_dilate={rhs_dil[0]}x{rhs_dil[1]}")
    got = run(f"r = {ts(np.float32, want.shape)} convolution(p0, p1), window={{{window}}}, "
              f"dim_labels=b01f_01io->b01f, feature_group_count={groups}", [lhs, rhs])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_convolution_batch_groups():
    # batch_group_count=2: output feature o uses lhs batch group o // (O/2) (group-major).
    lhs = rng.standard_normal((4, 5, 3)).astype(np.float32)  # b, 0, f
    rhs = rng.standard_normal((2, 3, 4)).astype(np.float32)  # 0, i, o
    got = run("r = f32[2,4,4] convolution(p0, p1), window={size=2}, dim_labels=b0f_0io->b0f, "
              "batch_group_count=2", [lhs, rhs])
    want = np.zeros((2, 4, 4))
    for b, x, o in np.ndindex(2, 4, 4):
        g = o // 2
        for k, i in np.ndindex(2, 3):
            want[b, x, o] += lhs[g * 2 + b, x + k, i] * rhs[k, i, o]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------- gather/scatter


def test_gather_rows_with_clamping():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([0, 3, 7, -2], np.int32)
    got = run("r = f32[4,3] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, "
              "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}", [x, idx])
    np.testing.assert_array_equal(got, x[[0, 3, 3, 0]])


@SETTINGS
@given(data=st.data())
def test_gather_windows(data):
    x = rng.standard_normal((5, 6)).astype(np.float32)
    nidx = data.draw(st.integers(0, 4))
    idx = data.draw(hnp.arrays(np.int32, (nidx, 2), elements=st.integers(-3, 8)))
    sizes = (data.draw(st.integers(1, 5)), data.draw(st.integers(1, 6)))
    got = run(f"r = f32[{nidx},{sizes[0]},{sizes[1]}] gather(p0, p1), offset_dims={{1,2}}, "
              f"collapsed_slice_dims={{}}, start_index_map={{0,1}}, index_vector_dim=1, "
              f"slice_sizes={{{sizes[0]},{sizes[1]}}}", [x, idx])
    for n in range(nidx):
        i0 = min(max(int(idx[n, 0]), 0), 5 - sizes[0])
        i1 = min(max(int(idx[n, 1]), 0), 6 - sizes[1])
        np.testing.assert_array_equal(got[n], x[i0:i0 + sizes[0], i1:i1 + sizes[1]])


def test_gather_batching_dims():
    x = rng.standard_normal((3, 5)).astype(np.float32)
    idx = np.array([[4], [0], [2]], np.int32)
    got = run("r = f32[3] gather(p0, p1), offset_dims={}, collapsed_slice_dims={1}, "
              "start_index_map={1}, operand_batching_dims={0}, "
              "start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}",
              [x, idx])
    np.testing.assert_array_equal(got, [x[0, 4], x[1, 0], x[2, 2]])


def test_scatter_add_duplicates_and_out_of_bounds():
    x = np.zeros((4, 2), np.int32)
    idx = np.array([1, 1, 3, 4, -1, 0], np.int32)
    upd = np.arange(12, dtype=np.int32).reshape(6, 2)
    got = run("r = s32[4,2] scatter(p0, p1, p2), update_window_dims={1}, "
              "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
              "index_vector_dim=1, to_apply=add_i", [x, idx, upd], ADD_S32)
    want = np.zeros((4, 2), np.int64)
    for n, i in enumerate(idx):
        if 0 <= i < 4:
            want[i] += upd[n]
    np.testing.assert_array_equal(got, want)


def test_scatter_window_partially_out_of_bounds_is_skipped():
    x = np.zeros(6, np.float32)
    idx = np.array([[0], [4], [2]], np.int32)
    upd = np.ones((3, 3), np.float32) * np.array([[1], [10], [100]], np.float32)
    got = run("r = f32[6] scatter(p0, p1, p2), update_window_dims={1}, "
              "inserted_window_dims={}, scatter_dims_to_operand_dims={0}, "
              "index_vector_dim=1, to_apply=add_f", [x, idx, upd], ADD_F32)
    np.testing.assert_array_equal(got, [1, 1, 101, 100, 100, 0])


def test_scatter_generic_combiner_in_order():
    # combiner a*2+b is not commutative: updates to one element apply in order.
    comb = ("comb {\n a = s32[] parameter(0)\n b = s32[] parameter(1)\n"
            " two = s32[] constant(2)\n m = s32[] multiply(a, two)\n"
            " ROOT s = s32[] add(m, b)\n}\n")
    x = np.array([1, 0], np.int32)
    idx = np.array([0, 0, 1, 0], np.int32)
    upd = np.array([3, 5, 7, 11], np.int32)
    got = run("r = s32[2] scatter(p0, p1, p2), update_window_dims={}, "
              "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
              "index_vector_dim=1, to_apply=comb", [x, idx, upd], comb)
    want = x.astype(np.int64).copy()
    for i, u in zip(idx, upd):
        want[i] = want[i] * 2 + u
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------------- sort


LT_TOTAL = ("lt {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
            " ROOT c = pred[] compare(a, b), direction=LT, type=TOTALORDER\n}\n")


def test_sort_total_order_descending_and_stable():
    x = np.array([3.0, np.nan, -0.0, 0.0, -np.inf, 1.0, -np.nan], np.float32)
    got = run("r = f32[7] sort(p0), dimensions={0}, is_stable=true, to_apply=lt", [x], LT_TOTAL)
    want = [-np.nan, -np.inf, -0.0, 0.0, 1.0, 3.0, np.nan]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.array(want, np.float32)))
    gt = ("gt {\n a = s32[] parameter(0)\n b = s32[] parameter(1)\n i = s32[] parameter(2)\n"
          " j = s32[] parameter(3)\n ROOT c = pred[] compare(a, b), direction=GT\n}\n")
    k = np.array([[1, 3, 1, 3, 2]], np.int32)
    v = np.array([[0, 1, 2, 3, 4]], np.int32)
    keys, vals = run("r = (s32[1,5], s32[1,5]) sort(p0, p1), dimensions={1}, is_stable=true, "
                     "to_apply=gt", [k, v], gt)
    np.testing.assert_array_equal(keys, [[3, 3, 2, 1, 1]])
    np.testing.assert_array_equal(vals, [[1, 3, 4, 0, 2]])


LEX = """lex {
  a0 = s32[] parameter(0)
  b0 = s32[] parameter(1)
  a1 = f32[] parameter(2)
  b1 = f32[] parameter(3)
  lt0 = pred[] compare(a0, b0), direction=LT
  eq0 = pred[] compare(a0, b0), direction=EQ
  gt1 = pred[] compare(a1, b1), direction=GT
  both = pred[] and(eq0, gt1)
  ROOT r = pred[] or(lt0, both)
}
"""


@SETTINGS
@given(data=st.data())
def test_sort_lexicographic_comparator(data):
    rows, n = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 8))
    a = data.draw(hnp.arrays(np.int32, (rows, n), elements=st.integers(0, 2)))
    b = data.draw(hnp.arrays(np.float32, (rows, n), elements=st.sampled_from([0.0, 1.0, 2.0])))
    ka, kb = run(f"r = (s32[{rows},{n}], f32[{rows},{n}]) sort(p0, p1), dimensions={{1}}, "
                 "is_stable=true, to_apply=lex", [a, b], LEX)
    for r in range(rows):
        order = sorted(range(n), key=lambda i: (a[r, i], -b[r, i], i))
        np.testing.assert_array_equal(ka[r], a[r, order])
        np.testing.assert_array_equal(kb[r], b[r, order])


# --------------------------------------------------------------------------- control flow


COND = ("cond {\n s = (s32[], f32[3]) parameter(0)\n i = s32[] get-tuple-element(s), index=0\n"
        " n = s32[] constant(5)\n ROOT c = pred[] compare(i, n), direction=LT\n}\n")
BODY = ("body {\n s = (s32[], f32[3]) parameter(0)\n i = s32[] get-tuple-element(s), index=0\n"
        " x = f32[3] get-tuple-element(s), index=1\n one = s32[] constant(1)\n"
        " j = s32[] add(i, one)\n y = f32[3] add(x, x)\n"
        " ROOT t = (s32[], f32[3]) tuple(j, y)\n}\n")


def test_while_loop():
    x = np.array([1.0, -2.0, 0.5], np.float32)
    i, y = run("z = s32[] constant(0)\n s = (s32[], f32[3]) tuple(z, p0)\n"
               " w = (s32[], f32[3]) while(s), condition=cond, body=body\n"
               " a = s32[] get-tuple-element(w), index=0\n"
               " b = f32[3] get-tuple-element(w), index=1\n"
               " t = (s32[], f32[3]) tuple(a, b)", [x], COND + BODY)
    assert int(i) == 5
    np.testing.assert_array_equal(y, x * 32)


BRANCHES = "".join(f"br{k} {{\n x = f32[] parameter(0)\n c = f32[] constant({k + 1})\n"
                   f" ROOT r = f32[] multiply(x, c)\n}}\n" for k in range(3))


@pytest.mark.parametrize("index,factor", [(0, 1), (1, 2), (2, 3), (7, 3), (-1, 3)])
def test_conditional_index(index, factor):
    got = run(f"i = s32[] constant({index})\n r = f32[] conditional(i, p0, p0, p0), "
              "branch_computations={br0, br1, br2}", [np.float32(2.0)], BRANCHES)
    assert got == 2.0 * factor


def test_conditional_pred_call_map_fusion():
    for pred, want in [("true", 2.0), ("false", 4.0)]:
        got = run(f"c = pred[] constant({pred})\n r = f32[] conditional(c, p0, p0), "
                  "true_computation=br0, false_computation=br1", [np.float32(2.0)], BRANCHES)
        assert got == want
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(run("r = f32[2] map(p0, p0), dimensions={0}, to_apply=add_f",
                                      [x], ADD_F32), [2.0, 4.0])
    assert run("r = f32[] call(p0), to_apply=br2", [np.float32(2.0)], BRANCHES) == 6.0
    fused = ("fused {\n a = f32[2] parameter(0)\n b = f32[2] parameter(1)\n"
             " ROOT m = f32[2] multiply(a, b)\n}\n")
    np.testing.assert_array_equal(run("r = f32[2] fusion(p0, p0), kind=kLoop, calls=fused",
                                      [x], fused), [1.0, 4.0])


def test_custom_call_error_and_registration():
    with pytest.raises(EvaluatorError, match="my_target"):
        run('r = f32[2] custom-call(p0), custom_call_target="my_target"',
            [np.zeros(2, np.float32)])
    register_custom_call("my_double", lambda ops, instr: ops[0] * 2)
    got = run('r = f32[2] custom-call(p0), custom_call_target="my_double"',
              [np.ones(2, np.float32)])
    np.testing.assert_array_equal(got, [2.0, 2.0])


def test_evaluate_instruction_and_argument_errors():
    a = Instruction("constant", Shape.array(np.float32, (2,)),
                    literal=np.array([1.0, 2.0], np.float32), name="a")
    add = Instruction("add", Shape.array(np.float32, (2,)), [a, a], name="s")
    got = evaluate_instruction(add, [a.literal, a.literal])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [2.0, 4.0])
    m = parse_module("HloModule t\nENTRY e {\n p = f32[2] parameter(0)\n"
                     " ROOT t = (f32[2]) tuple(p)\n}\n")
    with pytest.raises(EvaluatorError, match="shape"):
        evaluate_module(m, [np.zeros(3, np.float32)])
    with pytest.raises(EvaluatorError, match="takes 1 arguments"):
        evaluate_module(m, [])


# ------------------------------------------------------------------ linalg, bf16, misc


def test_cholesky_and_triangular_solve():
    m = rng.standard_normal((2, 3, 3))
    spd = (m @ np.swapaxes(m, -1, -2) + 3 * np.eye(3)).astype(np.float32)
    low = run("r = f32[2,3,3] cholesky(p0), lower=true", [spd])
    for k in range(2):
        np.testing.assert_allclose(low[k] @ low[k].T, spd[k], rtol=1e-5, atol=1e-5)
        assert np.all(np.triu(low[k], 1) == 0)
    bad = np.array([[-1.0, 0.0], [0.0, 1.0]], np.float32)
    assert np.isnan(run("r = f32[2,2] cholesky(p0), lower=true", [bad])).all()
    a = np.tril(rng.standard_normal((3, 3))).astype(np.float32) + 4 * np.eye(3, dtype=np.float32)
    b = rng.standard_normal((3, 2)).astype(np.float32)
    x = run("r = f32[3,2] triangular-solve(p0, p1), left_side=true, lower=true, "
            "transpose_a=NO_TRANSPOSE", [a, b])
    np.testing.assert_allclose(a @ x, b, rtol=1e-5, atol=1e-5)
    bt = b.T.copy()
    x = run("r = f32[2,3] triangular-solve(p0, p1), left_side=false, lower=true, "
            "transpose_a=TRANSPOSE", [a, bt])
    np.testing.assert_allclose(x @ a.T, bt, rtol=1e-5, atol=1e-5)


def test_bf16_results_are_rounded():
    x = np.array([1.0 + 2.0**-9, 3.0], np.float32)  # 1 + 2^-9 is not a bfloat16
    got = run("a = bf16[2] convert(p0)\n r = bf16[2] add(a, a)", [x])
    assert got.dtype == ml_dtypes.bfloat16  # callers see ml_dtypes' bfloat16 (as JAX's)
    np.testing.assert_array_equal(got.astype(np.float32), [2.0, 6.0])


def test_scalar_and_empty_shapes_through_a_module():
    got = run("r = f32[] add(p0, p1)", [np.float32(1.5), np.float32(2.0)])
    assert got.shape == () and got.dtype == np.float32 and got == 3.5
    e = np.zeros((0, 3), np.float32)
    got = run("r = f32[3,0] transpose(p0), dimensions={1,0}", [e])
    assert got.shape == (3, 0)


def test_float32_sum_is_accurate_and_stays_float32():
    x = np.full((1, 1 << 20), 0.1, np.float32)
    got = run("z = f32[] constant(0)\n r = f32[1] reduce(p0, z), dimensions={1}, "
              "to_apply=add_f", [x], ADD_F32)
    assert got.dtype == np.float32
    assert abs(float(got[0]) - float(np.float32(0.1)) * (1 << 20)) <= 1e-7 * (1 << 20) * 0.1


def test_rng_bit_generator_shapes_and_determinism():
    state = np.array([1, 2], np.uint64)
    text = ("r = (u64[2], u32[3,4]) rng-bit-generator(p0), algorithm=rng_default\n"
            " s = u64[2] get-tuple-element(r), index=0\n"
            " b = u32[3,4] get-tuple-element(r), index=1\n"
            " t = (u64[2], u32[3,4]) tuple(s, b)")
    s1, b1 = run(text, [state])
    s2, b2 = run(text, [state])
    assert b1.shape == (3, 4) and b1.dtype == np.uint32
    np.testing.assert_array_equal(b1, b2)
    assert not np.array_equal(s1, state)
