"""Train an MLP data-parallel over N CPU devices with pmap, shard_map and sharded jit.

    python examples/data_parallel.py --devices 2 [--steps 200] [--batch 512]
    MINIJAX_NUM_CPU_DEVICES=4 python examples/data_parallel.py

Each step splits the batch over the devices; every device computes the gradient of its
slice, the gradients are averaged with lax.pmean (an all-reduce across the devices) and
every device applies the same update, so the parameters stay replicated. With sharded jit
the same step is written for the whole batch and `in_shardings` split it: the SPMD
partitioner pass inserts the all-reduce. The loss curve is
the same as one device's jit over the whole batch (printed side by side). The data is a
synthetic 10-class problem (a fixed random teacher network labels Gaussian inputs).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import minijax as jax
import minijax.numpy as jnp
from minijax import lax
from minijax.sharding import NamedSharding
from minijax.sharding import PartitionSpec as P

IN, HIDDEN, OUT, LR = 64, 256, 10, 0.2


def make_data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    teacher = rng.standard_normal((IN, OUT)).astype(np.float32)
    x = rng.standard_normal((n, IN)).astype(np.float32)
    y = np.argmax(np.tanh(x) @ teacher, axis=1).astype(np.int32)
    return x, y


def init_params(seed: int = 0):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return {"w1": jax.random.normal(k1, (IN, HIDDEN)) * (2 / IN) ** 0.5,
            "b1": jnp.zeros(HIDDEN),
            "w2": jax.random.normal(k2, (HIDDEN, OUT)) * (1 / HIDDEN) ** 0.5,
            "b2": jnp.zeros(OUT)}


def loss_fn(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    logp = jax.nn.log_softmax(h @ params["w2"] + params["b2"])
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def sgd(params, grads):
    return jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)


def single_device_step():
    """One device, the whole batch: the reference."""
    @jax.jit
    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return sgd(params, grads), loss
    return step


def pmap_step(n: int):
    """pmap over n devices: x, y are [n, batch/n, ...]; params replicated (in_axes None)."""
    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        grads, loss = lax.pmean((grads, loss), "batch")
        return sgd(params, grads), loss
    mapped = jax.pmap(step, axis_name="batch", in_axes=(None, 0, 0), out_axes=(None, None))

    def run(params, x, y):
        return mapped(params, x.reshape(n, -1, IN), y.reshape(n, -1))
    return run


def shard_map_step(n: int):
    """shard_map over a 1-D mesh of n devices: the batch split with P('batch')."""
    mesh = jax.make_mesh((n,), ("batch",))

    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        grads, loss = lax.pmean((grads, loss), "batch")
        return sgd(params, grads), loss
    return jax.shard_map(step, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                         out_specs=(P(), P()))


def sharded_jit_step(n: int):
    """Plain jit with shardings: the batch split over a mesh, parameters replicated."""
    mesh = jax.make_mesh((n,), ("batch",))
    rep, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch"))

    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return sgd(params, grads), loss
    return jax.jit(step, in_shardings=(rep, split, split), out_shardings=(rep, rep))


def train(step, params, x, y, steps: int, batch: int):
    losses = []
    for s in range(steps):
        lo = (s * batch) % (len(x) - batch + 1)
        params, loss = step(params, x[lo:lo + batch], y[lo:lo + batch])
        losses.append(float(loss))
    return params, losses


def time_step(step, params, x, y, repeat: int = 20) -> float:
    params, loss = step(params, x, y)         # compile
    jax.block_until_ready(loss)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        params, loss = step(params, x, y)
        jax.block_until_ready(loss)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=0, help="CPU devices (default: "
                        "MINIJAX_NUM_CPU_DEVICES, else 2)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args(argv)
    if args.devices:
        jax.config.update("jax_num_cpu_devices", args.devices)
    elif jax.config.jax_num_cpu_devices == 1:
        jax.config.update("jax_num_cpu_devices", 2)
    n = jax.device_count()
    if args.batch % n:
        raise SystemExit(f"--batch {args.batch} must be divisible by the {n} devices")
    x, y = make_data(args.batch * 16)
    params = init_params()
    print(f"{n} CPU devices: {jax.devices()}")
    results = {}
    for name, step in (("jit, 1 device", single_device_step()),
                       (f"pmap, {n} devices", pmap_step(n)),
                       (f"shard_map, {n} devices", shard_map_step(n)),
                       (f"sharded jit, {n} devices", sharded_jit_step(n))):
        t0 = time.perf_counter()
        final, losses = train(step, params, x, y, args.steps, args.batch)
        results[name] = losses
        ms = time_step(step, final, x[:args.batch], y[:args.batch]) * 1e3
        print(f"{name:>22}: loss {losses[0]:.4f} -> {losses[-1]:.4f} in {args.steps} steps "
              f"({time.perf_counter() - t0:.1f} s), {ms:.2f} ms/step")
    ref = np.array(results["jit, 1 device"])
    for name, losses in results.items():
        print(f"{name:>22}: max |loss - 1-device loss| over the curve = "
              f"{np.max(np.abs(np.array(losses) - ref)):.2e}")
    return results


if __name__ == "__main__":
    main()
