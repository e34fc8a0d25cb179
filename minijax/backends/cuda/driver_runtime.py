"""The CUDA device runtime on cuda-python's driver API (`cuda.bindings.driver`).

- per device: its primary context, one non-blocking stream, a caching allocator
  (allocator.py) over cuMemAlloc/cuMemFree, pinned staging buffers for host<->device
  copies (the copy goes through a page-locked buffer reused across calls), events;
- kernels: a module's PTX comes from the per-arch disk cache (compiler/codegen/gpu/ptx.py);
  with ptxas installed it is assembled to a cubin (cached too), else the driver JIT-compiles
  the PTX (cuModuleLoadData); launches are cuLaunchKernel on the device's stream;
- dot: cuBLAS (cublas.py), loaded lazily.
Work is queued on the stream; `synchronize()` waits for it (downloads synchronize).
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from minijax.backends.cuda.allocator import CachingAllocator
from minijax.backends.cuda.cublas import Cublas
from minijax.backends.cuda.device_runtime import DeviceBuffer, DeviceRuntime, GemmSpec
from minijax.backends.cuda.driver import CudaError, check, cuda_devices, driver
from minijax.compiler.codegen.gpu.ptx import PtxCache, arch_for

_STAGING_MIN = 1 << 20


class _LoadedModule:
    def __init__(self, runtime, module, names):
        cu = driver()
        self.runtime, self.module = runtime, module
        self.functions = {n: check(cu.cuModuleGetFunction(module, n.encode()),
                                   f"cuModuleGetFunction({n})") for n in dict.fromkeys(names)}

    def launch(self, name: str, grid: int, block: int, ptrs: list[int]) -> None:
        cu = driver()
        self.runtime._bind()
        values = (ctypes.c_uint64 * len(ptrs))(*ptrs)
        params = (ctypes.c_void_p * len(ptrs))(
            *[ctypes.addressof(values) + 8 * k for k in range(len(ptrs))])
        check(cu.cuLaunchKernel(self.functions[name], grid, 1, 1, block, 1, 1, 0,
                                self.runtime.stream, ctypes.addressof(params), 0),
              f"cuLaunchKernel({name}, grid={grid}, block={block})")


class CudaRuntime(DeviceRuntime):
    """One GPU through the driver API (see the module docstring)."""

    def __init__(self, ordinal: int = 0):
        cu = driver()
        devices = {d[0]: d for d in cuda_devices()}
        if ordinal not in devices:
            raise CudaError(f"no CUDA device {ordinal} (found {sorted(devices)})")
        _, self.name, (major, minor) = devices[ordinal]
        self.arch = arch_for(major, minor)
        self._ptx_cache = PtxCache()
        self.ordinal = ordinal
        self.device = check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
        self.context = check(cu.cuDevicePrimaryCtxRetain(self.device),
                             "cuDevicePrimaryCtxRetain")
        self._tls = threading.local()
        self._bind()
        self.stream = check(cu.cuStreamCreate(
            int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)), "cuStreamCreate")
        self.allocator = CachingAllocator(self._raw_alloc, self._raw_free, _is_oom,
                                          device=f"cuda:{ordinal} ({self.name})")
        self._staging_ptr, self._staging_size = 0, 0
        self._lock = threading.RLock()
        self._cublas = None

    def _bind(self) -> None:
        """Make the device's context current in this thread (once per thread)."""
        if getattr(self._tls, "bound", False):
            return
        check(driver().cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        self._tls.bound = True

    # ------------------------------------------------------------------ memory
    def _raw_alloc(self, nbytes: int) -> int:
        self._bind()
        return int(check(driver().cuMemAlloc(nbytes), f"cuMemAlloc({nbytes})"))

    def _raw_free(self, ptr: int) -> None:
        check(driver().cuMemFree(ptr), "cuMemFree")

    def _staging(self, nbytes: int) -> int:
        """A pinned host buffer of at least `nbytes` (grown by doubling, reused)."""
        if nbytes > self._staging_size:
            cu = driver()
            self.synchronize()
            if self._staging_ptr:
                check(cu.cuMemFreeHost(self._staging_ptr), "cuMemFreeHost")
            size = max(_STAGING_MIN, 1 << (nbytes - 1).bit_length())
            self._staging_ptr = int(check(cu.cuMemHostAlloc(size, 0), "cuMemHostAlloc"))
            self._staging_size = size
        return self._staging_ptr

    def _staged(self, nbytes: int) -> np.ndarray:
        raw = (ctypes.c_uint8 * nbytes).from_address(self._staging(nbytes))
        return np.frombuffer(raw, np.uint8, nbytes)

    def upload(self, array: np.ndarray, label: str = "") -> DeviceBuffer:
        array = np.asarray(array, order="C")
        buf = self.allocate(array.nbytes, label)
        if array.nbytes:
            cu = driver()
            self._bind()
            with self._lock:
                self.synchronize()           # the staging buffer may still be in flight
                self._staged(array.nbytes)[:] = array.reshape(-1).view(np.uint8)
                check(cu.cuMemcpyHtoDAsync(buf.ptr, self._staging_ptr, array.nbytes,
                                           self.stream), "cuMemcpyHtoDAsync")
        return buf

    def download(self, buf: DeviceBuffer, shape, dtype) -> np.ndarray:
        out = np.empty(shape, dtype)
        if out.nbytes:
            cu = driver()
            self._bind()
            with self._lock:
                staged = self._staged(out.nbytes)
                check(cu.cuMemcpyDtoHAsync(self._staging_ptr, buf.ptr, out.nbytes,
                                           self.stream), "cuMemcpyDtoHAsync")
                self.synchronize()
                out.reshape(-1).view(np.uint8)[:] = staged
        return out

    def copy(self, dst: DeviceBuffer, src: DeviceBuffer, nbytes: int) -> None:
        """Device-to-device copy on the stream."""
        self._bind()
        check(driver().cuMemcpyDtoDAsync(dst.ptr, src.ptr, nbytes, self.stream),
              "cuMemcpyDtoDAsync")

    def synchronize(self) -> None:
        self._bind()
        check(driver().cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    # ------------------------------------------------------------------ timing
    def event(self):
        """A recorded event on the stream (pair two with `elapsed_ms`)."""
        cu = driver()
        ev = check(cu.cuEventCreate(0), "cuEventCreate")
        check(cu.cuEventRecord(ev, self.stream), "cuEventRecord")
        return ev

    def elapsed_ms(self, start, end) -> float:
        cu = driver()
        check(cu.cuEventSynchronize(end), "cuEventSynchronize")
        return float(check(cu.cuEventElapsedTime(start, end), "cuEventElapsedTime"))

    timer = "CUDA events"

    def start_timer(self):
        """An event recorded on the stream before the work to time (MINIJAX_DEBUG=2)."""
        self._bind()
        return self.event()

    def stop_timer(self, start) -> float:
        """GPU seconds between `start` and an event recorded now (both events destroyed)."""
        end = self.event()
        try:
            return self.elapsed_ms(start, end) / 1e3
        finally:
            for ev in (start, end):
                check(driver().cuEventDestroy(ev), "cuEventDestroy")

    # ------------------------------------------------------------------ kernels
    def load_kernels(self, ir_text: str, names: list[str]):
        cu = driver()
        self._bind()
        key, ptx = self._ptx_cache.ptx(ir_text, self.arch)
        image = self._ptx_cache.cubin(key, ptx, self.arch)
        data = image if image is not None else ptx.encode() + b"\0"
        module = check(cu.cuModuleLoadData(data), "cuModuleLoadData")
        return _LoadedModule(self, module, names)

    def gemm(self, spec: GemmSpec, a: DeviceBuffer, b: DeviceBuffer, c: DeviceBuffer) -> bool:
        if self._cublas is None:
            self._cublas = Cublas.create(self.stream)
        if not self._cublas:
            return False
        return self._cublas.gemm(spec, a.ptr, b.ptr, c.ptr)


def _is_oom(exc: BaseException) -> bool:
    return isinstance(exc, CudaError) and "OUT_OF_MEMORY" in str(exc)


__all__ = ["CudaRuntime"]
