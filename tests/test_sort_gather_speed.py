"""Jitted sort, gather and scatter on the evaluator's fast paths: sorts by recognized
lexicographic comparators and the general merge sort, indexed-row gathers and scatters.

References: Python sorted() with explicit key tuples, NumPy indexing with the clamping and
dropping rules written out, Python loops for scatters, and the general (slow) evaluator
paths on the same inputs."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.compiler.evaluator import evaluate_module
from minijax.compiler.evaluator import indexing as evaluator_indexing
from minijax.compiler.evaluator import sort as evaluator_sort
from minijax.compiler.hlo.parser import parse_module

SETTINGS = settings(max_examples=25, deadline=None)
FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, -np.nan]
DTYPES = ["float32", "int32", "uint8", "bool"]
LENGTHS = st.sampled_from([0, 1, 2, 3, 7, 16, 33, 1500])


def draw_keys(data, dtype, shape):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    if dtype == "float32":
        pool = np.array(FLOAT_SPECIALS, np.float32)
        return pool[rng.integers(0, len(pool), shape)]
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 4, shape).astype(dtype)  # few values: many ties


def ref_key(v, zeros_tie=True):
    """lax.sort order of one element: NaNs last (any sign), -0 ties with +0 as in JAX
    (top_k's total order with zeros_tie=False: -0 before +0, a NaN with the sign bit set
    before everything)."""
    if isinstance(v, (float, np.floating)):
        if np.isnan(v):
            return (-1, 0.0, 0) if np.signbit(v) and not zeros_tie else (1, 0.0, 0)
        return (0, float(v), 0 if np.signbit(v) or zeros_tie else 1)
    return (0, int(v), 0)


def ref_lex_perm(keys):
    """Stable permutation of each row by the key tuple, via Python sorted()."""
    rows, n = keys[0].shape
    out = np.empty((rows, n), np.int64)
    for r in range(rows):
        out[r] = sorted(range(n), key=lambda i: tuple(ref_key(k[r, i]) for k in keys))
    return out


def same_bits(got, want):
    """Equal values, bit for bit (so -0 differs from 0); any NaN equals any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok].view(f"u{got.dtype.itemsize}"),
                                  want[ok].view(f"u{want.dtype.itemsize}"))


# ------------------------------------------------------------------------------- sort


@SETTINGS
@given(data=st.data(), num_keys=st.integers(1, 3), rows=st.integers(0, 3), n=LENGTHS)
def test_lax_sort_num_keys_matches_python_sorted(data, num_keys, rows, n):
    dtypes = [data.draw(st.sampled_from(DTYPES)) for _ in range(num_keys)]
    keys = [draw_keys(data, d, (rows, n)) for d in dtypes]
    iota = np.broadcast_to(np.arange(n, dtype=np.int32), (rows, n)).copy()
    fn = minijax.jit(lambda *ops: lax.sort(ops, num_keys=num_keys))
    out = fn(*keys, iota)
    perm = np.asarray(out[-1])
    np.testing.assert_array_equal(perm, ref_lex_perm(keys))
    for k, got in zip(keys, out[:-1]):
        same_bits(got, np.take_along_axis(k, perm, -1))


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(DTYPES), rows=st.integers(0, 3), n=LENGTHS,
       descending=st.booleans())
def test_jnp_sort_matches_numpy(data, dtype, rows, n, descending):
    x = draw_keys(data, dtype, (rows, n))
    got = np.asarray(minijax.jit(lambda a: jnp.sort(a, axis=-1, descending=descending))(x))
    want = np.sort(x, axis=-1)  # NaNs last; -0 and 0 compare equal (values only)
    if descending:
        want = want[..., ::-1]
    if dtype == "float32":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok], want[ok])
    else:
        np.testing.assert_array_equal(got, want)
    order = np.asarray(minijax.jit(lambda a: jnp.argsort(a, axis=-1))(x))
    np.testing.assert_array_equal(order, np.argsort(x, axis=-1, kind="stable"))


def _fast_and_slow(fn, args, monkeypatch):
    fast = [np.asarray(v) for v in minijax.tree_util.tree_leaves(fn(*args))]
    with monkeypatch.context() as m:
        m.setattr(evaluator_sort, "comparator_keys", lambda comp: None)
        slow = [np.asarray(v) for v in minijax.tree_util.tree_leaves(fn(*args))]
    return fast, slow


