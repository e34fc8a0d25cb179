"""minijax.example_libraries: optimizers vs NumPy update rules, schedules, stax layers vs
NumPy, and an MLP trained with stax + sgd matching a NumPy reimplementation."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import random
from minijax.example_libraries import optimizers, stax

try:
    import jax
    from jax.example_libraries import stax as jax_stax
except Exception:  # pragma: no cover
    jax = None


# --------------------------------------------------------------------------- optimizers


def _np_update(name, i, g, state, hp):
    """Reference update rules in float64 NumPy."""
    lr = hp["lr"]
    if name == "sgd":
        (x,) = state
        return (x - lr * g,)
    if name in ("momentum", "nesterov"):
        x, v = state
        v = hp["mass"] * v + g
        step = v if name == "momentum" else hp["mass"] * v + g
        return x - lr * step, v
    if name == "adagrad":
        x, gsq, m = state
        gsq = gsq + g * g
        m = 0.1 * (g * np.where(gsq > 0, 1 / np.sqrt(gsq), 0)) + 0.9 * m
        return x - lr * m, gsq, m
    if name == "rmsprop":
        x, avg = state
        avg = 0.9 * avg + 0.1 * g * g
        return x - lr * g / np.sqrt(avg + 1e-8), avg
    if name == "rmsprop_momentum":
        x, avg, mom = state
        avg = 0.9 * avg + 0.1 * g * g
        mom = 0.9 * mom + lr * g / np.sqrt(avg + 1e-8)
        return x - mom, avg, mom
    x, m, v = state
    m = 0.1 * g + 0.9 * m
    if name == "adamax":
        v = np.maximum(0.999 * v, np.abs(g))
        return x - lr / (1 - 0.9 ** (i + 1)) * m / (v + 1e-8), m, v
    v = 0.001 * g * g + 0.999 * v
    mhat, vhat = m / (1 - 0.9 ** (i + 1)), v / (1 - 0.999 ** (i + 1))
    step = mhat / (np.sqrt(vhat) + 1e-8)
    if name == "adamw":
        step = step + hp["wd"] * x
    return x - lr * step, m, v


OPTIMIZERS = {
    "sgd": lambda: optimizers.sgd(0.1),
    "momentum": lambda: optimizers.momentum(0.1, mass=0.9),
    "nesterov": lambda: optimizers.nesterov(0.1, mass=0.9),
    "adagrad": lambda: optimizers.adagrad(0.1),
    "rmsprop": lambda: optimizers.rmsprop(0.1),
    "rmsprop_momentum": lambda: optimizers.rmsprop_momentum(0.1),
    "adam": lambda: optimizers.adam(0.1),
    "adamw": lambda: optimizers.adamw(0.1, weight_decay=0.01),
    "adamax": lambda: optimizers.adamax(0.1),
}
N_STATE = {"sgd": 1, "momentum": 2, "nesterov": 2, "rmsprop": 2}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_matches_numpy(name):
    minijax.config.update("jax_enable_x64", True)
    try:
        opt_init, opt_update, get_params = OPTIMIZERS[name]()
        params = {"w": np.array([[1.0, -2.0], [0.5, 3.0]]), "b": np.array([0.3, -0.1])}
        grad_fn = minijax.grad(lambda p: jnp.sum(p["w"] ** 2) + jnp.sum(jnp.sin(p["b"])))
        state = opt_init(params)
        ref = {k: (v,) + tuple(np.zeros_like(v) for _ in range(N_STATE.get(name, 3) - 1))
               for k, v in params.items()}
        hp = {"lr": 0.1, "mass": 0.9, "wd": 0.01}
        for i in range(4):
            g = grad_fn(get_params(state))
            state = opt_update(i, g, state)
            for k in ref:
                ref_g = 2 * ref[k][0] if k == "w" else np.cos(ref[k][0])
                ref[k] = _np_update(name, i, ref_g, ref[k], hp)
        got = get_params(state)
        for k in ref:
            np.testing.assert_allclose(got[k], ref[k][0], rtol=1e-10, atol=1e-12)
    finally:
        minijax.config.update("jax_enable_x64", False)


def test_sm3_and_tree_errors():
    opt_init, opt_update, get_params = optimizers.sm3(0.1)
    state = opt_init({"a": np.ones((2, 3), np.float32), "s": np.float32(2.0)})
    state = opt_update(0, {"a": np.ones((2, 3), np.float32), "s": np.float32(1.0)}, state)
    p = get_params(state)
    assert p["a"].shape == (2, 3) and np.shape(p["s"]) == ()
    # first step: accumulator g^2 = 1, m = 0.1 * g / 1, x = 1 - 0.1 * 0.1
    np.testing.assert_allclose(p["a"], np.full((2, 3), 0.99), rtol=1e-6)
    with pytest.raises(TypeError, match="did not match the parameter tree structure"):
        opt_update(1, {"a": np.ones((2, 3), np.float32)}, state)
    packed = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    np.testing.assert_array_equal(get_params(packed)["a"], p["a"])


def test_optimizer_state_is_a_pytree_under_jit():
    opt_init, opt_update, get_params = optimizers.adam(1e-2)
    state = opt_init([np.ones(3, np.float32)])
    step = minijax.jit(lambda i, s: opt_update(i, [jnp.ones(3)], s))
    eager = opt_update(0, [jnp.ones(3)], state)
    np.testing.assert_allclose(get_params(step(0, state))[0], get_params(eager)[0], rtol=1e-6)


def test_schedules():
    assert optimizers.constant(0.3)(100) == 0.3
    np.testing.assert_allclose(optimizers.exponential_decay(1.0, 10, 0.5)(20), 0.25)
    np.testing.assert_allclose(optimizers.inverse_time_decay(1.0, 10, 1.0)(5), 1 / 1.5)
    np.testing.assert_allclose(optimizers.inverse_time_decay(1.0, 10, 1.0, True)(15), 0.5)
    poly = optimizers.polynomial_decay(1.0, 10, 0.1, power=2.0)
    np.testing.assert_allclose([poly(0), poly(5), poly(10), poly(50)],
                               [1.0, 0.25 * 0.9 + 0.1, 0.1, 0.1], rtol=1e-6)
    pc = optimizers.piecewise_constant([10, 20], [1.0, 0.5, 0.1])
    np.testing.assert_allclose([pc(0), pc(10), pc(11), pc(20), pc(25)],
                               [1.0, 1.0, 0.5, 0.5, 0.1])
    with pytest.raises(ValueError, match="one shorter"):
        optimizers.piecewise_constant([1, 2], [1.0])
    with pytest.raises(TypeError):
        optimizers.make_schedule(np.ones(2))
    sched = optimizers.exponential_decay(0.1, 1, 0.5)
    opt_init, opt_update, get_params = optimizers.sgd(sched)
    s = opt_update(1, np.float32(1.0), opt_init(np.float32(0.0)))
    np.testing.assert_allclose(get_params(s), -0.05)
    norm = optimizers.l2_norm({"a": np.array([3.0]), "b": np.array([4.0])})
    np.testing.assert_allclose(norm, 5.0)
    clipped = optimizers.clip_grads({"a": np.array([3.0]), "b": np.array([4.0])}, 1.0)
    np.testing.assert_allclose([clipped["a"][0], clipped["b"][0]], [0.6, 0.8], rtol=1e-6)


# --------------------------------------------------------------------------- stax layers


def test_dense_and_combinators():
    init, apply = stax.serial(stax.Dense(5), stax.Relu, stax.Dense(3))
    out_shape, params = init(random.PRNGKey(0), (-1, 4))
    assert out_shape == (-1, 3)
    assert [np.shape(p) for layer in params for p in layer] == [(4, 5), (5,), (5, 3), (3,)]
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    (w1, b1), _, (w2, b2) = params
    want = np.maximum(x @ np.asarray(w1) + np.asarray(b1), 0) @ np.asarray(w2) + \
        np.asarray(b2)
    np.testing.assert_allclose(apply(params, x), want, rtol=1e-5, atol=1e-6)
    init2, apply2 = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Identity),
                                stax.FanInConcat())
    shape2, params2 = init2(random.PRNGKey(1), (2, 4))
    assert shape2 == (2, 7)
    out = np.asarray(apply2(params2, x))
    np.testing.assert_allclose(out[:, 3:], x)
    init3, apply3 = stax.serial(stax.FanOut(2), stax.parallel(stax.Tanh, stax.Sigmoid),
                                stax.FanInSum)
    _, params3 = init3(random.PRNGKey(2), (2, 4))
    np.testing.assert_allclose(apply3(params3, x), np.tanh(x) + 1 / (1 + np.exp(-x)),
                               rtol=1e-6)
    np.testing.assert_allclose(stax.LogSoftmax[1]((), x).sum(), np.sum(
        x - np.log(np.exp(x).sum(-1, keepdims=True))), rtol=1e-5)


def test_pooling_flatten_conv_shapes_and_values():
    x = np.arange(2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3)
    blocks = x.reshape(2, 2, 2, 2, 2, 3)
    for layer, ref in ((stax.MaxPool, np.max), (stax.SumPool, np.sum),
                       (stax.AvgPool, np.mean)):
        init, apply = layer((2, 2), strides=(2, 2))
        shape, _ = init(None, x.shape)
        assert shape == (2, 2, 2, 3)
        np.testing.assert_allclose(apply((), x), ref(blocks, axis=(2, 4)), rtol=1e-6)
    init, apply = stax.AvgPool((3, 3), padding="SAME")
    assert init(None, x.shape)[0] == x.shape
    avg = np.asarray(apply((), x))
    np.testing.assert_allclose(avg[0, 0, 0], x[0, :2, :2].mean((0, 1)), rtol=1e-6)
    assert stax.Flatten[0](None, (2, 4, 4, 3))[0] == (2, 48)
    assert stax.Flatten[1]((), x).shape == (2, 48)
    init, apply = stax.Conv(5, (3, 3), strides=(1, 1), padding="VALID")
    shape, (w, b) = init(random.PRNGKey(0), (2, 4, 4, 3))
    assert shape == (2, 2, 2, 5) and w.shape == (3, 3, 3, 5) and b.shape == (1, 1, 1, 5)
    out = np.asarray(apply((w, b), x))
    wn = np.asarray(w, np.float64)
    want = np.zeros((2, 2, 2, 5))
    for i in range(2):
        for j in range(2):
            want[:, i, j] = np.einsum("nhwc,hwco->no", x[:, i:i + 3, j:j + 3], wn)
    np.testing.assert_allclose(out, want + np.asarray(b), rtol=1e-4, atol=1e-3)


def test_dropout_and_batchnorm():
    x = np.ones((1000,), np.float32)
    init, apply = stax.Dropout(0.8)
    with pytest.raises(ValueError, match="requires apply_fun to be called with a PRNG key"):
        apply((), x)
    out = np.asarray(apply((), x, rng=random.PRNGKey(0)))
    kept = out != 0
    np.testing.assert_allclose(out[kept], 1 / 0.8)
    assert abs(kept.mean() - 0.8) < 5 * np.sqrt(0.16 / 1000)
    test_mode = stax.Dropout(0.5, mode="test")[1]
    np.testing.assert_array_equal(test_mode((), x, rng=random.PRNGKey(0)), x)
    init, apply = stax.BatchNorm(axis=(0,))
    shape, params = init(random.PRNGKey(1), (8, 3))
    y = np.random.default_rng(3).standard_normal((8, 3)).astype(np.float32) * 4 + 2
    z = np.asarray(apply(params, y))
    np.testing.assert_allclose(z.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(z.std(0), 1, rtol=1e-3)


@pytest.mark.skipif(jax is None, reason="JAX is not importable")
def test_stax_network_against_jax():
    def build(s):
        return s.serial(s.Conv(4, (3, 3), padding="SAME"), s.Relu, s.MaxPool((2, 2), (2, 2)),
                        s.Flatten, s.Dense(10), s.LogSoftmax)
    m_init, m_apply = build(stax)
    j_init, j_apply = build(jax_stax)
    m_shape, m_params = m_init(random.PRNGKey(0), (2, 8, 8, 3))
    j_shape, j_params = j_init(jax.random.PRNGKey(0), (2, 8, 8, 3))
    assert tuple(m_shape) == tuple(int(d) for d in j_shape)
    for a, b in zip(minijax.tree_util.tree_leaves(m_params), jax.tree.leaves(j_params),
                    strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    x = np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype(np.float32)
    np.testing.assert_allclose(m_apply(m_params, x), j_apply(j_params, x), rtol=1e-5,
                               atol=1e-5)


# --------------------------------------------------------------------------- training


def test_mlp_sgd_training_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    labels = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    y = np.eye(2, dtype=np.float32)[labels]
    init, apply = stax.serial(stax.Dense(8), stax.Relu, stax.Dense(2), stax.LogSoftmax)
    _, params = init(random.PRNGKey(0), (-1, 4))

    def loss(p, xb, yb):
        return -jnp.mean(jnp.sum(apply(p, xb) * yb, axis=1))

    opt_init, opt_update, get_params = optimizers.sgd(0.5)

    @minijax.jit
    def step(i, state):
        p = get_params(state)
        value, g = minijax.value_and_grad(loss)(p, x, y)
        return value, opt_update(i, g, state)

    state = opt_init(params)
    losses = []
    for i in range(5):
        value, state = step(i, state)
        losses.append(float(value))
    assert losses[-1] < losses[0]

    # The same five steps by hand in NumPy (float32): forward, backward, update.
    (w1, b1), _, (w2, b2), _ = [tuple(np.asarray(a) for a in layer) for layer in params]
    np_losses = []
    for _ in range(5):
        h_pre = x @ w1 + b1
        h = np.maximum(h_pre, 0)
        logits = h @ w2 + b2
        shifted = logits - logits.max(1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        np_losses.append(float(-np.mean(np.sum(logp * y, 1))))
        d_logits = (np.exp(logp) - y) / x.shape[0]
        d_w2, d_b2 = h.T @ d_logits, d_logits.sum(0)
        d_h = d_logits @ w2.T * (h_pre > 0)
        d_w1, d_b1 = x.T @ d_h, d_h.sum(0)
        w1, b1, w2, b2 = w1 - 0.5 * d_w1, b1 - 0.5 * d_b1, w2 - 0.5 * d_w2, b2 - 0.5 * d_b2
    np.testing.assert_allclose(losses, np_losses, rtol=1e-5)
    (gw1, gb1), _, (gw2, gb2), _ = get_params(state)
    for got, want in ((gw1, w1), (gb1, b1), (gw2, w2), (gb2, b2)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
