"""minijax.scipy.linalg against scipy.linalg (values), finite differences (gradients) and
JAX's signatures."""

import inspect

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax.scipy import linalg as L


def _spd(rng, n, batch=()):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


sizes = st.integers(1, 6)
seeds = st.integers(0, 2 ** 16)


@settings(max_examples=10, deadline=None)
@given(n=sizes, seed=seeds, lower=st.booleans(), k=st.integers(0, 3))
def test_cholesky_and_cho_solve(n, seed, lower, k):
    rng = np.random.default_rng(seed)
    a = _spd(rng, n)
    c = L.cholesky(a, lower=lower)
    np.testing.assert_allclose(c, sl.cholesky(a, lower=lower), rtol=1e-4, atol=1e-4)
    b = rng.normal(size=(n, k)) if k else rng.normal(size=n)
    fac = L.cho_factor(a, lower=lower)
    assert fac[1] is lower
    np.testing.assert_allclose(L.cho_solve(fac, b), sl.cho_solve(sl.cho_factor(a, lower=lower),
                                                                  b), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(L.solve(a, b, assume_a="pos", lower=lower),
                               np.linalg.solve(a, b), rtol=1e-3, atol=1e-4)


@settings(max_examples=10, deadline=None)
@given(n=sizes, seed=seeds, lower=st.booleans(), trans=st.sampled_from([0, 1, 2, "N", "T", "C"]),
       unit=st.booleans(), vec=st.booleans())
def test_solve_triangular(n, seed, lower, trans, unit, vec):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n)) + 3 * np.eye(n)
    b = rng.normal(size=n) if vec else rng.normal(size=(n, 2))
    got = L.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
    want = sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_solve_triangular_complex_conjugate_transpose():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4)) + 1j * rng.normal(size=(4, 4)) + 4 * np.eye(4)
    b = rng.normal(size=4) + 1j * rng.normal(size=4)
    a, b = a.astype(np.complex64), b.astype(np.complex64)
    for trans in (0, 1, 2):
        np.testing.assert_allclose(L.solve_triangular(a, b, trans=trans, lower=True),
                                   sl.solve_triangular(a, b, trans=trans, lower=True),
                                   rtol=1e-4, atol=1e-5)


@settings(max_examples=10, deadline=None)
@given(m=sizes, n=sizes, seed=seeds, permute_l=st.booleans())
def test_lu_reconstructs_like_scipy(m, n, seed, permute_l):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(m, n)).astype(np.float32)
    got = L.lu(a, permute_l=permute_l)
    want = sl.lu(a, permute_l=permute_l)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@settings(max_examples=10, deadline=None)
@given(n=sizes, seed=seeds, trans=st.sampled_from([0, 1, 2]), k=st.integers(0, 3))
def test_lu_factor_and_lu_solve(n, seed, trans, k):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n)).astype(np.float32)
    lu_, piv = L.lu_factor(a)
    ref_lu, ref_piv = sl.lu_factor(a)
    np.testing.assert_allclose(lu_, ref_lu, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(piv, ref_piv)
    b = rng.normal(size=(n, k)) if k else rng.normal(size=n)
    got = L.lu_solve((lu_, piv), b.astype(np.float32), trans=trans)
    want = sl.lu_solve((ref_lu, ref_piv), b, trans=trans)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("mode", ["full", "economic", "r"])
def test_qr_modes(mode):
    a = np.random.default_rng(1).normal(size=(5, 3))
    got = L.qr(a, mode=mode)
    want = sl.qr(a, mode=mode)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.abs(g), np.abs(w), rtol=1e-4, atol=1e-5)
    with pytest.raises(NotImplementedError):
        L.qr(a, pivoting=True)


