"""`make demo`: train an MLP on scikit-learn's handwritten digits with minijax.jit.

Shows a progress bar with the running loss, then the test accuracy and the time of one
training step: jitted (one compiled program), eager (op by op) and plain NumPy (the same
forward and backward pass written by hand).
"""

from __future__ import annotations

import sys
import time

import numpy as np

import minijax as jax
import minijax.numpy as jnp

EPOCHS, BATCH, HIDDEN, LR = 30, 64, 128, 0.1


def load_digits():
    """8x8 digit images (1797, scikit-learn's copy of the UCI set), split 80/20."""
    try:
        from sklearn.datasets import load_digits as sk_load
    except ImportError:
        sys.exit("the demo needs scikit-learn for its data set: pip install scikit-learn")
    data = sk_load()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int32)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    n_train = int(0.8 * len(x))
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def init_params(seed: int = 0):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return {"w1": jax.random.normal(k1, (64, HIDDEN)) * (2 / 64) ** 0.5,
            "b1": jnp.zeros(HIDDEN),
            "w2": jax.random.normal(k2, (HIDDEN, 10)) * (1 / HIDDEN) ** 0.5,
            "b2": jnp.zeros(10)}


def predict(params, x):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    logp = jax.nn.log_softmax(predict(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def sgd_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), loss


def numpy_step(params, x, y):
    """The same step in plain NumPy, backward pass by hand."""
    h_pre = x @ params["w1"] + params["b1"]
    h = np.maximum(h_pre, 0)
    logits = h @ params["w2"] + params["b2"]
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(len(y)), y]))
    d = p
    d[np.arange(len(y)), y] -= 1
    d /= len(y)
    dh = (d @ params["w2"].T) * (h_pre > 0)
    grads = {"w2": h.T @ d, "b2": d.sum(0), "w1": x.T @ dh, "b1": dh.sum(0)}
    return {k: params[k] - LR * grads[k] for k in params}, loss


def progress(epoch: int, loss: float, width: int = 30) -> None:
    done = int(width * epoch / EPOCHS)
    bar = "#" * done + "." * (width - done)
    end = "\n" if epoch == EPOCHS else ""
    print(f"\r  epoch {epoch:2d}/{EPOCHS} [{bar}] loss {loss:.4f}", end=end, flush=True)


def time_step(step, params, x, y, repeat: int) -> float:
    jax.block_until_ready(step(params, x, y))  # warm-up (compiles under jit)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(step(params, x, y))
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> float:
    x_train, y_train, x_test, y_test = load_digits()
    print(f"minijax {jax.__version__} on {jax.devices()} ({jax.default_backend()} backend)")
    print(f"digits: {len(x_train)} training and {len(x_test)} test images of 8x8 pixels; "
          f"MLP 64-{HIDDEN}-10, SGD lr={LR}, batch {BATCH}")
    params = init_params()
    step = jax.jit(sgd_step)
    steps_per_epoch = len(x_train) // BATCH
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    for epoch in range(1, EPOCHS + 1):
        order = rng.permutation(len(x_train))
        running = 0.0
        for i in range(steps_per_epoch):
            idx = order[i * BATCH:(i + 1) * BATCH]
            params, loss = step(params, x_train[idx], y_train[idx])
            running += float(loss)
        progress(epoch, running / steps_per_epoch)
    train_s = time.perf_counter() - t0
    predicted = np.asarray(jnp.argmax(predict(params, x_test), axis=1))
    accuracy = float(np.mean(predicted == y_test))
    print(f"trained {EPOCHS * steps_per_epoch} steps in {train_s:.2f} s (compile included)")
    print(f"test accuracy: {accuracy:.4f}")

    xb, yb = x_train[:BATCH], y_train[:BATCH]
    np_params = {k: np.asarray(v) for k, v in init_params().items()}
    t_jit = time_step(step, init_params(), xb, yb, 50)
    t_eager = time_step(sgd_step, init_params(), jnp.asarray(xb), jnp.asarray(yb), 5)
    t_np = time_step(numpy_step, np_params, xb, yb, 50)
    print(f"one training step (batch {BATCH}): jit {t_jit * 1e3:.3f} ms | "
          f"eager {t_eager * 1e3:.2f} ms ({t_eager / t_jit:.0f}x slower) | "
          f"NumPy by hand {t_np * 1e3:.3f} ms")
    return accuracy


if __name__ == "__main__":
    main()
