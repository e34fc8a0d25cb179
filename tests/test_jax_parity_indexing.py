"""Indexing, scatter/gather and structural ops: values that differed from JAX 0.10.2 (found by
differential fuzzing against real JAX), eager and compiled (jit on the CPU backend). Each
expected value is JAX's (hard-coded with a comment) or an independent NumPy reference; with
real JAX importable the cases are also checked against it.
"""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as mjnp
from minijax import lax as mlax
from minijax.compiler.evaluator.sort import top_k_rows

try:
    import jax
    import jax.numpy as jjnp
except ImportError:  # CI has no JAX: the hard-coded values still run
    jax = jjnp = None

needs_jax = pytest.mark.skipif(jax is None, reason="real JAX is not installed")


def _both(f, *args):
    """f eagerly and under jit, as NumPy arrays (pytrees of them)."""
    eager = f(*[mjnp.asarray(a) for a in args])
    jitted = minijax.jit(f)(*args)
    conv = minijax.tree_util.tree_map
    return conv(np.asarray, eager), conv(np.asarray, jitted)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    np.testing.assert_array_equal(a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}"))


# ------------------------------------------------------------------ sort: -0.0 ties with 0.0

SORT_X = [0.0, -0.0, 1.0, -0.0, 0.0, np.nan, -1.0]
# jax.lax.sort(jnp.array(SORT_X)): JAX canonicalizes -0.0 to 0.0 (and every NaN to one NaN)
# before its total-order compare, so zeros tie and the stable sort keeps their input order.
SORT_JAX = [-1.0, 0.0, -0.0, -0.0, 0.0, 1.0, np.nan]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_sort_keeps_signed_zeros_in_input_order(dtype):
    x = np.array(SORT_X, dtype)
    for out in _both(mlax.sort, x):
        _same_bits(out, np.array(SORT_JAX, dtype))


def test_sort_multi_operand_zero_keys_tie_on_the_next_key():
    # Keys -0.0 and 0.0 tie, so the second key decides: JAX gives ([0, -0, -0], [1, 2, 3]).
    keys = np.array([0.0, -0.0, -0.0], np.float32)
    vals = np.array([3, 1, 2], np.int32)
    for k, v in _both(lambda a, b: mlax.sort((a, b), num_keys=2), keys, vals):
        _same_bits(k, np.array([-0.0, -0.0, 0.0], np.float32))
        np.testing.assert_array_equal(v, [1, 2, 3])
    for k, v in _both(lambda a, b: mlax.sort((a, b), num_keys=1), keys, vals):
        _same_bits(k, keys)  # one key: all tie, input order kept
        np.testing.assert_array_equal(v, vals)


def test_top_k_still_orders_negative_zero_below_zero():
    # jax.lax.top_k([-0., 0., -0., 1.], 4) -> ([1, 0, -0, -0], [3, 1, 0, 2])
    x = np.array([-0.0, 0.0, -0.0, 1.0], np.float32)
    for vals, idx in _both(lambda a: mlax.top_k(a, 4), x):
        _same_bits(vals, np.array([1.0, 0.0, -0.0, -0.0], np.float32))
        np.testing.assert_array_equal(idx, [3, 1, 0, 2])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 1.0, -1.0, np.inf, np.nan]), min_size=1,
                max_size=9), st.sampled_from([np.float32, np.float16]))
def test_sort_matches_stable_sort_of_canonical_keys(values, dtype):
    x = np.array(values, dtype)
    canon = np.where(x == 0, 0, x).astype(np.float64)
    canon = np.where(np.isnan(canon), np.inf, canon)
    nan_last = np.isnan(x).astype(np.int8)
    expect = x[np.lexsort((canon, nan_last))]
    for out in _both(mlax.sort, x):
        _same_bits(out, expect)


@needs_jax
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_sort_against_jax(dtype):
    x = np.array(SORT_X + SORT_X[::-1], dtype)
    for out in _both(mlax.sort, x):
        _same_bits(out, np.asarray(jax.lax.sort(x)))


# ------------------------------------------------------- top_k on bfloat16 in the evaluator

@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn])
def test_evaluator_top_k_of_narrow_floats(dtype):
    # jax.lax.top_k(jnp.array([[1, -0., 0., nan, 3, -2]], dtype), 4)
    #   -> ([[nan, 3, 1, 0]], [[3, 4, 0, 2]])
    x = np.array([[1, -0.0, 0.0, np.nan, 3, -2]], dtype)
    vals, idx = top_k_rows(x, 4)
    assert vals.dtype == dtype
    np.testing.assert_array_equal(idx, [[3, 4, 0, 2]])
    np.testing.assert_array_equal(vals.astype(np.float32), [[np.nan, 3, 1, 0]])


