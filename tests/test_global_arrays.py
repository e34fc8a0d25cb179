"""Global Arrays (minijax/global_arrays.py) without MPI: meshes mixing this process's real
CPU devices with stand-ins for another process's devices (Devices whose process_index is
1; only the layout is computed for them), so the index bookkeeping of
make_array_from_process_local_data, local_to_global_shape, Mesh.local_mesh and
multihost_utils' host-local <-> global conversions is checked in one process against
NumPy and JAX's documented examples. tests/mpi/global_arrays.py runs the real thing
under mpiexec."""

import numpy as np
import pytest

import minijax
from minijax import global_arrays
from minijax.backends.base import Device
from minijax.backends.transport import cpu_device_id
from minijax.experimental import multihost_utils as mhu
from minijax.sharding import Mesh, NamedSharding
from minijax.sharding import PartitionSpec as P


def devices_of(layout):
    """One device per entry: 0 for this process (real CPU devices, in order), p > 0 for a
    stand-in device of process p."""
    real = iter(minijax.local_devices())
    count = {}
    out = []
    for p in layout:
        if p == 0:
            out.append(next(real))
        else:
            count[p] = count.get(p, 0) + 1
            out.append(Device("cpu", cpu_device_id(p, count[p] - 1), "cpu", "cpu", p))
    return np.array(out, dtype=object)


def cube_mesh():
    """JAX's example mesh {'a': 2, 'b': 2, 'c': 2}: 4 processes of 2 devices each, the
    devices of a process adjacent along 'c'."""
    return Mesh(devices_of([0, 0, 1, 1, 2, 2, 3, 3]).reshape(2, 2, 2), ("a", "b", "c"))


@pytest.mark.parametrize("spec,want", [
    # JAX's docstring of local_to_global_shape, local shape (l0, l1) = (3, 5):
    (P(), (3, 5)),
    (P(("a", "b", "c"), None), (12, 5)),
    (P(("a", "b"), None), (12, 5)),    # 'c' is within a process: the same global shape
    (P(None, ("a", "c")), (3, 10)),
    (P(("a", "c"), "b"), (6, 10)),
])
def test_local_to_global_shape_follows_jax_examples(spec, want):
    assert global_arrays.local_to_global_shape(NamedSharding(cube_mesh(), spec), (3, 5)) == want


def test_local_to_global_shape_is_none_where_processes_overlap():
    mesh = Mesh(devices_of([0, 0, 1, 1]).reshape(1, 4), ("r", "c"))
    assert global_arrays.local_to_global_shape(NamedSharding(mesh, P(None, "c")),
                                               (2, 4)) == (2, 8)
    # Processes [[0, 1, 1], [0, 0, 1]]: both hold both rows (uniform along 'r'), but
    # process 0 holds columns {0, 1} and process 1 columns {1, 2} (not uniform along 'c').
    odd = Mesh(devices_of([0, 1, 1, 0, 0, 1]).reshape(2, 3), ("r", "c"))
    assert global_arrays.local_to_global_shape(NamedSharding(odd, P("r", "c")),
                                               (2, 6)) == (2, None)
    with pytest.raises(ValueError, match="non-uniform sharding"):
        global_arrays.make_array_from_process_local_data(NamedSharding(odd, P("r", "c")),
                                                         np.zeros((2, 6)))


def test_mesh_local_mesh_is_this_process_subgrid():
    mesh = cube_mesh()
    assert mesh.is_multi_process and mesh.local_mesh.shape == {"a": 1, "b": 1, "c": 2}
    assert list(mesh.local_mesh.devices.flat) == minijax.local_devices()[:2]
    assert mesh.local_devices == minijax.local_devices()[:2]
    # Interleaved along an axis: still a sub-grid (coordinates 0 and 2).
    mesh = Mesh(devices_of([0, 1, 0, 1]).reshape(4, 1), ("x", "y"))
    assert list(mesh.local_mesh.devices.flat) == minijax.local_devices()[:2]
    broken = Mesh(devices_of([0, 1, 1, 0]).reshape(2, 2), ("x", "y"))
    with pytest.raises(ValueError, match="don't form a subcube"):
        _ = broken.local_mesh
    single = minijax.make_mesh((2,), ("x",))
    assert single.local_mesh is single and not single.is_multi_process


