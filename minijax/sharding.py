"""Meshes, partition specs and shardings (jax.sharding): how an Array's elements are laid
out over devices.

- `Mesh(devices, axis_names)`: an n-d array of devices with a name per axis;
  `make_mesh(axis_shapes, axis_names)` builds one from the first devices.
- `PartitionSpec` (`P`): per array dimension, None (not split), a mesh axis name, or a tuple
  of names (split over their product, the first name major).
- `NamedSharding(mesh, spec)`, `SingleDeviceSharding(device)`: the sharding of an Array.
  `devices_indices_map(shape)` gives each device's index (a tuple of slices) into the global
  array; devices along mesh axes the spec does not name hold replicas.

On host backends a sharded Array keeps its global value in one host buffer and each shard is
a view of it (all CPU devices share the host's memory); `Array.addressable_shards` gives
per-device Arrays committed to their devices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from minijax import distributed
from minijax.backends import get_backend, transport
from minijax.backends.base import Device


class PartitionSpec(tuple):
    """`P('x', None, ('y', 'z'))`: how each array dimension is split over mesh axes."""

    def __new__(cls, *parts):
        for p in parts:
            if not (p is None or isinstance(p, (str, tuple)) or p is PartitionSpec.UNCONSTRAINED):
                raise TypeError(f"PartitionSpec entries are None, a mesh axis name or a tuple "
                                f"of names; got {p!r}")
        return super().__new__(cls, parts)

    def __repr__(self) -> str:
        return "PartitionSpec(" + ", ".join(repr(p) for p in self) + ")"

    def axis_names_of(self, dim: int) -> tuple:
        """The mesh axis names splitting array dimension `dim` (() when not split)."""
        if dim >= len(self) or self[dim] is None:
            return ()
        part = self[dim]
        return tuple(part) if isinstance(part, tuple) else (part,)

    def all_names(self) -> tuple:
        return tuple(n for d in range(len(self)) for n in self.axis_names_of(d))


PartitionSpec.UNCONSTRAINED = object()
P = PartitionSpec


class Mesh:
    """An n-d array of devices with named axes (`jax.sharding.Mesh`)."""

    def __init__(self, devices, axis_names):
        devices = np.asarray(devices, dtype=object)
        axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if devices.ndim != len(axis_names):
            raise ValueError(f"Mesh: devices.ndim == {devices.ndim} but got "
                             f"{len(axis_names)} axis names {axis_names}")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh: axis names must be unique, got {axis_names}")
        ids = [d.id for d in devices.flat]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Mesh: a device appears twice in {devices.tolist()}")
        self.devices = devices
        self.axis_names = axis_names

    @property
    def shape(self) -> dict:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    def flat_devices(self) -> list:
        return list(self.devices.flat)

    @property
    def is_multi_process(self) -> bool:
        """Whether the mesh holds devices of several processes."""
        return len({d.process_index for d in self.devices.flat}) > 1

    @property
    def local_devices(self) -> list:
        """This process's devices of the mesh, in mesh order."""
        me = transport.process_index()
        return [d for d in self.devices.flat if d.process_index == me]

    @property
    def local_mesh(self) -> Mesh:
        """The sub-mesh of this process's devices, with the same axis names (JAX's
        `Mesh.local_mesh`); they must form a sub-grid of the mesh (a box whose
        coordinates along each axis need not be contiguous)."""
        me = transport.process_index()
        mine = np.vectorize(lambda d: d.process_index == me, otypes=[bool])(self.devices)
        if not mine.all():
            if not mine.any():
                raise ValueError(f"Mesh.local_mesh: no device of {self!r} belongs to process "
                                 f"{me}")
            keep = [np.flatnonzero(mine.any(axis=tuple(a for a in range(mine.ndim) if a != k)))
                    for k in range(mine.ndim)]
            box = np.ix_(*keep)
            if not mine[box].all():
                raise ValueError("Devices connected to this process don't form a subcube of "
                                 f"the mesh {self!r} (device ids {self.device_ids.tolist()})")
            return Mesh(self.devices[box], self.axis_names)
        return self

    def __eq__(self, other) -> bool:
        return (isinstance(other, Mesh) and self.axis_names == other.axis_names
                and self.devices.shape == other.devices.shape
                and list(self.devices.flat) == list(other.devices.flat))

    def __hash__(self) -> int:
        return hash((self.axis_names, self.devices.shape, tuple(self.devices.flat)))

    def __enter__(self):
        _mesh_stack.append(self)
        return self

    def __exit__(self, *exc):
        _mesh_stack.pop()

    @property
    def abstract_mesh(self) -> AbstractMesh:
        """The device-free description of this mesh (axis names and sizes)."""
        return AbstractMesh(self.axis_sizes, self.axis_names)

    def __repr__(self) -> str:
        axes = ", ".join(f"'{n}': {s}" for n, s in zip(self.axis_names, self.devices.shape))
        return f"Mesh(axis_sizes=({axes}))"


