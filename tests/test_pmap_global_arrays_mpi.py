"""Global Arrays (spread over every process's devices) with pmap, jit and shard_map, over
MPI (tests/mpi/pmap_global_arrays.py checks values against NumPy and JAX's errors, and
prints its marker). Skipped, with the reason, when mpi4py or mpiexec is missing."""

import pytest
from test_mpi import _check, pytestmark, run_mpi  # noqa: F401 - the skip marks apply here


@pytest.mark.parametrize("procs,devices", [(2, "2"), (3, "1")])
def test_pmap_of_global_arrays_and_closing_over_them(procs, devices):
    out = run_mpi("pmap_global_arrays.py", procs, timeout=90, MINIJAX_NUM_CPU_DEVICES=devices)
    _check(out, [f"PMAP GLOBAL OK {p}" for p in range(procs)])