def test_sharding_addressability_with_another_process():
    mesh = cube_mesh()
    s = NamedSharding(mesh, P("a"))
    assert not s.is_fully_addressable and not s.is_fully_replicated
    assert s.addressable_devices == set(minijax.local_devices()[:2])
    assert set(s.addressable_devices_indices_map((4, 2))) == s.addressable_devices
    assert NamedSharding(mesh, P()).is_fully_replicated
    assert NamedSharding(mesh.local_mesh, P("c")).is_fully_addressable


def check_global(x, sharding, full):
    """x holds this process's shards of `full` as `sharding` lays it out."""
    assert not x.is_fully_addressable and x.committed and x.sharding == sharding
    assert x.shape == full.shape and x.dtype == full.dtype
    indices = sharding.devices_indices_map(full.shape)
    mine = [d for d in sharding.mesh.devices.flat if d.process_index == 0]
    assert [s.device for s in x.addressable_shards] == mine
    for s in x.addressable_shards:
        assert s.index == indices[s.device] and s.data.devices() == {s.device}
        np.testing.assert_array_equal(np.asarray(s.data), full[s.index])
    np.testing.assert_array_equal(np.asarray(x.addressable_data(0)), full[indices[mine[0]]])


def test_process_local_data_fills_this_process_shards_in_order():
    # Process 0 holds rows 0-1 and 4-5 of 8 (devices at mesh positions 0 and 2): its
    # local data's rows 0-1 and 2-3 go there (JAX's "(8, 12) and (24, 28) are mapped to
    # (0, 4) and (4, 8) of local_data"). Real JAX 0.10.2 over 2 processes x 2 CPU devices
    # with this mesh gives process 0 exactly these shards.
    mesh = Mesh(devices_of([0, 1, 0, 1]), ("x",))
    s = NamedSharding(mesh, P("x"))
    full = np.arange(24, dtype=np.float32).reshape(8, 3)
    local = full[[0, 1, 4, 5]]
    x = minijax.make_array_from_process_local_data(s, local)
    check_global(x, s, full)
    x = minijax.make_array_from_process_local_data(s, local, (8, 3))
    check_global(x, s, full)
    # A dimension passed whole: the local data is the global extent there.
    s2 = NamedSharding(Mesh(devices_of([0, 1]).reshape(1, 2), ("r", "c")), P(None, "c"))
    wide = np.arange(12, dtype=np.int32).reshape(2, 6)
    check_global(minijax.make_array_from_process_local_data(s2, wide, (2, 6)), s2, wide)
    check_global(minijax.make_array_from_process_local_data(s2, wide[:, :3]), s2, wide)
    with pytest.raises(ValueError, match="Invalid host data"):
        minijax.make_array_from_process_local_data(s, local[:3], (8, 3))


def test_global_array_reads_raise_jax_error_but_replicated_ones_read():
    mesh = Mesh(devices_of([0, 1]), ("x",))
    x = minijax.make_array_from_callback((4,), NamedSharding(mesh, P("x")),
                                         lambda idx: np.arange(4.0)[idx])
    with pytest.raises(RuntimeError, match="spans non-addressable"):
        np.asarray(x)
    assert repr(x) == "Array(shape=(4,), dtype=float32)" and str(x) == repr(x)
    with pytest.raises(ValueError, match="only supports tiled=True"):
        mhu.process_allgather(x)
    rep = minijax.make_array_from_callback((4,), NamedSharding(mesh, P()),
                                           lambda idx: np.arange(4.0)[idx])
    assert not rep.is_fully_addressable
    np.testing.assert_array_equal(np.asarray(rep), np.arange(4.0, dtype=np.float32))
    np.testing.assert_array_equal(mhu.process_allgather(rep, tiled=True), np.arange(4.0))