_mesh_stack: list = []


class AbstractMesh:
    """A mesh's axis names and sizes without devices (`jax.sharding.AbstractMesh`)."""

    def __init__(self, axis_sizes, axis_names, axis_types=None):
        self.axis_sizes = tuple(int(s) for s in axis_sizes)
        self.axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh: {len(self.axis_sizes)} axis sizes "
                             f"{self.axis_sizes} but {len(self.axis_names)} axis names "
                             f"{self.axis_names}")
        self.axis_types = axis_types

    @property
    def shape(self) -> dict:
        return dict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes)

    @property
    def empty(self) -> bool:
        """True for the mesh of no axes (what `get_abstract_mesh` gives outside a mesh)."""
        return not self.axis_names

    def __eq__(self, other) -> bool:
        return isinstance(other, AbstractMesh) and self.shape_tuple == other.shape_tuple

    def __hash__(self) -> int:
        return hash(self.shape_tuple)

    def __repr__(self) -> str:
        axes = ", ".join(f"'{n}': {s}" for n, s in self.shape_tuple)
        return f"AbstractMesh({axes or '()'})"


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh set for the current context (`jax.sharding.get_abstract_mesh`).

    JAX sets it with `jax.set_mesh`, which minijax does not have; the legacy `with mesh:`
    context does not set it (in JAX neither), so this is always the empty mesh.
    """
    return AbstractMesh((), ())


def make_mesh(axis_shapes, axis_names, *, devices=None, axis_types=None) -> Mesh:
    """A Mesh of the first prod(axis_shapes) devices (jax.make_mesh); in a multi-process
    run (minijax.distributed) every process's devices, in process order."""
    axis_shapes = tuple(int(s) for s in axis_shapes)
    n = math.prod(axis_shapes)
    if devices is None:
        backend = get_backend()
        devices = distributed.global_devices(backend.name) or backend.devices()
    devices = list(devices)
    if n > len(devices):
        raise ValueError(f"make_mesh: a mesh of shape {axis_shapes} needs {n} devices, but "
                         f"only {len(devices)} exist; set MINIJAX_NUM_CPU_DEVICES (or XLA_FLAGS="
                         f"--xla_force_host_platform_device_count={n}) before first use")
    return Mesh(np.array(devices[:n], dtype=object).reshape(axis_shapes), axis_names)


