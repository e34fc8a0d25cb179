"""Transformation rules that differential testing against JAX 0.10.2 found wrong.

Each test checks minijax against an independent reference (a float64 closed form, finite
differences, a Python loop, or JAX's value hard-coded with a comment); where real JAX is
importable the same call is also run there.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax

float0 = minijax.dtypes.float0


def _jax():
    try:
        import jax
    except ImportError:
        return None
    return jax


# --------------------------------------------------------------------------- cumulative


def _cumlogsumexp_vjp_reference(x, ct, reverse):
    """d/dx of sum(ct * cumlogsumexp(x)) in float64: ct_i * exp(x_j - y_i) over j <= i."""
    x = np.asarray(x, np.float64)
    if reverse:
        return _cumlogsumexp_vjp_reference(x[::-1], ct[::-1], False)[::-1]
    y = np.logaddexp.accumulate(x)
    return np.array([sum(ct[i] * np.exp(x[j] - y[i]) for i in range(j, len(x)))
                     for j in range(len(x))])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-2, 2), min_size=1, max_size=7), st.booleans())
def test_cumlogsumexp_gradient_with_ties(values, reverse):
    # Small integers make ties common; the old tangent rule differentiated a logaddexp
    # formula whose derivative at a tie gives everything to one side.
    x = np.asarray(values, np.float32)
    ct = np.arange(1.0, len(values) + 1.0, dtype=np.float32)
    g = minijax.grad(lambda a: jnp.sum(lax.cumlogsumexp(a, reverse=reverse) * ct))(x)
    np.testing.assert_allclose(np.asarray(g), _cumlogsumexp_vjp_reference(x, ct, reverse),
                               rtol=1e-5, atol=1e-6)


def test_cumlogsumexp_jvp_on_a_middle_axis_matches_finite_differences():
    rng = np.random.RandomState(0)
    x = np.round(rng.randn(2, 5, 3)).astype(np.float64)   # rounded: ties along the axis
    t = rng.randn(2, 5, 3)
    with minijax.enable_x64():
        _, tan = minijax.jvp(lambda a: lax.cumlogsumexp(a, axis=1, reverse=True), (x,), (t,))
    eps = 1e-6

    def f(a):
        return np.logaddexp.accumulate(a[:, ::-1], axis=1)[:, ::-1]
    np.testing.assert_allclose(np.asarray(tan), (f(x + eps * t) - f(x - eps * t)) / (2 * eps),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9])
@pytest.mark.parametrize("reverse", [False, True])
def test_cummax_ties_split_as_associative_scan(n, reverse):
    # JAX differentiates cummax through lax.associative_scan, so the gradient of an all-tied
    # input splits as that recursion does; minijax's associative_scan is the same recursion.
    x = jnp.zeros(n)
    ct = jnp.arange(1.0, n + 1.0)
    got = minijax.grad(lambda a: jnp.sum(lax.cummax(a, reverse=reverse) * ct))(x)
    want = minijax.grad(lambda a: jnp.sum(
        lax.associative_scan(lax.max, a, reverse=reverse) * ct))(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_allclose(float(np.sum(got)), float(np.sum(ct)))   # nothing lost
    jax = _jax()
    if jax is not None:
        j = jax.grad(lambda a: jax.numpy.sum(jax.lax.cummax(a, reverse=reverse) * np.asarray(ct))
                     )(np.zeros(n, np.float32))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(j))


# --------------------------------------------------------------------------- float0 / dtypes


def test_jvp_takes_float0_tangents_for_integer_primals():
    a = jnp.array([1.0, 2.0, 3.0])
    i = np.arange(3, dtype=np.int32)
    (y, k), (ty, tk) = minijax.jvp(lambda a, i: (a * i, i * 2), (a, i),
                                   (jnp.ones(3), np.zeros(3, float0)))
    np.testing.assert_array_equal(np.asarray(ty), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(k), [0, 2, 4])
    # JAX: an integer output's tangent is a float0 array of its shape.
    assert isinstance(tk, np.ndarray) and tk.dtype == float0 and tk.shape == (3,)


def test_jvp_and_linearize_give_float0_tangents_for_integer_and_bool_outputs():
    a = jnp.array([1.0, -2.0])
    _, (t_bool, t_int) = minijax.jvp(lambda a: (a > 0, a.astype(jnp.int32)), (a,), (a,))
    assert t_bool.dtype == float0 and t_int.dtype == float0 and t_int.shape == (2,)
    _, f_jvp = minijax.linearize(lambda a: (a * 2, a.astype(jnp.int32)), a)
    t_float, t_int = f_jvp(jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(t_float), [2.0, 2.0])
    assert t_int.dtype == float0
    _, f_jvp = minijax.linearize(lambda a, i: a * i, a, np.arange(2, dtype=np.int32))
    np.testing.assert_array_equal(np.asarray(f_jvp(jnp.ones(2), np.zeros(2, float0))),
                                  [0.0, 1.0])


def test_jit_of_jvp_with_float0_tangent():
    i = np.arange(3, dtype=np.int32)
    (y, z), (ty, tz) = minijax.jit(
        lambda a: minijax.jvp(lambda i: (i * 2, a), (i,), (np.zeros(3, float0),)))(
            jnp.ones(3))
    assert ty.dtype == float0 and ty.shape == (3,)
    np.testing.assert_array_equal(np.asarray(tz), np.zeros(3))


def test_vjp_takes_float0_cotangents_for_integer_and_bool_outputs():
    a = jnp.array([1.0, 2.0, 3.0])
    _, pull = minijax.vjp(lambda a: (a * 2, a > 0), a)
    (g,) = pull((jnp.ones(3), np.zeros(3, float0)))
    np.testing.assert_array_equal(np.asarray(g), [2.0, 2.0, 2.0])
    # Any cotangent of the right shape is accepted (and ignored) for an integer output.
    (g,) = pull((jnp.ones(3), np.ones(3, np.bool_)))
    np.testing.assert_array_equal(np.asarray(g), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("primal, tangent", [
    (np.ones(3, np.float32), np.zeros(3, float0)),       # float primal, float0 tangent
    (np.arange(3, dtype=np.int32), np.zeros(3, np.int32)),   # int primal, int tangent
    (np.ones(3, np.float32), np.ones(3, np.float16)),    # another float dtype
    (np.ones(3, np.complex64), np.ones(3, np.float32)),  # real tangent, complex primal
], ids=["float0_for_float", "int_for_int", "f16_for_f32", "f32_for_c64"])
def test_jvp_tangent_dtype_mismatch_raises_type_error(primal, tangent):
    # JAX: "primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in
    # case of int/bool primal dtype the tangent dtype must be float0" (TypeError).
    with pytest.raises(TypeError, match="tangent dtype must be float0"):
        minijax.jvp(lambda x: x * 2, (primal,), (tangent,))
    jax = _jax()
    if jax is not None:
        jt = np.zeros(3, jax.dtypes.float0) if tangent.dtype == float0 else tangent
        with pytest.raises(TypeError):
            jax.jvp(lambda x: x * 2, (primal,), (jt,))


def test_linearize_and_vjp_dtype_mismatch_raise_value_error():
    a = jnp.ones(3)
    _, f_jvp = minijax.linearize(lambda a: a * 2, a)
    with pytest.raises(ValueError, match="tangent of type f16"):
        f_jvp(jnp.ones(3, jnp.float16))
    _, f_jvp = minijax.linearize(lambda a, i: a * i, a, np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError, match="float0 for an integer"):
        f_jvp(jnp.ones(3), np.zeros(3, np.int32))
    _, pull = minijax.vjp(lambda a: a * 2, a)
    with pytest.raises(ValueError, match="cotangent dtype i32"):
        pull(np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError, match="cotangent dtype f16"):
        pull(np.ones(3, np.float16))
    _, pull = minijax.vjp(lambda a: (a * 2, a.astype(jnp.int32)), a)
    with pytest.raises(ValueError, match=r"cotangent shape float0\[2\]"):
        pull((jnp.ones(3), np.zeros(2, float0)))


def test_jacfwd_of_an_integer_output_is_zeros_of_its_dtype():
    # JAX 0.10.2: jacfwd(lambda a: a.astype(int))(ones(3)) == int32 zeros of shape (3, 3).
    jac = minijax.jacfwd(lambda a: a.astype(jnp.int32))(jnp.ones(3))
    assert np.asarray(jac).dtype == np.int32 and np.asarray(jac).shape == (3, 3)
    np.testing.assert_array_equal(np.asarray(jac), np.zeros((3, 3)))
    jac_f, jac_i = minijax.jacfwd(lambda a: (a * 2, a.astype(jnp.int32)))(jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(jac_f), 2 * np.eye(2))
    np.testing.assert_array_equal(np.asarray(jac_i), np.zeros((2, 2), np.int32))


def test_grad_argnums_past_the_arguments_is_a_type_error():
    # JAX: TypeError "differentiating with respect to argnums=2 requires at least 3
    # positional arguments"; a negative index out of range stays a ValueError.
    with pytest.raises(TypeError, match="requires at least 3 positional arguments"):
        minijax.grad(lambda a, b: a * b, argnums=2)(1.0, 2.0)
    with pytest.raises(TypeError, match="requires at least 6 positional arguments"):
        minijax.value_and_grad(lambda a, b: a * b, argnums=(0, 5))(1.0, 2.0)
    with pytest.raises(ValueError):
        minijax.grad(lambda a, b: a * b, argnums=-3)(1.0, 2.0)


# --------------------------------------------------------------------------- custom_vjp


def _custom_vjp_with_bwd(bwd_output):
    @minijax.custom_vjp
    def f(d, y):
        return d["a"] * d["b"][0] * y

    def fwd(d, y):
        return f(d, y), None

    def bwd(_, g):
        return bwd_output(g)
    f.defvjp(fwd, bwd)
    return f


@pytest.mark.parametrize("bwd_output, want_a, want_y", [
    # None where the argument holds None (JAX accepts; it was rejected as a leaf).
    (lambda g: ({"a": g, "b": (2 * g, None)}, None), 5.0, 0.0),
    # None for a whole container: zero cotangents for all its leaves.
    (lambda g: ({"a": g, "b": None}, 3 * g), 1.0, 3.0),
    (lambda g: (None, 3 * g), 0.0, 3.0),
], ids=["none_for_none", "none_for_container", "none_for_argument"])
def test_custom_vjp_bwd_none_stands_for_a_zero_subtree(bwd_output, want_a, want_y):
    f = _custom_vjp_with_bwd(bwd_output)
    # d["b"][0] = 2 * a, so a's cotangent is d["a"]'s plus twice d["b"][0]'s.
    ga, gy = minijax.grad(lambda a, y: f({"a": a, "b": (2 * a, None)}, y), argnums=(0, 1))(
        1.0, 1.0)
    np.testing.assert_allclose([float(ga), float(gy)], [want_a, want_y])


def test_custom_vjp_bwd_wrong_structure_still_raises():
    f = _custom_vjp_with_bwd(lambda g: ({"a": g, "b": [g, None]}, g))
    with pytest.raises(TypeError, match="same container"):
        minijax.grad(lambda a: f({"a": a, "b": (a, None)}, 1.0))(1.0)
    f = _custom_vjp_with_bwd(lambda g: ({"a": g, "b": (g,)}, g))
    with pytest.raises(TypeError, match="same container"):
        minijax.grad(lambda a: f({"a": a, "b": (a, None)}, 1.0))(1.0)


# --------------------------------------------------------------------------- symbolic zeros


def _custom_jvp_marking_zeros():
    """x * y whose rule adds 100 for a symbolic-zero tangent of x and 10 for one of y, so
    the output tells which tangents arrived symbolic."""
    SymbolicZero = minijax.custom_derivatives.SymbolicZero

    @minijax.custom_jvp
    def f(x, y):
        return x * y

    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        zx, zy = type(tx) is SymbolicZero, type(ty) is SymbolicZero
        assert not zx or (tx.shape, tx.dtype) == (jnp.shape(x), jnp.result_type(x))
        t = jnp.full_like(x * y, 100.0 * zx + 10.0 * zy)
        t = t + (0.0 if zx else 2.0 * tx) + (0.0 if zy else 3.0 * ty)
        return f(x, y), t
    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


def test_custom_jvp_symbolic_zeros_reach_the_rule():
    f = _custom_jvp_marking_zeros()
    a, b = jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0])
    # Only x perturbed: t = 2 * tx + 10 (y's tangent is a symbolic zero).
    _, t = minijax.jvp(lambda x: f(x, b), (a,), (jnp.ones(2),))
    np.testing.assert_allclose(np.asarray(t), [12.0, 12.0])
    # grad w.r.t. y: linear part 3 (the constant 100 of the unperturbed x is no cotangent).
    np.testing.assert_allclose(np.asarray(minijax.grad(lambda y: f(a, y).sum())(b)), [3, 3])
    # Under vmap the zero stays symbolic (JAX 0.10.2 gives 13.58, 10.87, 10.19 for this).
    x3 = jnp.array([1.7881, 0.4365, 0.0965])
    _, t = minijax.jvp(lambda x: minijax.vmap(f)(x, x3 * 0 + 2.0), (x3,), (x3,))
    np.testing.assert_allclose(np.asarray(t), 2 * np.asarray(x3) + 10, rtol=1e-6)


def test_custom_jvp_without_symbolic_zeros_gets_arrays():
    @minijax.custom_jvp
    def f(x, y):
        return x * y

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        zero = minijax.custom_derivatives.SymbolicZero
        assert type(tx) is not zero and type(ty) is not zero
        return f(x, y), tx * y + x * ty
    _, t = minijax.jvp(lambda x: f(x, 3.0), (2.0,), (1.0,))
    assert float(t) == 3.0


def _custom_vjp_with_symbolic_zeros():
    SymbolicZero = minijax.custom_derivatives.SymbolicZero

    @minijax.custom_vjp
    def f(x, y):
        return x * y, x + y

    def fwd(x, y):
        assert isinstance(x, minijax.custom_derivatives.CustomVJPPrimal)
        return f(x.value, y.value), (x.perturbed, y.perturbed, x.value, y.value)

    def bwd(res, g):
        px, py, x, y = res
        g0, g1 = (jnp.zeros_like(x) if type(c) is SymbolicZero else c for c in g)
        # 1000 marks a symbolic-zero second cotangent; perturbed flags scale by 10.
        mark = 1000.0 if type(g[1]) is SymbolicZero else 0.0
        return ((g0 * y + g1 + mark) * (10.0 if px else 1.0),
                (g0 * x + g1) * (10.0 if py else 1.0))
    f.defvjp(fwd, bwd, symbolic_zeros=True)
    return f


@pytest.mark.parametrize("transform", ["grad", "jit_grad", "vmap_grad"])
def test_custom_vjp_symbolic_zeros_and_perturbed_flags(transform):
    f = _custom_vjp_with_symbolic_zeros()
    a, b = jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0])

    def loss(x):    # only the first output is used: its partner's cotangent is symbolic
        return f(x, b)[0].sum()
    if transform == "grad":
        g = minijax.grad(loss)(a)
    elif transform == "jit_grad":
        g = minijax.jit(minijax.grad(loss))(a)
    else:
        g = minijax.vmap(minijax.grad(lambda x, y: f(x, y)[0]))(a, b)
    # x is perturbed (x10), y is not; d(x * y)/dx = y; the mark 1000 is added.
    np.testing.assert_allclose(np.asarray(g), (np.asarray(b) + 1000.0) * 10.0)
    g_both = minijax.grad(lambda x, y: sum(o.sum() for o in f(x, y)), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(np.asarray(g_both[0]), (np.asarray(b) + 1) * 10.0)
    np.testing.assert_allclose(np.asarray(g_both[1]), (np.asarray(a) + 1) * 10.0)
    jax = _jax()
    if jax is not None and transform == "grad":
        JSymbolicZero = jax.custom_derivatives.SymbolicZero

        @jax.custom_vjp
        def jf(x, y):
            return x * y, x + y

        def jfwd(x, y):
            return jf(x.value, y.value), (x.perturbed, y.perturbed, x.value, y.value)

        def jbwd(res, g):
            px, py, x, y = res
            g0, g1 = (jax.numpy.zeros_like(x) if type(c) is JSymbolicZero else c for c in g)
            mark = 1000.0 if type(g[1]) is JSymbolicZero else 0.0
            return ((g0 * y + g1 + mark) * (10.0 if px else 1.0),
                    (g0 * x + g1) * (10.0 if py else 1.0))
        jf.defvjp(jfwd, jbwd, symbolic_zeros=True)
        jg = jax.grad(lambda x: jf(x, np.asarray(b))[0].sum())(np.asarray(a))
        np.testing.assert_allclose(np.asarray(g), np.asarray(jg))


# --------------------------------------------------------------------------- cholesky


_NONSYM = np.array([[4.0, 1.0], [2.0, 3.0]], np.float32)   # the triangles disagree
_W = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)


@pytest.mark.parametrize("lower", [True, False])
def test_scipy_cholesky_reads_only_the_named_triangle(lower):
    # scipy (and JAX) factor the Hermitian matrix of the chosen triangle; minijax averaged
    # the two triangles first.
    import scipy.linalg
    tri = np.tril(_NONSYM) if lower else np.triu(_NONSYM)
    herm = tri + tri.T - np.diag(np.diag(tri))
    want = scipy.linalg.cholesky(herm.astype(np.float64), lower=lower)
    got = minijax.scipy.linalg.cholesky(jnp.asarray(_NONSYM), lower=lower)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    c, low = minijax.scipy.linalg.cho_factor(jnp.asarray(_NONSYM), lower=lower)
    np.testing.assert_allclose(np.asarray(minijax.scipy.linalg.cho_solve((c, low), jnp.ones(2))),
                               np.linalg.solve(herm, np.ones(2)), rtol=1e-5)


@pytest.mark.parametrize("lower, want", [
    # JAX 0.10.2's gradients: its Cholesky JVP takes the input tangent to be Hermitian
    # as it comes (it is not rebuilt from the triangle the factorization reads).
    (True, [[0.2285534143447876, -0.7071067094802856],
            [0.7928931713104248, 1.4142134189605713]]),
    (False, [[0.20037783682346344, 0.6984886527061462],
             [-0.30151134729385376, 1.206045389175415]]),
])
def test_scipy_cholesky_gradient_is_jax_convention(lower, want):
    g = minijax.grad(lambda a: jnp.sum(minijax.scipy.linalg.cholesky(a, lower=lower) * _W))(
        jnp.asarray(_NONSYM))
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-6)
    # cho_solve through cho_factor (JAX 0.10.2's value).
    g = minijax.grad(lambda a: jnp.sum(minijax.scipy.linalg.cho_solve(
        minijax.scipy.linalg.cho_factor(a), jnp.ones(2))))(jnp.asarray(_NONSYM))
    np.testing.assert_allclose(np.asarray(g), [[-0.03305785, -0.1177686],
                                               [0.01859504, -0.07438017]], rtol=1e-5)


def test_symmetric_cholesky_gradient_matches_finite_differences():
    # On symmetric inputs and symmetric directions, the convention does not matter: the
    # directional derivative is the true one.
    rng = np.random.RandomState(0)
    m = rng.randn(3, 3)
    a = m @ m.T + 3 * np.eye(3)
    d = rng.randn(3, 3)
    d = d + d.T
    with minijax.enable_x64():
        g = minijax.grad(lambda x: jnp.sum(jnp.sin(minijax.scipy.linalg.cholesky(x))))(a)

    def f(x):
        return np.sum(np.sin(np.linalg.cholesky(x).T))
    eps = 1e-6
    fd = (f(a + eps * d) - f(a - eps * d)) / (2 * eps)
    np.testing.assert_allclose(np.sum(np.asarray(g) * d), fd, rtol=1e-6)
