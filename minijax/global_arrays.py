"""Arrays laid out over a mesh, including meshes over the devices of several processes.

In one process a sharded Array keeps its global value in one host buffer (array.sharded).
In a multi-process run (minijax.distributed.initialize) a mesh may hold every process's
devices; an Array sharded over it is *global*: each process holds only the shards of its
own devices (`array.ProcessShards`), `is_fully_addressable` is False, and its value can be
read only through `addressable_shards` or gathered with
`minijax.experimental.multihost_utils.process_allgather`.

This module builds such Arrays (JAX's `make_array_from_callback`,
`make_array_from_single_device_arrays`, `make_array_from_process_local_data`), reads the
blocks a program needs on this process's devices, gathers a global value, and runs a
compiled SPMD program over a mesh whose other devices run in the other processes (sharded
jit and shard_map use it). Every process must make the same calls in the same order.
"""

from __future__ import annotations

import collections
import math

import numpy as np

from minijax import distributed, dtypes, placement, tree_util
from minijax.array import Array, ProcessShards, sharded
from minijax.backends import transport
from minijax.backends.spmd import run_spmd
from minijax.backends.transport.cross_process import spmd_transport
from minijax.dispatch import device_put as _put_on_device
from minijax.sharding import Mesh, NamedSharding, PartitionSpec, Sharding, _mesh_stack

__all__ = ["global_value", "is_global", "local_blocks", "local_part", "local_to_global_shape",
           "make_array_from_callback", "make_array_from_process_local_data",
           "make_array_from_single_device_arrays", "output_array", "pmap_blocks",
           "pmap_local_size", "run_on_mesh", "shards_to_array"]


def _index_key(index) -> tuple:
    return tuple((s.start, s.stop) for s in index)


def _shape_of(index, shape) -> tuple:
    return tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))


def _check_piece(piece, index, shape, device, what) -> None:
    want = _shape_of(index, shape)
    if piece.shape != want:
        raise ValueError(f"{what}: the data for device {device} (index {index}) has shape "
                         f"{piece.shape}; the sharding needs {want} (global shape "
                         f"{tuple(shape)})")


def shards_to_array(shape, sharding, piece_for, dtype=None, weak_type: bool = False,
                    what: str = "make_array_from_callback", into=None) -> Array:
    """An Array of global `shape` laid out by `sharding`, where `piece_for(device, index)`
    gives the host data of this process's devices' shards (called once per device).
    `into`: a host buffer of that shape and dtype to hold the value in one process (a
    donated argument's), used when no piece reads from it."""
    shape = tuple(int(n) for n in shape)
    indices = sharding.devices_indices_map(shape)  # checks divisibility (JAX's ValueError)
    me = transport.process_index()
    local = {d: index for d, index in indices.items() if d.process_index == me}
    pieces = {}
    for device, index in local.items():
        piece = np.asarray(piece_for(device, index))
        _check_piece(piece, index, shape, device, what)
        pieces[device] = piece
    if dtype is None:
        if not pieces:
            raise ValueError(f"{what}: this process holds no device of {sharding}; pass dtype")
        dtype = next(iter(pieces.values())).dtype
    dtype = dtypes.canonicalize_dtype(dtype)
    if len(local) == len(indices):  # one process: the global value in one host buffer
        if (into is not None and into.shape == shape and into.dtype == dtype
                and not any(np.may_share_memory(p, into) for p in pieces.values())):
            value = into
        else:
            value = np.empty(shape, dtype)
        for device, index in reversed(local.items()):  # replicas: the first device's
            value[index] = pieces[device]
        if isinstance(sharding, NamedSharding):
            return sharded(value, sharding, weak_type)
        return _put_on_device(value, next(iter(sharding.device_set)))
    shards = {d: np.array(p, dtype=dtype, order="C") for d, p in pieces.items()}
    # Committed (as in JAX), which also keeps it off jit's fast path for host arrays.
    out = Array(ProcessShards(shape, dtype, shards, sharding.is_fully_replicated), weak_type,
                committed=True)
    out._sharding = sharding
    return out


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """An Array of global `shape` laid out by `sharding` (jax.make_array_from_callback):
    each of this process's shards is `data_callback(index)`, index being the shard's tuple
    of slices into the global array. Over a mesh spanning processes the result is a global
    Array holding only this process's shards."""
    return shards_to_array(shape, sharding, lambda device, index: data_callback(index), dtype)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """An Array of global `shape` laid out by `sharding` from one array per addressable
    device (jax.make_array_from_single_device_arrays): Arrays committed to distinct
    devices of the sharding go to their device; otherwise they are taken in the order of
    the sharding's addressable devices (mesh order)."""
    arrays = list(arrays)
    local = sharding.addressable_devices_indices_map(tuple(shape))
    if len(arrays) != len(local):
        raise ValueError(f"make_array_from_single_device_arrays: {len(arrays)} arrays for a "
                         f"sharding over {len(local)} addressable devices")
    placed = [a._device if isinstance(a, Array) and a._committed else None for a in arrays]
    if set(placed) == set(local) and len(set(placed)) == len(placed):
        by_device = dict(zip(placed, arrays, strict=True))
    else:
        by_device = dict(zip(local, arrays, strict=True))
    return shards_to_array(shape, sharding, lambda device, index: by_device[device], dtype,
                           what="make_array_from_single_device_arrays")


