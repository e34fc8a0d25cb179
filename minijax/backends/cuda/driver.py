"""CUDA driver access without a GPU requirement: discovery and error checking.

`cuda_devices()` returns [] without a driver, without cuda-python, or when cuInit fails;
it checks with a plain dlopen of libcuda first, so a machine without a driver never
imports cuda-python. Nothing here imports llvmlite either.
"""

from __future__ import annotations

import ctypes
import threading


class CudaError(RuntimeError):
    """A CUDA driver call failed (the message names the call and the error)."""


_LIBCUDA = ("libcuda.so.1", "libcuda.so", "nvcuda.dll", "libcuda.dylib")


def driver_present() -> bool:
    """True when the CUDA driver library can be loaded (no cuda-python import)."""
    for name in _LIBCUDA:
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def driver():
    """The cuda.bindings.driver module (imported on first use)."""
    from cuda.bindings import driver  # noqa: PLC0415 - optional dependency, loaded lazily
    return driver


def check(result, call: str = "CUDA call"):
    """Unpack a cuda-python result tuple, raising CudaError on a non-success status."""
    cu = driver()
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        raise CudaError(f"{call} failed: {name.decode() if name else err}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


_devices_lock = threading.Lock()
_device_list: list | None = None


def cuda_devices() -> list[tuple[int, str, tuple[int, int]]]:
    """(ordinal, name, compute capability) of each usable GPU; [] when there is none."""
    global _device_list
    with _devices_lock:
        if _device_list is None:
            _device_list = _discover()
        return list(_device_list)


def _discover() -> list:
    if not driver_present():
        return []
    try:
        cu = driver()
        check(cu.cuInit(0), "cuInit")
        out = []
        for k in range(check(cu.cuDeviceGetCount(), "cuDeviceGetCount")):
            dev = check(cu.cuDeviceGet(k), "cuDeviceGet")
            name = check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
            attr = cu.CUdevice_attribute
            major = check(cu.cuDeviceGetAttribute(
                attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
            minor = check(cu.cuDeviceGetAttribute(
                attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
            out.append((k, name.split(b"\0")[0].decode(errors="replace"), (major, minor)))
        return out
    except Exception:  # noqa: BLE001 - no usable driver (or cuda-python) means no GPU
        return []


__all__ = ["CudaError", "check", "cuda_devices", "driver", "driver_present"]
