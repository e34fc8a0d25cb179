"""Run under `mpiexec -n P` with MINIJAX_NUM_CPU_DEVICES=L: meshes over every process's
devices, global Arrays (make_array_from_*, addressable shards), multihost_utils'
host-local <-> global conversions and process_allgather, device_put to a global sharding.
Every value is checked against NumPy. Prints `GLOBAL ARRAYS OK <rank>`.
"""

import sys

import numpy as np
from world import join

import minijax
from minijax.experimental import multihost_utils as mhu
from minijax.sharding import Mesh, NamedSharding
from minijax.sharding import PartitionSpec as P


def expect_error(kind, text, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except kind as e:
        assert text in str(e), (text, str(e))
    else:
        raise AssertionError(f"{fn} did not raise {kind.__name__}")


def check_shards(x, sharding, full):
    """x is a global Array laid out by `sharding` whose whole value is `full`."""
    me = minijax.process_index()
    indices = sharding.devices_indices_map(full.shape)
    mine = [d for d in sharding.mesh.devices.flat if d.process_index == me]
    shards = x.addressable_shards
    assert [s.device for s in shards] == mine, ([s.device for s in shards], mine)
    for s in shards:
        assert s.index == indices[s.device], (s.index, indices[s.device])
        assert s.data.devices() == {s.device} and s.data.committed
        np.testing.assert_array_equal(np.asarray(s.data), full[s.index])
    assert x.shape == full.shape and x.dtype == full.dtype, (x.shape, x.dtype)
    assert x.sharding == sharding
    np.testing.assert_array_equal(mhu.process_allgather(x, tiled=True), full)


def main():
    me, procs, n, total = join()

    # Meshes over the global devices.
    mesh = minijax.make_mesh((total,), ("x",))
    assert list(mesh.devices.flat) == minijax.devices() and mesh.is_multi_process
    assert mesh.local_devices == minijax.local_devices()
    assert mesh.local_mesh.shape == {"x": n}
    grid = Mesh(np.array(minijax.devices()).reshape(procs, n), ("p", "d"))
    assert grid.local_mesh.shape == {"p": 1, "d": n}
    assert list(grid.local_mesh.devices.flat) == minijax.local_devices()
    assert not NamedSharding(mesh, P("x")).is_fully_addressable
    assert NamedSharding(mesh, P("x")).addressable_devices == set(minijax.local_devices())
    assert NamedSharding(grid.local_mesh, P("d")).is_fully_addressable

    full = np.arange(total * 2 * 3, dtype=np.float32).reshape(total * 2, 3)

    # make_array_from_callback: only this process's shards are asked for.
    asked = []
    sharding = NamedSharding(mesh, P("x"))
    x = minijax.make_array_from_callback(full.shape, sharding,
                                         lambda idx: asked.append(idx) or full[idx])
    assert len(asked) == n
    assert not x.is_fully_addressable and x.devices() == set(minijax.devices())
    check_shards(x, sharding, full)
    expect_error(RuntimeError, "spans non-addressable", np.asarray, x)
    assert repr(x) == f"Array(shape=({total * 2}, 3), dtype=float32)", repr(x)
    expect_error(ValueError, "only supports tiled=True", mhu.process_allgather, x)

    # Replicated over every process: readable everywhere.
    rep = minijax.make_array_from_callback(full.shape, NamedSharding(mesh, P()),
                                           lambda idx: full[idx])
    assert not rep.is_fully_addressable
    np.testing.assert_array_equal(np.asarray(rep), full)
    assert repr(rep).startswith("Array([[ 0.,  1.,  2.],"), repr(rep)
    mhu.assert_equal(rep, "a replicated global array is one value")

    # Two mesh axes: rows over processes, columns over each process's devices.
    wide = np.arange(total * 2 * total * 2, dtype=np.int32).reshape(total * 2, total * 2)
    s2 = NamedSharding(grid, P("p", "d"))
    y = minijax.make_array_from_callback(wide.shape, s2, lambda idx: wide[idx])
    check_shards(y, s2, wide)
    s2t = NamedSharding(grid, P("d", "p"))  # columns over processes
    yt = minijax.make_array_from_callback(wide.T.shape, s2t, lambda idx: wide.T[idx])
    check_shards(yt, s2t, wide.T)

    # make_array_from_single_device_arrays: arrays committed to this process's devices
    # (given in reverse order: each goes to its own device).
    idx = sharding.addressable_devices_indices_map(full.shape)
    pieces = [minijax.device_put(full[i], d) for d, i in idx.items()][::-1]
    z = minijax.make_array_from_single_device_arrays(full.shape, sharding, pieces)
    check_shards(z, sharding, full)
    expect_error(ValueError, "arrays for a sharding", minijax.make_array_from_single_device_arrays,
                 full.shape, sharding, pieces[:-1] + pieces + pieces)

    # make_array_from_process_local_data: each process passes its own rows.
    rows = full.shape[0] // procs
    local = full[me * rows:(me + 1) * rows]
    w = minijax.make_array_from_process_local_data(sharding, local)
    check_shards(w, sharding, full)
    w = minijax.make_array_from_process_local_data(sharding, local, full.shape)
    check_shards(w, sharding, full)
    # A dimension given whole (global_shape equal to it): every process passes it whole.
    s_cols = NamedSharding(grid, P(None, "p"))
    cols = wide[:, :wide.shape[1] // procs * procs]
    per = cols.shape[1] // procs
    v = minijax.make_array_from_process_local_data(s_cols, cols[:, me * per:(me + 1) * per])
    check_shards(v, s_cols, cols)
    v = minijax.make_array_from_process_local_data(s_cols, cols, cols.shape)
    check_shards(v, s_cols, cols)
    expect_error(ValueError, "Invalid host data", minijax.make_array_from_process_local_data,
                 sharding, local[:1], full.shape)
    tree = minijax.make_array_from_process_local_data(sharding, {"a": local, "b": local + 1})
    check_shards(tree["b"], sharding, full + 1)

    # device_put of the same host value everywhere, and resharding a global Array.
    moved = minijax.device_put(full, sharding)
    check_shards(moved, sharding, full)
    by_grid = NamedSharding(grid, P(("p", "d")))
    check_shards(minijax.device_put(moved, by_grid), by_grid, full)
    wide_rows = minijax.device_put(wide, NamedSharding(mesh, P("x")))
    check_shards(minijax.device_put(wide_rows, s_cols), s_cols, wide)

    # host_local_array_to_global_array / global_array_to_host_local_array.
    host_batch = (np.arange(4 * n * 5, dtype=np.float32).reshape(4 * n, 5) + 1000 * me)
    params = np.linspace(-1, 1, 5).astype(np.float32)
    g_batch, g_params = mhu.host_local_array_to_global_array((host_batch, params), mesh,
                                                             (P("x"), P()))
    batches = [np.arange(4 * n * 5, dtype=np.float32).reshape(4 * n, 5) + 1000 * p
               for p in range(procs)]
    check_shards(g_batch, NamedSharding(mesh, P("x")), np.concatenate(batches))
    check_shards(g_params, NamedSharding(mesh, P()), params)
    assert mhu.host_local_array_to_global_array(g_batch, mesh, P("x")) is g_batch
    back = mhu.global_array_to_host_local_array(g_batch, mesh, P("x"))
    assert back.is_fully_addressable and back.sharding == NamedSharding(mesh.local_mesh, P("x"))
    np.testing.assert_array_equal(np.asarray(back), host_batch)
    # 2-D: rows over processes and devices of the grid, columns whole.
    g2 = mhu.host_local_array_to_global_array({"b": host_batch}, grid, {"b": P(("p", "d"))})
    check_shards(g2["b"], NamedSharding(grid, P(("p", "d"))), np.concatenate(batches))
    # Columns over processes (JAX 0.10.2, 2 processes x 2 devices, host + 100 * process:
    # gathers [[0, 1, 2, 100, 101, 102], ...], each process's shards its own columns).
    g3 = mhu.host_local_array_to_global_array(host_batch, grid, P(None, "p"))
    check_shards(g3, NamedSharding(grid, P(None, "p")), np.concatenate(batches, axis=1))
    back = mhu.global_array_to_host_local_array(g3, grid, P(None, "p"))
    np.testing.assert_array_equal(np.asarray(back), host_batch)
    # A global Array laid out otherwise is resharded first.
    back = mhu.global_array_to_host_local_array(g2["b"], mesh, P("x"))
    np.testing.assert_array_equal(np.asarray(back), host_batch)
    expect_error(ValueError, "not a valid input to the pspecs",
                 mhu.host_local_array_to_global_array, host_batch, mesh, None)
    # process_allgather of host-local leaves still stacks / tiles them.
    np.testing.assert_array_equal(mhu.process_allgather(host_batch), np.stack(batches))

    minijax.distributed.shutdown()
    print(f"GLOBAL ARRAYS OK {me}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
