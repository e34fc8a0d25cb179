"""The CUDA backend: generated NVPTX kernels and cuBLAS on NVIDIA GPUs (cuda-python).

`get_backend("cuda")` imports only this file and driver.py: `devices()` lists the GPUs the
driver reports (none, silently, without a driver or without cuda-python). `compile()` loads
the rest on first use: the GPU program (program.py) over a device runtime
(driver_runtime.py: context, stream, caching allocator, pinned staging, PTX/cubin cache,
cuBLAS). Tests run the same programs on EmulatedRuntime (emulated.py), which runs the
kernels on the host CPU.

With MINIJAX_FLAGS="--dump_to=DIR" each compiled module's kernel IR (.ll) and PTX (.ptx)
are written to DIR; MINIJAX_DEBUG=2 prints each kernel step's time and GB/s.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np

from minijax.backends.base import Backend, Buffer, Device
from minijax.backends.cuda.driver import cuda_devices
from minijax.config import debug_level

NO_GPU = "no CUDA driver/GPU"


class CudaBuffer(Buffer):
    """One array in GPU memory: a DeviceBuffer of the device's runtime (freed to the
    caching allocator when no array uses it any more, or on `delete()`)."""

    __slots__ = ("dbuf", "runtime")

    def __init__(self, device: Device, shape, dtype, dbuf, runtime):
        super().__init__(device, shape, dtype)
        self.dbuf, self.runtime = dbuf, runtime

    def to_host(self) -> np.ndarray:
        if self.dbuf is None:
            raise RuntimeError("the array's GPU buffer was deleted")
        return self.runtime.download(self.dbuf, self.shape, self.dtype)

    def block_until_ready(self) -> None:
        self.runtime.synchronize()

    def delete(self) -> None:
        if self.dbuf is not None:
            self.runtime.synchronize()
            self.dbuf.release()
            self.dbuf = None

    def is_deleted(self) -> bool:
        return self.dbuf is None


class CudaBackend(Backend):
    """Backend "cuda" (see the module docstring). `runtime` overrides the device runtime
    (tests pass an EmulatedRuntime, or a list of them: one emulated GPU each)."""

    name = "cuda"
    platform = "gpu"
    host_memory = False

    def __init__(self, runtime=None, name: str = "cuda"):
        runtimes = runtime if isinstance(runtime, (list, tuple)) else (
            [runtime] if runtime is not None else [])
        self._runtimes = dict(enumerate(runtimes))
        self._emulated = runtime is not None
        self.name = name
        self._lock = threading.Lock()

    def devices(self) -> list[Device]:
        """One CudaDevice per GPU the driver reports (the emulated device in tests)."""
        if self._emulated:
            return [Device("gpu", k, rt.name, backend=self.name)
                    for k, rt in sorted(self._runtimes.items())]
        return [Device("gpu", k, name, backend=self.name) for k, name, _cc in cuda_devices()]

    def runtime(self, ordinal: int = 0):
        """The device runtime of GPU `ordinal` (its context, stream and allocator; created
        on first use)."""
        with self._lock:
            rt = self._runtimes.get(ordinal)
            if rt is None and self._emulated:
                raise ValueError(f"no emulated GPU {ordinal} (there are {len(self._runtimes)})")
            if rt is None:
                if not cuda_devices():
                    raise RuntimeError(f"the cuda backend cannot compile: {NO_GPU} "
                                       f"(use MINIJAX_BACKEND=cpu)")
                from minijax.backends.cuda.driver_runtime import CudaRuntime  # noqa: PLC0415
                rt = self._runtimes[ordinal] = CudaRuntime(ordinal)
            return rt

    def compile(self, module, options=None):
        """Plan the module's entry computation as kernels, GEMMs and host steps for GPU 0."""
        return self.compile_for(module, options, None)

    def compile_for(self, module, options, device):
        """Plan the module for `device` (None: GPU 0): its runtime (context, stream,
        allocator) runs the executable and owns its results."""
        from minijax.backends.cuda.program import GpuExecutable  # noqa: PLC0415 - llvmlite
        debug = debug_level()
        ordinal = 0 if device is None else device.id
        runtime = self.runtime(ordinal)
        if device is None:
            device = self.devices()[ordinal]
        executable = GpuExecutable(module, runtime, debug, device, CudaBuffer)
        dump_to = getattr(options, "dump_to", None) if options is not None else None
        if dump_to:
            os.makedirs(dump_to, exist_ok=True)
            with open(os.path.join(dump_to, f"{module.name}.ll"), "w") as f:
                f.write(executable.ir_text)
            with open(os.path.join(dump_to, f"{module.name}.ptx"), "w") as f:
                f.write(executable.ptx())
        if debug >= 4:
            print(executable.ir_text, file=sys.stderr)
            print(executable.ptx(), file=sys.stderr)
        return executable

    def opcode_support(self, opcode: str) -> str:
        """How the GPU program runs `opcode` (the same answer with or without a driver:
        it is what the code generator does, see program.gpu_opcode_support)."""
        try:
            from minijax.backends.cuda.program import (  # noqa: PLC0415 - llvmlite
                gpu_opcode_support,
            )
        except ImportError:
            return "unsupported"
        return gpu_opcode_support(opcode)

    def buffer_from_host(self, value: np.ndarray, device: Device) -> CudaBuffer:
        """Copy a host array to the GPU (through the pinned staging buffer)."""
        rt = self.runtime(device.id)
        value = np.asarray(value, order="C")
        return CudaBuffer(device, value.shape, value.dtype, rt.upload(value, "device_put"), rt)

    def buffer_to_host(self, buffer: CudaBuffer) -> np.ndarray:
        return buffer.to_host()


def create_backend() -> CudaBackend:
    """The factory minijax.backends.get_backend("cuda") calls."""
    return CudaBackend()


__all__ = ["NO_GPU", "CudaBackend", "CudaBuffer", "create_backend"]
