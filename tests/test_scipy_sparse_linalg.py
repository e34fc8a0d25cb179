"""minijax.scipy.sparse.linalg: cg, bicgstab and gmres against numpy.linalg.solve, with
matrices and linear functions, the M preconditioner, pytree operands, restarts, and under
jit, vmap and jvp; JAX's errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax.scipy.sparse.linalg import bicgstab, cg, gmres

SOLVERS = {"cg": cg, "bicgstab": bicgstab, "gmres": gmres}


def _problem(n, seed, symmetric):
    rng = np.random.RandomState(seed)
    a = rng.normal(size=(n, n))
    a = a @ a.T + n * np.eye(n) if symmetric else a + 2 * n * np.eye(n)
    return a, rng.normal(size=n)


@pytest.mark.parametrize("name", sorted(SOLVERS))
@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 8), seed=st.integers(0, 1000), precondition=st.booleans())
def test_solvers_match_numpy(name, n, seed, precondition):
    a, b = _problem(n, seed, symmetric=True)
    m = np.diag(1 / np.diag(a)).astype(np.float32) if precondition else None
    x, info = SOLVERS[name](a.astype(np.float32), b.astype(np.float32), tol=1e-6, M=m)
    assert info is None and x.dtype == np.float32
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["bicgstab", "gmres"])
def test_nonsymmetric_and_linear_function(name, x64):
    a, b = _problem(7, 3, symmetric=False)
    x, _ = SOLVERS[name](lambda v: jnp.dot(a, v), b, tol=1e-10)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-8)


def test_gmres_restart_and_solve_methods(x64):
    a, b = _problem(9, 5, symmetric=False)
    want = np.linalg.solve(a, b)
    for method in ("batched", "incremental"):
        x, _ = gmres(a, b, restart=3, tol=1e-10, solve_method=method)
        np.testing.assert_allclose(x, want, rtol=1e-8)
    with pytest.raises(ValueError, match="solve_method"):
        gmres(a, b, solve_method="direct")


def test_pytree_operands_x0_and_errors():
    a, b = _problem(5, 1, symmetric=True)
    a = a.astype(np.float32)
    tree = {"u": b[:2].astype(np.float32), "v": b[2:].astype(np.float32)}

    def op(t):
        w = a @ jnp.concatenate([t["u"], t["v"]])
        return {"u": w[:2], "v": w[2:]}

    want = np.linalg.solve(a, b)
    for solver in SOLVERS.values():
        x, _ = solver(op, tree, x0={"u": jnp.ones(2), "v": jnp.ones(3)}, tol=1e-6)
        np.testing.assert_allclose(np.concatenate([x["u"], x["v"]]), want, rtol=1e-4,
                                   atol=1e-5)
    with pytest.raises(ValueError, match="tree structure"):
        cg(op, tree, x0=[jnp.ones(2), jnp.ones(3)])
    with pytest.raises(ValueError, match="shapes"):
        cg(op, tree, x0={"u": jnp.ones(3), "v": jnp.ones(3)})
    with pytest.raises(TypeError, match="linear operator"):
        cg("A", tree)


def test_jit_vmap_grad_and_maxiter():
    a, b = _problem(6, 2, symmetric=True)
    a, b = a.astype(np.float32), b.astype(np.float32)
    bs = np.stack([b, -2 * b, b + 1])
    for solver in SOLVERS.values():
        xs = minijax.jit(minijax.vmap(lambda v, s=solver: s(a, v, tol=1e-6)[0]))(bs)
        np.testing.assert_allclose(xs, np.linalg.solve(a, bs.T).T, rtol=1e-4, atol=1e-5)
    # the solution is linear in b: its forward derivative along b is the solution itself
    _, tangent = minijax.jvp(lambda v: cg(a, v, tol=1e-7)[0], (b,), (b,))
    np.testing.assert_allclose(tangent, np.linalg.solve(a, b), rtol=1e-3, atol=1e-4)
    one_step, _ = cg(a, b, maxiter=1)
    assert np.abs(np.asarray(one_step) - np.linalg.solve(a, b)).max() > 1e-3