@settings(max_examples=20, deadline=None)
@given(data=st.data(), num_keys=st.integers(1, 3), n=st.sampled_from([0, 1, 2, 5, 8, 9, 64, 97]))
def test_recognized_comparators_agree_with_general_merge_sort(data, num_keys, n):
    dtypes = [data.draw(st.sampled_from(DTYPES)) for _ in range(num_keys)]
    keys = [draw_keys(data, d, (2, n)) for d in dtypes]
    iota = np.broadcast_to(np.arange(n, dtype=np.int32), (2, n)).copy()
    monkeypatch = pytest.MonkeyPatch()
    try:
        for fn in (minijax.jit(lambda *ops: lax.sort(ops, num_keys=num_keys)),
                   minijax.jit(lambda k0, *rest: lax.top_k(k0, min(n, 3)))):
            fast, slow = _fast_and_slow(fn, keys + [iota], monkeypatch)
            for f, s in zip(fast, slow):
                same_bits(f, s)
    finally:
        monkeypatch.undo()


def hlo_sort(comparator: str, args, out_types: str, dim: int = 1):
    params = "\n".join(f"  p{i} = {t} parameter({i})"
                       for i, t in enumerate(out_types.strip("()").split(", ")))
    names = ", ".join(f"p{i}" for i in range(len(args)))
    text = (f"HloModule t\n{comparator}\nENTRY e {{\n{params}\n"
            f"  ROOT r = {out_types} sort({names}), dimensions={{{dim}}}, is_stable=true, "
            f"to_apply=cmp\n}}\n")
    return evaluate_module(parse_module(text), [np.asarray(a) for a in args])


MIXED = """cmp {
  a0 = u8[] parameter(0)
  b0 = u8[] parameter(1)
  a1 = f32[] parameter(2)
  b1 = f32[] parameter(3)
  i = s32[] parameter(4)
  j = s32[] parameter(5)
  gt0 = pred[] compare(b0, a0), direction=LT
  eq0 = pred[] compare(b0, a0), direction=EQ
  na1 = f32[] negate(a1)
  nb1 = f32[] negate(b1)
  lt1 = pred[] compare(na1, nb1), direction=GT, type=FLOAT
  both = pred[] and(lt1, eq0)
  ROOT r = pred[] or(both, gt0)
}
"""

SUMMED = """cmp {
  a0 = s32[] parameter(0)
  b0 = s32[] parameter(1)
  a1 = s32[] parameter(2)
  b1 = s32[] parameter(3)
  s = s32[] add(a0, a1)
  t = s32[] add(b0, b1)
  ROOT r = pred[] compare(s, t), direction=LT
}
"""


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=st.sampled_from([1, 2, 3, 9, 40, 130]))
def test_hand_written_comparators(data, n):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    k0 = rng.integers(0, 3, (2, n)).astype(np.uint8)
    k1 = rng.choice(np.array([-1.0, 0.0, 2.0, np.inf], np.float32), (2, n))
    iota = np.broadcast_to(np.arange(n, dtype=np.int32), (2, n)).copy()
    types = f"(u8[2,{n}], f32[2,{n}], s32[2,{n}])"
    _, _, perm = hlo_sort(MIXED, [k0, k1, iota], types)
    # descending by k0 (b0 < a0), then ascending by k1 (-a > -b), stable.
    want = [sorted(range(n), key=lambda i: (-int(k0[r, i]), float(k1[r, i]))) for r in range(2)]
    np.testing.assert_array_equal(perm, want)
    assert evaluator_sort.comparator_keys(parse_module(
        f"HloModule t\n{MIXED}\nENTRY e {{\n  ROOT c = s32[] constant(0)\n}}\n"
    ).computations[0]) is not None
    a = rng.integers(-3, 3, (2, n)).astype(np.int32)
    b = rng.integers(-3, 3, (2, n)).astype(np.int32)
    sa, sb = hlo_sort(SUMMED, [a, b], f"(s32[2,{n}], s32[2,{n}])")
    want = [sorted(range(n), key=lambda i: int(a[r, i]) + int(b[r, i])) for r in range(2)]
    np.testing.assert_array_equal(sa, np.take_along_axis(a, np.array(want), -1))
    np.testing.assert_array_equal(sb, np.take_along_axis(b, np.array(want), -1))


