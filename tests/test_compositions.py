"""Compositions of transformations (grad of grad, jacfwd of jacrev, vmap of grad, grad of
vmap, jit over all of them, custom derivatives under vmap and jit) and JAX's documented
example programs, checked against the numbers JAX's documentation prints and against
NumPy reimplementations."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax, tree_util
from minijax.test_util import check_grads


def _rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _close(a, b, rtol=1e-5, atol=1e-6):
    for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- JAX's documentation

# Values printed in JAX's "Automatic differentiation" tutorial
# (https://docs.jax.dev/en/latest/automatic-differentiation.html) and the autodiff cookbook:
#   grad(jnp.tanh)(2.0)               -> 0.070650816  (cookbook prints 0.070650935)
#   grad(grad(jnp.tanh))(2.0)         -> -0.13621868
#   grad(grad(grad(jnp.tanh)))(2.0)   -> 0.25265405
#   f = x**3 + 2x**2 - 3x + 1 at 1.0  -> 4.0, 10.0, 6.0, 0.0


def test_docs_grad_of_tanh_and_higher_derivatives():
    grad = minijax.grad
    np.testing.assert_allclose(grad(jnp.tanh)(2.0), 0.070650816, rtol=2e-6)
    np.testing.assert_allclose(grad(grad(jnp.tanh))(2.0), -0.13621868, rtol=1e-6)
    np.testing.assert_allclose(grad(grad(grad(jnp.tanh)))(2.0), 0.25265405, rtol=1e-6)
    t = np.tanh(1.0)  # closed forms at 1.0: 1 - t^2, -2 t (1 - t^2), (1 - t^2)(6 t^2 - 2)
    np.testing.assert_allclose(grad(jnp.tanh)(1.0), 1 - t * t, rtol=1e-6)
    np.testing.assert_allclose(grad(grad(jnp.tanh))(1.0), -2 * t * (1 - t * t), rtol=1e-6)
    np.testing.assert_allclose(grad(grad(grad(jnp.tanh)))(1.0), (1 - t * t) * (6 * t * t - 2),
                               rtol=1e-5)

    def f(x):
        return x ** 3 + 2 * x ** 2 - 3 * x + 1
    dfdx = grad(f)
    d2fdx = grad(dfdx)
    d3fdx = grad(d2fdx)
    d4fdx = grad(d3fdx)
    assert [float(d(1.0)) for d in (dfdx, d2fdx, d3fdx, d4fdx)] == [4.0, 10.0, 6.0, 0.0]
    np.testing.assert_allclose(minijax.jit(d3fdx)(1.0), 6.0)


def test_jit_of_constant_derivative_keeps_scalar_shape():
    d3 = minijax.grad(minijax.grad(minijax.grad(lambda x: x ** 3)))
    assert minijax.jit(d3)(1.0).shape == ()
    assert minijax.jit(lambda x: 6.0)(1.0).shape == ()


def _logistic_setup():
    import minijax.random as random
    key = random.key(0)
    key, w_key, b_key = random.split(key, 3)
    w = random.normal(w_key, (3,))
    b = random.normal(b_key, ())
    inputs = jnp.array([[0.52, 1.12, 0.77],
                        [0.88, -1.08, 0.15],
                        [0.52, 0.06, -1.30],
                        [0.74, -2.49, 1.39]])
    targets = jnp.array([True, True, False, True])

    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    def predict(W, b, inputs):
        return sigmoid(jnp.dot(inputs, W) + b)

    def loss(W, b):
        preds = predict(W, b, inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))
    return w, b, inputs, predict, loss


def test_docs_logistic_regression_gradients_and_jacobians():
    # "Automatic differentiation" tutorial, section 2-4, and "Higher-order derivatives"
    # (https://docs.jax.dev/en/latest/higher-order.html): W_grad, b_grad, the loss value and
    # the 4x3 Jacobian of the predictions, all from jax.random.key(0).
    w, b, inputs, predict, loss = _logistic_setup()
    w_grad, b_grad = minijax.grad(loss, (0, 1))(w, b)
    np.testing.assert_allclose(w_grad, [-0.433146, -0.7354605, -1.2598922], rtol=2e-6)
    np.testing.assert_allclose(b_grad, -0.69001776, rtol=2e-6)
    value, _ = minijax.value_and_grad(loss, (0, 1))(w, b)
    np.testing.assert_allclose(value, 2.9729187, rtol=1e-6)
    grads = minijax.grad(lambda p: loss(p["W"], p["b"]))({"W": w, "b": b})
    _close(grads, {"W": w_grad, "b": b_grad})
    want_j = [[0.05069415, 0.1091874, 0.07506633],
              [0.14170025, -0.17390487, 0.02415345],
              [0.12579198, 0.01451446, -0.31447992],
              [0.00574409, -0.0193281, 0.01078958]]
    f = lambda W: predict(W, b, inputs)  # noqa: E731
    np.testing.assert_allclose(minijax.jacfwd(f)(w), want_j, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(minijax.jacrev(f)(w), want_j, rtol=1e-5, atol=1e-7)


def test_docs_td_learning_stop_gradient_and_per_example_grads():
    # "Higher-order derivatives": TD(0) pseudo-loss with and without stop_gradient, and
    # per-example gradients with jit(vmap(grad(...), in_axes=(None, 0, 0, 0))).
    def value_fn(theta, state):
        return jnp.dot(theta, state)
    theta = jnp.array([0.1, -0.1, 0.0])
    s_tm1 = jnp.array([1.0, 2.0, -1.0])
    r_t = jnp.array(1.0)
    s_t = jnp.array([2.0, 1.0, 0.0])

    def naive_td_loss(theta, s_tm1, r_t, s_t):
        v_tm1 = value_fn(theta, s_tm1)
        target = r_t + value_fn(theta, s_t)
        return -0.5 * ((target - v_tm1) ** 2)
    np.testing.assert_allclose(minijax.grad(naive_td_loss)(theta, s_tm1, r_t, s_t),
                               [-1.2, 1.2, -1.2], rtol=1e-6)

    def td_loss(theta, s_tm1, r_t, s_t):
        v_tm1 = value_fn(theta, s_tm1)
        target = r_t + value_fn(theta, s_t)
        return -0.5 * ((lax.stop_gradient(target) - v_tm1) ** 2)
    np.testing.assert_allclose(minijax.grad(td_loss)(theta, s_tm1, r_t, s_t),
                               [1.2, 2.4, -1.2], rtol=1e-6)
    batched = [jnp.stack([a, a]) for a in (s_tm1, r_t, s_t)]
    perex = minijax.vmap(minijax.grad(td_loss), in_axes=(None, 0, 0, 0))
    want = [[1.2, 2.4, -1.2], [1.2, 2.4, -1.2]]
    np.testing.assert_allclose(perex(theta, *batched), want, rtol=1e-6)
    np.testing.assert_allclose(minijax.jit(perex)(theta, *batched), want, rtol=1e-6)
    almost = minijax.vmap(minijax.grad(td_loss))(jnp.stack([theta, theta]), *batched)
    np.testing.assert_allclose(almost, want, rtol=1e-6)


def test_docs_straight_through_estimator_and_hessian_of_dot():
    def straight_through_f(x):
        zero = x - lax.stop_gradient(x)
        return zero + lax.stop_gradient(jnp.round(x))
    assert float(straight_through_f(3.2)) == 3.0
    assert float(minijax.grad(jnp.round)(3.2)) == 0.0
    assert float(minijax.grad(straight_through_f)(3.2)) == 1.0
    h = minijax.jacfwd(minijax.grad(lambda x: jnp.dot(x, x)))(jnp.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(h, 2 * np.eye(3))


# --------------------------------------------------------------------------- MLP and SGD


def _init_mlp(sizes, seed):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m),
             rng.standard_normal(n).astype(np.float32) * 0.1)
            for m, n in zip(sizes[:-1], sizes[1:], strict=False)]


def _mlp_loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    logp = logits - jnp.log(jnp.sum(jnp.exp(logits), axis=-1, keepdims=True))
    return -jnp.mean(jnp.sum(logp * y, axis=-1))


def _np_loss_and_grads(params, x, y):
    """Hand-written float64 forward and backward pass of _mlp_loss."""
    params = [(np.asarray(w, np.float64), np.asarray(b, np.float64)) for w, b in params]
    hs = [np.asarray(x, np.float64)]
    for w, b in params[:-1]:
        hs.append(np.tanh(hs[-1] @ w + b))
    w, b = params[-1]
    logits = hs[-1] @ w + b
    logits = logits - logits.max(-1, keepdims=True)
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    n = x.shape[0]
    loss = -np.mean(np.sum(np.log(p) * y, -1))
    d = (p * y.sum(-1, keepdims=True) - y) / n
    grads = []
    for i in range(len(params) - 1, -1, -1):
        w, _ = params[i]
        grads.append((hs[i].T @ d, d.sum(0)))
        if i:
            d = (d @ w.T) * (1 - hs[i] ** 2)
    return loss, grads[::-1]


def test_mlp_sgd_steps_match_numpy_reimplementation():
    sizes = [4, 8, 8, 3]
    params = _init_mlp(sizes, 0)
    x = _rand((16, 4), 1)
    y = np.eye(3, dtype=np.float32)[np.random.default_rng(2).integers(0, 3, 16)]
    lr = 0.5

    @minijax.jit
    def update(params, x, y):
        loss, grads = minijax.value_and_grad(_mlp_loss)(params, x, y)
        return loss, [(w - lr * gw, b - lr * gb)
                      for (w, b), (gw, gb) in zip(params, grads, strict=True)]
    ref_params = [(w.astype(np.float64), b.astype(np.float64)) for w, b in params]
    losses = []
    for _ in range(5):
        loss, params = update(params, x, y)
        ref_loss, ref_grads = _np_loss_and_grads(ref_params, x, y)
        ref_params = [(w - lr * gw, b - lr * gb)
                      for (w, b), (gw, gb) in zip(ref_params, ref_grads, strict=True)]
        np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
        losses.append(float(loss))
    _close(params, ref_params, rtol=1e-4, atol=1e-5)
    assert losses[-1] < losses[0]
    eager = minijax.grad(_mlp_loss)(params, x, y)
    _close(eager, _np_loss_and_grads(params, x, y)[1], rtol=1e-4, atol=1e-6)


# --------------------------------------------------------------------------- compositions


def _scalar_fn(x):
    return jnp.sum(jnp.sin(x) * jnp.exp(-x * x) + x ** 3 / 3.0)


def test_grad_of_grad_and_hessian_agree(x64):
    x = np.array([0.3, -0.8, 1.1])
    h_fwd_rev = minijax.jacfwd(minijax.jacrev(_scalar_fn))(x)
    h_rev_fwd = minijax.jacrev(minijax.jacfwd(_scalar_fn))(x)
    h_rev_rev = minijax.jacrev(minijax.jacrev(_scalar_fn))(x)
    h = minijax.hessian(_scalar_fn)(x)
    d2 = (-np.sin(x) * np.exp(-x * x) - 2 * x * np.cos(x) * np.exp(-x * x)
          - 2 * x * (np.cos(x) * np.exp(-x * x) - 2 * x * np.sin(x) * np.exp(-x * x))
          - 2 * np.sin(x) * np.exp(-x * x) + 2 * x)
    for m in (h_fwd_rev, h_rev_fwd, h_rev_rev, h):
        np.testing.assert_allclose(m, np.diag(d2), rtol=1e-10, atol=1e-12)
    # grad(grad) of the sum of a separable function is the Hessian's diagonal.
    gg = minijax.grad(lambda x: jnp.sum(minijax.grad(_scalar_fn)(x)))(x)
    np.testing.assert_allclose(gg, d2, rtol=1e-10)
    check_grads(_scalar_fn, (x,), order=3)


def test_vmap_of_grad_is_per_example_gradient_vs_loop():
    w = _rand((3,), 1)
    xs = _rand((6, 3), 2)
    ys = _rand((6,), 3)

    def loss(w, x, y):
        return (jnp.tanh(jnp.dot(w, x)) - y) ** 2
    per_ex = minijax.vmap(minijax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    loop = np.stack([np.asarray(minijax.grad(loss)(w, xs[i], ys[i])) for i in range(6)])
    np.testing.assert_allclose(per_ex, loop, rtol=1e-5, atol=1e-6)
    jitted = minijax.jit(minijax.vmap(minijax.grad(loss), in_axes=(None, 0, 0)))(w, xs, ys)
    np.testing.assert_allclose(jitted, loop, rtol=1e-5, atol=1e-6)
    # The sum of per-example gradients is the gradient of the summed loss (grad of vmap).
    total = minijax.grad(lambda w: jnp.sum(minijax.vmap(loss, in_axes=(None, 0, 0))(w, xs,
                                                                                    ys)))(w)
    np.testing.assert_allclose(total, loop.sum(0), rtol=1e-5, atol=1e-6)


def test_grad_of_vmap_matches_finite_differences(x64):
    def f(w, xs):
        return jnp.sum(minijax.vmap(lambda x: jnp.sin(w @ x) * jnp.cosh(x[0]))(xs) ** 2)
    w = np.random.default_rng(4).standard_normal(3)
    xs = np.random.default_rng(5).standard_normal((4, 3))
    check_grads(f, (w, xs), order=2)
    g_jit = minijax.jit(minijax.grad(f, argnums=(0, 1)))(w, xs)
    _close(g_jit, minijax.grad(f, argnums=(0, 1))(w, xs), rtol=1e-12, atol=1e-12)


def test_vmap_of_jacobians_and_hessian_vector_products():
    xs = _rand((4, 3), 6)
    per = minijax.vmap(minijax.hessian(_scalar_fn))(xs)
    loop = np.stack([np.asarray(minijax.hessian(_scalar_fn)(x)) for x in xs])
    np.testing.assert_allclose(per, loop, rtol=1e-5, atol=1e-5)
    v = _rand((3,), 7)

    def hvp(x, v):  # forward-over-reverse, as in the autodiff cookbook
        return minijax.jvp(minijax.grad(_scalar_fn), (x,), (v,))[1]
    got = minijax.vmap(hvp, in_axes=(0, None))(xs, v)
    np.testing.assert_allclose(got, loop @ v, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(minijax.jit(minijax.vmap(hvp, in_axes=(0, None)))(xs, v),
                               loop @ v, rtol=1e-4, atol=1e-5)


def test_nested_vmap_with_two_axis_names_under_grad_and_jit():
    x = _rand((2, 3), 8)

    def normalize(v):
        return v - lax.pmean(v, "i") + lax.psum(v, "j") * 0.1
    f = minijax.vmap(minijax.vmap(normalize, axis_name="j"), axis_name="i")
    xn = np.asarray(x, np.float64)
    want = xn - xn.mean(0) + 0.1 * xn.sum(1, keepdims=True)
    np.testing.assert_allclose(f(x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(minijax.jit(f)(x), want, rtol=1e-5, atol=1e-6)
    g = minijax.grad(lambda x: jnp.sum(f(x) ** 2))(x)
    np.testing.assert_allclose(minijax.jit(minijax.grad(lambda x: jnp.sum(f(x) ** 2)))(x), g,
                               rtol=1e-5, atol=1e-6)
    # d/dx sum(f(x)^2) = J^T 2 f(x) with J = (I - 1/2 on axis i) + 0.1 (ones on axis j).
    fx = want
    g_want = 2 * (fx - fx.mean(0, keepdims=True) + 0.1 * fx.sum(1, keepdims=True))
    np.testing.assert_allclose(g, g_want, rtol=1e-4, atol=1e-5)


def test_custom_jvp_and_custom_vjp_under_vmap_jit_and_grad():
    @minijax.custom_jvp
    def log1pexp(x):
        return jnp.log(1.0 + jnp.exp(x))

    @log1pexp.defjvp
    def _log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * (1.0 - 1.0 / (1.0 + jnp.exp(x)))

    @minijax.custom_vjp
    def clip_gradient(x):
        return x

    def _fwd(x):
        return x, None

    def _bwd(_, g):
        return (jnp.clip(g, -1.0, 1.0),)
    clip_gradient.defvjp(_fwd, _bwd)

    xs = jnp.array([-3.0, 0.0, 2.0, 100.0])
    sig = 1.0 / (1.0 + np.exp(-np.asarray(xs, np.float64)))
    for fn in (minijax.vmap(minijax.grad(log1pexp)),
               minijax.jit(minijax.vmap(minijax.grad(log1pexp))),
               minijax.vmap(minijax.jit(minijax.grad(log1pexp)))):
        np.testing.assert_allclose(fn(xs), sig, rtol=1e-6)
    np.testing.assert_allclose(minijax.vmap(log1pexp)(xs[:3]),
                               np.log1p(np.exp(np.asarray(xs[:3]))), rtol=1e-6)
    g = minijax.grad(lambda x: jnp.sum(minijax.vmap(clip_gradient)(x) * 5.0))(xs)
    np.testing.assert_allclose(g, np.ones(4))
    g = minijax.jit(minijax.vmap(minijax.grad(lambda x: 3.0 * clip_gradient(x))))(xs)
    np.testing.assert_allclose(g, np.ones(4))
    per = minijax.vmap(minijax.grad(lambda x: 0.5 * clip_gradient(x) ** 2))(xs)
    np.testing.assert_allclose(per, np.clip(np.asarray(xs), -1, 1))


def test_grad_through_control_flow_under_vmap_and_jit():
    def f(x):
        def body(c, xi):
            c = jnp.sin(c) * xi + c
            return c, c * 2.0
        c, ys = lax.scan(body, x[0], x[1:])
        return c + jnp.sum(ys) + lax.cond(x[0] > 0, lambda v: v ** 2, lambda v: -v, x[1])
    xs = _rand((5, 4), 9)
    per = minijax.vmap(minijax.grad(f))(xs)
    loop = np.stack([np.asarray(minijax.grad(f)(x)) for x in xs])
    np.testing.assert_allclose(per, loop, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(minijax.jit(minijax.vmap(minijax.grad(f)))(xs), loop,
                               rtol=1e-5, atol=1e-6)


_UNARY = [jnp.sin, jnp.tanh, jnp.exp, lambda x: x * x, lambda x: jnp.log1p(x * x)]


@settings(max_examples=15, deadline=None)
@given(ops=st.lists(st.integers(0, len(_UNARY) - 1), min_size=1, max_size=3),
       size=st.integers(1, 3), seed=st.integers(0, 1000))
def test_random_compositions_agree_with_each_other(ops, size, seed):
    def f(x):
        for i in ops:
            x = _UNARY[i](x) * 0.5
        return jnp.sum(x)
    xs = _rand((size, 3), seed) * 0.5
    per = minijax.vmap(minijax.grad(f))(xs)
    fwd = minijax.vmap(lambda x: jnp.diagonal(minijax.jacfwd(minijax.grad(f))(x)))(xs)
    loop = np.stack([np.asarray(minijax.grad(f)(x)) for x in xs])
    np.testing.assert_allclose(per, loop, rtol=1e-5, atol=1e-6)
    diag = np.stack([np.diagonal(np.asarray(minijax.hessian(f)(x))) for x in xs])
    np.testing.assert_allclose(fwd, diag, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(minijax.jit(minijax.vmap(minijax.grad(f)))(xs), loop,
                               rtol=1e-5, atol=1e-6)
