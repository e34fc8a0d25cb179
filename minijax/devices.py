"""Devices, processes and host transfer: devices(), local_devices(), device_count(),
process_index(), device_put (to a device or a sharding), device_get, block_until_ready."""

from __future__ import annotations

import gc

import numpy as np

from minijax import dispatch, distributed, global_arrays, tree_util
from minijax.api_sharded_jit import ShardedJit
from minijax.array import Array, sharded
from minijax.backends import get_backend, transport
from minijax.dispatch import device_put as _device_put_leaf
from minijax.sharding import Sharding, SingleDeviceSharding


def devices(backend: str | None = None) -> list:
    """The devices of a backend (the default one: cuda if present, else cpu); in a
    multi-process run (minijax.distributed.initialize) every process's devices."""
    found = get_backend(backend)
    everyone = distributed.global_devices(found.name)
    return list(everyone) if everyone is not None else list(found.devices())


def local_devices(process_index: int | None = None, backend: str | None = None,
                  host_id: int | None = None) -> list:
    """The devices of process `process_index` (default: this process)."""
    process = host_id if process_index is None else process_index
    if process is None or process == transport.process_index():
        return list(get_backend(backend).devices())
    if not 0 <= process < transport.process_count():
        raise ValueError(f"Unknown process_index {process} (local_devices: this run has "
                         f"{transport.process_count()} processes)")
    return [d for d in devices(backend) if d.process_index == process]


def device_count(backend: str | None = None) -> int:
    """The number of devices of every process."""
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    """The number of this process's devices."""
    return len(get_backend(backend).devices())


def process_index(backend: str | None = None) -> int:
    """This process's index in a multi-process run (0 without distributed.initialize)."""
    return transport.process_index()


def process_count(backend: str | None = None) -> int:
    """The number of processes in the run (1 without distributed.initialize)."""
    return transport.process_count()


def default_backend() -> str:
    """The platform name of the default backend ("cpu", "cuda" or "interpreter")."""
    return get_backend().platform


def device_put(x, device=None):
    """Place each leaf of a pytree on a device, or lay it out as a Sharding says (a
    NamedSharding splits it over a mesh: an Array whose shards live on its devices)."""
    if isinstance(device, SingleDeviceSharding):
        device = next(iter(device.device_set))
    if isinstance(device, Sharding):
        return tree_util.tree_map(lambda leaf: _put_sharded(leaf, device), x)
    return tree_util.tree_map(lambda leaf: _device_put_leaf(leaf, device), x)


def _put_sharded(leaf, sharding):
    if global_arrays.is_global(leaf) or not sharding.is_fully_addressable:
        # Over several processes: every process passes the same global value (or a global
        # Array, resharded through the processes).
        value = global_arrays.global_value(leaf)
        weak = getattr(leaf, "weak_type", False)
        return global_arrays.shards_to_array(value.shape, sharding,
                                             lambda device, index: value[index],
                                             value.dtype, weak, "device_put")
    value = _device_put_leaf(leaf, None)
    sharding.devices_indices_map(value.shape)  # checks divisibility (JAX's ValueError)
    return sharded(np.asarray(value), sharding, value.weak_type)


def device_get(x):
    """Copy each Array leaf of a pytree to the host as a NumPy array."""
    return tree_util.tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array)
                              else leaf, x)


def block_until_ready(x):
    """Wait for every Array in a pytree to be computed; returns x."""
    for leaf in tree_util.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


# ---------------------------------------------------------------------- eager operations

_eager_programs: dict = {}


def _apply_over_processes(primitive, args, params):
    """An eager primitive on global Arrays: the one-op program partitioned as the
    arguments' shardings say (as JAX runs eager ops on global Arrays), cached per
    primitive and parameters."""
    try:
        key = (primitive, tuple(params.items()))
        hash(key)
    except TypeError:
        key = None
    program = _eager_programs.get(key) if key is not None else None
    if program is None:
        program = ShardedJit(lambda *a: primitive.bind(*a, **params), None, None, None)
        if key is not None:
            _eager_programs[key] = program
    return program(*args)


dispatch.over_processes = _apply_over_processes


def live_arrays(platform: str | None = None) -> list:
    """The Arrays alive in this process (not deleted), optionally only those on devices of
    `platform` ("cpu", "gpu"); as jax.live_arrays. Found by walking the garbage collector's
    objects, so it costs time proportional to the number of Python objects alive."""
    out = []
    for obj in gc.get_objects():
        if isinstance(obj, Array) and not obj.is_deleted():
            if platform is None or any(d.platform == platform for d in obj.devices()):
                out.append(obj)
    return out

