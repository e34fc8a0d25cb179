"""lax.custom_root / lax.custom_linear_solve (implicit differentiation) and
closure_convert, checked against closed forms and finite differences."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.custom_derivatives import closure_convert


def _newton(f, x0):
    def step(x):
        return x - f(x) / minijax.grad(f)(x)
    return lax.while_loop(lambda x: jnp.abs(f(x)) > 1e-6, step, x0)


def _cbrt(t):
    # root of x^3 - t through a while_loop solver, which is never differentiated
    return lax.custom_root(lambda x: x ** 3 - t, 1.0, _newton, lambda g, y: y / g(1.0))


def test_custom_root_value_and_implicit_gradient():
    assert abs(float(_cbrt(8.0)) - 2.0) < 1e-5
    # d/dt t^(1/3) = 1 / (3 t^(2/3)) = 1/12 at t = 8, in reverse and forward mode
    np.testing.assert_allclose(minijax.grad(_cbrt)(8.0), 1.0 / 12.0, rtol=1e-5)
    np.testing.assert_allclose(minijax.jvp(_cbrt, (8.0,), (1.0,))[1], 1.0 / 12.0, rtol=1e-5)
    np.testing.assert_allclose(minijax.jit(minijax.grad(_cbrt))(27.0), 1.0 / 27.0, rtol=1e-5)
    eps = 1e-2
    fd = (float(_cbrt(5.0 + eps)) - float(_cbrt(5.0 - eps))) / (2 * eps)
    np.testing.assert_allclose(minijax.grad(_cbrt)(5.0), fd, rtol=1e-3)


def test_custom_root_vector_and_aux():
    def root(a):
        f = lambda x: a * x - 1.0  # noqa: E731
        solve = lambda f, x0: (_vec_newton(f, x0), jnp.float32(7))  # noqa: E731
        return lax.custom_root(f, jnp.ones(2), solve,
                               lambda g, y: y / g(jnp.ones(2)), has_aux=True)
    x, aux = root(jnp.array([2.0, 4.0]))
    np.testing.assert_allclose(x, [0.5, 0.25], rtol=1e-5)
    assert float(aux) == 7.0
    g = minijax.grad(lambda a: jnp.sum(root(a)[0]))(jnp.array([2.0, 4.0]))
    np.testing.assert_allclose(g, [-0.25, -1.0 / 16.0], rtol=1e-4)  # d(1/a) = -1/a^2


def _vec_newton(f, x0):
    x = x0
    for _ in range(30):
        x = x - f(x) / minijax.jvp(f, (x,), (jnp.ones_like(x),))[1]
    return x


def _cg_like_solve(matvec, b):
    # a fixed-iteration Jacobi-free solve via the explicit matrix (columns of matvec)
    n = b.shape[0]
    cols = [matvec(jnp.eye(n)[i]) for i in range(n)]
    return jnp.linalg.solve(jnp.stack(cols, axis=1), b)


@pytest.mark.parametrize("symmetric", [True, False])
def test_custom_linear_solve_gradients_match_direct_solve(symmetric):
    a = jnp.array([[4.0, 1.0], [1.0, 3.0]]) if symmetric else jnp.array([[4.0, 1.0],
                                                                          [2.0, 3.0]])
    b = jnp.array([1.0, 2.0])

    def ls(a, b):
        tsolve = None if symmetric else (lambda vecmat, r: _cg_like_solve(vecmat, r))
        return lax.custom_linear_solve(lambda x: a @ x, b, _cg_like_solve,
                                       transpose_solve=tsolve, symmetric=symmetric)
    np.testing.assert_allclose(ls(a, b), np.linalg.solve(np.asarray(a), np.asarray(b)),
                               rtol=1e-5)
    loss = lambda a, b: jnp.sum(ls(a, b) ** 2)  # noqa: E731
    ga, gb = minijax.grad(loss, argnums=(0, 1))(a, b)
    # finite differences on the closed form
    an, bn = np.asarray(a, np.float64), np.asarray(b, np.float64)
    ref = lambda an, bn: np.sum(np.linalg.solve(an, bn) ** 2)  # noqa: E731
    eps = 1e-6
    fa = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            d = np.zeros((2, 2))
            d[i, j] = eps
            fa[i, j] = (ref(an + d, bn) - ref(an - d, bn)) / (2 * eps)
    fb = np.array([(ref(an, bn + e) - ref(an, bn - e)) / (2 * eps) for e in np.eye(2) * eps])
    np.testing.assert_allclose(ga, fa, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(gb, fb, rtol=1e-4, atol=1e-6)


def test_custom_linear_solve_needs_transpose_for_reverse_mode():
    a = jnp.array([[4.0, 1.0], [2.0, 3.0]])
    f = lambda b: jnp.sum(lax.custom_linear_solve(lambda x: a @ x, b,  # noqa: E731
                                                  _cg_like_solve))
    np.testing.assert_allclose(f(jnp.array([1.0, 2.0])), 0.7, rtol=1e-5)  # x = [.1, .6]
    with pytest.raises(TypeError, match="transpose_solve"):
        minijax.grad(f)(jnp.array([1.0, 2.0]))


def test_closure_convert_hoists_float_tracers():
    def outer(t):
        f = lambda x: jnp.sin(x * t) + 2.0  # noqa: E731
        conv, consts = closure_convert(f, 1.0)
        seen.append(len(consts))
        return conv(1.5, *consts)
    seen = []
    np.testing.assert_allclose(outer(2.0), np.sin(3.0) + 2.0, rtol=1e-6)
    np.testing.assert_allclose(minijax.grad(outer)(2.0), 1.5 * np.cos(3.0), rtol=1e-5)
    assert seen == [0, 1]  # a concrete t stays baked in; a traced one is hoisted
    conv, consts = closure_convert(lambda x: x * 2.0, jnp.ones(2))
    assert consts == []
    np.testing.assert_array_equal(conv(jnp.ones(2)), [2.0, 2.0])


def _sym_ls(a, b):
    return lax.custom_linear_solve(lambda x: a @ x, b, _cg_like_solve, symmetric=True)


def test_custom_linear_solve_forward_mode_jit_vmap_aux():
    a = jnp.array([[4.0, 1.0], [1.0, 3.0]])
    b = jnp.array([1.0, 2.0])
    # jvp equals the direct solve's: A^-1 (db - dA x)
    _, t = minijax.jvp(_sym_ls, (a, b), (jnp.ones((2, 2)), jnp.ones(2)))
    np.testing.assert_allclose(t, [0.04958677, 0.07438017], rtol=1e-5)
    g = minijax.jit(minijax.grad(lambda a, b: jnp.sum(_sym_ls(a, b) ** 2)))(a, b)
    np.testing.assert_allclose(g, [[0.00601052, 0.04207363], [-0.040571, -0.283997]],
                               rtol=1e-4)
    bs = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    want = np.linalg.solve(np.asarray(a, np.float64), np.asarray(bs, np.float64).T).T
    np.testing.assert_allclose(minijax.vmap(_sym_ls, in_axes=(None, 0))(a, bs), want,
                               rtol=1e-5)
    gv = minijax.vmap(minijax.grad(lambda b: jnp.sum(_sym_ls(a, b) ** 2)))(bs)
    np.testing.assert_allclose(gv[1], [0.03305787, 0.77685946], rtol=1e-5)
    x, aux = lax.custom_linear_solve(lambda x: a @ x, b,
                                     lambda mv, r: (_cg_like_solve(mv, r), 5.0),
                                     symmetric=True, has_aux=True)
    np.testing.assert_allclose(x, [1 / 11, 7 / 11], rtol=1e-5)
    assert float(aux) == 5.0
    gx = minijax.grad(lambda b: jnp.sum(lax.custom_linear_solve(
        lambda x: a @ x, b, lambda mv, r: (_cg_like_solve(mv, r), 5.0), symmetric=True,
        has_aux=True)[0]))(b)
    np.testing.assert_allclose(gx, [2 / 11, 3 / 11], rtol=1e-5)  # A^-T 1
