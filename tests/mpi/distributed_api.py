"""Run under `mpiexec -n P`: distributed.initialize(), global devices, multihost_utils.

Prints `DISTRIBUTED OK <rank>` when every check passed.
"""

import os
import sys

import numpy as np

import minijax
import minijax.numpy as jnp
from minijax.experimental import multihost_utils


def main():
    procs = int(os.environ["PMI_SIZE"])
    rank = int(os.environ["PMI_RANK"])
    # Explicit values must agree with MPI; a failed initialize leaves nothing installed.
    try:
        minijax.distributed.initialize(num_processes=procs + 1)
    except ValueError as e:
        assert f"num_processes={procs + 1} but MPI runs {procs} processes" in str(e), e
    else:
        raise AssertionError("initialize accepted a wrong num_processes")
    assert not minijax.distributed.is_initialized()
    minijax.distributed.initialize("localhost:1234", num_processes=procs, process_id=rank)
    try:
        minijax.distributed.initialize()
    except RuntimeError as e:
        assert "only be called once" in str(e)
    else:
        raise AssertionError("initialize ran twice")

    assert minijax.process_index() == rank and minijax.process_count() == procs
    devices = minijax.devices()
    n = minijax.local_device_count()
    assert n == int(os.environ["MINIJAX_NUM_CPU_DEVICES"])
    # JAX's CPU ids: process_index << 11 | local index; devices in process order.
    assert [d.id for d in devices] == [p << 11 | i for p in range(procs) for i in range(n)]
    assert [d.process_index for d in devices] == [p for p in range(procs) for _ in range(n)]
    assert minijax.device_count() == procs * n
    local = minijax.local_devices()
    assert local == devices[rank * n:(rank + 1) * n]
    assert all(d.process_index == rank for d in local)
    assert minijax.local_devices(process_index=procs - 1) == devices[-n:]

    # Computation runs on this process's device, eager and jitted.
    x = jnp.arange(6.0) * (rank + 1)
    y = minijax.jit(lambda v: jnp.sum(v * v))(x)
    assert x.devices() == {local[0]} and y.devices() == {local[0]}, (x.devices(), local)
    np.testing.assert_allclose(float(y), 55.0 * (rank + 1) ** 2)

    # process_allgather, stacked and tiled, pytrees, scalars, minijax Arrays.
    tree = {"a": np.arange(4, dtype=np.int32) + 10 * rank, "b": float(rank), "c": x}
    stacked = multihost_utils.process_allgather(tree)
    np.testing.assert_array_equal(
        stacked["a"], np.stack([np.arange(4, dtype=np.int32) + 10 * p for p in range(procs)]))
    np.testing.assert_array_equal(stacked["b"], np.arange(procs, dtype=np.float64))
    np.testing.assert_array_equal(
        stacked["c"], np.stack([np.arange(6.0, dtype=np.float32) * (p + 1)
                                for p in range(procs)]))
    tiled = multihost_utils.process_allgather(np.full((2, 3), rank, np.int64), tiled=True)
    np.testing.assert_array_equal(tiled, np.repeat(np.arange(procs), 6).reshape(-1, 3))
    assert multihost_utils.process_allgather(np.int32(rank), tiled=True).shape == (procs,)

    # broadcast_one_to_all: process 0 by default; is_source picks another.
    got = multihost_utils.broadcast_one_to_all({"w": np.arange(3.0) + rank})
    np.testing.assert_array_equal(got["w"], np.arange(3.0))
    got = multihost_utils.broadcast_one_to_all(np.float32(rank) + 0.5,
                                               is_source=rank == procs - 1)
    assert got == np.float32(procs - 0.5) and got.dtype == np.float32

    multihost_utils.sync_global_devices("step 1")
    try:
        multihost_utils.sync_global_devices(f"rank {rank}")
    except AssertionError as e:
        assert "sync_global_devices name mismatch" in str(e)
    else:
        raise AssertionError("sync_global_devices accepted different names")
    multihost_utils.assert_equal({"k": np.arange(3)}, "same everywhere")

    minijax.distributed.shutdown()
    assert not minijax.distributed.is_initialized() and minijax.process_count() == 1
    print(f"DISTRIBUTED OK {rank}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
