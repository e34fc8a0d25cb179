"""How the multi-process test scripts start: minijax's distributed runtime initialized under
mpiexec, and this process's place among the processes and their devices."""

import os

import minijax


def join() -> tuple[int, int, int, int]:
    """distributed.initialize(), then (this process's index, the process count, this
    process's devices, all devices); each process has MINIJAX_NUM_CPU_DEVICES devices."""
    minijax.distributed.initialize()
    me, procs = minijax.process_index(), minijax.process_count()
    local = minijax.local_device_count()
    assert local == int(os.environ["MINIJAX_NUM_CPU_DEVICES"]), local
    return me, procs, local, procs * local
