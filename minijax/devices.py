"""Devices and host transfer: devices(), device_put, device_get, block_until_ready."""

from __future__ import annotations

import numpy as np

from minijax import tree_util
from minijax.array import Array
from minijax.backends import get_backend
from minijax.dispatch import device_put as _device_put_leaf


def devices(backend: str | None = None) -> list:
    """The devices of a backend (the default one: cuda if present, else cpu)."""
    return list(get_backend(backend).devices())


local_devices = devices


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
