"""Per-example gradients of a small CNN (vmap of grad under jit), minijax against real JAX.

    python benchmarks/per_example_grads.py [--batch 32] [--repeat 10]

The model is conv3x3(1->16) + ReLU + maxpool 2x2 + conv3x3(16->32) + ReLU + maxpool 2x2 +
dense(->10) + softmax cross-entropy on 28x28x1 images (NHWC), as differentially private SGD
computes it: `jit(vmap(grad(loss), in_axes=(None, 0, 0)))`. vmap turns each convolution
into a grouped one (feature_group_count = batch) and its weight gradient into a
batch-grouped one, and the max pool's gradient into a batched select-and-scatter. Both
libraries run the same program in one process; the script prints the median step time of
each and the ratio minijax / JAX.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import minijax  # noqa: E402

try:
    import jax as real_jax
    real_jax.config.update("jax_platforms", "cpu")
except Exception:  # noqa: BLE001 - JAX is optional
    real_jax = None


def init_params(seed: int = 0) -> dict:
    """float32 parameters of the CNN (He-scaled normal weights, zero biases)."""
    rng = np.random.default_rng(seed)

    def he(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    return {"k1": he((3, 3, 1, 16), 9), "b1": np.zeros(16, np.float32),
            "k2": he((3, 3, 16, 32), 144), "b2": np.zeros(32, np.float32),
            "w": he((7 * 7 * 32, 10), 7 * 7 * 32), "b": np.zeros(10, np.float32)}


def make_loss(jax):
    """The CNN's softmax cross-entropy for one example in library `jax` (minijax or real
    JAX): (params, x [28, 28, 1], y integer label) -> scalar."""
    lax, jnp = jax.lax, jax.numpy
    dn = ("NHWC", "HWIO", "NHWC")

    def maxpool(h):
        return lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def loss(params, x, y):
        h = x[None]
        h = lax.conv_general_dilated(h, params["k1"], (1, 1), "SAME", dimension_numbers=dn)
        h = maxpool(jax.nn.relu(h + params["b1"]))
        h = lax.conv_general_dilated(h, params["k2"], (1, 1), "SAME", dimension_numbers=dn)
        h = maxpool(jax.nn.relu(h + params["b2"]))
        logits = h.reshape(-1) @ params["w"] + params["b"]
        return -jax.nn.log_softmax(logits)[y]
    return loss


def make_per_example_grads(jax):
    """jit(vmap(grad(loss))) for library `jax`: (params, x, y) -> per-example gradients,
    x: [batch, 28, 28, 1], y: [batch] integer labels."""
    return jax.jit(jax.vmap(jax.grad(make_loss(jax)), in_axes=(None, 0, 0)))


def data(batch: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 28, 28, 1)).astype(np.float32)
    y = rng.integers(0, 10, batch).astype(np.int32)
    return x, y


def step_time(jax, batch: int, repeat: int) -> tuple[float, dict]:
    """Median seconds per call of the jitted per-example gradient (after warm-up) and the
    last result as NumPy arrays."""
    fn = make_per_example_grads(jax)
    params = {k: jax.device_put(v) for k, v in init_params().items()}
    x, y = (jax.device_put(a) for a in data(batch))
    out = jax.block_until_ready(fn(params, x, y))
    jax.block_until_ready(fn(params, x, y))
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(params, x, y))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), {k: np.asarray(v) for k, v in out.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args(argv)
    t_mj, g_mj = step_time(minijax, args.batch, args.repeat)
    print(f"per-example grads, CNN b{args.batch}: minijax {t_mj * 1e3:.2f} ms")
    if real_jax is None:
        print("(JAX not importable: no comparison)")
        return
    t_jax, g_jax = step_time(real_jax, args.batch, args.repeat)
    err = max(float(np.max(np.abs(g_mj[k] - g_jax[k])) / (1e-6 + np.max(np.abs(g_jax[k]))))
              for k in g_jax)
    print(f"per-example grads, CNN b{args.batch}: jax {t_jax * 1e3:.2f} ms, "
          f"minijax/jax {t_mj / t_jax:.2f}x, max rel. difference {err:.1e}")


if __name__ == "__main__":
    main()
