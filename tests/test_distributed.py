"""Multi-process API in a single process (no MPI needed): distributed.initialize's checks,
process and device queries, the single-process transport and multihost_utils. The
multi-process behaviour is tested under mpiexec in test_mpi.py."""

from __future__ import annotations

import queue
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
from minijax.backends import transport
from minijax.backends.transport import SingleProcessTransport
from minijax.backends.transport.base import reduce_in_order
from minijax.backends.transport.cross_process import CrossProcessTransport, spmd_transport
from minijax.experimental import multihost_utils


@pytest.fixture
def initialized():
    minijax.distributed.initialize()
    try:
        yield
    finally:
        minijax.distributed.shutdown()


def test_process_and_device_queries_without_initialize():
    assert not minijax.distributed.is_initialized()
    assert minijax.process_index() == 0 and minijax.process_count() == 1
    assert minijax.devices() == minijax.local_devices()
    assert minijax.device_count() == len(minijax.devices()) == minijax.local_device_count()
    assert all(d.process_index == 0 for d in minijax.devices())
    assert minijax.local_devices(process_index=0) == minijax.local_devices()
    with pytest.raises(ValueError, match="Unknown process_index 3"):
        minijax.local_devices(process_index=3)


def test_initialize_single_process_twice_raises_as_jax(initialized):
    assert minijax.distributed.is_initialized()
    assert minijax.process_count() == 1 and minijax.devices() == minijax.local_devices()
    # JAX's error for a second call.
    with pytest.raises(RuntimeError, match="distributed.initialize should only be called once"):
        minijax.distributed.initialize()


def test_shutdown_without_initialize_is_a_no_op():
    minijax.distributed.shutdown()
    minijax.distributed.shutdown()
    assert not minijax.distributed.is_initialized()


@pytest.mark.parametrize("kwargs, match", [
    ({"num_processes": 2}, "num_processes=2 but this process was not started by an MPI "
     "launcher"),
    ({"num_processes": 1, "process_id": 1}, "process_id=1 but"),
    ({"cluster_detection_method": "slurm"}, "cluster_detection_method='slurm' is not "
     "supported"),
    ({"local_device_ids": [999]}, r"local_device_ids \[999\] name no device of this "
     "process"),
])
def test_initialize_rejects_what_disagrees_with_the_run(kwargs, match):
    with pytest.raises(ValueError, match=match):
        minijax.distributed.initialize("localhost:1234", **kwargs)
    # A failed initialize leaves nothing behind: it can be called again.
    assert not minijax.distributed.is_initialized()
    minijax.distributed.initialize("localhost:1234", num_processes=1, process_id=0,
                                   local_device_ids=[0])
    minijax.distributed.shutdown()


def test_cpu_device_ids_follow_jax_numbering():
    assert transport.cpu_device_id(0, 0) == 0
    assert transport.cpu_device_id(1, 0) == 2048  # JAX 0.10.2: process_index << 11
    assert transport.cpu_device_id(3, 2) == 3 * 2048 + 2


_DTYPES = [np.float32, np.float64, np.int32, np.uint8]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["sum", "prod", "max", "min"]), st.sampled_from(_DTYPES),
       st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_reduce_in_order_is_left_to_right(op, dtype, parts, seed):
    """The fixed order that makes allreduce bit-identical: ((p0 op p1) op p2) ..."""
    rng = np.random.default_rng(seed)
    values = [(rng.standard_normal(17) * 1e3).astype(dtype) for _ in range(parts)]
    ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[op]
    want = values[0]
    for v in values[1:]:
        want = ufunc(want, v)
    got = reduce_in_order(values, op, np.empty(17, dtype))
    assert got.tobytes() == np.asarray(want, dtype).tobytes()


def test_single_process_transport_collectives():
    t = SingleProcessTransport()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for op in ("sum", "prod", "max", "min"):
        got = t.allreduce(x, op)
        np.testing.assert_array_equal(got, x)
        assert got is not x
    np.testing.assert_array_equal(t.allgather(x), x[None])
    np.testing.assert_array_equal(t.reduce_scatter(x), x)
    np.testing.assert_array_equal(t.alltoall(x[:1]), x[:1])
    np.testing.assert_array_equal(t.broadcast(x), x)
    np.testing.assert_array_equal(t.sendrecv(x, dest=0, source=0), x)
    np.testing.assert_array_equal(t.sendrecv(x, dest=0, source=None), np.zeros_like(x))
    np.testing.assert_array_equal(t.permute(x, [(0, 0)]), x)
    np.testing.assert_array_equal(t.permute(x, []), np.zeros_like(x))
    out = np.empty_like(x)
    assert t.allreduce(x, out=out) is out
    # Non-contiguous input is accepted (copied once).
    np.testing.assert_array_equal(t.allgather(x[:, ::2]), x[None, :, ::2])
    assert t.allgather_object({"a": 1}) == [{"a": 1}]
    t.barrier()


