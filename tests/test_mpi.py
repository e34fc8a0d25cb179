"""Multi-process runs over MPI: each test launches `mpiexec -n P python tests/mpi/SCRIPT`
and checks that every process printed its success marker (the scripts assert against
NumPy references themselves). Skipped, with the reason, when mpi4py or mpiexec is missing
(install the extra: pip install 'minijax[mpi]'; `make test` does)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "mpi"


def _mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"  # the mpich wheel's, in this venv
    if beside.exists():
        return str(beside)
    return shutil.which("mpiexec") or shutil.which("mpirun")


MPIEXEC = _mpiexec()
pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                       reason="mpi4py is not installed (pip install 'minijax[mpi]')"),
    pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec/mpirun found (pip install "
                       "'minijax[mpi]' brings MPICH's)"),
]


def run_mpi(script: str, procs: int, timeout: int = 120, args=(),
            **env) -> subprocess.CompletedProcess:
    """`mpiexec -n procs python tests/mpi/script *args` with this checkout on the path
    (`script` may also be a path relative to tests/mpi)."""
    full = dict(os.environ)
    for name in ("MINIJAX_FLAGS", "MINIJAX_DEBUG"):
        full.pop(name, None)
    # One thread per process (the machine's cores are shared by the processes), and a
    # deadline that turns a broken collective into a failure rather than a long wait.
    full.update({"PYTHONPATH": str(ROOT), "MINIJAX_NUM_THREADS": "1",
                 "MINIJAX_COLLECTIVE_TIMEOUT": "30", **env})
    return subprocess.run([MPIEXEC, "-n", str(procs), sys.executable, str(SCRIPTS / script),
                           *args],
                          env=full, capture_output=True, text=True, cwd=str(ROOT),
                          timeout=timeout)


def _check(out, markers):
    report = f"rc={out.returncode}\nstdout:\n{out.stdout[-3000:]}\nstderr:\n{out.stderr[-5000:]}"
    assert out.returncode == 0, report
    for marker in markers:
        assert marker in out.stdout, report


@pytest.mark.parametrize("procs", [2, 3])
def test_transport_collectives_match_numpy(procs):
    """allreduce (bitwise, in process order; 3 processes make the order matter),
    allgather, reduce_scatter, alltoall, sendrecv, permute, broadcast, barrier."""
    out = run_mpi("transport_collectives.py", procs)
    _check(out, [f"TRANSPORT OK {p}" for p in range(procs)])


def test_distributed_initialize_devices_and_multihost_utils():
    """Two processes of two CPU devices each: global devices, multihost_utils."""
    out = run_mpi("distributed_api.py", 2, MINIJAX_NUM_CPU_DEVICES="2")
    _check(out, ["DISTRIBUTED OK 0", "DISTRIBUTED OK 1"])


def test_process_leaving_mid_collective_makes_the_other_time_out():
    """Process 1 exits before an allreduce: process 0 raises CollectiveTimeoutError after
    the 1 s deadline (the script checks the message) instead of hanging."""
    out = run_mpi("dies_mid_collective.py", 2, timeout=60)
    _check(out, ["TIMEOUT OK", "LEFT"])


def test_pmap_collectives_cross_processes():
    """pmap over 2 processes x 2 CPU devices: psum (bitwise, group order), pmean, pmax,
    pmin, axis_index, all_gather, ppermute, psum_scatter, all_to_all, a pmean of grads."""
    out = run_mpi("pmap_collectives.py", 2, MINIJAX_NUM_CPU_DEVICES="2")
    _check(out, ["PMAP OK 0", "PMAP OK 1"])


def test_processes_split_the_cores_and_step_the_same_bits():
    """Without MINIJAX_NUM_THREADS each of the 2 processes gets half the cores (the script
    checks the pool size), and the data-parallel step is bit-identical everywhere."""
    out = run_mpi("core_share.py", 2, MINIJAX_NUM_THREADS="")
    _check(out, ["CORES OK 0", "CORES OK 1"])


@pytest.mark.parametrize("procs,devices", [(2, "1"), (2, "2"), (3, "1")])
def test_global_arrays_over_a_mesh_of_every_process(procs, devices):
    """make_mesh / Mesh over every process's devices; make_array_from_callback,
    _single_device_arrays, _process_local_data give Arrays holding only this process's
    shards (is_fully_addressable False, addressable_shards right); device_put to a global
    sharding and resharding; host_local_array_to_global_array and back; process_allgather
    (tiled) of global Arrays; all against NumPy."""
    out = run_mpi("global_arrays.py", procs, MINIJAX_NUM_CPU_DEVICES=devices)
    _check(out, [f"GLOBAL ARRAYS OK {p}" for p in range(procs)])


@pytest.mark.parametrize("procs,devices", [(2, "1"), (2, "2"), (3, "1")])
def test_sharded_jit_and_shard_map_across_processes(procs, devices):
    """Sharded jit (elementwise, reductions, dots in several shardings, 2-D mesh), plain jit
    on global Arrays, and a data-parallel training step under sharded jit and shard_map
    (pmean of gradients across the processes) equal NumPy and the single-process run."""
    out = run_mpi("sharded_programs.py", procs, MINIJAX_NUM_CPU_DEVICES=devices)
    _check(out, [f"SHARDED OK {p}" for p in range(procs)])


def test_data_parallel_mpi_example_pmap_and_sharded_jit_follow_one_device():
    """examples/data_parallel_mpi.py: pmap and sharded jit (global batches from
    make_array_from_process_local_data) across 2 processes give one device's loss curve."""
    out = run_mpi("../../examples/data_parallel_mpi.py", 2, timeout=300,
                  args=("--steps", "5", "--batch", "64"), MINIJAX_NUM_CPU_DEVICES="1")
    _check(out, ["sharded jit, 2 devices", "pmap over 2 devices"])
    gaps = [float(line.rsplit("=", 1)[1]) for line in out.stdout.splitlines()
            if "max |loss - 1-device loss|" in line]
    assert len(gaps) == 2 and max(gaps) < 1e-5, out.stdout
