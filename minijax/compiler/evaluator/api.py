"""The evaluator with every opcode family registered: what the package's public names are.

core.py holds the interpreter and the structural opcodes; each family module exports an
OPCODES table (sort and top-k come in through ops, gather/scatter through indexing).
Importing this module registers them all, once.
"""

from __future__ import annotations

from minijax.compiler.evaluator import (
    async_ops,
    collectives,
    indexing,
    numerics,
    ops,
    xla_custom_calls,
)
from minijax.compiler.evaluator.core import (
    OPCODES,
    EvaluatorError,
    evaluate_computation,
    evaluate_instruction,
    evaluate_module,
    flatten_value,
    has_implementation,
    register_custom_call,
    register_opcodes,
)

__all__ = ["EvaluatorError", "OPCODES", "evaluate_module", "evaluate_computation",
           "evaluate_instruction", "register_custom_call", "register_opcodes",
           "has_implementation", "flatten_value"]

for _family in (collectives, ops, indexing, numerics, async_ops):
    register_opcodes(_family.OPCODES)
for _target, _fn in xla_custom_calls.TARGETS.items():
    register_custom_call(_target, _fn)
