"""What the GPU program (program.py) needs from a device: memory, copies, kernels, GEMMs.

`DeviceRuntime` is implemented by the CUDA driver runtime (driver_runtime.py) and by the
host emulator (emulated.py), which runs the same kernel modules on the CPU so the whole
backend is tested without a GPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from minijax.backends.cuda.allocator import Block, CachingAllocator


class DeviceBuffer:
    """Device memory holding one array (or scratch): address and bytes, plus the array's
    `dims`/`dtype` where a program set them. The memory goes back to the runtime's caching
    allocator when the last reference to this object goes, or on `release()`."""

    __slots__ = ("runtime", "block", "nbytes", "dims", "dtype")

    def __init__(self, runtime, block: Block, nbytes: int):
        self.runtime, self.block, self.nbytes = runtime, block, nbytes
        self.dims, self.dtype = None, None

    @property
    def ptr(self) -> int:
        return self.block.ptr

    def release(self) -> None:
        """Give the memory back to the caching allocator now."""
        block, self.block = self.block, None
        if block is not None:
            self.runtime.allocator.free(block)

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to free
            pass

    def __repr__(self) -> str:
        return f"DeviceBuffer(0x{self.ptr:x}, {self.nbytes} bytes)" if self.block else \
            "DeviceBuffer(released)"


@dataclass
class GemmSpec:
    """Row-major C[b] = op(A[b]) @ op(B[b]) for b < batch; A is M x K (or K x M when
    trans_a), B is K x N (or N x K when trans_b); element types of A/B and of C."""

    batch: int
    m: int
    n: int
    k: int
    trans_a: bool
    trans_b: bool
    dtype: str
    out_dtype: str


class DeviceRuntime:
    """One device: a caching allocator, copies, kernel modules, GEMMs, a stream."""

    name = "device"
    arch = "sm_80"
    allocator: CachingAllocator

    def allocate(self, nbytes: int, label: str = "") -> DeviceBuffer:
        """A buffer of at least `nbytes` bytes (never zero bytes)."""
        return DeviceBuffer(self, self.allocator.allocate(max(nbytes, 1), label), nbytes)

    def upload(self, array: np.ndarray, label: str = "") -> DeviceBuffer:
        """Copy a host array into a new device buffer."""
        raise NotImplementedError

    def download(self, buf: DeviceBuffer, shape, dtype) -> np.ndarray:
        """Copy a device buffer into a new host array of `shape` and `dtype`."""
        raise NotImplementedError

    def copy(self, dst: DeviceBuffer, src: DeviceBuffer, nbytes: int) -> None:
        """Device-to-device copy (queued on the stream)."""
        raise NotImplementedError

    def load_kernels(self, ir_text: str, names: list[str]):
        """Load a kernel module; returns an object with `launch(name, grid, block, ptrs)`."""
        raise NotImplementedError

    def gemm(self, spec: GemmSpec, a: DeviceBuffer, b: DeviceBuffer, c: DeviceBuffer) -> bool:
        """Run a GEMM (False when this device cannot, e.g. no cuBLAS for the type)."""
        return False

    def synchronize(self) -> None:
        """Wait for everything queued on the device's stream."""

    #: What start_timer/stop_timer measure with ("host timer": wall clock after a sync).
    timer = "host timer"

    def start_timer(self):
        """A mark before the work to time (pair with `stop_timer`)."""
        return time.perf_counter()

    def stop_timer(self, start) -> float:
        """Seconds from `start` until the work queued since then is done."""
        self.synchronize()
        return time.perf_counter() - start


__all__ = ["DeviceBuffer", "DeviceRuntime", "GemmSpec"]
