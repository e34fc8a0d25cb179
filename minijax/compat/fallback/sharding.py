"""``jax.sharding`` for the import hook while minijax has no ``minijax.sharding`` module.

Single-device meaning only: the names that libraries import and use in annotations and
``isinstance`` checks. The hook prefers ``minijax.sharding`` as soon as it exists.
"""

from __future__ import annotations

import enum

import numpy as np

from minijax.devices import devices as _devices

__all__ = ["AbstractMesh", "AxisType", "Mesh", "NamedSharding", "PartitionSpec",
           "PmapSharding", "PositionalSharding", "Sharding", "SingleDeviceSharding",
           "get_abstract_mesh"]


class AxisType(enum.Enum):
    """How a mesh axis is partitioned (JAX's names)."""
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()


class PartitionSpec(tuple):
    """How each array dimension maps to mesh axes (``None``: replicated)."""

    def __new__(cls, *partitions):
        return super().__new__(cls, partitions)

    def __repr__(self):
        return f"PartitionSpec{tuple.__repr__(self)}"


class Sharding:
    """Base class: how an array is laid out over devices."""

    @property
    def device_set(self) -> set:
        raise NotImplementedError

    @property
    def is_fully_replicated(self) -> bool:
        return True


class SingleDeviceSharding(Sharding):
    """All of the array on one device."""

    def __init__(self, device, *, memory_kind=None):
        self._device = device
        self.memory_kind = memory_kind

    @property
    def device_set(self) -> set:
        return {self._device}

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self):
        return hash(self._device)

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r})"


class AbstractMesh:
    """A mesh's axis names and sizes, without devices."""

    def __init__(self, axis_sizes=(), axis_names=(), *, axis_types=None):
        self.axis_sizes = tuple(axis_sizes)
        self.axis_names = tuple(axis_names)
        self.axis_types = axis_types

    @property
    def shape(self) -> dict:
        return dict(zip(self.axis_names, self.axis_sizes))

    @property
    def empty(self) -> bool:
        return not self.axis_names

    @property
    def size(self) -> int:
        return int(np.prod(self.axis_sizes, dtype=np.int64))


class Mesh(AbstractMesh):
    """Devices in an n-d grid with named axes."""

    def __init__(self, devices, axis_names, *, axis_types=None):
        self.devices = np.asarray(devices, dtype=object)
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        super().__init__(self.devices.shape, names, axis_types=axis_types)

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return AbstractMesh(self.axis_sizes, self.axis_names, axis_types=self.axis_types)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class NamedSharding(Sharding):
    """An array laid out over ``mesh`` as ``spec`` says."""

    def __init__(self, mesh, spec, *, memory_kind=None):
        self.mesh, self.spec, self.memory_kind = mesh, spec, memory_kind

    @property
    def device_set(self) -> set:
        return set(self.mesh.devices.flat)


class PositionalSharding(Sharding):
    """Deprecated in JAX; kept so that imports of it work."""

    def __init__(self, devices):
        self._devices = np.asarray(devices, dtype=object)

    @property
    def device_set(self) -> set:
        return set(self._devices.flat)


class PmapSharding(Sharding):
    """The layout of a pmap output (one shard per device)."""

    def __init__(self, devices, sharding_spec=None):
        self._devices = np.asarray(devices, dtype=object)
        self.sharding_spec = sharding_spec

    @property
    def device_set(self) -> set:
        return set(self._devices.flat)


def get_abstract_mesh() -> AbstractMesh:
    """The mesh in context: none is ever set here, so an empty one."""
    return AbstractMesh()


def _default_device():
    return _devices()[0]
