"""Structural and shape checks for HLO modules.

`verify_module(module)` checks, for every computation: unique instruction names, operands
that live in the same computation and precede their users, dense parameter numbers, a root
that belongs to the computation, called computations that belong to the module, and that
each instruction's shape equals the shape inference result (layouts ignored; dot and
convolution may change the element type). Raises `HloVerificationError` naming the
instruction and the computation.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction, Module
from minijax.compiler.hlo.printer import shape_to_text
from minijax.compiler.hlo.shape_inference import (
    HloShapeError,
    check_explicit_shape,
    infer_shape,
    same_shape,
)

__all__ = ["verify_module", "verify_computation", "HloVerificationError"]

_TYPE_FLEXIBLE = frozenset(("dot", "convolution"))


class HloVerificationError(ValueError):
    """A module breaks an HLO invariant. The message names the instruction and computation."""


def _fail(comp: Computation, instr: Instruction | None, message: str):
    where = f"computation {comp.name}" if instr is None else \
        f"instruction {instr.name} ({instr.opcode}) in computation {comp.name}"
    raise HloVerificationError(f"{where}: {message}")


def _shapes_match(instr: Instruction, inferred) -> bool:
    if instr.opcode in _TYPE_FLEXIBLE and not instr.shape.is_tuple:
        return tuple(instr.shape.dims) == tuple(inferred.dims)
    return same_shape(instr.shape, inferred)


def verify_computation(comp: Computation, module: Module | None = None,
                       check_shapes: bool = True, module_comps: set[int] | None = None) -> None:
    """Verify one computation (see the module docstring). `module_comps`: the ids of
    `module`'s computations, when the caller already has them."""
    names: set[str] = set()
    seen: set[int] = set()
    params: dict[int, Instruction] = {}
    if module_comps is None and module is not None:
        module_comps = {id(c) for c in module.computations}
    for instr in comp.instructions:
        if not instr.name:
            _fail(comp, instr, "has no name")
        if instr.name in names:
            _fail(comp, instr, "duplicate instruction name")
        names.add(instr.name)
        for i, op in enumerate(instr.operands):
            if id(op) not in seen:
                _fail(comp, instr, f"operand {i} ({op.name}) is not defined before it in "
                                   "this computation")
        if instr.opcode == "parameter":
            n = instr.parameter_number
            if n is None or n < 0:
                _fail(comp, instr, "parameter has no parameter number")
            if n in params:
                _fail(comp, instr, f"parameter number {n} used twice")
            params[n] = instr
        for key, callee in instr.called.items():
            for c in (callee if isinstance(callee, list) else [callee]):
                if not isinstance(c, Computation):
                    _fail(comp, instr, f"{key}= is not a computation")
                if module_comps is not None and id(c) not in module_comps:
                    _fail(comp, instr, f"{key}={c.name} is not a computation of the module")
        if instr.opcode == "constant" and instr.literal is None:
            _fail(comp, instr, "constant has no value")
        if check_shapes:
            _check_shape(comp, instr)
            _check_callee_signatures(comp, instr)
        seen.add(id(instr))
    if sorted(params) != list(range(len(params))):
        _fail(comp, None, f"parameter numbers {sorted(params)} are not 0..{len(params) - 1}")
    if comp.root is None:
        _fail(comp, None, "has no root instruction")
    if id(comp.root) not in seen:
        _fail(comp, comp.root, "the root is not an instruction of this computation")


def _check_shape(comp: Computation, instr: Instruction) -> None:
    shapes = [op.shape for op in instr.operands]
    try:
        inferred = infer_shape(instr.opcode, shapes, instr.attrs, instr.called)
        if inferred is None:
            check_explicit_shape(instr.opcode, instr.shape, shapes, instr.attrs, instr.literal)
    except HloShapeError as e:
        _fail(comp, instr, str(e))
    if inferred is not None and not _shapes_match(instr, inferred):
        _fail(comp, instr, f"shape {shape_to_text(instr.shape, False)} differs from the "
                           f"inferred {shape_to_text(inferred, False)}")


def _expect_params(comp, instr, key, callee, shapes, types=True) -> None:
    params = callee.parameters
    if len(params) != len(shapes):
        _fail(comp, instr, f"{key}={callee.name} takes {len(params)} parameters, "
                           f"{len(shapes)} expected")
    for p, s in zip(params, shapes):
        if not same_shape(p.shape, s if types else s.with_type(p.shape.element_type)):
            _fail(comp, instr, f"{key}={callee.name} parameter {p.parameter_number} has shape "
                               f"{shape_to_text(p.shape, False)}, expected "
                               f"{shape_to_text(s, False)}")


def _check_callee_signatures(comp: Computation, instr: Instruction) -> None:
    """Called computations take what the instruction passes them."""
    op, called = instr.opcode, instr.called
    shapes = [o.shape for o in instr.operands]
    if op in ("call", "fusion") and called.get("to_apply" if op == "call" else "calls"):
        key = "to_apply" if op == "call" else "calls"
        _expect_params(comp, instr, key, called[key], shapes)
    elif op == "while" and "body" in called and "condition" in called:
        _expect_params(comp, instr, "body", called["body"], shapes)
        _expect_params(comp, instr, "condition", called["condition"], shapes)
    elif op == "conditional":
        branches = called.get("branch_computations") or [
            c for c in (called.get("true_computation"), called.get("false_computation")) if c]
        if len(branches) != len(shapes) - 1:
            _fail(comp, instr, f"{len(branches)} branches but {len(shapes) - 1} branch operands")
        for i, br in enumerate(branches):
            _expect_params(comp, instr, "branch", br, [shapes[i + 1]])
    elif op in ("reduce", "reduce-window", "sort", "map", "scatter") and "to_apply" in called:
        if op in ("reduce", "reduce-window"):
            leaves = shapes[len(shapes) // 2:] * 2
        elif op == "scatter":
            n = (len(shapes) - 1) // 2
            leaves = [s.with_dims(()) for s in shapes[:n]] * 2
        elif op == "sort":
            leaves = [s.with_dims(()) for s in shapes for _ in range(2)]
        else:
            leaves = [s.with_dims(()) for s in shapes]
        # Reducers and comparators: count and scalar-ness are checked, element types not.
        _expect_params(comp, instr, "to_apply", called["to_apply"], leaves, types=False)


def verify_module(module: Module, check_shapes: bool = True) -> None:
    """Verify every computation of `module`; raise HloVerificationError on the first
    problem."""
    if module.entry is None:
        raise HloVerificationError(f"module {module.name}: no entry computation")
    comp_names: set[str] = set()
    for comp in module.computations:
        if comp.name in comp_names:
            raise HloVerificationError(f"module {module.name}: duplicate computation name "
                                       f"{comp.name}")
        comp_names.add(comp.name)
    module_comps = {id(c) for c in module.computations}
    for comp in module.computations:
        verify_computation(comp, module, check_shapes, module_comps)
