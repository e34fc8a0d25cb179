"""JAX parity of minijax.random, jnp.fft, jnp.linalg and scipy.special edge cases.

Found by differential testing against real JAX 0.10.2. Expected values are hard-coded from
JAX 0.10.2 (so CI without JAX checks them); the live comparisons at the end skip cleanly
when jax is not importable.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
import minijax.random as jr
import minijax.scipy.fft as jsfft
import minijax.scipy.special as jss
from minijax.random.base import _fma
from minijax.test_util import enable_x64

# ----------------------------------------------------------------------------- random


def test_uniform_minval_maxval_is_bit_exact_with_jax():
    # JAX 0.10.2's jax.random.uniform(PRNGKey(7), (6,), float32, -3., 2.5), as uint32 bits:
    # its compiled kernel rounds floats * (maxval - minval) + minval once (a fused multiply-add)
    want = np.array([1060445788, 1075253421, 3215641682, 3205425162, 1065519950, 1055961758],
                    np.uint32)
    key = jr.PRNGKey(7)
    eager = np.asarray(jr.uniform(key, (6,), np.float32, -3.0, 2.5)).view(np.uint32)
    jitted = minijax.jit(lambda k: jr.uniform(k, (6,), np.float32, -3.0, 2.5))(key)
    np.testing.assert_array_equal(eager, want)
    np.testing.assert_array_equal(np.asarray(jitted).view(np.uint32), want)


def test_uniform_float64_minval_maxval_is_bit_exact_with_jax():
    # JAX 0.10.2, x64: jax.random.uniform(PRNGKey(3), (4,), float64, -3., 2.5) as uint64 bits
    want = np.array([4610603627572057038, 13826117290784268208, 13833653124748453518,
                     13834502735580452953], np.uint64)
    with enable_x64():
        got = jr.uniform(jr.PRNGKey(3), (4,), np.float64, -3.0, 2.5)
        np.testing.assert_array_equal(np.asarray(got).view(np.uint64), want)


def test_uniform_bfloat16_draws_8_bit_words_as_jax():
    # JAX 0.10.2: bfloat16 (7 mantissa bits) samples come from 8-bit random words
    bf16 = ml_dtypes.bfloat16
    key = jr.PRNGKey(7)
    got = np.asarray(jr.uniform(key, (6,), bf16)).astype(np.float32)
    np.testing.assert_array_equal(got, [0.0390625, 0.0, 0.6640625, 0.1875, 0.5234375,
                                        0.4140625])
    got = np.asarray(minijax.jit(lambda k: jr.uniform(k, (4,), bf16, -2.0, 3.0))(key))
    np.testing.assert_array_equal(got.astype(np.float32), [-1.8046875, -2.0, 1.3125, -1.0625])


def _round_exact(value: Fraction, dtype) -> float:
    """`value` rounded to nearest-even in `dtype` (float32 or float64), exactly."""
    guess = np.asarray(float(value), np.float64).astype(dtype)
    cands = [guess, np.nextafter(guess, dtype(np.inf)), np.nextafter(guess, dtype(-np.inf))]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - value),
                                     int(np.asarray(c).view(f"u{np.dtype(dtype).itemsize}"))
                                     & 1))
    return best


_F32 = st.floats(-1e6, 1e6, width=32, allow_subnormal=False)


@settings(max_examples=60, deadline=None)
@given(_F32, _F32, _F32)
def test_fma_emulation_rounds_once_float32(a, b, c):
    a, b, c = (np.float32(v) for v in (a, b, c))
    want = _round_exact(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)),
                        np.float32)
    args = [jnp.asarray(np.full(3, v, np.float32)) for v in (a, b, c)]
    got = np.asarray(_fma(*args))
    jitted = np.asarray(minijax.jit(_fma)(*args))
    if want == 0:  # the sign of an exact zero is not part of the contract
        assert np.all(got == 0) and np.all(jitted == 0)
        return
    np.testing.assert_array_equal(got, np.full(3, want, np.float32))
    np.testing.assert_array_equal(jitted, np.full(3, want, np.float32))


def test_fma_emulation_double_rounding_case_float64():
    # 1 + 2^-53 + 2^-105: plain a*b+c rounds the product to 1 + 2^-53 then ties to 1.0;
    # the fused result is 1 + 2^-52
    with enable_x64():
        a = np.float64(1 + 2.0 ** -27)
        b = np.float64(1 + 2.0 ** -26 - 2.0 ** -52)
        c = np.float64(-(2.0 ** -26 + 2.0 ** -27))
        exact = Fraction(a) * Fraction(b) + Fraction(c)
        got = float(_fma(jnp.asarray(a), jnp.asarray(b), jnp.asarray(c)))
        assert got == float(exact)  # float(Fraction) rounds once
        assert got != float(a * b + c) or a * b + c == float(exact)


# ----------------------------------------------------------------------------- dtypes / fft


def test_int32_becomes_float32_in_float_functions_with_x64():
    # JAX 0.10.2 with x64: jnp.sin(int32) is float32, int64 inputs give float64
    with enable_x64():
        assert jnp.sin(jnp.ones(3, jnp.int32)).dtype == np.float32
        assert jnp.mean(jnp.ones(3, jnp.int16)).dtype == np.float32
        assert jnp.sin(jnp.ones(3, jnp.int64)).dtype == np.float64
        assert jnp.linalg.norm(jnp.ones(3, jnp.int32)).dtype == np.float32
        assert jss.logsumexp(jnp.arange(4)).dtype == np.float64
        assert jss.gammaln(jnp.ones(2, jnp.int32)).dtype == np.float32


def test_fft_dtype_rules_as_jax():
    x32 = jnp.ones(4, jnp.int32)
    with enable_x64():
        assert jnp.fft.fft(x32).dtype == np.complex64
        assert jnp.fft.irfft(x32).dtype == np.float32
        assert jnp.fft.hfft(x32).dtype == np.float32
        assert jnp.fft.rfft(jnp.ones(4, jnp.int64)).dtype == np.complex128
        assert jsfft.dct(jnp.ones((2, 4), jnp.int32)).dtype == np.float32
    assert jnp.fft.fft(jnp.ones(4, jnp.float16)).dtype == np.complex64
    assert jsfft.dct(jnp.ones((2, 4), jnp.float16)).dtype == np.float32
    with pytest.raises(ValueError, match="float32 or float64"):
        jnp.fft.rfft(jnp.ones(4, jnp.float16))
    with pytest.raises(ValueError, match="only supports 2 axes"):
        jnp.fft.ifft2(jnp.ones((3, 3)), axes=(0,))


def test_fftfreq_rounds_d_times_n_first():
    # JAX 0.10.2: jnp.fft.fftfreq(7, 0.1, dtype=float16)
    got = np.asarray(jnp.fft.fftfreq(7, 0.1, dtype=jnp.float16)).astype(np.float32)
    np.testing.assert_allclose(got, [0.0, 1.427734375, 2.85546875, 4.28125, -4.28125,
                                     -2.85546875, -1.427734375], rtol=2e-3)
    assert got[1] == np.float32(1.427734375)


# ----------------------------------------------------------------------------- linalg

_SINGULAR = np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]], np.float32)


@pytest.mark.parametrize("jit", [False, True])
def test_singular_solve_and_inv_give_inf_nan_like_jax(jit):
    wrap = minijax.jit if jit else (lambda f: f)
    # JAX 0.10.2 values (LAPACK getrf + trsm, no error)
    got = np.asarray(wrap(lambda a: jnp.linalg.solve(a, jnp.ones(3)))(_SINGULAR))
    np.testing.assert_array_equal(got, [np.nan, -np.inf, np.inf])
    got = np.asarray(wrap(jnp.linalg.inv)(_SINGULAR))
    np.testing.assert_array_equal(got, [[np.nan, np.nan, np.nan], [-np.inf, np.inf, np.nan],
                                        [np.inf, -np.inf, np.nan]])
    got = wrap(lambda a: jnp.linalg.matrix_power(a, -1))(np.zeros((2, 2), np.float32))
    np.testing.assert_array_equal(got, [[np.nan, np.nan], [np.nan, np.inf]])


@pytest.mark.parametrize("jit", [False, True])
def test_cholesky_not_pd_nan_triangle(jit):
    wrap = minijax.jit if jit else (lambda f: f)
    # JAX 0.10.2: NaNs in the lower triangle, zeros above, per failed matrix of a batch
    a = np.stack([-np.eye(3, dtype=np.float32), 2 * np.eye(3, dtype=np.float32)])
    got = np.asarray(wrap(jnp.linalg.cholesky)(a))
    nan_tri = np.where(np.tril(np.ones((3, 3), bool)), np.nan, 0.0)
    np.testing.assert_array_equal(got[0], nan_tri)
    np.testing.assert_allclose(got[1], np.sqrt(2) * np.eye(3), rtol=1e-6)
    up = np.asarray(wrap(lambda m: jnp.linalg.cholesky(m, upper=True))(a[0]))
    np.testing.assert_array_equal(up, nan_tri.T)


def test_matrix_rank_rtol_is_absolute_and_default_int():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    # JAX 0.10.2: rank(a, 0.5) == 1, rank(diag(3, 0.2), rtol=0.1) == 2 (compared with s)
    assert int(jnp.linalg.matrix_rank(a, 0.5)) == 1
    assert int(jnp.linalg.matrix_rank(jnp.diag(jnp.array([3.0, 0.2])), rtol=0.1)) == 2
    assert int(jnp.linalg.matrix_rank(jnp.diag(jnp.array([3.0, 0.2])), tol=0.3)) == 1
    with enable_x64():
        assert jnp.linalg.matrix_rank(jnp.eye(3, dtype=jnp.float32)).dtype == np.int64
        assert jnp.linalg.lstsq(jnp.eye(3), jnp.ones(3))[2].dtype == np.int64


def test_pinv_hermitian_and_lstsq_negative_rcond_as_jax():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    # JAX 0.10.2: pinv(hermitian=True) uses eigh of the symmetrized input
    np.testing.assert_allclose(jnp.linalg.pinv(a, hermitian=True),
                               [[-1.7777777, 1.1111110], [1.1111110, -0.4444445]], rtol=1e-5)
    u, s, vh = jnp.linalg.svd(np.diag([2.0, -3.0]).astype(np.float32), hermitian=True)
    np.testing.assert_allclose(s, [3.0, 2.0])
    np.testing.assert_allclose(np.asarray(u) * np.asarray(s) @ np.asarray(vh),
                               np.diag([2.0, -3.0]), atol=1e-6)
    # JAX 0.10.2: lstsq(singular, arange(3), rcond=-1): rcond < 0 means eps
    x, resid, rank, _ = jnp.linalg.lstsq(_SINGULAR, jnp.arange(3.0), rcond=-1)
    np.testing.assert_allclose(x, [1.6, -1.2, 0.4], rtol=1e-5)
    np.testing.assert_allclose(resid, [0.2], rtol=1e-4)
    assert int(rank) == 2


# ----------------------------------------------------------------------------- special


def test_special_edge_values_as_jax():
    # JAX 0.10.2 values
    got = jss.xlogy(jnp.array([0.0, 0.0, 1.0]), jnp.array([np.nan, 0.0, np.nan]))
    np.testing.assert_array_equal(got, [np.nan, 0.0, np.nan])
    got = jss.xlog1py(jnp.array([0.0, 0.0]), jnp.array([np.nan, -1.0]))
    np.testing.assert_array_equal(got, [np.nan, 0.0])
    got = jss.betainc(jnp.array([0.0, 0.5, np.inf, 2.0, np.inf]),
                      jnp.array([1.0, 0.0, 1.0, np.inf, np.inf]),
                      jnp.array([0.5, 0.5, 0.5, 0.5, 0.0]))
    np.testing.assert_array_equal(got, [1.0, 0.0, 0.0, 1.0, np.nan])
    np.testing.assert_array_equal(jss.gammainc(jnp.array([0.0, 0.0]), jnp.array([0.5, 2.0])),
                                  [np.nan, 1.0])
    np.testing.assert_array_equal(jss.gammaincc(jnp.array([0.0, 0.0]), jnp.array([0.5, 2.0])),
                                  [0.0, 0.0])


def test_zeta_and_polygamma_poles_as_jax():
    # JAX 0.10.2 (XLA's zeta): at q = 0, -1, ... inf for even integer x, nan otherwise;
    # polygamma(n, 0) is inf for odd n and nan for even n >= 2
    got = jss.zeta(jnp.array([2.0, 3.0, 2.5, 4.0, 2.0]), jnp.array([-1.0, 0.0, 0.0, -2.0, 0.5]))
    np.testing.assert_allclose(got, [np.inf, np.nan, np.nan, np.inf, 4.934802], rtol=1e-5)
    got = [float(jss.polygamma(n, jnp.array([0.0, -1.0]))[i]) for n in (1, 2, 3) for i in (0, 1)]
    np.testing.assert_array_equal(got, [np.inf, np.inf, np.nan, np.nan, np.inf, np.inf])


# ----------------------------------------------------------------------------- live JAX


@pytest.fixture(scope="module")
def real_jax():
    jax = pytest.importorskip("jax")
    return jax


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_live_uniform_bits_equal_jax(real_jax, dtype):
    jrand = real_jax.random
    for seed, lo, hi in [(0, 0.0, 1.0), (1, -3.0, 2.5), (2, 1e-3, 6e4), (3, -6e4, -2.0)]:
        want = np.asarray(jrand.uniform(jrand.PRNGKey(seed), (257,), dtype, lo, hi))
        got = np.asarray(jr.uniform(jr.PRNGKey(seed), (257,), dtype, lo, hi))
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                      want.view(f"u{want.itemsize}"))


def test_live_linalg_and_fft_match_jax(real_jax):
    rjnp = real_jax.numpy
    mats = [_SINGULAR, np.zeros((3, 3), np.float32), -np.eye(3, dtype=np.float32)]
    for m in mats:
        for name in ["inv", "cholesky", "pinv"]:
            want = np.asarray(getattr(rjnp.linalg, name)(m))
            got = np.asarray(getattr(jnp.linalg, name)(m))
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)
        assert int(jnp.linalg.matrix_rank(m, 0.5)) == int(rjnp.linalg.matrix_rank(m, 0.5))
    for dt in ["int8", "int32", "bool", "float16", "float32"]:
        x = np.ones(6, dt)
        assert jnp.fft.fft(x).dtype == rjnp.fft.fft(x).dtype
        assert jnp.fft.irfft(x).dtype == rjnp.fft.irfft(x).dtype
    assert math.isnan(float(jss.xlogy(0.0, np.nan)))
