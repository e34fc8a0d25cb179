"""Utilities for multi-process runs (JAX's `jax.experimental.multihost_utils`).

Every process of a run set up by `minijax.distributed.initialize()` must call these
functions in the same order with arrays of the same shapes and dtypes (as with MPI). They
move host data through the run's transport (minijax.backends.transport: MPI under mpiexec)
and return NumPy arrays. With one process they only convert to NumPy.

Not here yet: `host_local_array_to_global_array` / `global_array_to_host_local_array`,
which need arrays sharded over several processes' devices.
"""

from __future__ import annotations

import zlib

import numpy as np

from minijax import tree_util
from minijax.backends import transport

__all__ = ["assert_equal", "broadcast_one_to_all", "process_allgather", "sync_global_devices"]


def _host(x) -> np.ndarray:
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy(order="C")


def process_allgather(in_tree, tiled: bool = False):
    """Gather every process's leaves: stacked on a new leading axis (tiled=False), or
    concatenated along axis 0 (tiled=True; with several processes scalars are stacked
    either way). Each leaf must
    have the same shape and dtype on every process."""
    run = transport.current()

    def gather(leaf):
        x = _host(leaf)
        if run.process_count == 1:  # as JAX: tiled leaves come back as they are
            return x if tiled else x[None]
        if x.ndim == 0 or not tiled:
            x = x[None]
        stacked = run.allgather(x)
        return stacked.reshape((-1,) + x.shape[1:])
    return tree_util.tree_map(gather, in_tree)


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
    """Every process gets the source process's leaves (process 0 unless `is_source` says
    which processes contribute; as in JAX, several sources' leaves are summed and no
    source gives zeros). Leaves must have the same shape and dtype on every process."""
    run = transport.current()
    if run.process_count == 1:
        return tree_util.tree_map(np.asarray, in_tree)
    if is_source is None:
        sources = [0]
    else:
        flags = run.allgather(np.array([bool(is_source)]))[:, 0]
        sources = [p for p in range(run.process_count) if flags[p]]
    me = run.process_index

    def share(leaf):
        x = _host(leaf)
        if len(sources) == 1:
            return run.broadcast(x, root=sources[0])
        contribution = x if me in sources else np.zeros_like(x)
        return run.allreduce(contribution, "sum")
    return tree_util.tree_map(share, in_tree)


def assert_equal(in_tree, fail_message: str = "") -> None:
    """Raise AssertionError unless every process passed the same leaves."""
    gathered = process_allgather(in_tree)
    leaves = tree_util.tree_leaves(in_tree)
    gathered_leaves = tree_util.tree_leaves(gathered)
    for mine, everyone in zip(leaves, gathered_leaves):
        mine = np.asarray(mine)
        if not all(np.array_equal(row, mine) for row in everyone):
            raise AssertionError(f"{fail_message}. Expected: {gathered}; got: {in_tree}.")


def sync_global_devices(name: str) -> None:
    """A barrier across every process; raises AssertionError when the processes passed
    different names (they are not at the same point of the program)."""
    assert_equal(np.uint32(zlib.crc32(name.encode())),
                 f"sync_global_devices name mismatch ('{name}')")
