"""Python array API pieces of jax.numpy: `__array_namespace_info__()`, `from_dlpack`,
`unstack`, and the Array methods `to_device`, `__dlpack__`, `__dlpack_device__`.

DLPack goes through NumPy's implementation on the host: an Array exports its host buffer
(device arrays export a host copy, so `__dlpack_device__` is always the CPU), and
`from_dlpack` accepts any producer NumPy accepts (NumPy arrays, other DLPack producers).
"""

from __future__ import annotations

import enum

import numpy as np

from minijax import dispatch, dtypes, placement
from minijax.array import Array
from minijax.backends.base import Device
from minijax.numpy import util
from minijax.numpy.util import check_arraylike, to_array

__all__ = ["from_dlpack", "unstack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device type codes (the ones minijax exports)."""
    kDLCPU = 1


def _device_of(device):
    """A Device from a Device or a single-device sharding (anything with one device in
    `device_set`)."""
    if device is None or isinstance(device, Device):
        return device
    devices = getattr(device, "device_set", None)
    if devices is not None and len(devices) == 1:
        return next(iter(devices))
    raise ValueError(f"expected a Device (from minijax.devices()) or a single-device "
                     f"sharding, got {device!r}")


def put_on(x, device):
    """`x` placed on `device` (None: left where it is)."""
    device = _device_of(device)
    return x if device is None else dispatch.device_put(x, device)


def _to_device(self, device, *, stream=None):
    """This array on `device` (a Device or a single-device sharding), as jax.Array.to_device."""
    if stream is not None:
        raise NotImplementedError("Array.to_device: stream= is not supported in minijax")
    return put_on(self, device)


def _dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """Export this array through DLPack (a capsule of its host buffer)."""
    if dl_device is not None and tuple(dl_device) != (DLDeviceType.kDLCPU, 0):
        raise BufferError(f"Array.__dlpack__: minijax exports to the CPU only, got "
                          f"dl_device={dl_device}")
    value = np.asarray(self._value)
    kwargs = {"stream": stream, "max_version": max_version, "copy": copy}
    if not value.flags.writeable and (max_version is None or max_version[0] < 1):
        # Old DLPack versions cannot mark a buffer read-only: export a copy.
        value = value.copy()
    return value.__dlpack__(**kwargs)


def _dlpack_device(self):
    """(device type, device id) of the exported buffer: always the host CPU."""
    return DLDeviceType.kDLCPU, 0


Array.to_device = _to_device
Array.__dlpack__ = _dlpack
Array.__dlpack_device__ = _dlpack_device


def from_dlpack(x, /, *, device=None, copy=None):
    """An Array from a DLPack producer (an object with `__dlpack__`), as jnp.from_dlpack;
    `device` places the result, `copy=False` is honoured on the host."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__, got "
                        f"{type(x).__name__}")
    if isinstance(x, Array):
        return put_on(x, device)
    value = np.from_dlpack(x, copy=copy)
    dtype = dtypes.canonicalize_dtype(value.dtype)
    if dtype != value.dtype:
        value = value.astype(dtype)
    return put_on(Array(np.asarray(value)), device)


def unstack(x, /, *, axis: int = 0):
    """The slices of `x` along `axis`, as a tuple (array API unstack)."""
    check_arraylike("unstack", x)
    x = to_array(x)
    ndim = len(x.shape)
    if ndim == 0:
        raise ValueError("unstack requires an array with at least one dimension, got a "
                         "0-d array")
    axis = util.canonicalize_axis(axis, ndim)
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(x.shape[axis]))


_KINDS = {
    "bool": ("b",), "signed integer": ("i",), "unsigned integer": ("u",),
    "integral": ("i", "u"), "real floating": ("f",), "complex floating": ("c",),
    "numeric": ("i", "u", "f", "c"),
}
_ALL_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "float32", "float64", "complex64", "complex128")


class ArrayNamespaceInfo:
    """The array API's inspection object (what `jnp.__array_namespace_info__()` returns)."""

    def capabilities(self):
        """What the namespace supports: no data-dependent shapes (as JAX)."""
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 64}

    def default_device(self):
        """None: arrays go to the default device (as JAX)."""
        return None

    def devices(self):
        """The devices arrays can be placed on."""
        backend = placement.backend_of(placement.default_device())
        return [None, *backend.devices()]

    def default_dtypes(self, *, device=None):
        """The default dtypes, 64-bit when jax_enable_x64 is on."""
        def canon(t):
            return np.dtype(dtypes.canonicalize_dtype(t))
        return {"real floating": canon(np.float64), "complex floating": canon(np.complex128),
                "integral": canon(np.int64), "indexing": canon(np.int64)}

    def dtypes(self, *, device=None, kind=None):
        """The dtypes available (64-bit ones only with jax_enable_x64), filtered by `kind`
        (a name such as 'integral' or 'real floating', or a tuple of names)."""
        available = {}
        for name in _ALL_DTYPES:
            dt = np.dtype(name)
            if np.dtype(dtypes.canonicalize_dtype(dt)) == dt:
                available[name] = dt
        if kind is None:
            return available
        kinds = kind if isinstance(kind, tuple) else (kind,)
        letters = set()
        for k in kinds:
            if k not in _KINDS:
                raise ValueError(f"__array_namespace_info__().dtypes: unknown kind {k!r}; "
                                 f"expected one of {sorted(_KINDS)}")
            letters.update(_KINDS[k])
        return {n: dt for n, dt in available.items() if dt.kind in letters}


def __array_namespace_info__():  # noqa: N807 (the array API's name)
    """The array API's namespace inspection object."""
    return ArrayNamespaceInfo()
