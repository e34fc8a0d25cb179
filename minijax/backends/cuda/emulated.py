"""A device runtime on host memory that runs kernel modules with the GPU emulator.

Memory comes from the same caching allocator as on a GPU (over numpy byte arrays), kernels
are the very modules the CUDA runtime would turn into PTX, run by
compiler/codegen/gpu/emulate.py with each launch's grid cut to `max_blocks` (the kernels'
grid-stride loops cover the rest) with every global access bounds-checked against the
buffers the launch was given (their sizes as allocated), and GEMMs run with numpy (float
types only, like cuBLAS; `gemm=False` sends every dot to the generated GEMM kernel). Tests
use it to check the GPU backend's programs end to end without a GPU.
"""

from __future__ import annotations

import ctypes

import numpy as np

from minijax.backends.cuda.allocator import CachingAllocator
from minijax.backends.cuda.device_runtime import DeviceBuffer, DeviceRuntime, GemmSpec
from minijax.compiler.codegen.gpu.emulate import HostKernels


class _Module:
    def __init__(self, kernels: HostKernels, runtime: EmulatedRuntime):
        self.kernels, self.runtime = kernels, runtime
        self.max_blocks = runtime.max_blocks
        self.launches = 0

    def launch(self, name: str, grid: int, block: int, ptrs: list[int]) -> None:
        if self.max_blocks is not None:
            grid = min(grid, self.max_blocks)
        self.launches += 1
        sizes = [self.runtime.sizes.get(p, 0) for p in ptrs]
        self.kernels.launch(name, grid, block, ptrs, sizes)


class EmulatedRuntime(DeviceRuntime):
    """Host memory + emulated kernels (see the module docstring)."""

    name = "emulated GPU"

    def __init__(self, max_blocks: int | None = 3, capacity: int | None = None,
                 gemm: bool = True):
        self.max_blocks = max_blocks
        self.use_gemm = gemm           # False: dots use the generated GEMM kernel
        self.capacity = capacity
        self._arrays: dict[int, np.ndarray] = {}
        self.sizes: dict[int, int] = {}   # address -> bytes asked for (bounds checks)
        self.allocator = CachingAllocator(self._raw_alloc, self._raw_free,
                                          device="emulated GPU")

    def _raw_alloc(self, nbytes: int) -> int:
        used = sum(a.nbytes for a in self._arrays.values())
        if self.capacity is not None and used + nbytes > self.capacity:
            raise MemoryError(f"emulated device full ({used} of {self.capacity} bytes)")
        arr = np.empty(nbytes + 256, np.uint8)
        ptr = (arr.ctypes.data + 255) // 256 * 256      # cuMemAlloc's 256-byte alignment
        self._arrays[ptr] = arr
        return ptr

    def _raw_free(self, ptr: int) -> None:
        del self._arrays[ptr]

    def allocate(self, nbytes: int, label: str = "") -> DeviceBuffer:
        buf = super().allocate(nbytes, label)
        self.sizes[buf.ptr] = nbytes
        return buf

    def view(self, buf: DeviceBuffer, shape, dtype) -> np.ndarray:
        """A numpy view of a buffer's memory."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape)) if len(shape) else 1
        raw = (ctypes.c_uint8 * max(count * dtype.itemsize, 1)).from_address(buf.ptr)
        return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)

    def upload(self, array: np.ndarray, label: str = "") -> DeviceBuffer:
        array = np.asarray(array, order="C")
        buf = self.allocate(array.nbytes, label)
        if array.nbytes:
            self.view(buf, array.shape, array.dtype)[...] = array
        return buf

    def download(self, buf: DeviceBuffer, shape, dtype) -> np.ndarray:
        if int(np.prod(shape)) == 0:
            return np.empty(shape, dtype)
        return self.view(buf, tuple(shape), dtype).copy()

    def copy(self, dst: DeviceBuffer, src: DeviceBuffer, nbytes: int) -> None:
        if nbytes:
            ctypes.memmove(dst.ptr, src.ptr, nbytes)

    def load_kernels(self, ir_text: str, names: list[str]):
        return _Module(HostKernels(ir_text), self)

    def gemm(self, spec: GemmSpec, a: DeviceBuffer, b: DeviceBuffer, c: DeviceBuffer) -> bool:
        if not self.use_gemm or spec.dtype not in ("f32", "f64", "f16") or \
                spec.out_dtype != spec.dtype:
            return False
        dt = {"f32": np.float32, "f64": np.float64, "f16": np.float16}[spec.dtype]
        ashape = (spec.batch, spec.k, spec.m) if spec.trans_a else (spec.batch, spec.m, spec.k)
        bshape = (spec.batch, spec.n, spec.k) if spec.trans_b else (spec.batch, spec.k, spec.n)
        x, y = self.view(a, ashape, dt), self.view(b, bshape, dt)
        x = x.transpose(0, 2, 1) if spec.trans_a else x
        y = y.transpose(0, 2, 1) if spec.trans_b else y
        acc = np.float64 if dt == np.float64 else np.float32
        out = np.matmul(x.astype(acc), y.astype(acc)).astype(dt)
        self.view(c, (spec.batch, spec.m, spec.n), dt)[...] = out
        return True


__all__ = ["EmulatedRuntime"]