def test_top_k_bfloat16_jit_small_and_empty():
    x = np.array([[1.0, 2.0]], ml_dtypes.bfloat16)
    for k, want_idx in ((1, [[1]]), (0, np.zeros((1, 0))), (2, [[1, 0]])):
        vals, idx = minijax.jit(lambda a, k=k: mlax.top_k(a, k))(x)
        np.testing.assert_array_equal(np.asarray(idx), want_idx)
        assert vals.dtype == ml_dtypes.bfloat16 and vals.shape == (1, k)


# --------------------------------------------------- .at[].apply with repeated index arrays

def _apply_reference(x, idx, func, mode):
    """NumPy loop: func once per index occurrence (out-of-bound: dropped, or clipped)."""
    out = np.array(x)
    n = x.shape[0]
    for i in np.asarray(idx).reshape(-1):
        i = int(i)
        if mode == "clip":
            i = min(max(i if i >= 0 else i + n, 0), n - 1)
        elif not -n <= i < n:
            continue
        out[i] = func(out[i])
    return out


@pytest.mark.parametrize("mode", [None, "drop", "fill", "clip"])
def test_at_apply_repeated_indices_apply_once_per_occurrence(mode):
    # x = jnp.arange(1., 5.); x.at[jnp.array([3, 5, -1, 0])].apply(lambda v: v * 2, mode='clip')
    # is [2, 2, 3, 32] in JAX (index 3 three times after clipping 5 and wrapping -1).
    x = np.arange(1.0, 5.0, dtype=np.float32)
    idx = np.array([3, 5, -1, 0], np.int32)
    expect = _apply_reference(x, idx, lambda v: v * 2, mode)
    if mode == "clip":
        np.testing.assert_array_equal(expect, [2, 2, 3, 32])
    for out in _both(lambda a, i: a.at[i].apply(lambda v: v * 2, mode=mode), x, idx):
        np.testing.assert_array_equal(out, expect)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(-6, 6), min_size=0, max_size=6),
       st.sampled_from([np.int32, np.uint8, np.float32, np.bool_]),
       st.sampled_from([None, "clip"]))
def test_at_apply_matches_loop(indices, dtype, mode):
    x = (np.arange(5) % 3).astype(dtype)
    idx = np.array(indices, np.int32)
    func = (lambda v: ~v) if dtype == np.bool_ else (lambda v: v * 2 + 1)
    expect = _apply_reference(x, idx, func, mode)
    out = x if idx.size == 0 else None
    got = mjnp.asarray(x).at[mjnp.asarray(idx)].apply(func, mode=mode)
    np.testing.assert_array_equal(np.asarray(got), expect if out is None else out)
    assert got.dtype == dtype


def test_at_apply_traces_func_on_scalars():
    # JAX traces func on one element: v / v.sum() is v / v, so nan at 0, 1 elsewhere.
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    f = lambda a, i: a.at[i].apply(lambda v: v / v.sum() + 1)  # noqa: E731
    for out in _both(f, x, np.array([1, 1, 0], np.int32)):
        np.testing.assert_array_equal(out, [[np.nan, 2, 2], [2, 2, 2]])
    for out in _both(lambda a: a.at[1:, 0].apply(lambda v: v / v.sum()), x):
        np.testing.assert_array_equal(out, [[0, 1, 2], [1, 4, 5]])


def test_at_apply_under_vmap():
    # jax.vmap(lambda a, i: a.at[i].apply(lambda v: v * 2))(arange(6.).reshape(2, 3),
    #          jnp.array([[1, 1], [0, 2]])) -> [[0, 4, 2], [6, 4, 10]]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = minijax.vmap(lambda a, i: a.at[i].apply(lambda v: v * 2))(
        mjnp.asarray(x), mjnp.array([[1, 1], [0, 2]]))
    np.testing.assert_array_equal(np.asarray(out), [[0, 4, 2], [6, 4, 10]])


@needs_jax
def test_at_apply_against_jax():
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.integers(-5, 5, size=(4, 3)).astype(np.int32)
        idx = rng.integers(-5, 5, size=(6,)).astype(np.int32)
        for mode in (None, "clip"):
            f = lambda a, i, mode=mode: a.at[i].apply(lambda v: v * 3 - 1, mode=mode)  # noqa: E731
            want = np.asarray(f(jjnp.asarray(x), jjnp.asarray(idx)))
            for out in _both(f, x, idx):
                np.testing.assert_array_equal(out, want)


# ------------------------------------- dot_general with a wider preferred_element_type (jit)

