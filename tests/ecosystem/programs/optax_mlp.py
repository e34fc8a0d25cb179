"""optax: clip_by_global_norm + adamw with a warmup-cosine schedule trains a small MLP."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

STEPS = 20


def _data():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(32, 4)).astype(np.float32)
    y = (np.sin(x[:, :1]) + 0.5 * x[:, 1:2] ** 2).astype(np.float32)
    params = {
        "w1": (rng.normal(size=(4, 16)) * 0.5).astype(np.float32),
        "b1": np.zeros(16, np.float32),
        "w2": (rng.normal(size=(16, 1)) * 0.25).astype(np.float32),
        "b2": np.zeros(1, np.float32),
    }
    return jnp.asarray(x), jnp.asarray(y), jax.tree.map(jnp.asarray, params)


def loss_fn(params, x, y):
    h = jax.nn.gelu(x @ params["w1"] + params["b1"])
    pred = h @ params["w2"] + params["b2"]
    return jnp.mean((pred - y) ** 2)


def run():
    x, y, params = _data()
    schedule = optax.warmup_cosine_decay_schedule(
        init_value=0.0, peak_value=1e-2, warmup_steps=5, decay_steps=STEPS, end_value=1e-4)
    opt = optax.chain(optax.clip_by_global_norm(1.0),
                      optax.adamw(learning_rate=schedule, weight_decay=1e-4))
    state = opt.init(params)

    @jax.jit
    def step(params, state):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    losses, times = [], []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        params, state, loss = step(params, state)
        losses.append(float(loss))
        times.append(time.perf_counter() - t0)
    out = {"losses": np.array(losses, np.float32), "lr_at_7": schedule(7),
           "global_norm": optax.global_norm(params)}
    out.update({f"param_{k}": v for k, v in params.items()})
    out["_step_seconds"] = float(np.median(times[1:]))
    return out
