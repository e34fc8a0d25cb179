"""CompileOptions: what a compile is asked to produce (part of the compile cache key).

Its own small module so that a jit call served from a cache (in memory or on disk) does not
load the pass pipeline; minijax.compiler.pipeline re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompileOptions:
    """Options that change what the compiler produces (part of the compile cache key)."""

    opt_level: int = 2
    backend: str | None = None
    dump_to: str | None = None
    dump_pass_re: str | None = None
    fuse: bool = True
    verify: bool = True
    #: Compiled for several devices that each run on one thread (CPU: the entry may run
    #: as one native call holding its collectives; backends/cpu/native_entry.py).
    native_device_program: bool = False

    def __post_init__(self):
        if self.opt_level not in (0, 1, 2):
            raise ValueError(f"opt_level must be 0, 1 or 2, got {self.opt_level!r}")
