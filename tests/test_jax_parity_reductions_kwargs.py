"""Reductions, statistics and cumulative functions with their keyword arguments, against
JAX 0.10.2: variance dtype rules (dtype= is the computation dtype, complex inputs with a
real dtype raise, std needs an inexact dtype, ddof and correction are exclusive, mean=),
booleans summed without promote_integers, cumulative_prod keeping narrow integers, nanmax
with initial on all-NaN slices, quantile methods (inverted_cdf, nearest rounding half
down, positions in q's dtype, the rest rejected) and percentile's q * 0.01 rounding.

JAX's values are hard-coded (found with tests/fuzz_jax_reductions_kwargs.py); the live
comparisons at the end skip when JAX is not importable."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp

try:
    import jax.numpy as real_jnp
except ImportError:  # CI has no JAX: the live comparisons skip
    real_jnp = None

NAN = np.nan
X11 = np.arange(1.0, 12.0, dtype=np.float32)
X11N = np.append(X11, np.float32(np.nan))
X16 = np.array([1.0, 2.0, 4.0, 7.0], np.float16)
M2 = np.array([[3.0, 1.0, 2.0, 5.0], [4.0, 0.0, 8.0, 6.0]], np.float32)


def _call(fn, jit):
    return minijax.jit(fn)() if jit else fn()


# (label, program, JAX's value, JAX's dtype, JAX's weak type)
VALUES = [
    ("var f16 dtype=f32 computes in f32", lambda: jnp.var(X16, dtype="float32"),
     5.25, "float32", False),
    ("std f16 dtype=f32 ddof=1", lambda: jnp.std(X16, dtype="float32", ddof=1),
     2.6457512378692627, "float32", False),
    ("nanvar f16 dtype=f32",
     lambda: jnp.nanvar(np.array([1.0, NAN, 2.0, 4.0, 7.0], np.float16), dtype="float32"),
     5.25, "float32", False),
    # the input is converted to int32 first; where(dof > 0, int, nan) gives a weak float
    ("var dtype=int32", lambda: jnp.var(np.array([1.0, 2.0, 4.5], np.float32), dtype="int32"),
     1.0, "float32", True),
    ("var mean=", lambda: jnp.var(np.array([[1.0, 2.0], [4.0, 8.0]], np.float32), axis=1,
                                  mean=np.array([[0.0], [1.0]], np.float32)),
     [2.5, 29.0], "float32", False),
    ("std mean=", lambda: jnp.std(np.array([[1.0, 2.0], [4.0, 8.0]], np.float32), axis=0,
                                  mean=np.array([[1.0, 1.0]], np.float32)),
     [2.1213202476501465, 5.0], "float32", False),
    ("nanvar mean=", lambda: jnp.nanvar(np.array([1.0, NAN, 3.0], np.float32),
                                        mean=np.array([2.5], np.float32)),
     1.25, "float32", False),
    ("sum bool promote_integers=False",
     lambda: jnp.sum(np.array([True, True, False]), promote_integers=False), 2, "int32", False),
    ("prod bool promote_integers=False",
     lambda: jnp.prod(np.array([[True, True]]), axis=0, promote_integers=False),
     [1, 1], "int32", False),
    ("cumulative_prod int8 stays int8",
     lambda: jnp.cumulative_prod(np.array([3, 5, 7, 11], np.int8), include_initial=True),
     [1, 3, 15, 105, -125], "int8", False),
    ("cumulative_prod uint8", lambda: jnp.cumulative_prod(np.array([3, 5, 7], np.uint8)),
     [3, 15, 105], "uint8", False),
    ("cumulative_prod bool", lambda: jnp.cumulative_prod(np.array([True, False])),
     [1, 0], "int32", False),
    ("cumulative_sum int8 promotes",
     lambda: jnp.cumulative_sum(np.array([100, 100], np.int8)), [100, 200], "int32", False),
    ("nanmax initial on all-NaN slice",
     lambda: jnp.nanmax(np.array([[NAN, NAN], [1.0, 2.0]], np.float32), axis=1, initial=-3.0),
     [-3.0, 2.0], "float32", False),
    ("nanmin initial on all-NaN slice",
     lambda: jnp.nanmin(np.array([[NAN, NAN], [1.0, 2.0]], np.float32), axis=1, initial=5.0),
     [5.0, 1.0], "float32", False),
    ("nanmax initial on an empty axis",
     lambda: jnp.nanmax(np.zeros((0, 2), np.float32), axis=0, initial=0.5),
     [0.5, 0.5], "float32", False),
    # a float initial reaches an integer dtype through XLA's saturating convert
    ("max uint8 initial=-1.0", lambda: jnp.max(np.arange(3, dtype=np.uint8), initial=-1.0),
     2, "uint8", False),
    ("sum uint8 initial=-1.0", lambda: jnp.sum(np.arange(3, dtype=np.uint8), initial=-1.0),
     3, "uint32", False),
    ("sum int8 initial=2.7", lambda: jnp.sum(np.arange(3, dtype=np.int8), initial=2.7),
     5, "int32", False),
    ("nanmax uint8 initial=-1.0",
     lambda: jnp.nanmax(np.array([[8, 3], [0, 7]], np.uint8), axis=1, initial=-1.0),
     [8, 7], "uint8", False),
    # percentiles: XLA turns q / 100 into q * 0.01 and folds it with (n - 1)
    ("percentile lower", lambda: jnp.percentile(X11, np.array([30.0, 70.0], np.float32),
                                                method="lower"),
     [3.0, 7.0], "float32", False),
    ("percentile midpoint", lambda: jnp.percentile(X11, 30.0, method="midpoint"),
     3.5, "float32", False),
    ("percentile linear", lambda: jnp.percentile(X11, np.array([30.0, 70.0], np.float32)),
     [3.999999761581421, 7.999999523162842], "float32", False),
    ("nanpercentile lower",
     lambda: jnp.nanpercentile(X11N, np.array([30.0, 70.0], np.float32), method="lower"),
     [3.0, 7.0], "float32", False),
    ("nanpercentile midpoint", lambda: jnp.nanpercentile(X11N, 30.0, method="midpoint"),
     3.5, "float32", False),
    ("nearest rounds half down",
     lambda: jnp.quantile(np.array([1.0, 2.0, 3.0, 4.0], np.float32),
                          np.array([0.5, 1 / 6, 0.25], np.float32), method="nearest"),
     [2.0, 1.0, 2.0], "float32", False),
    ("float16 quantile interpolates in q's float32",
     lambda: jnp.quantile(np.array([0.1, 0.7, 1.3, 2.9], np.float16), 0.35),
     0.72998046875, "float16", False),
    ("bfloat16 quantile",
     lambda: jnp.quantile(np.array([0.1, 0.7, 1.3, 2.9], jnp.bfloat16),
                          np.array([0.35, 0.9], np.float32)),
     [0.73046875, 2.421875], "bfloat16", False),
    ("inverted_cdf", lambda: jnp.quantile(M2, np.array([0.0, 0.25, 0.3, 0.5, 1.0], np.float32),
                                          axis=1, method="inverted_cdf"),
     [[1.0, 0.0], [1.0, 0.0], [2.0, 4.0], [2.0, 4.0], [5.0, 8.0]], "float32", False),
    ("inverted_cdf keepdims",
     lambda: jnp.quantile(M2, 0.6, axis=0, keepdims=True, method="inverted_cdf"),
     [[4.0, 1.0, 8.0, 6.0]], "float32", False),
    ("nanquantile inverted_cdf",
     lambda: jnp.nanquantile(np.array([[3.0, NAN, 2.0, 5.0], [NAN, NAN, 1.0, 0.0]], np.float32),
                             0.5, axis=1, method="inverted_cdf"),
     [3.0, 0.0], "float32", False),
    ("quantile inverted_cdf with NaN",
     lambda: jnp.quantile(np.array([[3.0, NAN, 2.0, 5.0], [7.0, 6.0, 1.0, 0.0]], np.float32),
                          0.5, axis=1, method="inverted_cdf"),
     [NAN, 1.0], "float32", False),
    ("percentile inverted_cdf",
     lambda: jnp.percentile(np.arange(10.0, dtype=np.float32), 30.0, method="inverted_cdf"),
     2.0, "float32", False),
]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", VALUES, ids=[c[0] for c in VALUES])
def test_values_dtypes_and_weak_types_as_jax(case, jit):
    _, fn, want, dtype, weak = case
    got = _call(fn, jit)
    assert got.dtype == np.dtype(jnp.bfloat16 if dtype == "bfloat16" else dtype)
    assert got.weak_type == weak
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got, np.float64), want)


RAISES = [
    ("ddof and correction", lambda: jnp.var(X11, ddof=1, correction=1), ValueError),
    ("float ddof and correction", lambda: jnp.std(X11, ddof=0.0, correction=1), ValueError),
    ("std integer dtype", lambda: jnp.std(X11, dtype="int32"), ValueError),
    ("var complex with real dtype",
     lambda: jnp.var(np.array([1j, 2.0], np.complex64), dtype="float32"), ValueError),
    ("nanvar complex with real dtype",
     lambda: jnp.nanvar(np.array([1j, 2.0], np.complex64), dtype="float16"), ValueError),
    ("nanstd integer dtype", lambda: jnp.nanstd(np.array([1, 2, 4]), dtype="int32"), TypeError),
    ("method hazen", lambda: jnp.quantile(X11, 0.5, method="hazen"), ValueError),
    ("method weibull", lambda: jnp.percentile(X11, 50.0, method="weibull"), ValueError),
    ("method unknown", lambda: jnp.nanquantile(X11, 0.5, method="bogus"), ValueError),
    ("inverted_cdf float16 with float32 q",
     lambda: jnp.quantile(X16, 0.5, method="inverted_cdf"), TypeError),
    ("quantile integer q", lambda: jnp.quantile(X11, 1), TypeError),
    ("nanquantile bool q", lambda: jnp.nanquantile(X11, np.array([True])), TypeError),
    ("nanquantile empty axis with batch",
     lambda: jnp.nanquantile(np.zeros((0, 4), np.float32), 0.5, axis=0), TypeError),
    ("nanquantile empty, all axes", lambda: jnp.nanquantile(np.zeros((0,), np.float32), 0.5),
     IndexError),
    ("q of rank 2", lambda: jnp.quantile(X11, np.ones((2, 2), np.float32)), ValueError),
]


@pytest.mark.parametrize("case", RAISES, ids=[c[0] for c in RAISES])
def test_error_types_as_jax(case):
    _, fn, err = case
    with pytest.raises(err):
        fn()


@pytest.mark.parametrize("value,dtype,want", [
    (-1.0, np.uint8, 0), (300.7, np.int8, 127), (-2.5, np.int8, -2), (np.nan, np.int32, 0),
    (np.inf, np.int32, 2147483647), (-1e10, np.uint32, 0),
])
def test_python_float_converts_to_integers_as_xla(value, dtype, want):
    # JAX's values: jax.lax.convert_element_type(value, dtype)
    got = minijax.lax.convert_element_type(value, dtype)
    assert got.dtype == dtype and int(got) == want


def test_percentile_accepts_integer_q_as_jax():
    # JAX's value: jnp.percentile(jnp.arange(1., 12.), 50) is 5.9999995 in float32 (q is
    # promoted first; 50 * fl(0.01 * 10) is just under 5, so it interpolates)
    got = jnp.percentile(X11, 50)
    assert got.dtype == np.float32 and np.float32(got) == np.float32(5.9999995)


def test_var_correction_alone_and_ddof_alone_agree():
    x = np.array([1.0, 2.0, 4.0, 7.0], np.float32)
    np.testing.assert_array_equal(np.asarray(jnp.var(x, correction=1)),
                                  np.asarray(jnp.var(x, ddof=1)))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 100), min_size=1, max_size=4), st.integers(1, 40))
def test_percentile_positions_round_as_jax(percents, n):
    """The order statistic picked by method='lower' is floor(q * fl(0.01 * (n - 1))) in
    float32, as JAX (XLA) computes it, not floor(q / 100 * (n - 1))."""
    x = np.arange(n, dtype=np.float32)
    q = np.array(percents, np.float32)
    factor = np.float32(0.01) * np.float32(n - 1)
    want = np.clip(np.floor(q * factor), 0, n - 1)
    got = jnp.percentile(x, q, method="lower")
    np.testing.assert_array_equal(np.asarray(got), want)


# ------------------------------------------------------------------ live against JAX

LIVE = [
    ("var", {"dtype": "float32"}), ("var", {"axis": 1, "ddof": 1, "dtype": "complex64"}),
    ("std", {"axis": 0, "where": "m", "dtype": "float16"}), ("nanvar", {"dtype": "float32"}),
    ("nanstd", {"axis": 1, "ddof": 1, "keepdims": True}), ("sum", {"promote_integers": False}),
    ("prod", {"axis": 0, "promote_integers": False}), ("nanmax", {"axis": 1, "initial": -1.0}),
    ("nanmin", {"axis": 0, "initial": 2.0, "where": "m"}),
    ("cumulative_prod", {"axis": 1}), ("cumulative_prod", {"axis": 0, "include_initial": True}),
    ("quantile", {"q": 0.3, "method": "nearest", "axis": 1}),
    ("quantile", {"q": 0.45, "method": "inverted_cdf"}),
    ("nanquantile", {"q": 0.7, "method": "inverted_cdf", "axis": 0}),
    ("percentile", {"q": 70.0, "method": "lower", "axis": 1}),
    ("nanpercentile", {"q": 30.0, "method": "midpoint"}),
    ("median", {"axis": 0, "keepdims": True}),
]
LIVE_DTYPES = ["bool", "int8", "uint8", "float16", "float32"]


def _live_input(dtype):
    rng = np.random.default_rng(7)
    if dtype == "bool":
        return rng.random((3, 5)) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 9, (3, 5)).astype(dtype)
    x = (rng.normal(size=(3, 5)) * 3).astype(dtype)
    x[0, 1] = np.nan
    x[2, :] = np.nan
    return x


@pytest.mark.skipif(real_jnp is None, reason="real JAX is not installed")
@pytest.mark.parametrize("dtype", LIVE_DTYPES)
@pytest.mark.parametrize("case", LIVE, ids=[f"{c[0]}{c[1]}" for c in LIVE])
def test_live_against_jax(case, dtype):
    name, kw = case
    x = _live_input(dtype)
    kw = dict(kw)
    args = (kw.pop("q"),) if "q" in kw else ()
    results = []
    for mod in (real_jnp, jnp):
        kws = {k: (mod.asarray(np.arange(15).reshape(3, 5) % 3 > 0) if v == "m" else v)
               for k, v in kw.items()}
        try:
            results.append(getattr(mod, name)(mod.asarray(x), *args, **kws))
        except Exception as e:  # noqa: BLE001 - the error types are compared
            results.append(e)
    want, got = results
    if isinstance(want, Exception):
        assert isinstance(got, type(want)), (want, got)
        return
    assert not isinstance(got, Exception), got
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.weak_type == want.weak_type
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=2e-3 if np.dtype(want.dtype).itemsize == 2 else 1e-6)
