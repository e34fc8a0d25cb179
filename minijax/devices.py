"""Devices, processes and host transfer: devices(), local_devices(), device_count(),
process_index(), device_put, device_get, block_until_ready."""

from __future__ import annotations

import numpy as np

from minijax import distributed, tree_util
from minijax.array import Array
from minijax.backends import get_backend, transport
from minijax.dispatch import device_put as _device_put_leaf


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
        raise ValueError(f"local_devices: process_index={process} is not a process of this "
                         f"run (it has {transport.process_count()})")
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
    """Place each leaf of a pytree on a device as an Array."""
    return tree_util.tree_map(lambda leaf: _device_put_leaf(leaf, device), x)


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
