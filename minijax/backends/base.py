"""Backend interfaces: Device, Buffer, Executable and Backend.

A backend is one module or package `minijax/backends/<name>` defining
`create_backend() -> Backend` (see minijax.backends.get_backend). Backends never import the
frontend (core, lax, numpy); the frontend reaches them only through these interfaces.

Buffers. An Array holds one *buffer* and the Device it lives on:

- host backends (`Backend.host_memory = True`: interpreter, cpu) use a C-contiguous
  `np.ndarray` itself as the buffer, so eager ops and cached jit calls pass NumPy arrays
  straight through (no wrapper object on the hot path); the cpu backend's outputs are
  arrays over warm memory from its caching allocator (backends/cpu/memory.py), which
  reuses a block only once no array or NumPy view of it is left;
- every other backend (cuda) returns instances of a `Buffer` subclass that own device
  memory. The frontend never reads their memory: `np.asarray(x)` calls
  `Backend.buffer_to_host`, and nothing else copies to the host.

Executables take and return buffers of their backend's kind, all on the device they were
compiled for (`Executable.device`). Execution may be asynchronous: `Buffer.block_until_ready`
waits for the work producing it, `Buffer.copy_to_host_async` starts the host copy early.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: repr prefixes of JAX's device classes, per platform (`CpuDevice(id=0)`, `CudaDevice(id=0)`).
_REPR_PREFIX = {"cpu": "Cpu", "gpu": "Cuda", "cuda": "Cuda", "interpreter": "Interpreter"}


@dataclass(frozen=True)
class Device:
    """One device of a backend; repr follows JAX (`CpuDevice(id=0)`, `CudaDevice(id=0)`).

    `platform` is JAX's platform name ("cpu", "gpu"); `backend` is the minijax backend that
    owns the device ("cpu", "interpreter", "cuda"), defaulting to the platform. Devices are
    compared by (platform, id, backend): two backends' devices are never equal. In a
    multi-process run (minijax.distributed) ids are global and `process_index` is the
    process the device belongs to (see backends.transport.cpu_device_id).
    """

    platform: str
    id: int = 0
    device_kind: str = field(default="", compare=False)
    backend: str = ""
    process_index: int = field(default=0, compare=False)

    def __post_init__(self):
        if not self.backend:
            object.__setattr__(self, "backend", self.platform)

    def __repr__(self) -> str:
        prefix = _REPR_PREFIX.get(self.platform, self.platform.capitalize())
        return f"{prefix}Device(id={self.id})"

    def __str__(self) -> str:
        if self.platform == "cpu":
            return f"TFRT_CPU_{self.id}"
        return f"{self.platform}:{self.id}"


class Buffer:
    """Memory on a device holding one array (for backends whose memory is not the host's).

    Subclasses own the memory (a device pointer, a stream it is written on) and implement
    `to_host`; the other methods have synchronous defaults. `shape` and `dtype` are the
    array's; `device` is a Device of the owning backend.
    """

    __slots__ = ("device", "shape", "dtype", "__weakref__")

    def __init__(self, device: Device, shape: tuple, dtype):
        self.device = device
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def to_host(self) -> np.ndarray:
        """A new host NumPy array with this buffer's contents (waits for pending work)."""
        raise NotImplementedError

    def copy_to_host_async(self) -> None:
        """Start copying to the host so that a later `to_host` returns sooner."""

    def block_until_ready(self) -> None:
        """Wait until the work writing this buffer has finished."""

    def delete(self) -> None:
        """Free the device memory now (the Array using it becomes unusable)."""

    def is_deleted(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.dtype.name}{list(self.shape)} on {self.device!r}>"


class Executable:
    """A compiled module: flat argument buffers in, flat result buffers out.

    Host backends' buffers are np.ndarrays (see the module docstring). `device` is the
    device the executable runs on; the caller (compiler driver / jit) has already placed
    every argument there.
    """

    #: Number of kernels (device launches or compiled loops) one execution runs.
    kernel_count: int = 0
    #: The device this executable runs on (None: the backend's first device).
    device: Device | None = None

    def execute(self, args: list) -> list:
        """Run on flat buffers (entry parameters in order); return the flat result buffers."""
        raise NotImplementedError

    def as_text(self) -> str:
        """A human-readable form of what runs (HLO text, kernels)."""
        raise NotImplementedError

    def __call__(self, *args) -> list:
        return self.execute(list(args))


class Backend:
    """Compiles HLO modules for one platform and moves buffers to and from its devices.

    A new backend overrides `devices`, `compile` and, unless `host_memory` is True, the
    three buffer methods. `passes(options)` returns the backend's optimization pipeline
    (the default is the shared one in compiler/pipeline.py).
    """

    name: str = ""
    platform: str = ""
    #: True: buffers are host np.ndarrays; eager ops run NumPy implementations directly.
    #: False: eager ops run as one-op programs compiled by this backend (cached).
    host_memory: bool = True

    # ----- compilation
    def passes(self, options) -> list:
        """The pass list (passes and FixedPoint groups) `options` asks for on this backend."""
        # Imported here: a call served from the caches never loads the pipeline.
        from minijax.compiler.pipeline import default_passes
        return default_passes(options)

    def compile(self, module, options=None) -> Executable:
        """Compile an (already optimized) HLO module into an Executable."""
        raise NotImplementedError

    def compile_for(self, module, options, device) -> Executable:
        """Compile for `device` (None: the backend's default device); backends with one
        executable for all their devices keep this default."""
        return self.compile(module, options)

    def opcode_support(self, opcode: str) -> str:
        """How this backend runs `opcode`: "kernel" (generated code), "library" (a library
        call: BLAS, cuBLAS), "view" (no copy), "program" (nested programs: control flow),
        "no-op" (moves or names data), "thunk" (the HLO evaluator on the host) or
        "unsupported" (python -m minijax.tools.opcode_coverage prints these)."""
        return "unsupported"

    # ----- devices and buffers
    def devices(self) -> list[Device]:
        """The devices this backend can run on (empty when none is usable)."""
        return [Device(self.platform, 0, backend=self.name)]

    def buffer_from_host(self, value: np.ndarray, device: Device):
        """A buffer on `device` holding a copy of the C-contiguous host array `value`.

        Host backends return `value` itself: callers pass a private array."""
        return value

    def buffer_to_host(self, buffer) -> np.ndarray:
        """The host contents of `buffer` (host backends: the array itself, not a copy)."""
        return buffer if type(buffer) is np.ndarray else buffer.to_host()

    def run_on_device(self, device: Device, count: int, fn):
        """Call `fn()` as the part of a `count`-device program that runs on `device` (a
        backend may give each device its own resources, e.g. a share of the threads)."""
        return fn()

    def device_program_options(self, count: int) -> dict:
        """CompileOptions fields for a program that runs on `count` of this process's
        devices at once (pmap, shard_map, sharded jit)."""
        return {}

    def copy_buffer(self, buffer, device: Device):
        """`buffer` (of this backend) copied onto another `device` of this backend."""
        return buffer if self.host_memory else self.buffer_from_host(
            self.buffer_to_host(buffer), device)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} platform={self.platform!r}>"
