"""The target hook: what differs between the LLVM targets code is generated for.

The elemental emitter (elemental.py) and the math approximations (math_approx.py) are
target-neutral; the few target-specific choices they make go through the current Target:

- `math_function(name)`: the symbol for a math routine the emitter does not inline (float64
  `tan`, `erf`, `atan2`, `cbrt`, and the `llvm.sin`/`llvm.cos`/`llvm.pow` intrinsics): the C
  library's names on the CPU; a GPU target maps them to its device library (or to names it
  provides itself). A name starting with "llvm." is called as an intrinsic.
- `global_address_space` / `shared_address_space`: where kernel arguments and block-shared
  scratch live (0 and None on the CPU; 1 and 3 on NVPTX);
- `vector_bytes`: the widest load/store the loop emitters aim for (the CPU's loop vectorizer
  picks its own width; a GPU emitter uses 16-byte vector loads where aligned).

A backend emits under `generating_for(target)` (a context manager; the CPU target is the
default), so the shared emitters need no extra parameter.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Target:
    """One code generation target (see the module docstring)."""

    name: str
    global_address_space: int = 0
    shared_address_space: int | None = None
    vector_bytes: int = 32
    math_functions: Mapping[str, str] = field(default_factory=dict)

    def math_function(self, name: str) -> str:
        """The symbol (or "llvm.*" intrinsic) implementing math routine `name` here."""
        return self.math_functions.get(name, name)


#: The host CPU (x86-64, AArch64): C library math, address space 0.
CPU = Target("cpu")

_current: contextvars.ContextVar[Target] = contextvars.ContextVar("codegen_target",
                                                                   default=CPU)


def current() -> Target:
    """The target code is being generated for."""
    return _current.get()


@contextlib.contextmanager
def generating_for(target: Target):
    """Generate code for `target` inside the block."""
    token = _current.set(target)
    try:
        yield target
    finally:
        _current.reset(token)
