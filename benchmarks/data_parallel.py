"""Data-parallel MLP training step: minijax over 2 CPU devices vs 1, and real JAX's pmap
over 2 forced host devices (when importable), each configuration in its own process.

    python benchmarks/data_parallel.py [--batch 4096] [--repeat 20] [--rounds 3] [--quick]

Rows: the step of examples/data_parallel.py (64-256-10 MLP, SGD) on one batch:
- minijax jit, 1 device, 1 thread (MINIJAX_NUM_THREADS=1), and with 2 threads;
- minijax pmap, 2 devices, 2 threads (each device gets one: its share of the pool);
- minijax jit with in_shardings over a 2-device mesh (the SPMD partitioner's program);
- JAX pmap, 2 devices (XLA_FLAGS=--xla_force_host_platform_device_count=2);
- minijax pmap under `mpiexec -n 1` and `mpiexec -n 2` (one CPU device per process, each
  process its share of the cores; the gradient all-reduce crosses processes over MPI), when
  mpi4py and mpiexec are installed; the single process with 1 thread and with 2 (all the
  cores), the two processes with 1 thread each. "vs 1 dev" of the MPI rows is against the
  single process with 1 thread: the scaling from one process to two, each on one core.
Columns: median step time, examples per second, speed-up over minijax's one device, the
final loss after the timed steps (the same loss curve on every row), and the range of the
rounds' step times. Every configuration runs once per round, in an order rotating from
round to round, and the table gives the median over the rounds: this host's load changes
within minutes, and configurations measured only at different times are not comparable.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
    ("minijax pmap, 1 MPI process, 1 thread", "mpi1",
     {"MINIJAX_NUM_CPU_DEVICES": "1", "MINIJAX_NUM_THREADS": "1"}),
    ("minijax pmap, 1 MPI process, 2 threads", "mpi1",
     {"MINIJAX_NUM_CPU_DEVICES": "1", "MINIJAX_NUM_THREADS": "2"}),
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
    parser.add_argument("--rounds", type=int, default=3,
                        help="times every configuration runs (median over them)")
    parser.add_argument("--quick", action="store_true", help="batch 256, 3 repeats, 1 round")
    args = parser.parse_args(argv)
    batch, repeat = (256, 3) if args.quick else (args.batch, args.repeat)
    try:
        import jax  # noqa: F401
        have_jax = True
    except ImportError:
        have_jax = False
    have_mpi = _mpiexec() is not None
    configs = []
    for label, kind, env in CONFIGS:
        if kind == "jax" and not have_jax:
            configs.append((label, kind, env, "(JAX not installed)"))
        elif kind.startswith("mpi") and not have_mpi:
            configs.append((label, kind, env, "(mpi4py / mpiexec not installed)"))
        else:
            configs.append((label, kind, env, None))
    runs = [c for c in configs if c[3] is None]
    times: dict = {c[0]: [] for c in runs}
    losses: dict = {}
    errors: dict = {}
    rounds = 1 if args.quick else max(1, args.rounds)
    print(f"data-parallel MLP step (64-256-10, batch {batch}), median of {repeat} steps, "
          f"median of {rounds} rounds, load average {os.getloadavg()[0]:.2f}")
    for r in range(rounds):
        shift = r % max(1, len(runs))
        for label, kind, env, _ in runs[shift:] + runs[:shift]:
            result, error = run_config(kind, env, batch, repeat)
            if result is None:
                errors[label] = error
                continue
            times[label].append(result[0])
            losses[label] = result[1]
    print(f"{'configuration':<40}{'step':>10}{'examples/s':>13}{'vs 1 dev':>10}{'loss':>10}"
          f"{'rounds':>20}")
    rows, base, mpi_base = [], None, None
    for label, kind, _, missing in configs:
        if missing is not None:
            print(f"{label:<40}{missing:>43}")
            continue
        if not times[label]:
            print(f"{label:<40}  failed: {errors.get(label)}")
            continue
        seconds, loss = statistics.median(times[label]), losses[label]
        base = base or seconds
        if kind == "mpi1" and mpi_base is None:
            mpi_base = seconds
        ref = mpi_base if kind.startswith("mpi") else base
        spread = f"{min(times[label]) * 1e3:.2f}-{max(times[label]) * 1e3:.2f}ms"
        print(f"{label:<40}{seconds * 1e3:>8.2f}ms{batch / seconds:>13.0f}"
              f"{ref / seconds:>9.2f}x{loss:>10.4f}{spread:>20}")
        rows.append((label, seconds, loss))
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return rows


if __name__ == "__main__":
    main()