def test_eigh_svd_inv_det_solve():
    rng = np.random.default_rng(2)
    a = _spd(rng, 4)
    w, v = L.eigh(a)
    np.testing.assert_allclose(w, sl.eigh(a, eigvals_only=True), rtol=1e-4)
    np.testing.assert_allclose(np.asarray(v) @ np.diag(w) @ np.asarray(v).T, a, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(L.eigh(a, eigvals_only=True), w)
    # only the lower triangle is read by default
    junk = np.triu(rng.normal(size=(4, 4)), 1)
    np.testing.assert_allclose(L.eigh(a + junk, eigvals_only=True), w, rtol=1e-4)
    with pytest.raises(NotImplementedError):
        L.eigh(a, b=np.eye(4))
    np.testing.assert_allclose(L.svd(a, compute_uv=False), sl.svdvals(a), rtol=1e-4)
    np.testing.assert_allclose(L.inv(a), sl.inv(a), rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(L.det(a), sl.det(a), rtol=1e-4)
    b = rng.normal(size=4)
    np.testing.assert_allclose(L.solve(a + junk, b), sl.solve(a + junk, b), rtol=1e-3)
    with pytest.raises(ValueError, match="assume_a"):
        L.solve(a, b, assume_a="bogus")


def test_eigh_tridiagonal():
    d, e = np.array([1.0, 2.0, 3.0, 0.5]), np.array([0.5, -0.3, 0.7])
    np.testing.assert_allclose(L.eigh_tridiagonal(d, e, eigvals_only=True),
                               sl.eigh_tridiagonal(d, e, eigvals_only=True), rtol=1e-5)
    np.testing.assert_allclose(
        L.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2)),
        sl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2)),
        rtol=1e-5)
    with pytest.raises(NotImplementedError):
        L.eigh_tridiagonal(d, e)


@pytest.mark.parametrize("scale", [0.0, 1e-3, 0.5, 3.0, 40.0])
def test_expm_matches_scipy(x64, scale):
    rng = np.random.default_rng(3)
    a = scale * rng.normal(size=(5, 5))
    np.testing.assert_allclose(L.expm(a), sl.expm(a), rtol=1e-11, atol=1e-13)