def test_large_sorts_finish():
    """Complexity guard: O(n^2) comparison sorts would take minutes here."""
    x = np.random.default_rng(1).standard_normal((4, 65536)).astype(np.float32)
    start = time.perf_counter()
    got = minijax.jit(lambda a: jnp.sort(a, axis=-1))(x)
    np.testing.assert_array_equal(np.asarray(got), np.sort(x, axis=-1))
    a = np.random.default_rng(2).integers(-100, 100, (2, 16384)).astype(np.int32)
    sa, _ = hlo_sort(SUMMED, [a, a], "(s32[2,16384], s32[2,16384])")
    np.testing.assert_array_equal(sa, np.sort(a, axis=-1))
    assert time.perf_counter() - start < 20.0


# ------------------------------------------------------- integer-key sorts (np.sort paths)

KEY_DTYPES = ["float32", "float16", "int8", "int32", "uint16", "uint32", "bool"]
# Hypothesis favours the first choice: a non-trivial shape first, the edge cases after.
ROWS = st.sampled_from([2, 0, 1, 3])
NS = st.sampled_from([33, 0, 1, 2, 3, 7, 130])


def draw_mixed(data, dtype, shape):
    """Mostly ordinary values with a drawn share of specials: +-0, NaNs of both signs (one
    with a payload), infinities, and (for all dtypes) many ties."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    share = data.draw(st.sampled_from([0.0, 0.02, 0.3, 1.0]))
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype[0] in "iu":
        info = np.iinfo(dtype)
        wide = rng.integers(info.min, int(info.max) + 1, shape, dtype=np.int64).astype(dtype)
        return np.where(rng.random(shape) < share, rng.integers(0, 3, shape).astype(dtype), wide)
    payload = np.array([0x7FC00001 if dtype == "float32" else 0x7E01],
                       f"u{np.dtype(dtype).itemsize}").view(dtype)
    pool = np.concatenate([np.array(FLOAT_SPECIALS, dtype), payload, -payload])
    ordinary = (rng.standard_normal(shape) * 4).round(1).astype(dtype)
    special = pool[rng.integers(0, len(pool), shape)]
    return np.where(rng.random(shape) < share, special, ordinary)


def ref_order(x, descending=False, zeros_tie=False):
    """Stable permutation of each row in lax.sort's order (zeros_tie=True: -0 ties with +0,
    as jnp.sort and argsort also do) or top_k's (-0 below +0), from Python sorted()."""
    rows, n = x.shape
    out = np.empty((rows, n), np.int64)
    for r in range(rows):
        key = [ref_key(v.item() if x.dtype.kind != "b" else int(v), zeros_tie) for v in x[r]]
        if descending:  # descending total order; ties still keep the lower index first
            key = [(-a, -b, -c) for a, b, c in key]
        out[r] = sorted(range(n), key=lambda i: key[i])
    return out


def _spy_fast_path(monkeypatch):
    """Record whether each recognized sort ran the integer-key path (not the merge sort)."""
    taken = []
    real = evaluator_sort.keyed_sort

    def spy(moved, keys):
        out = real(moved, keys)
        taken.append(out is not None)
        return out
    monkeypatch.setattr(evaluator_sort, "keyed_sort", spy)
    return taken


@settings(max_examples=40, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(KEY_DTYPES), rows=ROWS, n=NS,
       descending=st.booleans())
