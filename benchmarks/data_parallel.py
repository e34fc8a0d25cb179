"""Data-parallel MLP training step: minijax over 2 CPU devices vs 1, and real JAX's pmap
over 2 forced host devices (when importable), each configuration in its own process.

    python benchmarks/data_parallel.py [--batch 4096] [--repeat 20] [--quick]

Rows: the step of examples/data_parallel.py (64-256-10 MLP, SGD) on one batch:
- minijax jit, 1 device, 1 thread (MINIJAX_NUM_THREADS=1), and with 2 threads;
- minijax pmap, 2 devices, 2 threads (each device gets one: its share of the pool);
- minijax jit with in_shardings over a 2-device mesh (the SPMD partitioner's program);
- JAX pmap, 2 devices (XLA_FLAGS=--xla_force_host_platform_device_count=2);
- minijax pmap under `mpiexec -n 1` and `mpiexec -n 2` (one CPU device per process, each
  process its share of the cores; the gradient all-reduce crosses processes over MPI), when
  mpi4py and mpiexec are installed. "vs 1 dev" of the 2-process row is against 1 process.
Columns: median step time, examples per second, speed-up over minijax's one device, and the
final loss after the timed steps (the same loss curve on every row).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r"""
import json, sys
import numpy as np
sys.path.insert(0, {root!r} + "/examples")
kind, batch, repeat = {kind!r}, {batch}, {repeat}
import data_parallel as dp
if kind == "mpi":
    import minijax as jax
    jax.distributed.initialize()
    me, procs = jax.process_index(), jax.process_count()
    share = batch // procs
    pstep = dp.pmap_step(jax.local_device_count())
    params = dp.init_params()

    def step(params, x, y):
        return pstep(params, x[me * share:(me + 1) * share], y[me * share:(me + 1) * share])
elif kind == "jax":
    import jax, jax.numpy as jnp
    from jax import lax
    params = {{k: jnp.asarray(np.asarray(v)) for k, v in dp.init_params().items()}}
    dp.jax, dp.jnp, dp.lax = jax, jnp, lax
    step = dp.pmap_step(2)
else:
    import minijax as jax
    params = dp.init_params()
    step = {{"mj1": dp.single_device_step, "mj2": lambda: dp.pmap_step(2),
             "mjs": lambda: dp.sharded_jit_step(2)}}[kind]()
x, y = dp.make_data(batch)
seconds = dp.time_step(step, params, x, y, repeat)
_, loss = step(params, x, y)
if kind != "mpi" or jax.process_index() == 0:
    print(json.dumps([seconds, float(loss)]))
"""

CONFIGS = [
    ("minijax jit, 1 device, 1 thread", "mj1",
     {"MINIJAX_NUM_THREADS": "1", "MINIJAX_NUM_CPU_DEVICES": "1"}),
    ("minijax jit, 1 device, 2 threads", "mj1",
     {"MINIJAX_NUM_THREADS": "2", "MINIJAX_NUM_CPU_DEVICES": "1"}),
    ("minijax pmap, 2 devices", "mj2",
     {"MINIJAX_NUM_THREADS": "2", "MINIJAX_NUM_CPU_DEVICES": "2"}),
    ("minijax sharded jit, 2 devices", "mjs",
     {"MINIJAX_NUM_THREADS": "2", "MINIJAX_NUM_CPU_DEVICES": "2"}),
    ("JAX pmap, 2 devices", "jax",
     {"XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}),
    ("minijax pmap, 1 MPI process", "mpi1", {"MINIJAX_NUM_CPU_DEVICES": "1"}),
    ("minijax pmap, 2 MPI processes", "mpi2", {"MINIJAX_NUM_CPU_DEVICES": "1"}),
]


def _mpiexec():
    """The mpiexec next to this Python (the MPI extra's), else on PATH; None without
    mpi4py."""
    import importlib.util
    import shutil
    if importlib.util.find_spec("mpi4py") is None:
        return None
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else shutil.which("mpiexec")


def run_config(kind: str, env_extra: dict, batch: int, repeat: int):
    env = dict(os.environ, PYTHONPATH=ROOT, **env_extra)
    command = [sys.executable, "-c"]
    if kind.startswith("mpi"):
        command = [_mpiexec(), "-n", kind[3:]] + command
        kind = "mpi"
    code = _CHILD.format(root=ROOT, kind=kind, batch=batch, repeat=repeat)
    out = subprocess.run(command + [code], env=env, capture_output=True, text=True,
                         timeout=900)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"
    return json.loads(out.stdout.strip().splitlines()[-1]), None


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="batch 256, 3 repeats")
    args = parser.parse_args(argv)
    batch, repeat = (256, 3) if args.quick else (args.batch, args.repeat)
    try:
        import jax  # noqa: F401
        have_jax = True
    except ImportError:
        have_jax = False
    have_mpi = _mpiexec() is not None
    rows, base, mpi_base = [], None, None
    print(f"data-parallel MLP step (64-256-10, batch {batch}), median of {repeat}, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'configuration':<34}{'step':>10}{'examples/s':>13}{'vs 1 dev':>10}{'loss':>10}")
    for label, kind, env in CONFIGS:
        if kind == "jax" and not have_jax:
            print(f"{label:<34}{'(JAX not installed)':>43}")
            continue
        if kind.startswith("mpi") and not have_mpi:
            print(f"{label:<34}{'(mpi4py / mpiexec not installed)':>43}")
            continue
        result, error = run_config(kind, env, batch, repeat)
        if result is None:
            print(f"{label:<34}  failed: {error}")
            continue
        seconds, loss = result
        base = base or seconds
        if kind == "mpi1":
            mpi_base = seconds
        ref = mpi_base if kind == "mpi2" and mpi_base else base
        print(f"{label:<34}{seconds * 1e3:>8.2f}ms{batch / seconds:>13.0f}"
              f"{ref / seconds:>9.2f}x{loss:>10.4f}")
        rows.append((label, seconds, loss))
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return rows


if __name__ == "__main__":
    main()