# --------------------------------------------------------------------- process-local data


class NonUniformShardingError(ValueError):
    """The processes' shards along a dimension overlap without being equal."""


def _process_index_and_count(sharding, dim: int, ndims: int) -> tuple[int, int]:
    """(this process's block, number of distinct process blocks) along `dim` (as JAX)."""
    if sharding.is_fully_addressable or sharding.is_fully_replicated:
        return 0, 1
    n = len(sharding.device_set)
    by_process = collections.defaultdict(set)
    for device, index in sharding.devices_indices_map((n,) * ndims).items():
        by_process[device.process_index].add((index[dim].start, index[dim].stop))
    every = set().union(*by_process.values())
    mine = frozenset(by_process[transport.process_index()])
    if any(len(s) != len(mine) for s in by_process.values()):
        raise NonUniformShardingError(f"{sharding} is non-uniform on dim={dim}: processes "
                                      "hold different numbers of slices")
    distinct = sorted({frozenset(s) for s in by_process.values()}, key=sorted)
    if sum(len(s) for s in distinct) != len(every):
        raise NonUniformShardingError(f"{sharding} is non-uniform on dim={dim}")
    return distinct.index(mine), len(distinct)


def local_to_global_shape(sharding, local_shape) -> tuple:
    """The global shape whose per-process part is `local_shape` (None in dimensions where
    the processes' parts are not uniform)."""
    out = []
    for dim, n in enumerate(local_shape):
        try:
            out.append(n * _process_index_and_count(sharding, dim, len(local_shape))[1])
        except NonUniformShardingError:
            out.append(None)
    return tuple(out)


def _from_process_local(data, sharding, global_shape):
    data = np.asarray(data)
    if global_shape is None:
        global_shape = local_to_global_shape(sharding, data.shape)
        if None in global_shape:
            raise ValueError("Unable to compute global_shape due to non-uniform sharding. "
                             f"Specify global shape directly. Partially computed "
                             f"global_shape={global_shape}.")
    global_shape = tuple(global_shape)
    if len(global_shape) != data.ndim:
        raise ValueError(f"make_array_from_process_local_data: global_shape {global_shape} "
                         f"has another rank than the local data (shape {data.shape})")
    local = sharding.addressable_devices_indices_map(global_shape)
    # Per dimension: the distinct starts of this process's shards, in order; shard k along
    # a dimension is block k of the local data (unless the local data is the full extent).
    starts = [sorted({index[d].start or 0 for index in local.values()})
              for d in range(data.ndim)]
    shard = _shape_of(next(iter(local.values())), global_shape)
    for d, (have, full) in enumerate(zip(data.shape, global_shape)):
        if have != full and have != len(starts[d]) * shard[d]:
            raise ValueError(
                "Invalid host data, each dimension should match either global or process "
                f"shape. In dimension {d}, the process data has {have} elements. Process "
                f"addresses {len(starts[d]) * shard[d]} elements and "
                f"global_shape={global_shape}.")

    def piece(device, index):
        where = []
        for d, s in enumerate(index):
            if data.shape[d] == global_shape[d]:
                where.append(s)
            else:
                k = starts[d].index(s.start or 0) * shard[d]
                where.append(slice(k, k + shard[d]))
        return data[tuple(where)]
    return shards_to_array(global_shape, sharding, piece, data.dtype,
                           what="make_array_from_process_local_data")


