"""flax.nnx: a small MLP (nnx.Linear layers in nnx.Sequential, parameters from nnx.Rngs)
trained with nnx.Optimizer(optax.sgd) inside an nnx.jit-ed train step, then taken apart and
put back together with nnx.split / nnx.state / nnx.merge."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

STEPS = 20


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.body = nnx.Sequential(
            nnx.Linear(3, 16, rngs=rngs), jax.nn.tanh,
            nnx.Linear(16, 16, rngs=rngs), jax.nn.tanh,
        )
        self.head = nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        return self.head(self.body(x))


def _data():
    rng = np.random.RandomState(2)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = np.tanh(x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(y)


def _flat(state):
    return np.concatenate([np.ravel(p) for p in jax.tree.leaves(state)])


def run():
    x, y = _data()
    model = MLP(nnx.Rngs(0))
    init = _flat(nnx.state(model, nnx.Param))
    pred0 = model(x[:5])
    optimizer = nnx.Optimizer(model, optax.sgd(0.1, momentum=0.9), wrt=nnx.Param)

    @nnx.jit
    def step(model, optimizer, x, y):
        def loss_fn(model):
            return jnp.mean((model(x) - y) ** 2)
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    losses, times = [], []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        losses.append(float(step(model, optimizer, x, y)))
        times.append(time.perf_counter() - t0)

    graphdef, state = nnx.split(model)
    params = nnx.state(model, nnx.Param)
    rebuilt = nnx.merge(graphdef, state)
    out = {
        "param_sizes": np.array([p.size for p in jax.tree.leaves(params)]),
        "init_params": init,
        "pred0": pred0,
        "losses": np.array(losses, np.float32),
        "final_params": _flat(params),
        "pred": rebuilt(x[:5]),
        "opt_step": np.asarray(optimizer.step.value),
    }
    out["_step_seconds"] = float(np.median(times[1:]))
    return out