def test_integer_key_sorts_match_general_path_and_python(data, dtype, rows, n, descending):
    x = draw_mixed(data, dtype, (rows, n))
    other = draw_mixed(data, dtype, (rows, n))  # values that mostly differ from the keys
    k = data.draw(st.sampled_from(sorted({0, min(1, n), n // 2, n})))
    fns = [
        (minijax.jit(lambda a, b: jnp.sort(a, axis=-1, descending=descending)), "sort"),
        (minijax.jit(lambda a, b: jnp.argsort(a, axis=-1, descending=descending)), "argsort"),
        (minijax.jit(lambda a, b: lax.top_k(a, k)), "top_k"),
        (minijax.jit(lambda a, b: lax.sort((a, b), num_keys=1)), "pair"),
        (minijax.jit(lambda a, b: lax.sort((a, b), num_keys=2)), "lex"),
    ]
    for fn, name in fns:
        mp = pytest.MonkeyPatch()
        try:
            taken = _spy_fast_path(mp)
            fast, slow = _fast_and_slow(fn, (x, other), mp)
        finally:
            mp.undo()
        assert rows * n <= 1 or n <= 1 or all(taken), name
        for f, s in zip(fast, slow):
            same_bits(f, s)
        if name == "sort":  # JAX's order: -0 before +0, NaNs last; descending reverses it
            want = ref_order(x, descending, zeros_tie=True)
            same_bits(fast[0], np.take_along_axis(x, want, -1))
        elif name == "argsort":
            np.testing.assert_array_equal(fast[0], ref_order(x, descending, zeros_tie=True))
        elif name == "top_k":  # largest first (NaN largest), ties by lower index
            order = ref_order(x, True)[:, :k]
            np.testing.assert_array_equal(fast[1], order)
            same_bits(fast[0], np.take_along_axis(x, order, -1))
        elif name == "pair":
            order = ref_order(x, zeros_tie=True)
            same_bits(fast[1], np.take_along_axis(other, order, -1))


def _hlo_sort_one(dtype: str, n: int, rows: int, direction: str):
    t = {"float16": "f16", "float64": "f64", "int64": "s64", "uint8": "u8"}[dtype]
    comparator = (f"cmp {{\n  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n"
                  f"  i = s32[] parameter(2)\n  j = s32[] parameter(3)\n"
                  f"  ROOT r = pred[] compare(a, b), direction={direction}, type=TOTALORDER\n}}\n")
    return comparator, f"({t}[{rows},{n}], s32[{rows},{n}])"


@settings(max_examples=12, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(["float16", "float64", "int64", "uint8"]),
       n=st.sampled_from([5, 300, 70000]), direction=st.sampled_from(["LT", "GT"]))
def test_key_widths_and_packings_vs_python(data, dtype, n, direction):
    """8-bit and 16-bit keys pack with the index into 32 bits (or 64 past 2^16 elements),
    64-bit keys take a stable argsort; all agree with Python's sorted()."""
    rows = 2
    x = draw_mixed(data, dtype, (rows, n)) if dtype != "float64" else \
        draw_mixed(data, "float32", (rows, n)).astype(np.float64)
    iota = np.broadcast_to(np.arange(n, dtype=np.int32), (rows, n)).copy()
    comparator, types = _hlo_sort_one(dtype, n, rows, direction)
    values, perm = hlo_sort(comparator, [x, iota], types)
    # TOTALORDER without canonicalization: -NaN first, +NaN last, NaN payloads ordered.
    bits = x.view(f"u{x.dtype.itemsize}").astype(object)
    top = 1 << (x.dtype.itemsize * 8 - 1)
    if x.dtype.kind == "f":
        key = [[(~b & (2 * top - 1)) if b & top else b | top for b in row] for row in bits]
    else:
        key = [[int(v) for v in row] for row in x]
    sign = -1 if direction == "GT" else 1
    want = np.array([sorted(range(n), key=lambda i: sign * row[i]) for row in key])
    np.testing.assert_array_equal(perm, want)
    same_bits(values, np.take_along_axis(x, want, -1))


TOPK_HLO = """HloModule jit_top_k

ENTRY main {{
  x = {t}[{rows},{n}]{{1,0}} parameter(0)
  r = ({t}[{rows},{k}]{{1,0}}, s32[{rows},{k}]{{1,0}}) topk(x), k={k}, largest={largest}
  v = {t}[{rows},{k}]{{1,0}} get-tuple-element(r), index=0
  i = s32[{rows},{k}]{{1,0}} get-tuple-element(r), index=1
  ROOT out = ({t}[{rows},{k}]{{1,0}}, s32[{rows},{k}]{{1,0}}) tuple(v, i)
}}
"""
SORT_DESC = """cmp {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  nan = {t}[] constant(nan)
  an = pred[] compare(a, a), direction=NE
  ca = {t}[] select(an, nan, a)
  bn = pred[] compare(b, b), direction=NE
  cb = {t}[] select(bn, nan, b)
  ROOT r = pred[] compare(ca, cb), direction=GT, type=TOTALORDER
}}
"""
SORT_DESC_INT = """cmp {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT
}}
"""
HLO_TYPES = {"float32": "f32", "float16": "f16", "int8": "s8", "int32": "s32", "uint16": "u16",
             "uint32": "u32", "bool": "pred"}


@settings(max_examples=30, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(KEY_DTYPES), rows=ROWS, n=NS,
       largest=st.booleans())
def test_topk_opcode_as_jax_emits_it(data, dtype, rows, n, largest):
    """XLA's `topk` (JAX's HLO for lax.top_k, and minijax's lowering) by partition: Python
    sorted() as reference; for largest=true also jitted lax.top_k and a full descending
    sort with the NaN-canonicalizing comparator, sliced."""
    x = draw_mixed(data, dtype, (rows, n))
    for k in sorted({0, min(1, n), min(2, n), n // 2, n}):
        _check_topk_opcode(x, dtype, rows, n, k, largest)


def _check_topk_opcode(x, dtype, rows, n, k, largest):
    text = TOPK_HLO.format(t=HLO_TYPES[dtype], rows=rows, n=n, k=k,
                           largest=str(largest).lower())
    values, indices = evaluate_module(parse_module(text), [x])
    order = ref_order(x, descending=largest)[:, :k]
    np.testing.assert_array_equal(indices, order)
    same_bits(values, np.take_along_axis(x, order, -1))
    if not largest:
        return
    jitted = minijax.jit(lambda a: lax.top_k(a, k))(x)  # CPU backend: an evaluator thunk
    same_bits(values, jitted[0])
    np.testing.assert_array_equal(indices, jitted[1])
    if n and not (np.isnan(x) & np.signbit(x)).any():
        # the full descending sort (the previous lowering of top_k; it puts every NaN
        # first, so only without negative NaNs), then the first k
        t = HLO_TYPES[dtype]
        iota = np.broadcast_to(np.arange(n, dtype=np.int32), (rows, n)).copy()
        comparator = SORT_DESC if x.dtype.kind == "f" else SORT_DESC_INT
        full = hlo_sort(comparator.format(t=t), [x, iota], f"({t}[{rows},{n}], s32[{rows},{n}])")
        same_bits(values, full[0][:, :k])
        np.testing.assert_array_equal(indices, full[1][:, :k])


# -------------------------------------------------------------------- gather / scatter


def _norm(i, n):
    return np.where(i < 0, i + n, i)


INDEX_SETTINGS = settings(max_examples=30, deadline=None)
SHAPES = st.sampled_from([(1, 1), (5, 3), (7, 0), (4, 2, 3), (300, 9)])


@INDEX_SETTINGS
@given(data=st.data(), shape=SHAPES, k=st.sampled_from([0, 1, 3, 17]))
def test_gathers_vs_numpy(data, shape, k):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    x = rng.standard_normal(shape).astype(np.float32)
    axis = data.draw(st.integers(0, len(shape) - 1))
    n = shape[axis]
    idx = rng.integers(-n - 2, n + 2, k).astype(np.int32)
    clamped = np.clip(_norm(idx, n), 0, n - 1)  # jnp indexing clamps after wrapping negatives
    got = minijax.jit(lambda a, i: a[(slice(None),) * axis + (i,)])(x, idx)
    np.testing.assert_array_equal(np.asarray(got), np.take(x, clamped, axis=axis))
    inb = rng.integers(-n, n, k).astype(np.int32) if n else idx[:0]
    got = minijax.jit(lambda a, i: jnp.take(a, i, axis=axis))(x, inb)
    np.testing.assert_array_equal(np.asarray(got), np.take(x, _norm(inb, n), axis=axis))
    if x.size:  # (take_along_axis of an empty operand is rejected at trace time)
        along = rng.integers(-n, n, shape[:axis] + (k,) + shape[axis + 1:]).astype(np.int32)
        got = minijax.jit(lambda a, i: jnp.take_along_axis(a, i, axis=axis))(x, along)
        np.testing.assert_array_equal(np.asarray(got),
                                      np.take_along_axis(x, _norm(along, n), axis=axis))


def _loop_scatter(x, idx, upd, op):
    out = x.copy()
    n = x.shape[0]
    for i, u in zip(idx, upd):
        j = i + n if i < 0 else i
        if 0 <= j < n:  # jnp .at[] drops out-of-bounds updates
            out[j] = u if op == "set" else {"add": np.add, "mul": np.multiply,
                                            "min": np.minimum, "max": np.maximum}[op](out[j], u)
    return out


@INDEX_SETTINGS
@given(data=st.data(), shape=st.sampled_from([(1, 2), (5, 3), (6,), (40, 4), (4, 0)]),
       k=st.sampled_from([0, 1, 4, 50]), op=st.sampled_from(["set", "add", "mul", "min", "max"]),
       dtype=st.sampled_from(["float32", "int32"]))
def test_scatters_vs_python_loop(data, shape, k, op, dtype):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    n = shape[0]
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    idx = rng.integers(-n - 2, n + 2, k).astype(np.int32)  # repeats, negatives, out of bounds
    upd = (rng.standard_normal((k,) + shape[1:]) * 3).astype(dtype)
    fn = minijax.jit(lambda a, i, u: getattr(a.at[i], {"mul": "multiply", "min": "min",
                                                        "max": "max"}.get(op, op))(u))
    got = np.asarray(fn(x, idx, upd))
    np.testing.assert_array_equal(got, _loop_scatter(x, idx, upd, op))


def _fast_vs_general(fn, args):
    fast = np.asarray(fn(*args))
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(evaluator_indexing, "fast_gather", lambda *a: None)
        mp.setattr(evaluator_indexing, "fast_scatter", lambda *a: None)
        slow = np.asarray(fn(*args))
    finally:
        mp.undo()
    return fast, slow


GATHER2 = ("r = f32[{k},1,3] gather(p0, p1), offset_dims={{1,2}}, collapsed_slice_dims={{}}, "
           "start_index_map={{0,1}}, index_vector_dim=1, slice_sizes={{1,3}}")
SCATTER2 = ("r = f32[4,3] scatter(p0, p1, p2), update_window_dims={1}, "
            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0,1}, "
            "index_vector_dim=1, to_apply=add")
ADD = "add {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b)\n}\n"


@INDEX_SETTINGS
@given(data=st.data(), k=st.sampled_from([1, 2, 9]))
def test_hlo_index_vectors_with_whole_dims_match_general_path(data, k):
    """Index vectors that also name a whole-width dim: gather clamps that start to 0,
    scatter drops the window unless it is exactly 0."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    x = rng.standard_normal((4, 3)).astype(np.float32)
    idx = rng.integers(-2, 6, (k, 2)).astype(np.int32)
    upd = rng.standard_normal((k, 3)).astype(np.float32)

    def run(line, args, comps=""):
        params = "\n".join(f"  p{i} = {t} parameter({i})" for i, t in enumerate(
            ["f32[4,3]", f"s32[{k},2]", f"f32[{k},3]"][:len(args)]))
        text = f"HloModule t\n{comps}\nENTRY e {{\n{params}\n  ROOT {line}\n}}\n"
        return evaluate_module(parse_module(text), args)[0]

    fast, slow = _fast_vs_general(lambda a, i: run(GATHER2.format(k=k), [a, i]), (x, idx))
    np.testing.assert_array_equal(fast, slow)
    want = x[np.clip(idx[:, 0], 0, 3)][:, None, :]
    np.testing.assert_array_equal(fast, want)
    fast, slow = _fast_vs_general(lambda a, i, u: run(SCATTER2, [a, i, u], ADD), (x, idx, upd))
    np.testing.assert_array_equal(fast, slow)
    want = x.copy()
    for (r, c), u in zip(idx, upd):
        if 0 <= r < 4 and c == 0:
            want[r] += u
    np.testing.assert_array_equal(fast, want)


@INDEX_SETTINGS
@given(data=st.data(), shape=SHAPES, k=st.sampled_from([0, 1, 5, 40]))
def test_jitted_fast_paths_match_general_path(data, shape, k):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    x = rng.standard_normal(shape).astype(np.float32)
    n = shape[0]
    idx = rng.integers(-n - 1, n + 1, k).astype(np.int32)
    upd = rng.standard_normal((k,) + shape[1:]).astype(np.float32)
    for fn, args in [(minijax.jit(lambda a, i: a[i]), (x, idx)),
                     (minijax.jit(lambda a, i: a[:, i % max(n, 1)] if a.ndim > 1 else a[i]),
                      (x, idx)),
                     (minijax.jit(lambda a, i, u: a.at[i].add(u)), (x, idx, upd)),
                     (minijax.jit(lambda a, i, u: a.at[i].set(u)), (x, idx, upd)),
                     (minijax.jit(lambda a, i, u: a.at[i].max(u)), (x, idx, upd))]:
        fast, slow = _fast_vs_general(fn, args)
        np.testing.assert_array_equal(fast, slow)