DOT_CASES = [
    (np.uint8, np.uint32), (np.int8, np.int32), (np.bool_, np.int32), (np.uint8, np.int32),
    (np.int8, np.float32), (np.float16, np.float32), (ml_dtypes.bfloat16, np.float32),
]


@pytest.mark.parametrize("in_dtype,out_dtype", DOT_CASES)
def test_dot_general_accumulates_in_the_preferred_type(in_dtype, out_dtype):
    rng = np.random.default_rng(1)
    if in_dtype == np.bool_:
        lhs, rhs = rng.random((2, 3, 5)) < 0.7, rng.random((2, 5, 4)) < 0.7
    elif np.dtype(in_dtype).kind in "iu":
        info = np.iinfo(in_dtype)
        lhs = rng.integers(info.min, info.max, size=(2, 3, 5), endpoint=True).astype(in_dtype)
        rhs = rng.integers(info.min, info.max, size=(2, 5, 4), endpoint=True).astype(in_dtype)
    else:
        lhs = (rng.standard_normal((2, 3, 5)) * 50).astype(in_dtype)
        rhs = (rng.standard_normal((2, 5, 4)) * 50).astype(in_dtype)
    dn = (((2,), (1,)), ((0,), (0,)))
    f = lambda a, b: mlax.dot_general(a, b, dn, preferred_element_type=out_dtype)  # noqa: E731
    wide = np.float64 if np.dtype(out_dtype).kind == "f" else np.int64
    expect = np.matmul(lhs.astype(wide), rhs.astype(wide)).astype(out_dtype)
    for out in _both(f, lhs, rhs):
        assert out.dtype == out_dtype
        if np.dtype(out_dtype).kind == "f":
            np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-2)
        else:
            np.testing.assert_array_equal(out, expect)


def test_dot_uint8_to_uint32_known_value():
    # jax.lax.dot_general(u8[200, 250], u8[200, 250], preferred_element_type=uint32) = 102500
    a = np.array([200, 250], np.uint8)
    f = lambda x, y: mlax.dot_general(x, y, (((0,), (0,)), ((), ())),  # noqa: E731
                                      preferred_element_type=np.uint32)
    for out in _both(f, a, a):
        assert out.dtype == np.uint32 and int(out) == 102500


# ---------------------------------- reduce of a broadcast in the algebraic simplifier (bf16)

@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16, np.int8])
@pytest.mark.parametrize("reduce", [mlax.reduce_max, mlax.reduce_min, mlax.reduce_sum])
def test_jit_reduce_of_broadcast_narrow_types(dtype, reduce):
    # Was a compile failure for bfloat16 (the simplifier asked np.iinfo about a float).
    x = np.array([1.5, -2.0], dtype) if dtype != np.int8 else np.array([3, -2], dtype)
    f = lambda a: reduce(mlax.broadcast_in_dim(a, (3, 2), (1,)), (0,))  # noqa: E731
    expect = {mlax.reduce_sum: x.astype(np.float64) * 3}.get(reduce, x.astype(np.float64))
    for out in _both(f, x):
        assert out.dtype == dtype
        np.testing.assert_array_equal(out.astype(np.float64), expect)


# ------------------------------------------ conv padding that removes more than the input

@pytest.mark.parametrize("padding,lhs_dilation", [([(-1, -1)], (2,)), ([(-2, 0)], (1,)),
                                                  ([(0, -3)], (1,))])
def test_conv_negative_padding_larger_than_input_raises(padding, lhs_dilation):
    # JAX: ValueError("Negative padding is larger than the size of the corresponding
    # dimension ..."); minijax returned an empty result.
    lhs, rhs = np.ones((2, 2, 1), np.float32), np.ones((3, 2, 1), np.float32)
    f = lambda a, b: mlax.conv_general_dilated(  # noqa: E731
        a, b, (1,), padding, lhs_dilation, (1,), ("NCH", "HIO", "NHC"))
    with pytest.raises(ValueError, match="negative padding"):
        f(mjnp.asarray(lhs), mjnp.asarray(rhs))
    with pytest.raises(ValueError, match="negative padding"):
        minijax.jit(f)(lhs, rhs)


def test_conv_negative_padding_within_input_still_works():
    # padded size 0 >= 0 is allowed (an empty output), as in JAX: shape (2, 0, 1)
    lhs, rhs = np.ones((2, 2, 2), np.float32), np.ones((3, 2, 1), np.float32)
    out = mlax.conv_general_dilated(mjnp.asarray(lhs), mjnp.asarray(rhs), (1,), [(-1, -1)],
                                    dimension_numbers=("NCH", "HIO", "NHC"))
    assert out.shape == (2, 0, 1)
