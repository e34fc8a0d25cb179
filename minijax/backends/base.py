"""Backend interfaces: Backend compiles an optimized HLO module into an Executable.

A backend module (minijax/backends/<name>.py) defines `create_backend() -> Backend`; see
minijax.backends.get_backend. Backends never import the frontend (core, lax, numpy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Device:
    """One device of a backend; repr follows JAX (`CpuDevice(id=0)`, `CudaDevice(id=0)`)."""

    platform: str
    id: int = 0
    device_kind: str = ""

    def __repr__(self) -> str:
        return f"{self.platform.capitalize()}Device(id={self.id})"

    def __str__(self) -> str:
        if self.platform == "cpu":
            return f"TFRT_CPU_{self.id}"
        return f"{self.platform}:{self.id}"


class Executable:
    """A compiled module: flat numpy arguments in, flat numpy results out."""

    #: Number of kernels (device launches or compiled loops) one execution runs.
    kernel_count: int = 0

    def execute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        """Run on flat array arguments (entry parameters in order); return the flat outputs."""
        raise NotImplementedError

    def as_text(self) -> str:
        """A human-readable form of what runs (HLO text, kernels)."""
        raise NotImplementedError

    def __call__(self, *args: np.ndarray) -> list[np.ndarray]:
        return self.execute(list(args))


class Backend:
    """Compiles HLO modules for one platform."""

    name: str = ""
    platform: str = ""

    def compile(self, module, options=None) -> Executable:
        """Compile an (already optimized) HLO module into an Executable."""
        raise NotImplementedError

    def devices(self) -> list[Device]:
        """The devices this backend can run on (empty when none is usable)."""
        return [Device(self.platform, 0)]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} platform={self.platform!r}>"
