"""A stand-in for `cuda.bindings.driver` on a machine without a GPU (tests only).

It implements the driver calls minijax's CUDA runtime makes, with cuda-python's calling
convention (a tuple whose first item is a CUresult): memory is host memory, copies are
memmoves, and cuLaunchKernel runs the launched kernel with the GPU emulator on the LLVM
module whose PTX was loaded (the test records it, see `FakeDriver.last_ir`). The kernel
arguments are read back from the `void**` array the runtime packs, as the driver would.
"""

from __future__ import annotations

import ctypes
import enum
import re

import numpy as np

from minijax.compiler.codegen.gpu.emulate import HostKernels


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_NOT_FOUND = 500


class CUdevice_attribute(enum.IntEnum):  # noqa: N801 - the driver's name
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


class CUstream_flags(enum.IntEnum):  # noqa: N801 - the driver's name
    CU_STREAM_NON_BLOCKING = 1


OK = CUresult.CUDA_SUCCESS


class FakeDriver:
    """The driver module's functions over host memory (see the module docstring)."""

    CUresult = CUresult
    CUdevice_attribute = CUdevice_attribute
    CUstream_flags = CUstream_flags

    def __init__(self, capacity: int = 1 << 30):
        self.capacity = capacity
        self.memory: dict[int, np.ndarray] = {}
        self.host: dict[int, np.ndarray] = {}
        self.modules: dict[int, HostKernels] = {}
        self.arity: dict[int, dict[str, int]] = {}
        self.last_ir: str | None = None
        self.images: list[bytes] = []
        self.calls: list[str] = []
        self.launches = 0

    def _log(self, name):
        self.calls.append(name)

    # ---------------------------------------------------------------- devices
    def cuInit(self, flags):  # noqa: N802
        return (OK,)

    def cuGetErrorName(self, err):  # noqa: N802
        return OK, CUresult(err).name.encode()

    def cuDeviceGetCount(self):  # noqa: N802
        return OK, 1

    def cuDeviceGet(self, ordinal):  # noqa: N802
        return OK, ordinal

    def cuDeviceGetName(self, length, dev):  # noqa: N802
        return OK, b"Fake H100 (emulated)\0\0"

    def cuDeviceGetAttribute(self, attr, dev):  # noqa: N802
        return OK, 9 if attr == CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR \
            else 0

    def cuDevicePrimaryCtxRetain(self, dev):  # noqa: N802
        return OK, object()

    def cuCtxSetCurrent(self, ctx):  # noqa: N802
        self._log("cuCtxSetCurrent")
        return (OK,)

    def cuStreamCreate(self, flags):  # noqa: N802
        assert isinstance(flags, int)
        return OK, 7

    def cuStreamSynchronize(self, stream):  # noqa: N802
        return (OK,)

    # ---------------------------------------------------------------- memory
    def cuMemAlloc(self, nbytes):  # noqa: N802
        used = sum(a.nbytes for a in self.memory.values())
        if used + nbytes > self.capacity:
            return CUresult.CUDA_ERROR_OUT_OF_MEMORY, 0
        arr = np.zeros(nbytes + 256, np.uint8)
        ptr = (arr.ctypes.data + 255) // 256 * 256
        self.memory[ptr] = arr
        return OK, ptr

    def cuMemFree(self, ptr):  # noqa: N802
        del self.memory[int(ptr)]
        return (OK,)

    def cuMemHostAlloc(self, nbytes, flags):  # noqa: N802
        arr = np.zeros(nbytes, np.uint8)
        self.host[arr.ctypes.data] = arr
        return OK, arr.ctypes.data

    def cuMemFreeHost(self, ptr):  # noqa: N802
        del self.host[int(ptr)]
        return (OK,)

    def _pinned(self, ptr) -> None:
        assert any(p <= ptr < p + a.nbytes for p, a in self.host.items()), \
            "host side of an async copy is not pinned memory"

    def cuMemcpyHtoDAsync(self, dst, src, nbytes, stream):  # noqa: N802
        self._pinned(src)
        ctypes.memmove(int(dst), int(src), nbytes)
        return (OK,)

    def cuMemcpyDtoHAsync(self, dst, src, nbytes, stream):  # noqa: N802
        self._pinned(dst)
        ctypes.memmove(int(dst), int(src), nbytes)
        return (OK,)

    def cuMemcpyDtoDAsync(self, dst, src, nbytes, stream):  # noqa: N802
        ctypes.memmove(int(dst), int(src), nbytes)
        return (OK,)

    # ---------------------------------------------------------------- events
    def cuEventCreate(self, flags):  # noqa: N802
        return OK, object()

    def cuEventRecord(self, event, stream):  # noqa: N802
        return (OK,)

    def cuEventSynchronize(self, event):  # noqa: N802
        return (OK,)

    def cuEventElapsedTime(self, start, end):  # noqa: N802
        return OK, 0.5

    def cuEventDestroy(self, event):  # noqa: N802
        self.destroyed_events = getattr(self, "destroyed_events", 0) + 1
        return (OK,)

    # ---------------------------------------------------------------- kernels
    def cuModuleLoadData(self, image):  # noqa: N802
        assert isinstance(image, bytes) and (image.startswith(b"\x7fELF")
                                              or b".entry" in image), "not PTX or a cubin"
        self.images.append(image)
        handle = len(self.modules) + 1
        self.modules[handle] = HostKernels(self.last_ir)
        self.arity[handle] = {m.group(1): m.group(2).count("%") for m in re.finditer(
            r'^define void @"?([^"(]+)"?\((.*)$', self.last_ir, re.M)}
        return OK, handle

    def cuModuleGetFunction(self, module, name):  # noqa: N802
        name = name.decode()
        if name not in self.arity[module]:
            return CUresult.CUDA_ERROR_NOT_FOUND, None
        return OK, (module, name)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params,  # noqa: N802
                       extra):
        module, name = f
        assert (gy, gz, by, bz, shared, extra) == (1, 1, 1, 1, 0, 0)
        n = self.arity[module][name]
        slots = (ctypes.c_void_p * n).from_address(params)
        ptrs = [ctypes.c_uint64.from_address(slots[k]).value for k in range(n)]
        self.launches += 1
        self.modules[module].launch(name, min(gx, 3), bx, ptrs)
        return (OK,)


__all__ = ["FakeDriver"]