def _as_sharding(s):
    if isinstance(s, PartitionSpec):
        if not _mesh_stack:
            raise ValueError("make_array_from_process_local_data: a PartitionSpec needs a "
                             "mesh (`with mesh:`); pass a NamedSharding")
        return NamedSharding(_mesh_stack[-1], s)
    if not isinstance(s, Sharding):
        raise TypeError(f"make_array_from_process_local_data: expected a Sharding, got {s!r}")
    return s


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """A global Array from the data this process holds (jax.make_array_from_process_local
    _data): along each dimension `local_data` is either the full global extent or the
    concatenation, in order, of the distinct blocks this process's devices hold (so with
    data-parallel batches each process passes its own sub-batch). `global_shape` (default:
    inferred from the sharding) checks or chooses between the two. Pytrees of data take a
    sharding (and global shape) prefix. In a run of one process this is device_put."""
    leaves, tree = tree_util.tree_flatten(local_data)
    shardings = _prefix(sharding, local_data, lambda x: isinstance(x, (Sharding, PartitionSpec)))
    shapes = _prefix(global_shape, local_data, lambda x: x is None or isinstance(x, tuple))
    out = []
    for data, s, shape in zip(leaves, shardings, shapes, strict=True):
        s = _as_sharding(s)
        if transport.process_count() == 1 and s.is_fully_addressable:
            if shape is not None and tuple(shape) != np.shape(data):
                raise ValueError(
                    "When calling `make_array_from_process_local_data` on a single process, "
                    "global_shape should be None or equal to local_data.shape.Got "
                    f"global_shape={tuple(shape)} and local_data.shape={np.shape(data)}.")
            out.append(shards_to_array(np.shape(data), s,
                                       lambda device, index, d=data: np.asarray(d)[index],
                                       getattr(data, "dtype", None)))
        else:
            out.append(_from_process_local(data, s, shape))
    return tree_util.tree_unflatten(tree, out)


def _prefix(prefix, tree, is_leaf) -> list:
    leaves, treedef = tree_util.tree_flatten(prefix, is_leaf=is_leaf)
    subtrees = treedef.flatten_up_to(tree)
    return [leaf for leaf, sub in zip(leaves, subtrees, strict=True)
            for _ in tree_util.tree_leaves(sub)]


# --------------------------------------------------------------------- reading and running


def is_global(x) -> bool:
    """Whether x is an Array spread over the devices of several processes."""
    return type(getattr(x, "_buf", None)) is ProcessShards


def global_value(x) -> np.ndarray:
    """The whole value of an Array as a host array; for a global Array every process must
    call this (its shards travel between processes through the run's transport)."""
    buf = getattr(x, "_buf", None)
    if type(buf) is not ProcessShards:
        return np.asarray(x)
    if buf.replicated:
        return buf.value()
    run = transport.current()
    held: list = [[] for _ in range(run.process_count)]
    seen: list = [set() for _ in range(run.process_count)]
    for device, index in x.sharding.devices_indices_map(x.shape).items():
        p, key = device.process_index, _index_key(index)
        if key not in seen[p]:
            seen[p].add(key)
            held[p].append((device, index))
    out = np.empty(x.shape, x.dtype)
    mine = [buf.shards[d] for d, _ in held[run.process_index]]
    if len({len(h) for h in held}) == 1 and mine:  # the same number of blocks everywhere
        everyone = run.allgather(np.stack(mine))
    else:
        everyone = run.allgather_object(mine)
    for p, blocks in enumerate(held):
        for k, (_, index) in enumerate(blocks):
            out[index] = everyone[p][k]
    return out


def local_blocks(x, sharding, devices: list) -> list:
    """x's block on each of `devices` (this process's) when laid out by `sharding`: a
    global Array's own shards when it is laid out that way; else slices of its value
    (gathered from every process for a global Array: a collective)."""
    shape = np.shape(x)
    if is_global(x) and x.sharding == sharding:
        return [x._buf.shards[d] for d in devices]
    value = global_value(x)
    indices = sharding.devices_indices_map(shape)
    return [value[indices[d]] for d in devices]


def local_part(devices: list) -> list:
    """The devices of `devices` that belong to this process, in order."""
    me = transport.process_index()
    return [d for d in devices if d.process_index == me]


