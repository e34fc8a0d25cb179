"""Where arrays live: the default device, device lookup, buffer transfers, placement rules.

An Array holds a buffer and a device (minijax.backends.base). `Array._device is None`
means "an uncommitted NumPy buffer on the host default device": the common eager case on
host backends, which costs nothing to create. Placement follows JAX:

- arrays made by `device_put(x, device)` (or computed from such arrays) are *committed*;
- an operation on committed arrays runs on their device, and raises JAX's ValueError
  ("Received incompatible devices ...") when they are committed to different devices;
- uncommitted arrays follow: they are moved to the committed arguments' device, or the
  computation runs on the default device.
"""

from __future__ import annotations

import numpy as np

from minijax.backends import available_backends, get_backend
from minijax.backends.base import Device
from minijax.config import config

# [default device, its backend, whether that backend keeps host NumPy buffers]; rebuilt
# when the backend options change.
_default: list = []


def _reset(_value=None) -> None:
    _default.clear()


for _option in ("minijax_backend", "jax_platforms"):
    config.on_change(_option, _reset)


def _default_state() -> list:
    if not _default:
        backend = get_backend()
        _default.extend([backend.devices()[0], backend, backend.host_memory])
    return _default


def default_device() -> Device:
    """The device new arrays and computations on uncommitted arrays use."""
    return (_default or _default_state())[0]


def default_is_host() -> bool:
    """True when the default backend keeps arrays in host NumPy buffers."""
    return (_default or _default_state())[2]


def backend_of(device: Device):
    """The Backend owning `device`."""
    return get_backend(device.backend)


def host_device() -> Device:
    """The device of an uncommitted NumPy-buffer Array (`Array._device is None`)."""
    state = _default or _default_state()
    if state[2]:
        return state[0]
    return get_backend("cpu" if _has_cpu() else "interpreter").devices()[0]


def _has_cpu() -> bool:
    return "cpu" in available_backends()


def is_host_buffer(buffer) -> bool:
    return type(buffer) is np.ndarray


def to_host(buffer) -> np.ndarray:
    """The host contents of a buffer (the array itself for host buffers)."""
    if type(buffer) is np.ndarray:
        return buffer
    if isinstance(buffer, np.generic):  # a 0-d result some executables give as a scalar
        return np.asarray(buffer)
    return buffer.to_host()


def transfer(buffer, src: Device | None, dst: Device):
    """`buffer` (on `src`; None: a host NumPy buffer) as a buffer on `dst`."""
    if src == dst:
        return buffer
    dst_backend = backend_of(dst)
    if src is not None and src.backend == dst.backend:
        return dst_backend.copy_buffer(buffer, dst)
    host = to_host(buffer)
    if dst_backend.host_memory:
        return host
    if not host.flags.c_contiguous:  # (np.ascontiguousarray would make 0-d arrays 1-d)
        host = np.array(host, order="C")
    return dst_backend.buffer_from_host(host, dst)


def incompatible_devices_error(what: str, placed: list) -> ValueError:
    """JAX's error for arguments committed to different devices.

    `placed` lists (argument name, aval, device) of the committed arguments."""
    (n0, a0, d0), = placed[:1]
    other = next((p for p in placed if p[2] != d0), placed[-1])
    n1, a1, d1 = other

    def one(name, aval, dev):
        shape = f"{np.dtype(aval.dtype).name}[{','.join(map(str, aval.shape))}]"
        return (f"argument {name} of {what} with shape {shape} and with device "
                f"ids [{dev.id}] on platform {dev.platform.upper()}")
    return ValueError(f"Received incompatible devices for jitted computation. Got "
                      f"{one(n0, a0, d0)} and {one(n1, a1, d1)}")


def device_of(x) -> Device | None:
    """The device of an Array-like x; None for host values and uncommitted host arrays."""
    return getattr(x, "_device", None)