def test_transport_errors_name_the_collective():
    t = SingleProcessTransport()
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match=r"allreduce: unknown reduction op='mean'"):
        t.allreduce(x, "mean")
    with pytest.raises(ValueError, match=r"out= must be a writeable C-contiguous "
                       r"float32\[4\] array, got float64\[4\]"):
        t.allreduce(x, out=np.empty(4))
    with pytest.raises(ValueError, match="broadcast: root process 1 does not exist"):
        t.broadcast(x, root=1)
    with pytest.raises(ValueError, match="permute: process 0 is the target of several"):
        t.permute(x, [(0, 0), (0, 0)])


def test_transport_timeout_follows_the_config_option():
    t = SingleProcessTransport()
    before = minijax.config.read("minijax_collective_timeout")
    try:
        minijax.config.update("minijax_collective_timeout", "2.5")
        assert t.timeout == 2.5
        assert SingleProcessTransport(timeout=7).timeout == 7.0
    finally:
        minijax.config.update("minijax_collective_timeout", before)


def test_multihost_utils_single_process_matches_jax():
    """Shapes and types are real JAX's with one process (jax.experimental.multihost_utils
    0.10.2): stacked gains a leading axis of 1, tiled returns leaves as they are, results
    are NumPy arrays."""
    x = minijax.numpy.arange(6.0).reshape(2, 3)
    stacked = multihost_utils.process_allgather({"x": x, "s": np.float32(3)})
    assert stacked["x"].shape == (1, 2, 3) and stacked["s"].shape == (1,)
    assert isinstance(stacked["x"], np.ndarray)
    np.testing.assert_array_equal(stacked["x"][0], np.arange(6.0).reshape(2, 3))
    tiled = multihost_utils.process_allgather({"x": x, "s": np.float32(3)}, tiled=True)
    assert tiled["x"].shape == (2, 3) and tiled["s"].shape == ()
    got = multihost_utils.broadcast_one_to_all({"a": 1.5, "b": np.arange(3)})
    assert isinstance(got["a"], np.ndarray) and got["a"] == 1.5
    np.testing.assert_array_equal(got["b"], np.arange(3))
    multihost_utils.sync_global_devices("anything")
    multihost_utils.assert_equal({"k": np.arange(3)}, "same")


class _Loopback(transport.ProcessTransport):
    """Two 'processes' inside this one (threads), exchanging arrays through queues: enough
    to test the cross-process collective bridge without MPI."""

    def __init__(self, index, mailboxes):
        super().__init__(index, 2, timeout=10)
        self.mailboxes = mailboxes

    def exchange_arrays(self, sends, recvs, key, what):
        for peer, array in sends:
            self.mailboxes[(self.process_index, peer)].put((key, np.array(array)))
        for peer, array in recvs:
            got_key, value = self.mailboxes[(peer, self.process_index)].get(timeout=10)
            assert got_key == key
            array[...] = value


def test_cross_process_bridge_combines_every_process_contribution_in_group_order():
    """2 processes x 2 participants (global ids 0-3): an all-reduce-like exchange over all
    four and one over replica groups {0,2},{1,3} (each crossing the processes); every
    participant combines its group's contributions in group order."""
    boxes = {(a, b): queue.Queue() for a in range(2) for b in range(2)}
    bridges = [CrossProcessTransport(_Loopback(p, boxes), [2 * p, 2 * p + 1], [0, 0, 1, 1])
               for p in range(2)]
    values = {r: np.full(3, 10.0 ** r, np.float32) for r in range(4)}
    results = {}

    def participant(r):
        bridge = bridges[r // 2]
        results[r, "all"] = bridge.exchange(("c", 1), r, (0, 1, 2, 3), values[r],
                                            lambda vs: [float(v[0]) for v in vs])
        group = (0, 2) if r % 2 == 0 else (1, 3)
        results[r, "groups"] = bridge.exchange(("c", 2), r, group, (values[r], values[r] * 2),
                                               lambda vs: [float(v[1][0]) for v in vs])

    threads = [threading.Thread(target=participant, args=(r,)) for r in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    for r in range(4):
        assert results[r, "all"] == [1.0, 10.0, 100.0, 1000.0]
        assert results[r, "groups"] == ([2.0, 200.0] if r % 2 == 0 else [20.0, 2000.0])
    # All participants local: the plain in-process rendezvous.
    assert type(spmd_transport([0, 1], 2)).__name__ == "InProcessTransport"
    with pytest.raises(ValueError, match="call minijax.distributed.initialize under mpiexec"):
        spmd_transport([0], 2, SingleProcessTransport())