def test_callback_is_asked_for_this_process_shards_only():
    mesh = cube_mesh()
    asked = []
    full = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    s = NamedSharding(mesh, P("a", ("b", "c")))
    x = minijax.make_array_from_callback(full.shape, s, lambda i: asked.append(i) or full[i])
    assert len(asked) == 2
    check_global(x, s, full)


def test_host_local_to_global_and_back_with_another_process():
    mesh = cube_mesh()   # this process: a=0, b=0, c=0..1
    host = np.arange(4 * 3, dtype=np.float32).reshape(4, 3)
    for spec, global_shape in [(P(("a", "b", "c")), (16, 3)), (P("c"), (4, 3)),
                               (P(None, "a"), (4, 6)), (P(), (4, 3))]:
        s = NamedSharding(mesh, spec)
        x = mhu.host_local_array_to_global_array(host, mesh, spec)
        assert x.shape == global_shape and x.sharding == s
        local_map = NamedSharding(mesh.local_mesh, spec).devices_indices_map(host.shape)
        for shard in x.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data), host[local_map[shard.device]])
        assert mhu.host_local_array_to_global_array(x, mesh, spec) is x
        back = mhu.global_array_to_host_local_array(x, mesh, spec)
        assert back.is_fully_addressable
        assert back.sharding == NamedSharding(mesh.local_mesh, spec)
        np.testing.assert_array_equal(np.asarray(back), host)
    tree = mhu.host_local_array_to_global_array({"a": host, "b": [host]}, mesh,
                                                {"a": P("a"), "b": P()})
    assert tree["a"].shape == (8, 3) and tree["b"][0].shape == (4, 3)
    with pytest.raises(ValueError, match="not a valid input to the pspecs"):
        mhu.host_local_array_to_global_array(host, mesh, None)


# --------------------------------------------------------------------------- one process


def test_one_process_process_local_data_is_device_put():
    mesh = minijax.make_mesh((4,), ("x",))
    s = NamedSharding(mesh, P("x"))
    data = np.arange(8.0).reshape(4, 2)
    x = minijax.make_array_from_process_local_data(s, data)
    assert x.is_fully_addressable and x.sharding == s and x.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(x), data)
    tree = minijax.make_array_from_process_local_data(s, {"u": data, "v": data[:, :1]})
    np.testing.assert_array_equal(np.asarray(tree["v"]), data[:, :1])
    with pytest.raises(ValueError, match="global_shape should be None or equal"):
        minijax.make_array_from_process_local_data(s, data, (8, 2))


def test_one_process_host_local_is_global():
    mesh = minijax.make_mesh((2, 2), ("x", "y"))
    host = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    x = mhu.host_local_array_to_global_array(host, mesh, P("x"))
    assert x.is_fully_addressable and x.sharding == NamedSharding(mesh, P("x"))
    np.testing.assert_array_equal(np.asarray(x), host)
    assert mhu.global_array_to_host_local_array(x, mesh, P("x")) is x
    np.testing.assert_array_equal(mhu.process_allgather(x, tiled=True), host)
    np.testing.assert_array_equal(mhu.process_allgather(x), host[None])


def test_single_device_arrays_go_to_their_own_devices():
    mesh = minijax.make_mesh((4,), ("x",))
    s = NamedSharding(mesh, P("x"))
    full = np.arange(8, dtype=np.int32)
    parts = [minijax.device_put(full[2 * i:2 * i + 2], d)
             for i, d in enumerate(mesh.devices.flat)]
    x = minijax.make_array_from_single_device_arrays((8,), s, parts[::-1])
    np.testing.assert_array_equal(np.asarray(x), full)
    # Host arrays (no device) are taken in the order of the sharding's devices.
    y = minijax.make_array_from_single_device_arrays((8,), s, [full[2 * i:2 * i + 2]
                                                               for i in range(4)])
    np.testing.assert_array_equal(np.asarray(y), full)
