"""lax.linalg's eig, hessenberg, tridiagonal, householder_product, lu_pivots_to_permutation,
tridiagonal_solve; jnp.linalg.eig/eigvals; scipy.linalg's hessenberg, qr_multiply,
solve_sylvester and fiedler_companion.

References: NumPy / SciPy (the defining identities and SciPy's routines), finite differences
for gradients, and JAX 0.10.2's values (hard-coded; plus live comparisons that skip when jax
is not importable).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
import minijax.scipy.linalg as msl

L = minijax.lax.linalg

_A = np.array([[1., 2, 0], [-3, 1, 1], [0.5, 0, 2]], np.float32)
_S = np.array([[4., 1, 2], [1, 3, 0.5], [2, 0.5, 5]], np.float32)


def _rand(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _same_up_to_phase(got, want, atol):
    """Columns equal up to a unit-modulus factor each (eigenvectors are defined so)."""
    got, want = np.asarray(got), np.asarray(want)
    phase = np.sum(np.conj(got) * want, axis=-2, keepdims=True)
    phase = phase / np.abs(phase)
    np.testing.assert_allclose(got * phase, want, atol=atol)

# --------------------------------------------------------------------------- eig


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_eig_satisfies_definitions(dtype, x64):
    a = _rand((2, 5, 5), dtype, seed=1)
    w, vl, vr = L.eig(a)
    cdt = np.result_type(dtype, np.complex64)
    assert w.dtype == vl.dtype == vr.dtype == cdt and w.shape == (2, 5)
    tol = 1e-4 if np.finfo(dtype).bits in (32, 64) and cdt == np.complex64 else 1e-10
    a_c, w_, vl_, vr_ = (np.asarray(t, np.complex128) for t in (a, w, vl, vr))
    np.testing.assert_allclose(a_c @ vr_, vr_ * w_[:, None, :], atol=tol * 10)
    np.testing.assert_allclose(np.conj(np.swapaxes(vl_, -1, -2)) @ a_c,
                               w_[:, :, None] * np.conj(np.swapaxes(vl_, -1, -2)),
                               atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(vr_, axis=-2), 1, atol=tol)
    np.testing.assert_allclose(np.linalg.norm(vl_, axis=-2), 1, atol=tol)
    ref = np.linalg.eigvals(a_c)
    for got, want in zip(w_, ref, strict=True):   # the same multiset of eigenvalues
        assert np.abs(got[:, None] - want[None, :]).min(axis=1).max() < tol * 10
        assert np.abs(got[:, None] - want[None, :]).min(axis=0).max() < tol * 10


def test_eig_flags_values_and_jit():
    outs = L.eig(_A, compute_left_eigenvectors=False)
    assert len(outs) == 2 and outs[1].shape == (3, 3)
    (w,) = L.eig(_A, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    # JAX 0.10.2
    np.testing.assert_allclose(np.asarray(w), [0.9314412 + 2.4801652j,
                                               0.9314412 - 2.4801652j, 2.1371171 + 0j],
                               rtol=1e-6)
    jw, jvl, jvr = minijax.jit(L.eig)(_A)
    ew, evl, evr = L.eig(_A)
    np.testing.assert_allclose(np.asarray(jw), np.asarray(ew), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jvr), np.asarray(evr), atol=1e-6)
    batched = minijax.vmap(lambda x: L.eig(x)[0])(np.stack([_A, 2 * _A]))
    np.testing.assert_allclose(np.asarray(batched[1]), 2 * np.asarray(ew), rtol=1e-5)


def _fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        g[idx] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def test_eig_gradients_match_finite_differences(x64):
    a = _rand((4, 4), seed=3)

    def values(x):
        (w,) = L.eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
        return jnp.sum(jnp.real(w) * jnp.arange(1., 5.)[jnp.argsort(jnp.real(w))] +
                       jnp.imag(w) ** 2)

    np.testing.assert_allclose(np.asarray(minijax.grad(values)(a)),
                               _fd_grad(lambda x: float(values(x)), a), rtol=1e-5, atol=1e-7)

    def vectors(x):   # |v|: invariant to the eigenvectors' phases
        w, vr = L.eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
        order = jnp.argsort(jnp.real(w) + 1e-3 * jnp.imag(w))
        return jnp.sum(jnp.abs(vr[:, order]) * jnp.arange(16.).reshape(4, 4))

    np.testing.assert_allclose(np.asarray(minijax.grad(vectors)(a)),
                               _fd_grad(lambda x: float(vectors(x)), a), rtol=1e-5, atol=1e-7)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        minijax.grad(lambda x: jnp.abs(L.eig(x)[2]).sum())(a)


def test_jnp_linalg_eig_and_eigvals():
    w, v = jnp.linalg.eig(_A)
    np.testing.assert_allclose(_A.astype(np.complex64) @ np.asarray(v),
                               np.asarray(v) * np.asarray(w), atol=1e-5)
    np.testing.assert_allclose(np.asarray(jnp.linalg.eigvals(_A)), np.asarray(w), rtol=1e-6)
    with pytest.raises(ValueError, match="square"):
        jnp.linalg.eigvals(np.ones((2, 3), np.float32))

# --------------------------------------------------------------------------- Householder forms


def test_hessenberg_packed_form_matches_jax():
    h, taus = L.hessenberg(_A)
    # JAX 0.10.2 (LAPACK gehrd)
    np.testing.assert_allclose(np.asarray(h), [[1., -1.9727879, 0.328798],
                                               [3.0413811, 0.8648648, -0.8108108],
                                               [-0.08276253, 0.18918921, 2.1351352]],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(taus), [1.9863939, 0.], atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_hessenberg_and_householder_product_reconstruct(dtype, x64):
    a = _rand((3, 6, 6), dtype, seed=4)
    h, q = msl.hessenberg(a, calc_q=True)
    h, q = np.asarray(h), np.asarray(q)
    assert np.all(np.tril(h, -2) == 0)
    np.testing.assert_allclose(q @ h @ np.conj(np.swapaxes(q, -1, -2)), a, atol=1e-12)
    np.testing.assert_allclose(np.conj(np.swapaxes(q, -1, -2)) @ q, np.broadcast_to(
        np.eye(6), q.shape), atol=1e-12)
    want_h, want_q = sl.hessenberg(a[0], calc_q=True)
    np.testing.assert_allclose(h[0], want_h, atol=1e-12)
    np.testing.assert_allclose(q[0], want_q, atol=1e-12)
    jit_h = minijax.jit(lambda x: msl.hessenberg(x))(a)
    np.testing.assert_allclose(np.asarray(jit_h), h, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_householder_product_is_qr_q(dtype, x64):
    a = _rand((7, 4), dtype, seed=5)
    qr_packed, taus, = sl.lapack.get_lapack_funcs("geqrf", (a,))(a)[:2]
    q = L.householder_product(jnp.asarray(qr_packed), jnp.asarray(taus))
    np.testing.assert_allclose(np.asarray(q), sl.qr(a, mode="economic")[0], atol=1e-12)
    with pytest.raises(ValueError, match="at least as many rows"):
        L.householder_product(jnp.ones((2, 3)), jnp.ones(2))


@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal_matches_jax_and_lapack(lower, x64):
    a, d, e, taus = L.tridiagonal(_S, lower=lower)
    # JAX 0.10.2 (LAPACK ssytrd)
    want_d = [4., 5., 3.] if lower else [2.588235, 4.411766, 5.]
    want_e = [-2.236068, -0.49999988] if lower else [0.6470593, -2.0615528]
    want_t = [1.4472135, 0.] if lower else [0., 1.2425356]
    np.testing.assert_allclose(np.asarray(d), want_d, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(e), want_e, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(taus), want_t, rtol=1e-5, atol=1e-6)
    herm = _rand((5, 5), np.complex128, seed=6)
    herm = herm + np.conj(herm.T)
    fn = sl.lapack.get_lapack_funcs("hetrd", (herm,))
    want = fn(herm, lower=int(lower))
    got = L.tridiagonal(herm, lower=lower)
    for g, w in zip(got, want[:4]):
        np.testing.assert_allclose(np.asarray(g), w, atol=1e-12)


def test_lu_pivots_to_permutation():
    piv = np.array([[2, 2, 3], [1, 2, 2]], np.int32)
    out = L.lu_pivots_to_permutation(piv, 5)
    np.testing.assert_array_equal(np.asarray(out), [[2, 0, 3, 1, 4], [1, 2, 0, 3, 4]])  # JAX
    a = _rand((6, 6), np.float32, seed=7)
    lu, pivots, perm = L.lu(a)
    np.testing.assert_array_equal(np.asarray(L.lu_pivots_to_permutation(pivots, 6)),
                                  np.asarray(perm))
    with pytest.raises(ValueError, match="at least"):
        L.lu_pivots_to_permutation(piv, 2)

# --------------------------------------------------------------------------- tridiagonal_solve


def _dense(dl, d, du):
    return np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)


def test_tridiagonal_solve_matches_jax_and_dense_solve():
    dl = np.array([0., 1, 2, 1], np.float32)
    d = np.array([4., 5, 6, 7], np.float32)
    du = np.array([1., -1, 0.5, 0], np.float32)
    b = np.array([[1.], [2], [3], [4]], np.float32)
    x = L.tridiagonal_solve(dl, d, du, b)
    np.testing.assert_allclose(np.asarray(x), [[0.14150384], [0.4339846], [0.31142688],
                                               [0.52693903]], rtol=1e-6)   # JAX 0.10.2


@settings(max_examples=15)
@given(st.integers(1, 7), st.integers(1, 3), st.integers(0, 2))
def test_tridiagonal_solve_batched_random(m, n, nbatch):
    rng = np.random.default_rng(m * 10 + n)
    batch = (2,) * nbatch
    dl, du = rng.standard_normal(batch + (m,)), rng.standard_normal(batch + (m,))
    d = 4 + rng.uniform(0, 1, batch + (m,))
    b = rng.standard_normal(batch + (m, n))
    x = np.asarray(L.tridiagonal_solve(*(v.astype(np.float32) for v in (dl, d, du, b))))
    for idx in np.ndindex(*batch):
        want = np.linalg.solve(_dense(dl[idx], d[idx], du[idx]), b[idx])
        np.testing.assert_allclose(x[idx], want, rtol=1e-4, atol=1e-5)


def test_tridiagonal_solve_gradients_and_errors(x64):
    rng = np.random.default_rng(8)
    dl, du = rng.standard_normal(5), rng.standard_normal(5)
    d, b = 4 + rng.uniform(size=5), rng.standard_normal((5, 2))
    w = rng.standard_normal((5, 2))

    def loss(dl, d, du, b):
        return jnp.sum(w * L.tridiagonal_solve(dl, d, du, b))

    grads = minijax.grad(loss, argnums=(0, 1, 2, 3))(dl, d, du, b)
    args = [dl, d, du, b]
    for i, g in enumerate(grads):
        def f(v, i=i):
            return float(loss(*[v if j == i else a for j, a in enumerate(args)]))
        want = _fd_grad(f, args[i])
        if i == 0:
            want[0] = 0.   # dl[0] and du[-1] are not part of the matrix
        if i == 2:
            want[-1] = 0.
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="same shape"):
        L.tridiagonal_solve(dl[:4], d, du, b)
    with pytest.raises(NotImplementedError, match="perturb_singular"):
        L.tridiagonal_solve(dl, d, du, b, perturb_singular=True)

# --------------------------------------------------------------------------- scipy.linalg


def test_fiedler_companion_matches_jax_and_roots():
    c = msl.fiedler_companion(np.array([2., 3., -1., 4., 5., 6.]))
    np.testing.assert_allclose(np.asarray(c), [[-1.5, 0.5, 1., 0., 0.], [1., 0., 0., 0., 0.],
                                               [0., -2., 0., -2.5, 1.], [0., 1., 0., 0., 0.],
                                               [0., 0., 0., -3., 0.]])   # JAX 0.10.2
    for coeffs in ([1., -3., 2.], [2., 0., -1., 4.], [1., 2., 3., 4., 5., 6., 7.]):
        eig = np.linalg.eigvals(np.asarray(msl.fiedler_companion(np.array(coeffs)),
                                           np.float64))
        np.testing.assert_allclose(np.sort_complex(eig), np.sort_complex(np.roots(coeffs)),
                                   rtol=1e-5, atol=1e-5)
    assert msl.fiedler_companion(np.ones((3, 4))).shape == (3, 3, 3)
    with pytest.raises(ValueError, match="nonzero length"):
        msl.fiedler_companion(np.zeros((0,)))


@pytest.mark.parametrize("mode", ["right", "left"])
@pytest.mark.parametrize("conjugate", [False, True])
@pytest.mark.parametrize("shape", [(6, 4), (4, 6)])
def test_qr_multiply_matches_scipy(mode, conjugate, shape, x64):
    a = _rand(shape, np.complex128, seed=9)
    m, n = shape
    c = _rand((3, m) if mode == "right" else (min(m, n), 3), np.complex128, seed=10)
    got = msl.qr_multiply(a, c, mode=mode, conjugate=conjugate)
    want = sl.qr_multiply(a, c, mode=mode, conjugate=conjugate)
    np.testing.assert_allclose(np.asarray(got[0]), want[0], atol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1]), want[1], atol=1e-12)
    with pytest.raises(ValueError, match="not compatible"):
        msl.qr_multiply(a, np.ones((2, 2)), mode=mode)


@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester_matches_scipy(method, x64):
    a, b, c = _rand((4, 4), seed=11), _rand((3, 3), seed=12), _rand((4, 3), seed=13)
    x = msl.solve_sylvester(a, b, c, method=method)
    np.testing.assert_allclose(np.asarray(x), sl.solve_sylvester(a, b, c), atol=1e-10)
    assert np.isnan(np.asarray(msl.solve_sylvester(np.eye(2), -np.eye(2), np.ones((2, 2)),
                                                   method=method))).all()
    batched = msl.solve_sylvester(np.stack([a, 2 * a]), b, c, method=method)
    np.testing.assert_allclose(np.asarray(batched[1]), sl.solve_sylvester(2 * a, b, c),
                               atol=1e-10)
    with pytest.raises(ValueError, match="Incompatible shapes"):
        msl.solve_sylvester(a, b, c.T)


def test_live_jax_comparison():
    jax = pytest.importorskip("jax")
    a = _rand((5, 5), np.float32, seed=14)
    for got, want in zip(L.hessenberg(a), jax.lax.linalg.hessenberg(a), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=2e-6)
    sym = a + a.T
    for lower in (True, False):
        for got, want in zip(L.tridiagonal(sym, lower=lower),
                             jax.lax.linalg.tridiagonal(sym, lower=lower), strict=True):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=2e-5)
    w, vl, vr = L.eig(a)
    jw, jvl, jvr = jax.lax.linalg.eig(a)
    np.testing.assert_allclose(np.asarray(w), np.asarray(jw), atol=2e-5)
    _same_up_to_phase(vr, jvr, 2e-5)
    _same_up_to_phase(vl, jvl, 2e-5)
    h, q = msl.hessenberg(a, calc_q=True)
    jh, jq = jax.scipy.linalg.hessenberg(a, calc_q=True)
    np.testing.assert_allclose(np.asarray(q), np.asarray(jq), atol=2e-6)

# --------------------------------------------------------------------------- schur & friends


def _check_real_schur(a, t, z, tol):
    t, z = np.asarray(t, np.float64), np.asarray(z, np.float64)
    n = a.shape[-1]
    np.testing.assert_allclose(z @ t @ z.T, a, atol=tol)
    np.testing.assert_allclose(z.T @ z, np.eye(n), atol=tol)
    assert np.all(np.tril(t, -2) == 0)
    sub = np.diag(t, -1)
    for i in np.nonzero(sub)[0]:   # standardized 2x2 blocks, never two in a row
        assert i + 1 >= len(sub) or sub[i + 1] == 0
        assert abs(t[i, i] - t[i + 1, i + 1]) < tol and t[i, i + 1] * t[i + 1, i] < 0


@pytest.mark.parametrize("n", [1, 2, 3, 6, 12])
def test_real_schur_form(n, x64):
    for seed in range(3):
        a = _rand((n, n), seed=20 + seed)
        t, z = L.schur(a)
        _check_real_schur(a, t, z, 1e-10)
        np.testing.assert_allclose(np.sort(np.linalg.eigvals(np.asarray(t)).real),
                                   np.sort(np.linalg.eigvals(a).real), atol=1e-9)
    cyclic = np.roll(np.eye(n), 1, axis=0)   # needs exceptional shifts
    _check_real_schur(cyclic, *L.schur(cyclic), 1e-10)


def test_complex_schur_and_values_from_jax(x64):
    a = _rand((2, 5, 5), np.complex128, seed=30)
    t, z = L.schur(a)
    t, z = np.asarray(t), np.asarray(z)
    assert np.all(np.tril(t, -1) == 0)
    np.testing.assert_allclose(z @ t @ np.conj(np.swapaxes(z, -1, -2)), a, atol=1e-10)
    (t_only,) = minijax.jit(lambda x: L.schur(x, compute_schur_vectors=False))(a)
    np.testing.assert_allclose(np.asarray(t_only), t, atol=1e-12)
    t, z = msl.schur(_A)
    # JAX 0.10.2 (LAPACK sgees)
    np.testing.assert_allclose(np.asarray(t), [[0.9314412, -3.0983438, -0.6019088],
                                               [1.9853246, 0.9314412, -0.20980848],
                                               [0., 0., 2.1371171]], atol=3e-6)
    np.testing.assert_allclose(np.abs(np.asarray(z)),
                               np.abs([[0.04265552, -0.99611783, 0.07700709],
                                       [-0.9902704, -0.03193437, 0.13544266],
                                       [0.13245764, 0.08203522, 0.987788]]), atol=3e-6)
    tc, zc = msl.schur(_A, output="complex")
    assert tc.dtype == np.complex64 and np.all(np.tril(np.asarray(tc), -1) == 0)
    with pytest.raises(ValueError, match="output must be"):
        msl.schur(_A, output="upper")
    with pytest.raises(NotImplementedError, match="sort"):
        L.schur(_A, sort_eig_vals=True)


def test_rsf2csf_matches_scipy(x64):
    a = _rand((6, 6), seed=31)
    t, z = sl.schur(a)
    got_t, got_z = msl.rsf2csf(t, z)
    want_t, want_z = sl.rsf2csf(t, z)
    np.testing.assert_allclose(np.asarray(got_t), want_t, atol=1e-10)
    np.testing.assert_allclose(np.asarray(got_z), want_z, atol=1e-10)
    t32, z32 = msl.rsf2csf(*msl.schur(_A))
    # JAX 0.10.2
    np.testing.assert_allclose(np.diag(np.asarray(t32)), [0.9314412 + 2.480165j,
                                                          0.9314412 - 2.480165j, 2.1371171],
                               atol=3e-6)


@pytest.mark.parametrize("make", ["spd", "general", "complex"])
def test_sqrtm_and_funm_match_scipy(make, x64):
    a = _rand((5, 5), np.complex128 if make == "complex" else np.float64, seed=32)
    if make == "spd":
        a = a @ a.T + 5 * np.eye(5)
    r = np.asarray(msl.sqrtm(a))
    np.testing.assert_allclose(r @ r, a, atol=1e-9)
    np.testing.assert_allclose(r, sl.sqrtm(a), atol=1e-9)
    np.testing.assert_allclose(np.asarray(msl.funm(a, jnp.exp)), sl.expm(a), atol=1e-8)
    f, err = msl.funm(a, jnp.sin, disp=False)
    want_f, want_err = sl.funm(a, np.sin, disp=False)
    np.testing.assert_allclose(np.asarray(f), want_f, atol=1e-8)
    assert float(err) < 1e-6
    with pytest.raises(NotImplementedError, match="Blocked"):
        msl.sqrtm(a, blocksize=2)

# --------------------------------------------------------------------------- qdwh


@pytest.mark.parametrize("shape,dtype,iters", [((3, 2), np.float32, 4), ((6, 6), np.float32, 4),
                                               ((5, 5), np.complex64, 4),
                                               ((8, 5), np.float64, 6)])
def test_qdwh_polar_decomposition(shape, dtype, iters, x64):
    a = _rand(shape, dtype, seed=40)
    u, h, num_iters, converged = L.qdwh(a)
    # JAX 0.10.2 takes the same number of iterations for these inputs
    assert int(num_iters) == iters and bool(converged)
    tol = 1e-5 if np.finfo(dtype).bits <= 32 or dtype == np.complex64 else 1e-12
    u, h = np.asarray(u, np.complex128), np.asarray(h, np.complex128)
    np.testing.assert_allclose(u @ h, a, atol=tol * 10)
    np.testing.assert_allclose(np.conj(u.T) @ u, np.eye(shape[1]), atol=tol * 10)
    np.testing.assert_allclose(h, np.conj(h.T), atol=tol)
    want_u, want_h = sl.polar(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64))
    np.testing.assert_allclose(u, want_u, atol=tol * 10)
    np.testing.assert_allclose(h, want_h, atol=tol * 10)
    with pytest.raises(ValueError, match="M >= N"):
        L.qdwh(a.T if shape[0] > shape[1] else np.ones((2, 3), dtype))


def test_qdwh_jit_and_live_jax():
    a = _rand((7, 4), np.float32, seed=41)
    u, h, k, ok = minijax.jit(lambda x: L.qdwh(x, max_iterations=3))(a)
    assert int(k) == 3 and not bool(ok)   # stopped by max_iterations
    jax = pytest.importorskip("jax")
    for got, want in zip(L.qdwh(a), jax.lax.linalg.qdwh(a), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=2e-6)
