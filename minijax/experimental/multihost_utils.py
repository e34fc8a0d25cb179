"""Utilities for multi-process runs (JAX's `jax.experimental.multihost_utils`).

Every process of a run set up by `minijax.distributed.initialize()` must call these
functions in the same order with arrays of the same shapes and dtypes (as with MPI). They
move host data through the run's transport (minijax.backends.transport: MPI under mpiexec)
and return NumPy arrays. With one process they only convert to NumPy.

`host_local_array_to_global_array` / `global_array_to_host_local_array` convert between
each process's host-local arrays (laid out over `mesh.local_mesh`) and global Arrays
sharded over a mesh of every process's devices (minijax/global_arrays.py).
"""

from __future__ import annotations

import zlib

import numpy as np

from minijax import global_arrays, tree_util
from minijax.array import Array
from minijax.backends import transport
from minijax.sharding import NamedSharding, PartitionSpec

__all__ = ["assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_local_array_to_global_array", "process_allgather", "sync_global_devices"]


def _host(x) -> np.ndarray:
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy(order="C")


def process_allgather(in_tree, tiled: bool = False):
    """Gather every process's leaves: stacked on a new leading axis (tiled=False), or
    concatenated along axis 0 (tiled=True; with several processes scalars are stacked
    either way). Each leaf must have the same shape and dtype on every process. A global
    Array (sharded over several processes' devices) gives its whole value, which needs
    tiled=True (as in JAX)."""
    run = transport.current()

    def gather(leaf):
        if global_arrays.is_global(leaf):
            if not tiled:
                raise ValueError("Gathering global non-fully-addressable arrays only "
                                 "supports tiled=True")
            return global_arrays.global_value(leaf)
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
    def equal_everywhere(leaf):
        if global_arrays.is_global(leaf):  # as JAX: its first shard against the whole value
            whole = global_arrays.global_value(leaf)
            return np.array_equal(whole, np.asarray(leaf.addressable_data(0)))
        mine = np.asarray(leaf)
        return all(np.array_equal(row, mine) for row in process_allgather(leaf))
    if not all(equal_everywhere(leaf) for leaf in tree_util.tree_leaves(in_tree)):
        gathered = process_allgather(in_tree, tiled=True)
        raise AssertionError(f"{fail_message}. Expected: {gathered}; got: {in_tree}.")


def sync_global_devices(name: str) -> None:
    """A barrier across every process; raises AssertionError when the processes passed
    different names (they are not at the same point of the program)."""
    assert_equal(np.uint32(zlib.crc32(name.encode())),
                 f"sync_global_devices name mismatch ('{name}')")


def _leaf_specs(pspecs, tree, what: str) -> list:
    leaves, treedef = tree_util.tree_flatten(pspecs, is_leaf=lambda x: x is None
                                             or isinstance(x, PartitionSpec))
    try:
        subtrees = treedef.flatten_up_to(tree)
    except (ValueError, TypeError):
        raise ValueError(f"{what}: pspecs must be a pytree prefix of the inputs, got "
                         f"{pspecs} for {tree_util.tree_structure(tree)}") from None
    out = []
    for spec, sub in zip(leaves, subtrees, strict=True):
        if spec is None:
            raise ValueError("`None` is not a valid input to the pspecs argument. Please use "
                             "jax.sharding.PartitionSpec() if you wanted to replicate your "
                             "input.")
        out.extend(spec for _ in tree_util.tree_leaves(sub))
    return out


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
    """Each process's host-local arrays -> global Arrays over `global_mesh`
    (jax.experimental.multihost_utils): a leaf is split over `global_mesh.local_mesh` as its
    PartitionSpec says, each local device's block becomes that device's shard of the global
    Array, whose dimensions are the local ones times the number of processes the spec
    splits them over (processes' data-parallel batches concatenate). Global Arrays are
    returned as they are."""
    leaves, tree = tree_util.tree_flatten(local_inputs)
    specs = _leaf_specs(pspecs, local_inputs, "host_local_array_to_global_array")
    local_mesh = global_mesh.local_mesh
    out = []
    for x, spec in zip(leaves, specs, strict=True):
        if global_arrays.is_global(x):
            out.append(x)
            continue
        value = np.asarray(x)
        local_map = NamedSharding(local_mesh, spec).devices_indices_map(value.shape)
        shape = global_arrays.mesh_local_to_global_shape(global_mesh, spec, value.shape)
        weak = isinstance(x, Array) and x.weak_type
        out.append(global_arrays.shards_to_array(
            shape, NamedSharding(global_mesh, spec),
            lambda device, index, v=value, m=local_map: v[m[device]], value.dtype, weak,
            "host_local_array_to_global_array"))
    return tree_util.tree_unflatten(tree, out)


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
    """The inverse of host_local_array_to_global_array: each global Array (resharded
    first when it is not laid out as `NamedSharding(global_mesh, pspec)`) -> the
    host-local Array over `global_mesh.local_mesh` made of this process's shards.
    Fully addressable Arrays are returned as they are."""
    leaves, tree = tree_util.tree_flatten(global_inputs)
    specs = _leaf_specs(pspecs, global_inputs, "global_array_to_host_local_array")
    local_mesh = global_mesh.local_mesh
    out = []
    for x, spec in zip(leaves, specs, strict=True):
        if isinstance(x, Array) and x.is_fully_addressable:
            out.append(x)
            continue
        sharding = NamedSharding(global_mesh, spec)
        shape = global_arrays.mesh_global_to_local_shape(global_mesh, spec, np.shape(x))
        devices = global_mesh.local_devices
        blocks = dict(zip(devices, global_arrays.local_blocks(x, sharding, devices),
                          strict=True))
        weak = isinstance(x, Array) and x.weak_type
        out.append(global_arrays.shards_to_array(
            shape, NamedSharding(local_mesh, spec),
            lambda device, index, b=blocks: b[device], x.dtype, weak,
            "global_array_to_host_local_array"))
    return tree_util.tree_unflatten(tree, out)
