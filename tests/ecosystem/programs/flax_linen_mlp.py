"""flax.linen: a small MLP (Dense layers) initialised from a PRNGKey, applied, and trained
with jit + value_and_grad for a few SGD steps."""

import time

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

STEPS = 20


class MLP(nn.Module):
    features: tuple = (16, 16, 1)

    @nn.compact
    def __call__(self, x):
        for i, width in enumerate(self.features):
            x = nn.Dense(width, name=f"dense_{i}")(x)
            if i < len(self.features) - 1:
                x = nn.tanh(x)
        return x


def _data():
    rng = np.random.RandomState(2)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = np.tanh(x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(y)


def run():
    x, y = _data()
    model = MLP()
    params = model.init(jax.random.PRNGKey(0), x[:1])
    init_leaves = jax.tree.leaves(params)
    pred0 = model.apply(params, x[:5])

    def loss(params, x, y):
        return jnp.mean((model.apply(params, x) - y) ** 2)

    @jax.jit
    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), value

    losses, times = [], []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        params, value = step(params, x, y)
        losses.append(float(value))
        times.append(time.perf_counter() - t0)
    out = {
        "param_shapes": np.array([p.size for p in init_leaves]),
        "init_leaves": np.concatenate([np.ravel(p) for p in init_leaves]),
        "pred0": pred0,
        "losses": np.array(losses, np.float32),
        "final_params": np.concatenate([np.ravel(p) for p in jax.tree.leaves(params)]),
        "pred": model.apply(params, x[:5]),
    }
    out["_step_seconds"] = float(np.median(times[1:]))
    return out
