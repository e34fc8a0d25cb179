"""Train the MLP of data_parallel.py data-parallel across MPI processes (pmap over every
process's CPU devices, and sharded jit over a mesh of them; the gradient all-reduce crosses
processes over MPI).

    mpiexec -n 2 python examples/data_parallel_mpi.py [--steps 100] [--batch 512]
    MINIJAX_NUM_CPU_DEVICES=2 mpiexec -n 2 python examples/data_parallel_mpi.py

Every process builds the same synthetic data set and takes its share of each batch
(process p, local device i: rows of participant p * local_devices + i); lax.pmean over the
axis averages the gradients of all participants, so the parameters stay the same on every
process. Process 0 prints the loss curve next to one device's jit over the whole batch,
and the step times (one process alone, then all processes together).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import data_parallel as dp  # noqa: E402

import minijax as jax  # noqa: E402
from minijax.experimental import multihost_utils  # noqa: E402
from minijax.sharding import NamedSharding  # noqa: E402
from minijax.sharding import PartitionSpec as P  # noqa: E402


def sharded_batch_sharding(total: int) -> NamedSharding:
    """The batch split over the mesh of dp.sharded_jit_step (every process's devices)."""
    return NamedSharding(jax.make_mesh((total,), ("batch",)), P("batch"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args(argv)
    jax.distributed.initialize()
    me, procs = jax.process_index(), jax.process_count()
    local = jax.local_device_count()
    total = procs * local
    if args.batch % total:
        raise SystemExit(f"--batch {args.batch} must be divisible by the {total} devices")
    x, y = dp.make_data(args.batch * 16)
    params = dp.init_params()
    share = args.batch // procs

    def mine(a):  # this process's rows of a batch
        return a[me * share:(me + 1) * share]

    step = dp.pmap_step(local)

    def local_step(params, xb, yb):
        return step(params, mine(xb), mine(yb))

    # Sharded jit over a mesh of every process's devices: each process hands in its rows
    # as its part of a global batch; the partitioner's all-reduce crosses the processes.
    sharded = dp.sharded_jit_step(total)
    split = sharded_batch_sharding(total)

    def global_step(params, xb, yb):
        xg, yg = jax.make_array_from_process_local_data(split, (mine(xb), mine(yb)))
        return sharded(params, xg, yg)

    # One device, whole batch: the reference curve (every process computes it).
    _, ref = dp.train(dp.single_device_step(), params, x, y, args.steps, args.batch)
    final, losses = dp.train(local_step, params, x, y, args.steps, args.batch)
    multihost_utils.assert_equal(np.asarray(final["w1"]), "parameters differ between processes")
    g_final, g_losses = dp.train(global_step, params, x, y, args.steps, args.batch)
    assert np.allclose(np.asarray(g_final["w1"]), np.asarray(final["w1"]), atol=1e-5)
    xb, yb = x[:args.batch], y[:args.batch]
    single_ms = float("nan")
    if me == 0:  # one process alone, the others wait
        single_ms = dp.time_step(dp.single_device_step(), final, xb, yb) * 1e3
    multihost_utils.sync_global_devices("timed the single process")
    multi_ms = dp.time_step(local_step, final, xb, yb) * 1e3
    global_ms = dp.time_step(global_step, g_final, xb, yb) * 1e3
    if me == 0:
        print(f"{procs} processes x {local} CPU devices: {jax.devices()}")
        print(f"  jit, 1 device, 1 process: loss {ref[0]:.4f} -> {ref[-1]:.4f}, "
              f"{single_ms:.2f} ms/step")
        print(f"  pmap over {total} devices:    loss {losses[0]:.4f} -> {losses[-1]:.4f}, "
              f"{multi_ms:.2f} ms/step ({single_ms / multi_ms:.2f}x)")
        print(f"  sharded jit, {total} devices:  loss {g_losses[0]:.4f} -> {g_losses[-1]:.4f}, "
              f"{global_ms:.2f} ms/step ({single_ms / global_ms:.2f}x)")
        for name, curve in (("pmap", losses), ("sharded jit", g_losses)):
            print(f"  {name}: max |loss - 1-device loss| over the curve = "
                  f"{np.max(np.abs(np.array(curve) - np.array(ref))):.2e}")
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
