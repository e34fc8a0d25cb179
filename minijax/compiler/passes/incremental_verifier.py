"""Verification between passes that re-checks only what changed.

The pipeline verifies the module after every pass that changed it. A full
`verify_module` runs shape inference for every instruction each time, although a pass
usually touches a few. `IncrementalVerifier` runs the verifier's structural checks on the
whole module (names, operand order, parameter numbers, roots, callees) and the shape checks
only for instructions whose inputs to those checks differ from the last time they passed:
opcode, result shape, operand shapes, attributes, literal, and the root shapes and
parameter shapes of called computations. Since the checks are a function of exactly these,
the verdict is the same as a full verification.
"""

from __future__ import annotations

from minijax.compiler.hlo import verifier as _verifier
from minijax.compiler.hlo.ir import Instruction, Module


def _callee_summary(called: dict):
    out = []
    for key, value in called.items():
        for comp in (value if isinstance(value, list) else [value]):
            root = getattr(comp, "root", None)
            params = tuple((i.parameter_number, i.shape)
                           for i in getattr(comp, "instructions", ()) if i.opcode == "parameter")
            out.append((key, comp, None if root is None else root.shape, params))
    return tuple(out)


def _snapshot(instr: Instruction):
    return (instr.opcode, instr.shape, tuple(op.shape for op in instr.operands),
            dict(instr.attrs), _callee_summary(instr.called) if instr.called else ())


class IncrementalVerifier:
    """A callable like verify_module that remembers which instructions' shapes it checked.

    `checked` and `skipped` count the shape checks run and avoided (for tests)."""

    def __init__(self):
        self._passed: dict[int, tuple] = {}
        self.checked = 0
        self.skipped = 0
        self._check_shape = getattr(_verifier, "_check_shape", None)
        self._check_callees = getattr(_verifier, "_check_callee_signatures", None)

    def __call__(self, module: Module) -> None:
        if self._check_shape is None or self._check_callees is None:
            _verifier.verify_module(module)
            return
        _verifier.verify_module(module, check_shapes=False)
        passed = self._passed
        for comp in module.computations:
            for instr in comp.instructions:
                snap = _snapshot(instr)
                old = passed.get(id(instr))
                if old is not None and old[0] is instr and old[1] is instr.literal:
                    try:
                        same = old[2] == snap
                    except Exception:  # an attribute value without a plain ==
                        same = False
                    if same:
                        self.skipped += 1
                        continue
                self._check_shape(comp, instr)
                self._check_callees(comp, instr)
                self.checked += 1
                passed[id(instr)] = (instr, instr.literal, snap)
