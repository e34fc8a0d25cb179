"""jnp.linalg and lax.linalg against NumPy: values over hypothesis shapes (batched and
empty), gradients by finite differences, vmap against a loop, jit against eager, errors."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax.lax import linalg as lax_linalg
from minijax.test_util import check_grads, check_vmap, enable_x64


def _rand(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _spd(shape, seed=0, dtype=np.float64):
    a = _rand(shape, seed, dtype)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=dtype)).astype(dtype)


batch_st = st.lists(st.integers(0, 2), min_size=0, max_size=2).map(tuple)
size_st = st.integers(0, 4)


@settings(max_examples=20, deadline=None)
@given(batch=batch_st, n=size_st, seed=st.integers(0, 100))
def test_lu_based_values(batch, n, seed):
    with enable_x64():
        a = _rand(batch + (n, n), seed)
        b = _rand(batch + (n, 2), seed + 1)
        np.testing.assert_allclose(jnp.linalg.det(a), np.linalg.det(a), rtol=1e-9, atol=1e-9)
        sign, logdet = jnp.linalg.slogdet(a)
        want_sign, want_log = np.linalg.slogdet(a)
        np.testing.assert_allclose(sign, want_sign)
        np.testing.assert_allclose(logdet, want_log, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(jnp.linalg.inv(a), np.linalg.inv(a) if n else a, rtol=1e-7,
                                   atol=1e-7)
        np.testing.assert_allclose(jnp.linalg.solve(a, b), np.linalg.solve(a, b) if n else b,
                                   rtol=1e-7, atol=1e-7)


@settings(max_examples=20, deadline=None)
@given(batch=batch_st, m=size_st, n=size_st, seed=st.integers(0, 100))
def test_decompositions(batch, m, n, seed):
    with enable_x64():
        a = _rand(batch + (m, n), seed)
        for mode in ("reduced", "complete"):
            q, r = jnp.linalg.qr(a, mode=mode)
            k = m if mode == "complete" else min(m, n)
            assert q.shape == batch + (m, k) and r.shape == batch + (k, n)
            np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-9)
            np.testing.assert_allclose(np.triu(r), r)
        assert jnp.linalg.qr(a, mode="r").shape == batch + (min(m, n), n)
        u, s, vh = jnp.linalg.svd(a, full_matrices=False)
        np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-9)
        np.testing.assert_allclose((np.asarray(u) * np.asarray(s)[..., None, :]) @ vh, a,
                                   atol=1e-9)
        np.testing.assert_allclose(jnp.linalg.pinv(a), np.linalg.pinv(a), atol=1e-7)
        if m and n:
            np.testing.assert_array_equal(jnp.linalg.matrix_rank(a), np.linalg.matrix_rank(a))
        spd = _spd(batch + (n, n), seed)
        np.testing.assert_allclose(jnp.linalg.cholesky(spd), np.linalg.cholesky(spd), atol=1e-9)
        np.testing.assert_allclose(jnp.linalg.cholesky(spd, upper=True),
                                   np.swapaxes(np.linalg.cholesky(spd), -1, -2), atol=1e-9)
        w, v = jnp.linalg.eigh(spd)
        np.testing.assert_allclose(w, np.linalg.eigvalsh(spd), atol=1e-9)
        np.testing.assert_allclose(np.asarray(spd) @ np.asarray(v), np.asarray(v) * w[..., None, :],
                                   atol=1e-8)
        np.testing.assert_allclose(jnp.linalg.eigvalsh(spd, UPLO="U"),
                                   np.linalg.eigvalsh(spd, UPLO="U"), atol=1e-9)


def test_float32_results_and_complex():
    a = _rand((3, 3), 1, np.float32)
    assert jnp.linalg.det(a).dtype == np.float32
    assert jnp.linalg.inv(a).dtype == np.float32
    assert jnp.linalg.svd(a)[1].dtype == np.float32
    c = (_rand((3, 3), 2) + 1j * _rand((3, 3), 3)).astype(np.complex64)
    np.testing.assert_allclose(jnp.linalg.det(c), np.linalg.det(c), rtol=1e-4)
    np.testing.assert_allclose(jnp.linalg.inv(c), np.linalg.inv(c), rtol=1e-4, atol=1e-4)
    h = c @ c.conj().T + 3 * np.eye(3)
    np.testing.assert_allclose(jnp.linalg.eigvalsh(h), np.linalg.eigvalsh(h), rtol=1e-4)
    assert jnp.linalg.eigvalsh(h).dtype == np.float32
    np.testing.assert_allclose(jnp.linalg.cholesky(h), np.linalg.cholesky(h), rtol=1e-4,
                               atol=1e-5)
    assert jnp.linalg.det(np.eye(2, dtype=np.int32)).dtype == np.float32


def test_cholesky_not_positive_definite_is_nan():
    out = np.asarray(jnp.linalg.cholesky(-np.eye(2, dtype=np.float32)))
    # JAX 0.10.2: NaN in the lower triangle (diagonal included), zeros above it
    np.testing.assert_array_equal(out, np.array([[np.nan, 0], [np.nan, np.nan]], np.float32))


_MATRIX_ORDS = [None, "fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2]
_VECTOR_ORDS = [None, np.inf, -np.inf, 0, 1, -1, 2, 3, 0.5]


@settings(max_examples=15, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=3).map(tuple),
       keepdims=st.booleans())
def test_norm(shape, keepdims):
    with enable_x64():
        x = _rand(shape, len(shape))
        for ord in _VECTOR_ORDS:
            for axis in (0, -1):
                np.testing.assert_allclose(jnp.linalg.norm(x, ord, axis, keepdims),
                                           np.linalg.norm(x, ord, axis, keepdims), rtol=1e-9)
        for ord in _MATRIX_ORDS:
            for axis in ((0, 1), (-1, 0)):
                np.testing.assert_allclose(jnp.linalg.norm(x, ord, axis, keepdims),
                                           np.linalg.norm(x, ord, axis, keepdims), rtol=1e-9)
        np.testing.assert_allclose(jnp.linalg.norm(x), np.linalg.norm(x), rtol=1e-9)
        if len(shape) == 2:
            for ord in _MATRIX_ORDS:
                np.testing.assert_allclose(jnp.linalg.norm(x, ord), np.linalg.norm(x, ord),
                                           rtol=1e-9)
        np.testing.assert_allclose(jnp.linalg.vector_norm(x, ord=1), np.sum(np.abs(x)), rtol=1e-9)
        np.testing.assert_allclose(jnp.linalg.matrix_norm(x), np.linalg.norm(x, axis=(-2, -1)),
                                   rtol=1e-9)


def test_matrix_power_multi_dot_lstsq_cond(x64):
    a = _rand((2, 3, 3), 4)
    for n in (-3, -1, 0, 1, 2, 5):
        np.testing.assert_allclose(jnp.linalg.matrix_power(a, n),
                                   np.linalg.matrix_power(a, n), rtol=1e-8, atol=1e-8)
    np.testing.assert_array_equal(jnp.linalg.matrix_power(np.eye(2, dtype=np.int32) * 2, 3),
                                  np.eye(2) * 8)
    chain = [_rand((4,), 1), _rand((4, 6), 2), _rand((6, 2), 3), _rand((2, 5), 4),
             _rand((5,), 5)]
    np.testing.assert_allclose(jnp.linalg.multi_dot(chain), np.linalg.multi_dot(chain),
                               rtol=1e-9)
    np.testing.assert_allclose(jnp.linalg.multi_dot(chain[1:4]),
                               np.linalg.multi_dot(chain[1:4]), rtol=1e-9)
    tall, rhs = _rand((6, 3), 6), _rand((6, 2), 7)
    x, resid, rank, s = jnp.linalg.lstsq(tall, rhs)
    wx, wresid, wrank, ws = np.linalg.lstsq(tall, rhs)
    np.testing.assert_allclose(x, wx, rtol=1e-8)
    np.testing.assert_allclose(resid, wresid, rtol=1e-8)
    assert int(rank) == wrank
    np.testing.assert_allclose(s, ws, rtol=1e-9)
    for p in (None, 2, -2, 1, -1, np.inf, "fro"):
        np.testing.assert_allclose(jnp.linalg.cond(a, p), np.linalg.cond(a, p), rtol=1e-7)
    t = _rand((2, 3, 6), 8)
    np.testing.assert_allclose(jnp.linalg.tensorinv(t.reshape(6, 2, 3), ind=1),
                               np.linalg.tensorinv(t.reshape(6, 2, 3), ind=1), rtol=1e-7,
                               atol=1e-8)
    np.testing.assert_allclose(jnp.linalg.tensorsolve(t.reshape(6, 2, 3), _rand((6,), 9)),
                               np.linalg.tensorsolve(t.reshape(6, 2, 3), _rand((6,), 9)),
                               rtol=1e-7)


def test_array_api_exports():
    a, b = _rand((2, 3), 1), _rand((2, 3), 2)
    np.testing.assert_allclose(jnp.linalg.vecdot(a, b), np.sum(a * b, -1), rtol=1e-6)
    np.testing.assert_allclose(jnp.linalg.cross(a, b), np.cross(a, b), rtol=1e-6)
    np.testing.assert_allclose(jnp.linalg.outer(a[0], b[0]), np.outer(a[0], b[0]), rtol=1e-6)
    np.testing.assert_allclose(jnp.linalg.matrix_transpose(a), a.T)
    np.testing.assert_allclose(jnp.linalg.trace(_rand((2, 3, 3), 3)),
                               np.trace(_rand((2, 3, 3), 3), axis1=-2, axis2=-1), rtol=1e-6)
    np.testing.assert_allclose(jnp.linalg.diagonal(_rand((2, 3, 3), 3)),
                               np.diagonal(_rand((2, 3, 3), 3), axis1=-2, axis2=-1))
    np.testing.assert_allclose(jnp.linalg.svdvals(a), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-5)
    np.testing.assert_allclose(jnp.linalg.tensordot(a, b.T, 1), a @ b.T, rtol=1e-5)


# --------------------------------------------------------------------------- gradients


def _sign_free_eigh(x):
    w, v = jnp.linalg.eigh(x)
    return w, v * v[..., :1, :]  # column products do not depend on eigenvector signs


def _sign_free_svd(x):
    u, s, vh = jnp.linalg.svd(x, full_matrices=False)
    return s, jnp.matmul(u * s[..., None, :], vh), u * u[..., :1, :]


@pytest.mark.parametrize("name,fn,make", [
    ("det", jnp.linalg.det, lambda: [_rand((3, 3), 1)]),
    ("slogdet", lambda x: jnp.linalg.slogdet(x)[1], lambda: [_rand((2, 3, 3), 2)]),
    ("inv", jnp.linalg.inv, lambda: [_rand((3, 3), 3)]),
    ("solve", jnp.linalg.solve, lambda: [_rand((3, 3), 4), _rand((3, 2), 5)]),
    ("solve_vec", jnp.linalg.solve, lambda: [_rand((3, 3), 4), _rand((3,), 5)]),
    ("cholesky", jnp.linalg.cholesky, lambda: [_spd((3, 3), 6)]),
    ("qr", lambda x: tuple(jnp.linalg.qr(x)), lambda: [_rand((4, 3), 7)]),
    ("qr_square", lambda x: tuple(jnp.linalg.qr(x)), lambda: [_rand((3, 3), 8)]),
    ("eigh", _sign_free_eigh, lambda: [_spd((3, 3), 9)]),
    ("svd_values", lambda x: jnp.linalg.svd(x, compute_uv=False), lambda: [_rand((3, 4), 10)]),
    ("svd_tall", _sign_free_svd, lambda: [_rand((4, 3), 11)]),
    ("svd_wide", _sign_free_svd, lambda: [_rand((2, 4), 12)]),
    ("norm_fro", jnp.linalg.norm, lambda: [_rand((3, 4), 13)]),
    ("norm_nuc", lambda x: jnp.linalg.norm(x, "nuc"), lambda: [_rand((3, 4), 14)]),
    ("norm_2", lambda x: jnp.linalg.norm(x, 2), lambda: [_rand((3, 4), 15)]),
    ("norm_vec3", lambda x: jnp.linalg.norm(x, 3, axis=0), lambda: [_rand((3, 4), 16)]),
    ("pinv", jnp.linalg.pinv, lambda: [_rand((4, 3), 17)]),
    ("lu", lambda x: lax_linalg.lu(x)[0], lambda: [_rand((3, 3), 18)]),
    ("triangular_solve", lambda a, b: lax_linalg.triangular_solve(
        a, b, left_side=True, lower=True), lambda: [_spd((3, 3), 19), _rand((3, 2), 20)]),
    ("triangular_solve_right", lambda a, b: lax_linalg.triangular_solve(
        a, b, left_side=False, lower=False, transpose_a=True, unit_diagonal=True),
     lambda: [_spd((3, 3), 21), _rand((2, 3), 22)]),
])
def test_grads(x64, name, fn, make):
    check_grads(fn, make(), order=1, atol=1e-5, rtol=1e-5, eps=1e-6)


def test_second_order_det(x64):
    check_grads(jnp.linalg.det, [_rand((3, 3), 30)], order=2, atol=1e-4, rtol=1e-4)


def test_grad_qr_wide_is_not_implemented(x64):
    with pytest.raises(NotImplementedError, match="qr"):
        minijax.grad(lambda x: jnp.sum(jnp.linalg.qr(x)[1]))(_rand((2, 3), 1))


# --------------------------------------------------------------------------- vmap and jit


@pytest.mark.parametrize("fn,make,in_axes", [
    (lax_linalg.cholesky, lambda: [_spd((3, 4, 4), 1, np.float32)], 0),
    (lax_linalg.lu, lambda: [_rand((3, 4, 4), 2, np.float32)], 0),
    (lambda x: lax_linalg.qr(x, full_matrices=False), lambda: [_rand((2, 4, 3), 3,
                                                                      np.float32)], 0),
    (lax_linalg.eigh, lambda: [_spd((2, 3, 3), 4, np.float32)], 0),
    (lax_linalg.svd, lambda: [_rand((3, 2, 4), 5, np.float32)], 0),
    (lambda a, b: lax_linalg.triangular_solve(a, b, left_side=True, lower=True),
     lambda: [_spd((3, 3), 6, np.float32), _rand((3, 3, 2), 7, np.float32)], (None, 0)),
    (lambda a, b: lax_linalg.triangular_solve(a, b), lambda: [
        _spd((2, 3, 3), 8, np.float32), _rand((2, 2, 3), 9, np.float32)], (0, 0)),
    (jnp.linalg.det, lambda: [_rand((2, 3, 3), 10, np.float32)], 0),
    (jnp.linalg.solve, lambda: [_rand((3, 3, 3), 11, np.float32),
                                _rand((3,), 12, np.float32)], (0, None)),
])
def test_vmap(fn, make, in_axes):
    check_vmap(fn, make(), in_axes, atol=1e-4, rtol=1e-4)


def test_vmap_batch_axis_not_first():
    a = np.moveaxis(_spd((3, 4, 4), 1, np.float32), 0, 2)
    check_vmap(lax_linalg.cholesky, [a], 2, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("fn,make", [
    (jnp.linalg.det, lambda: [_rand((2, 3, 3), 1, np.float32)]),
    (jnp.linalg.inv, lambda: [_rand((3, 3), 2, np.float32)]),
    (jnp.linalg.solve, lambda: [_rand((3, 3), 3, np.float32), _rand((3, 2), 4, np.float32)]),
    (jnp.linalg.cholesky, lambda: [_spd((2, 3, 3), 5, np.float32)]),
    (lambda x: tuple(jnp.linalg.qr(x)), lambda: [_rand((4, 3), 6, np.float32)]),
    (lambda x: tuple(jnp.linalg.eigh(x)), lambda: [_spd((3, 3), 7, np.float32)]),
    (lambda x: tuple(jnp.linalg.svd(x)), lambda: [_rand((3, 5), 8, np.float32)]),
    (jnp.linalg.pinv, lambda: [_rand((3, 5), 9, np.float32)]),
    (lambda x: jnp.linalg.norm(x, "nuc"), lambda: [_rand((3, 5), 10, np.float32)]),
    (minijax.grad(lambda x: jnp.linalg.det(x)), lambda: [_rand((3, 3), 11, np.float32)]),
])
def test_jit_matches_eager(fn, make):
    args = make()
    eager = minijax.tree_util.tree_leaves(fn(*args))
    jitted = minijax.tree_util.tree_leaves(minijax.jit(fn)(*args))
    for e, j in zip(eager, jitted, strict=True):
        assert np.asarray(j).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(j, e, rtol=1e-5, atol=1e-5)


def test_jit_lowers_to_custom_call():
    text = minijax.jit(jnp.linalg.inv).lower(_rand((3, 3), 1, np.float32)).as_text()
    assert 'custom_call_target="minijax.linalg.lu[]"' in text
    assert "minijax.linalg.triangular_solve[" in text


# --------------------------------------------------------------------------- errors


def test_errors():
    with pytest.raises(ValueError, match=r"det: argument must be a \(batch of\) square"):
        jnp.linalg.det(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="cholesky requires a batch of square matrices"):
        lax_linalg.cholesky(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="cholesky requires a floating or complex array"):
        lax_linalg.cholesky(np.ones((2, 2), np.int32))
    with pytest.raises(ValueError, match="triangular_solve .* requires b to have 3 rows"):
        lax_linalg.triangular_solve(np.eye(3, dtype=np.float32), np.ones((2, 2), np.float32),
                                    left_side=True)
    with pytest.raises(ValueError, match="Invalid norm order 'nuc' for vectors"):
        jnp.linalg.norm(np.ones(3, np.float32), "nuc")
    with pytest.raises(ValueError, match="Invalid norm order 3 for matrices"):
        jnp.linalg.norm(np.ones((3, 3), np.float32), 3)
    with pytest.raises(ValueError, match="Improper number of dimensions to norm"):
        jnp.linalg.norm(np.ones((2, 2, 2), np.float32), 1)
    with pytest.raises(ValueError, match="qr: unsupported mode 'raw'"):
        jnp.linalg.qr(np.eye(2, dtype=np.float32), mode="raw")
    with pytest.raises(ValueError, match="eig"):
        jnp.linalg.eig(np.ones((2, 3), dtype=np.float32))
    with pytest.raises(TypeError, match="exponent must be an integer"):
        jnp.linalg.matrix_power(np.eye(2, dtype=np.float32), 1.5)
    with pytest.raises(ValueError, match="solve: a with shape"):
        jnp.linalg.solve(np.eye(3, dtype=np.float32), np.ones((2,), np.float32))
    with pytest.raises(ValueError, match="multi_dot: array 1 must be 2-D"):
        jnp.linalg.multi_dot([np.ones((2, 2)), np.ones((2, 2, 2)), np.ones((2, 2))])