def run_on_mesh(backend, executable, devices: list, local_args: list) -> list:
    """Run an SPMD executable whose participant i runs on devices[i]: this process runs
    its own devices (`local_part(devices)`, `local_args` one argument list each) and the
    collectives reach the other processes' participants over the run's transport.
    Returns each local device's flat outputs."""
    local = local_part(devices)
    if len(local) == len(devices):
        return run_spmd(backend, executable, devices, local_args)
    position = {d: i for i, d in enumerate(devices)}
    ids = [position[d] for d in local]
    link = spmd_transport(ids, len(devices), transport.current(),
                          [d.process_index for d in devices])
    return run_spmd(backend, executable, local, local_args, link, ids, len(devices))


def output_array(outs: list, devices: list, k: int, shape, sharding, aval, what: str,
                 into=None):
    """Output `k` of run_on_mesh's results (`outs`, one list per device of `devices`) as
    an Array of global `shape` laid out by `sharding` (held in the host buffer `into`
    when given: a donated argument's, see shards_to_array)."""
    where = {d: i for i, d in enumerate(devices)}
    return shards_to_array(shape, sharding,
                           lambda device, index: placement.to_host(outs[where[device]][k]),
                           aval.dtype, aval.weak_type, what, into)


def mesh_local_to_global_shape(mesh, spec, shape) -> tuple:
    """The global shape of a host-local array of `shape` split over `mesh.local_mesh` as
    `spec` says (JAX's mesh_local_to_global)."""
    local = mesh.local_mesh.shape
    return tuple(n * math.prod(mesh.shape[a] // local[a] for a in spec.axis_names_of(d))
                 for d, n in enumerate(shape))


def mesh_global_to_local_shape(mesh, spec, shape) -> tuple:
    """The inverse of mesh_local_to_global_shape."""
    local = mesh.local_mesh.shape
    out = []
    for d, n in enumerate(shape):
        k = math.prod(mesh.shape[a] // local[a] for a in spec.axis_names_of(d))
        if n % k:
            raise ValueError(f"global_array_to_host_local_array: dimension {d} of shape "
                             f"{tuple(shape)} is not divisible by {k}, the number of "
                             f"processes {spec} splits it over")
        out.append(n // k)
    return tuple(out)



# --------------------------------------------------------------------- pmap of global Arrays


def pmap_local_size(x, axis, name: str) -> int:
    """The per-process size of a global Array's axis mapped by a multi-process pmap (the
    global size over the number of processes, as JAX's pmap treats global Arrays)."""
    size, procs = x.shape[axis], transport.process_count()
    if size % procs:
        raise ValueError(f"pmap: argument {name} is an Array spread over {procs} processes "
                         f"whose mapped axis {axis} has size {size} (shape {x.shape}), not a "
                         f"multiple of the process count. Hint: its mapped axis needs one "
                         "entry per device of every process")
    return size // procs


def pmap_blocks(x, axis, devices: list, axis_name: str, name: str) -> list:
    """The blocks of global Array `x` that this process's pmap `devices` take, as JAX's
    multi-process pmap passes a global Array laid out as pmap splits it: mapped along
    `axis` over every process's first len(devices) devices in process order, one entry
    per device (its shards are used in place); unmapped (`axis` None) when replicated.
    Any other layout raises JAX's ValueError."""
    n = len(devices)
    everyone = distributed.global_devices(devices[0].backend) or list(devices)
    grid = [d for p in range(transport.process_count())
            for d in [e for e in everyone if e.process_index == p][:n]]
    mesh = Mesh(np.array(grid, dtype=object), (axis_name,))
    spec = PartitionSpec() if axis is None else PartitionSpec(*([None] * axis + [axis_name]))
    want = NamedSharding(mesh, spec)
    shape = tuple(x.shape)
    fits = x.sharding.is_fully_replicated if axis is None else (
        shape[axis] == len(grid)
        and x.sharding.devices_indices_map(shape) == want.devices_indices_map(shape))
    if not fits:
        raise ValueError(
            f"pmap: argument {name} is an Array laid out otherwise than pmap splits it: the "
            f"sharding pmap needs does not match the sharding on the respective arg. Got "
            f"pmap sharding: {want}, arg sharding: {x.sharding} "
            f"for arg type: {np.dtype(x.dtype).name}[{','.join(map(str, shape))}]. Hint: an "
            "Array spread over several processes goes to pmap split along its mapped axis "
            "over every process's devices in process order (make_array_from_process_local_"
            "data with that sharding), or replicated for in_axes=None; or pass this "
            "process's part as a host-local array")
    if axis is None:
        return [x._buf.value()] * n
    pick = (slice(None),) * axis + (0,)
    return [x._buf.shards[d][pick] for d in devices]
