"""The reference backend: runs whole HLO modules on the NumPy evaluator."""

from __future__ import annotations

import numpy as np

from minijax import trace_events
from minijax.backends.base import Backend, Device, Executable
from minijax.compiler.evaluator import evaluate_module, has_implementation
from minijax.compiler.hlo.printer import module_to_text

# Instructions that move or name data without running a kernel.
_NO_KERNEL = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                        "after-all", "optimization-barrier"})


class InterpreterExecutable(Executable):
    """Evaluates the module with minijax.compiler.evaluator on every call."""

    def __init__(self, module):
        self.module = module
        self.kernel_count = sum(1 for i in module.entry.instructions
                                if i.opcode not in _NO_KERNEL)

    def execute(self, args: list[np.ndarray]) -> list[np.ndarray]:
        """Run the module on flat arguments; returns the entry result's leaves."""
        with trace_events.span(f"execute {self.module.name}", "execute",
                               backend="interpreter"):
            return evaluate_module(self.module, [np.asarray(a) for a in args])

    def as_text(self) -> str:
        """The HLO text of the module being interpreted."""
        return module_to_text(self.module)


class InterpreterBackend(Backend):
    """Backend "interpreter": the reference, slow but exact to XLA's semantics."""

    name = "interpreter"
    platform = "interpreter"

    def compile(self, module, options=None) -> InterpreterExecutable:
        """Wrap the module; nothing is generated."""
        return InterpreterExecutable(module)

    def opcode_support(self, opcode: str) -> str:
        """Every opcode the evaluator implements runs on it."""
        return "thunk" if has_implementation(opcode) else "unsupported"

    def devices(self) -> list[Device]:
        """One host device."""
        return [Device("interpreter", 0, "NumPy HLO interpreter")]


def create_backend() -> InterpreterBackend:
    """The backend factory get_backend("interpreter") calls."""
    return InterpreterBackend()