class Sharding:
    """How an array of a given shape is laid out over devices."""

    @property
    def device_set(self) -> set:
        raise NotImplementedError

    def devices_indices_map(self, global_shape) -> dict:
        """device -> tuple of slices: the part of the global array each device holds."""
        raise NotImplementedError

    def shard_shape(self, global_shape) -> tuple:
        index = next(iter(self.devices_indices_map(global_shape).values()))
        return tuple(len(range(*s.indices(d))) for s, d in zip(index, global_shape))

    @property
    def is_fully_addressable(self) -> bool:
        """Whether every device belongs to this process (False for shardings over the
        devices of several processes, minijax.distributed)."""
        me = transport.process_index()
        return all(d.process_index == me for d in self.device_set)

    @property
    def addressable_devices(self) -> set:
        """The devices of this process."""
        me = transport.process_index()
        return {d for d in self.device_set if d.process_index == me}

    def addressable_devices_indices_map(self, global_shape) -> dict:
        """devices_indices_map restricted to this process's devices."""
        me = transport.process_index()
        return {d: index for d, index in self.devices_indices_map(global_shape).items()
                if d.process_index == me}

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array."""
        return len(self.device_set) == 1

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    def is_equivalent_to(self, other, ndim: int) -> bool:
        return self == other


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device: Device):
        self._device = device

    @property
    def device_set(self) -> set:
        return {self._device}

    def devices_indices_map(self, global_shape) -> dict:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def __eq__(self, other) -> bool:
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self) -> int:
        return hash(self._device)

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r})"


class NamedSharding(Sharding):
    """The array split over a mesh's named axes as `spec` says (jax.sharding.NamedSharding)."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec | None = None):
        spec = PartitionSpec() if spec is None else spec
        if not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec)
        for name in spec.all_names():
            if name not in mesh.axis_names:
                raise ValueError(f"NamedSharding: PartitionSpec {spec} names axis {name!r}, "
                                 f"which is not in the mesh's axes {mesh.axis_names}")
        names = spec.all_names()
        if len(set(names)) != len(names):
            raise ValueError(f"NamedSharding: PartitionSpec {spec} uses a mesh axis twice")
        self.mesh = mesh
        self.spec = spec
        self._indices: dict = {}     # global shape -> devices_indices_map (immutable inputs)

    @property
    def device_set(self) -> set:
        return set(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return all(self.mesh.shape[a] == 1 for a in self.spec.all_names())

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    def _check(self, global_shape) -> None:
        if len(self.spec) > len(global_shape):
            raise ValueError(f"NamedSharding: PartitionSpec {self.spec} has more entries than "
                             f"the array's rank {len(global_shape)} (shape {global_shape})")
        sizes = self.mesh.shape
        for d in range(len(global_shape)):
            n = math.prod(sizes[a] for a in self.spec.axis_names_of(d))
            if global_shape[d] % n:
                raise ValueError(f"One of device_put args was given the sharding of "
                                 f"{self}, which implies that the global size of its "
                                 f"dimension {d} should be divisible by {n}, but it is equal "
                                 f"to {global_shape[d]} (full shape: {tuple(global_shape)})")

    def devices_indices_map(self, global_shape) -> dict:
        key = tuple(int(n) for n in global_shape)
        cached = self._indices.get(key)
        if cached is None:
            cached = self._indices[key] = self._devices_indices_map(key)
        return dict(cached)

    def _devices_indices_map(self, global_shape) -> dict:
        self._check(global_shape)
        sizes = self.mesh.shape
        out = {}
        for coords in np.ndindex(*self.mesh.devices.shape):
            at = dict(zip(self.mesh.axis_names, coords))
            index = []
            for d, dim in enumerate(global_shape):
                names = self.spec.axis_names_of(d)
                k, n = 0, 1
                for name in names:
                    k, n = k * sizes[name] + at[name], n * sizes[name]
                block = dim // n
                index.append(slice(k * block, (k + 1) * block) if names else slice(None))
            out[self.mesh.devices[coords]] = tuple(index)
        return out

    def __eq__(self, other) -> bool:
        return (isinstance(other, NamedSharding) and other.mesh == self.mesh
                and _normalized(other.spec) == _normalized(self.spec))

    def __hash__(self) -> int:
        return hash((self.mesh, _normalized(self.spec)))

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


def _normalized(spec) -> tuple:
    parts = list(spec)
    while parts and parts[-1] is None:
        parts.pop()
    return tuple(parts)


@dataclass(frozen=True)
class Shard:
    """One device's part of an Array (`Array.addressable_shards`)."""

    device: Device
    index: tuple
    replica_id: int
    data: object


__all__ = ["AbstractMesh", "Mesh", "NamedSharding", "P", "PartitionSpec", "Shard", "Sharding",
           "SingleDeviceSharding", "get_abstract_mesh", "make_mesh"]