def test_expm_float32_batched_and_jit():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 4, 4)).astype(np.float32) * np.array([0.1, 1.0, 5.0],
                                                                  np.float32)[:, None, None]
    want = np.stack([sl.expm(x.astype(np.float64)) for x in a])
    np.testing.assert_allclose(L.expm(a), want, rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(minijax.jit(L.expm)(a), want, rtol=2e-4, atol=1e-5)
    # too many squarings needed: NaN, as JAX
    assert np.isnan(np.asarray(L.expm(np.eye(2, dtype=np.float32) * 1e6, max_squarings=4))).all()


def test_expm_gradient_matches_frechet(x64):
    rng = np.random.default_rng(5)
    a, e = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    _, tangent = minijax.jvp(L.expm, (a,), (e,))
    np.testing.assert_allclose(tangent, sl.expm_frechet(a, e, compute_expm=False), rtol=1e-9)
    exp_a, frechet = L.expm_frechet(a, e)
    ref_exp, ref_frechet = sl.expm_frechet(a, e)
    np.testing.assert_allclose(exp_a, ref_exp, rtol=1e-10)
    np.testing.assert_allclose(frechet, ref_frechet, rtol=1e-9)
    np.testing.assert_allclose(L.expm_frechet(a, e, compute_expm=False), ref_frechet,
                               rtol=1e-9)


def test_gradients_against_finite_differences(x64):
    rng = np.random.default_rng(6)
    a = _spd(rng, 3)
    b = rng.normal(size=3)
    d = rng.normal(size=(3, 3))
    d = d + d.T

    def check(f):
        g = np.asarray(minijax.grad(f)(a))
        eps = 1e-6
        fd = (f(a + eps * d) - f(a - eps * d)) / (2 * eps)
        np.testing.assert_allclose(np.sum(g * d), fd, rtol=1e-6)
    check(lambda m: jnp.sum(L.cho_solve(L.cho_factor(m), b)))
    check(lambda m: jnp.sum(L.solve(m, b, assume_a="pos")))
    check(lambda m: jnp.sum(L.lu_solve(L.lu_factor(m), b)))
    check(lambda m: jnp.sum(L.expm(0.3 * m)))
    check(lambda m: jnp.sum(L.solve_triangular(m, b, lower=True)))


def test_polar():
    rng = np.random.default_rng(7)
    a = rng.normal(size=(4, 3))
    for side in ("right", "left"):
        u, p = L.polar(a, side=side)
        ru, rp = sl.polar(a, side=side)
        np.testing.assert_allclose(u, ru, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(p, rp, rtol=1e-4, atol=1e-5)


def test_structured_matrices():
    c, r = np.array([1, 2, 3]), np.array([9, 5, 6, 7])
    np.testing.assert_array_equal(L.toeplitz(c, r), sl.toeplitz(c, r))
    np.testing.assert_array_equal(L.toeplitz(c), sl.toeplitz(c))
    z = np.array([1 + 1j, 2, 3], np.complex64)
    np.testing.assert_array_equal(L.toeplitz(z), sl.toeplitz(z))
    np.testing.assert_array_equal(L.hankel(c, r), sl.hankel(c, r))
    np.testing.assert_array_equal(L.hankel(c), sl.hankel(c))
    np.testing.assert_array_equal(L.circulant(c), sl.circulant(c))
    np.testing.assert_allclose(L.companion(np.array([1.0, 2.0, 3.0])),
                               sl.companion([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(L.hilbert(4), sl.hilbert(4), rtol=1e-6)
    np.testing.assert_allclose(L.leslie([1.0, 2.0, 3.0], [0.5, 0.25]),
                               sl.leslie([1.0, 2.0, 3.0], [0.5, 0.25]))
    for kind in (None, "lower", "upper"):
        np.testing.assert_array_equal(L.pascal(4, kind), sl.pascal(4, kind or "symmetric"))
    blocks = (np.array(1.0), np.ones(2), np.ones((2, 1)), np.arange(4).reshape(2, 2))
    np.testing.assert_array_equal(L.block_diag(*blocks), sl.block_diag(*blocks))
    assert L.block_diag().shape == (1, 0)
    # JAX's dtypes: integer inputs stay integer; hilbert/pascal/companion are float32
    assert L.toeplitz(c).dtype == np.int32 and L.hilbert(3).dtype == np.float32
    assert L.pascal(3).dtype == np.float32


def test_more_structured_matrices():
    for n in (1, 2, 3, 5):
        for scale in (None, "sqrtn", "n"):
            np.testing.assert_allclose(L.dft(n, scale), sl.dft(n, scale), rtol=1e-5,
                                       atol=1e-6)
        np.testing.assert_allclose(L.helmert(n), sl.helmert(n), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(L.helmert(n, full=True), sl.helmert(n, full=True),
                                   rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(L.invhilbert(n), sl.invhilbert(n), rtol=1e-6)
        for kind in ("symmetric", "lower", "upper"):
            np.testing.assert_allclose(L.invpascal(n, kind), sl.invpascal(n, kind), rtol=1e-6)
    for n in (1, 2, 4, 8):
        np.testing.assert_array_equal(L.hadamard(n), sl.hadamard(n))
    with pytest.raises(ValueError, match="power of 2"):
        L.hadamard(6)
    a = np.array([1.0, 4.0, 2.0, 7.0])
    np.testing.assert_array_equal(L.fiedler(a), sl.fiedler(a))
    for m in (1, 3, 5):
        for n in (1, 2, 4, 6):
            for mode in ("full", "same", "valid"):
                np.testing.assert_array_equal(
                    L.convolution_matrix(np.arange(1, m + 1), n, mode),
                    sl.convolution_matrix(np.arange(1, m + 1), n, mode), err_msg=(m, n, mode))
    # JAX 0.10.2's dtypes
    assert L.dft(3).dtype == np.complex64 and L.hadamard(4).dtype == np.int32
    assert L.helmert(3).dtype == np.float32 and L.invhilbert(3).dtype == np.float32
    assert L.convolution_matrix(np.array([1, 2]), 3).dtype == np.int32


def test_signatures_follow_jax():
    # Recorded from jax.scipy.linalg in JAX 0.10.2 (annotations dropped).
    expected = {
        "cholesky": "(a, lower=False, overwrite_a=False, check_finite=True)",
        "cho_solve": "(c_and_lower, b, overwrite_b=False, check_finite=True)",
        "solve_triangular": "(a, b, trans=0, lower=False, unit_diagonal=False, "
                            "overwrite_b=False, debug=None, check_finite=True)",
        "lu": "(a, permute_l=False, overwrite_a=False, check_finite=True)",
        "lu_solve": "(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True)",
        "qr": "(a, overwrite_a=False, lwork=None, mode='full', pivoting=False, "
              "check_finite=True)",
        "eigh": "(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, "
                "overwrite_b=False, turbo=True, eigvals=None, type=1, check_finite=True)",
        "expm": "(A, *, upper_triangular=False, max_squarings=16)",
        "solve": "(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False, "
                 "check_finite=True, assume_a='gen')",
        "svd": "(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True, "
               "lapack_driver='gesdd')",
        "polar": "(a, side='right', *, method='qdwh', eps=None, max_iterations=None)",
        "toeplitz": "(c, r=None)",
        "expm_frechet": "(A, E, *, method=None, compute_expm=True)",
        "dft": "(n, scale=None, *, dtype=None)", "helmert": "(n, full=False)",
        "convolution_matrix": "(a, n, mode='full')", "invpascal": "(n, kind=None)",
    }
    for name, sig in expected.items():
        params = inspect.signature(getattr(L, name)).parameters.values()
        got = str(inspect.Signature([p.replace(annotation=inspect.Parameter.empty)
                                     for p in params]))
        assert got == sig, name
