"""minijax.scipy.optimize.minimize (BFGS and L-BFGS): iterates, counters and statuses as JAX's
(zoom line search for the strong Wolfe conditions; JAX's values hard-coded), convergence
under jit and vmap, line_search on its own, JAX's errors."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.scipy.optimize import OptimizeResults, minimize
from minijax.scipy.optimize.line_search import line_search, value_and_grad


def rosen(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_bfgs_iterates_match_jax_float64(x64):
    x0 = jnp.array([-1.2, 1.0, 0.5, -0.3])
    r = minijax.jit(lambda x: minimize(rosen, x, method="BFGS"))(x0)
    # JAX 0.10.2: the line search's zoom fails on the 6th step (status 2 + 1)
    np.testing.assert_allclose(
        r.x, [-0.3647595100271436, 0.1326682417295259, 0.03681823363450833,
              -0.012380823895587574], rtol=1e-10)
    np.testing.assert_allclose(r.fun, 3.5983661714219717, rtol=1e-12)
    assert (int(r.nit), int(r.nfev), int(r.njev), int(r.status), bool(r.success)) == (
        5, 10, 10, 3, False)
    r = minimize(rosen, x0, method="BFGS", options=dict(maxiter=5))
    assert (int(r.nit), int(r.nfev), int(r.status)) == (5, 10, 1)


def test_bfgs_with_args_matches_jax(x64):
    def f(x, c):
        return (jnp.sum((x - c) ** 2 * jnp.arange(1.0, 4.0)) + 0.25 * jnp.sum(x ** 4)
                + x[0] * x[1])

    r = minimize(f, jnp.array([2.0, -1.0, 0.5]), args=(jnp.array([1.0, -2.0, 0.5]),),
                 method="BFGS")
    # JAX 0.10.2's values
    np.testing.assert_allclose(r.x, [1.08922511, -1.47387394, 0.48088554], rtol=1e-7)
    np.testing.assert_allclose(r.fun, 0.5022827693987175, rtol=1e-12)
    np.testing.assert_allclose(r.hess_inv, [[0.18120035, -0.01621616, -0.00050346],
                                            [-0.01621616, 0.09620266, 0.00062852],
                                            [-0.00050346, 0.00062852, 0.14944615]], atol=1e-7)
    assert (int(r.nit), int(r.nfev), int(r.status)) == (4, 7, 3)


def test_bfgs_converges_float32_jit_and_vmap():
    weights = jnp.array([1.0, 10.0, 100.0])

    def f(x, target):
        return jnp.sum((x - target) ** 2 * weights)

    targets = jnp.array([[0.0, 1.0, 2.0], [-1.0, 0.5, 3.0]])
    solve = minijax.jit(minijax.vmap(
        lambda t: minimize(f, jnp.zeros(3), args=(t,), method="bfgs")))
    r = solve(targets)
    assert isinstance(r, OptimizeResults)
    assert r.x.dtype == np.float32 and r.success.shape == (2,)
    assert bool(r.success.all()) and (np.asarray(r.status) == 0).all()
    np.testing.assert_allclose(r.x, targets, atol=1e-4)
    assert np.abs(np.asarray(r.jac)).max() < 1e-5


def test_line_search_satisfies_strong_wolfe(x64):
    def f(x):
        return jnp.sum(jnp.exp(x) - 2 * x) + jnp.sum(x ** 2)

    x = jnp.array([1.0, -0.5])
    g = minijax.grad(f)(x)
    res = line_search(f, x, -g, c1=1e-4, c2=0.9)
    a = float(res.a_k)
    assert not bool(res.failed) and a > 0
    phi0, slope0 = float(f(x)), float(jnp.dot(g, -g))
    assert float(f(x - a * g)) <= phi0 + 1e-4 * a * slope0
    assert abs(float(jnp.dot(minijax.grad(f)(x - a * g), -g))) <= 0.9 * abs(slope0)
    np.testing.assert_allclose(res.f_k, f(x - a * g), rtol=1e-12)


def test_minimize_errors():
    with pytest.raises(ValueError, match="not recognized"):
        minimize(rosen, jnp.zeros(2), method="Nelder-Mead")
    with pytest.raises(TypeError, match="tuple"):
        minimize(rosen, jnp.zeros(2), args=[1], method="BFGS")


LBFGS = "l-bfgs-experimental-do-not-rely-on-this"


def test_lbfgs_iterates_match_jax(x64):
    x0 = jnp.array([-1.2, 1.0, 0.5, -0.3])
    r = minijax.jit(lambda x: minimize(rosen, x, method=LBFGS))(x0)
    # JAX 0.10.2's values: its line search fails on step 14 (status 5)
    np.testing.assert_allclose(r.x, [0.879177606777006, 0.7799677012553113,
                                     0.5931020663699245, 0.33598968134666823], rtol=1e-10)
    np.testing.assert_allclose(r.fun, 0.2816492367711585, rtol=1e-10)
    assert (int(r.nit), int(r.nfev), int(r.status), bool(r.success)) == (13, 26, 5, False)
    assert r.hess_inv is None
    r = minimize(rosen, x0, method=LBFGS, options=dict(maxiter=5, maxcor=3))
    np.testing.assert_allclose(r.x, [0.5959833817423997, 0.35433611344282895,
                                     0.13013512320146317, 0.017740627615270302], rtol=1e-10)
    assert (int(r.nit), int(r.nfev), int(r.status)) == (6, 15, 1)


def test_lbfgs_converges_on_a_quadratic():
    weights = jnp.array([1.0, 4.0, 9.0, 16.0])
    r = minimize(lambda x: jnp.sum(weights * (x - 1.5) ** 2), jnp.zeros(4), method=LBFGS)
    assert bool(r.success) and int(r.status) == 0
    np.testing.assert_allclose(r.x, np.full(4, 1.5), atol=1e-5)


def test_objective_gradient_matches_minijax_grad():
    # the solvers' own value_and_grad (the library layer cannot import minijax.api)
    def f(z):
        return jnp.sum(jnp.abs(z) ** 2 + 3 * z.real)

    z = jnp.array([1 + 1j, 2 - 0.5j])
    value, grad = value_and_grad(f)(z)
    np.testing.assert_allclose(grad, minijax.grad(f)(z), rtol=1e-6)
    np.testing.assert_allclose(value, f(z), rtol=1e-6)
    with pytest.raises(TypeError, match="scalar"):
        value_and_grad(lambda x: x * 2)(jnp.ones(2))
