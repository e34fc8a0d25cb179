"""equinox: eqx.nn.MLP trained with filter_jit + filter_value_and_grad, plus filter_grad,
partition/combine and tree_at."""

import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

STEPS = 20


def _data():
    rng = np.random.RandomState(1)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = np.tanh(x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(y)


def run():
    x, y = _data()
    model = eqx.nn.MLP(in_size=3, out_size=1, width_size=16, depth=2,
                       activation=jax.nn.tanh, key=jax.random.PRNGKey(0))

    def loss(model, x, y):
        pred = jax.vmap(model)(x)
        return jnp.mean((pred - y) ** 2)

    @eqx.filter_jit
    def step(model, x, y):
        value, grads = eqx.filter_value_and_grad(loss)(model, x, y)
        model = eqx.apply_updates(model, jax.tree.map(lambda g: -0.1 * g, grads))
        return model, value

    init_leaves = jax.tree.leaves(eqx.filter(model, eqx.is_array))
    grads0 = eqx.filter_grad(loss)(model, x, y)
    losses, times = [], []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        model, value = step(model, x, y)
        losses.append(float(value))
        times.append(time.perf_counter() - t0)

    params, static = eqx.partition(model, eqx.is_array)
    rebuilt = eqx.combine(params, static)
    zeroed = eqx.tree_at(lambda m: m.layers[-1].bias, model, jnp.zeros(1))
    out = {
        "init_leaves": np.concatenate([np.ravel(p) for p in init_leaves]),
        "grads0": np.concatenate([np.ravel(g) for g in jax.tree.leaves(grads0)]),
        "losses": np.array(losses, np.float32),
        "final_params": np.concatenate([np.ravel(p) for p in jax.tree.leaves(params)]),
        "pred": jax.vmap(rebuilt)(x[:5]),
        "pred_zero_bias": jax.vmap(zeroed)(x[:5]),
    }
    out["_step_seconds"] = float(np.median(times[1:]))
    return out
