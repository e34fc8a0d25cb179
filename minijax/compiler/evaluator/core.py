"""The HLO interpreter: evaluation of computations, value coercion, the opcode table and the
structural opcodes (constant, tuple, call, while, conditional, custom-call, ...).

The opcode families live in sibling modules that import this one (sort needs the batched
context) and export their own OPCODES tables; api.py imports them all and registers them
here, so this module never imports a family that imports it. See the package docstring.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from minijax.backends.spmd import CollectiveAbortedError, CollectiveTimeoutError
from minijax.compiler.evaluator import elementwise as ew
from minijax.compiler.evaluator import linalg, numerics
from minijax.compiler.hlo.ir import NARROW_ELEMENT_TYPES, Computation, Instruction, Module, Shape

__all__ = ["EvaluatorError", "OPCODES", "evaluate_module", "evaluate_computation",
           "evaluate_instruction", "register_custom_call", "register_opcodes", "has_implementation",
           "flatten_value"]


class EvaluatorError(RuntimeError):
    """An HLO instruction could not be evaluated; the message names the instruction."""


_CUSTOM_CALLS: dict[str, Callable] = {
    # Sharding annotations JAX emits are identities on one device.
    "Sharding": lambda ops, instr: ops[0],
    "SPMDFullToShardShape": lambda ops, instr: ops[0],
    "SPMDShardToFullShape": lambda ops, instr: ops[0],
}


# Target families registered by prefix (`minijax.linalg.cholesky[...]`): prefix -> fn.
_CUSTOM_CALL_PREFIXES: dict[str, Callable] = {
    linalg.PREFIX: linalg.evaluate_custom_call,
}


def register_custom_call(target: str, fn: Callable) -> None:
    """Give `custom-call` with `custom_call_target=target` a NumPy meaning.

    `fn(operand_values: list, instr: Instruction)` returns the result value (array or tuple).
    A target ending in "*" registers every target starting with the text before it.
    """
    if target.endswith("*"):
        _CUSTOM_CALL_PREFIXES[target[:-1]] = fn
    else:
        _CUSTOM_CALLS[target] = fn


def custom_call_impl(target: str) -> Callable | None:
    """The evaluator implementation of a custom-call target, or None."""
    fn = _CUSTOM_CALLS.get(target)
    if fn is None:
        for prefix, family in _CUSTOM_CALL_PREFIXES.items():
            if target.startswith(prefix):
                return family
    return fn


def flatten_value(value) -> list[np.ndarray]:
    """The array leaves of a (nested) tuple value, in order."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in flatten_value(v)]
    return [value]


def _external(shape: Shape, value):
    """A value as callers hold it: bf16 leaves (float32 inside) as ml_dtypes bfloat16."""
    if isinstance(value, tuple):
        return tuple(_external(s, v) for s, v in zip(shape.tuple_shapes, value))
    if shape.element_type == "bf16" and value.dtype != shape.dtype:
        return value.astype(shape.dtype)
    return value


def _materialize(value):
    """Own, writable, C-contiguous arrays (results may be broadcast views internally)."""
    if isinstance(value, tuple):
        return tuple(_materialize(v) for v in value)
    if not value.flags.writeable or not value.flags.c_contiguous:
        return np.array(value, order="C", copy=True)
    return value


def _coerce(shape: Shape, value, batched: bool):
    """Cast a computed value to `shape`'s dtype (and dims unless batched)."""
    if shape.is_tuple:
        value = tuple(value)
        if len(value) != len(shape.tuple_shapes):
            raise EvaluatorError(f"tuple of {len(value)} values for shape {shape}")
        return tuple(_coerce(s, v, batched) for s, v in zip(shape.tuple_shapes, value))
    if shape.element_type == "token":
        return ()
    arr = np.asarray(value)
    if shape.element_type == "bf16":  # float32 storage inside, see _external
        arr = ew.round_to_bf16(arr.astype(np.float32, copy=False))
    elif arr.dtype != shape.dtype:
        arr = arr.astype(shape.dtype)
    if not batched and arr.shape != shape.dims:
        if arr.size != shape.size:
            raise EvaluatorError(f"computed shape {arr.shape}, instruction declares {shape}")
        arr = arr.reshape(shape.dims)
    return arr


class _Context:
    """What an opcode implementation may ask for: evaluating called computations."""

    def __init__(self, batched: bool = False):
        self.batched = batched

    def call(self, comp: Computation, args: list):
        """Evaluate `comp` on `args` (full arrays/tuples, not batched)."""
        return _evaluate(comp, list(args), batched=False)

    def call_elementwise(self, comp: Computation, args: list) -> list[np.ndarray]:
        """Apply a scalar computation to arrays elementwise (with broadcasting).

        Returns the flat list of result arrays (one per tuple element of the root).
        """
        args = [np.asarray(a) for a in args]
        if _is_batchable(comp):
            out = _evaluate(comp, args, batched=True)
            shape = np.broadcast_shapes(*(a.shape for a in args)) if args else ()
            return [np.broadcast_to(v, shape) for v in flatten_value(out)]
        return _elementwise_loop(comp, args)


def _elementwise_loop(comp: Computation, args: list[np.ndarray]) -> list[np.ndarray]:
    args = list(np.broadcast_arrays(*args))
    shape = args[0].shape if args else ()
    leaves = comp.root.shape.flat()
    outs = [np.empty(shape, dtype=s.dtype) for s in leaves]
    for index in np.ndindex(*shape):
        result = flatten_value(_evaluate(comp, [a[index] for a in args], batched=False))
        for out, r in zip(outs, result):
            out[index] = r
    return outs


_BATCHABLE_EXTRA = {"parameter", "constant", "tuple", "get-tuple-element", "call", "fusion",
                    "broadcast", "reshape", "bitcast", "copy", "transpose"}
# Shape-only opcodes, identities on scalars: in batched evaluation they pass values through.
_SCALAR_IDENTITY = {"broadcast", "reshape", "bitcast", "copy", "transpose"}
_batchable_cache: dict[int, tuple[Computation, int, bool]] = {}


def _is_batchable(comp: Computation) -> bool:
    hit = _batchable_cache.get(id(comp))
    if hit is not None and hit[0] is comp and hit[1] == len(comp.instructions):
        return hit[2]
    ok = True
    for instr in comp.instructions:
        if any(leaf.dims for leaf in instr.shape.flat()):
            ok = False
        elif instr.opcode not in ew.ELEMENTWISE_OPCODES and instr.opcode not in _BATCHABLE_EXTRA:
            ok = False
        elif instr.opcode == "bitcast-convert" and instr.operands and (
                instr.operands[0].shape.dtype.itemsize != instr.shape.dtype.itemsize):
            ok = False
        elif not all(_is_batchable(c) for c in instr.called_computations()):
            ok = False
        if not ok:
            break
    _batchable_cache[id(comp)] = (comp, len(comp.instructions), ok)
    return ok


def _needed(comp: Computation) -> list[Instruction]:
    """Instructions the root depends on, in the computation's order (plus custom-calls
    with no result: they exist for their effect, e.g. minijax.debug.print)."""
    live = {id(comp.root)}
    live.update(id(i) for i in comp.instructions if _is_effect(i))
    for instr in reversed(comp.instructions):
        if id(instr) in live:
            live.update(id(op) for op in instr.operands)
    return [i for i in comp.instructions if id(i) in live]


def _is_effect(instr: Instruction) -> bool:
    if instr.opcode == "custom-call":
        return instr.shape.is_tuple and not instr.shape.tuple_shapes
    return any(_is_effect(i) for c in instr.called_computations() for i in c.instructions)


def _evaluate(comp: Computation, args: list, batched: bool):
    params = comp.parameters
    if len(args) != len(params):
        raise EvaluatorError(f"computation {comp.name} takes {len(params)} arguments, "
                             f"got {len(args)}")
    order = _needed(comp)
    last_use: dict[int, int] = {}
    for pos, instr in enumerate(order):
        for op in instr.operands:
            last_use[id(op)] = pos
    env: dict[int, object] = {}
    ctx = _Context(batched)
    for pos, instr in enumerate(order):
        if instr.opcode == "parameter":
            value = args[instr.parameter_number]
            env[id(instr)] = value if batched else _coerce(instr.shape, value, False)
            continue
        try:
            operands = [env[id(op)] for op in instr.operands]
        except KeyError as exc:
            raise EvaluatorError(f"{instr.name}: an operand is not defined before it in "
                                 f"computation {comp.name}") from exc
        env[id(instr)] = _evaluate_one(instr, operands, ctx)
        for op in instr.operands:
            if last_use.get(id(op)) == pos and op is not comp.root:
                env.pop(id(op), None)
    return env[id(comp.root)]


def _describe(instr: Instruction, operands: list) -> str:
    def shape_of(v):
        if isinstance(v, tuple):
            return "(" + ", ".join(shape_of(x) for x in v) + ")"
        return f"{np.asarray(v).dtype}{list(np.shape(v))}"
    ops = ", ".join(shape_of(v) for v in operands)
    return f"{instr.name} = {instr.shape} {instr.opcode}({ops})"


def _evaluate_one(instr: Instruction, operands: list, ctx: _Context):
    impl = OPCODES.get(instr.opcode)
    if impl is None:
        raise EvaluatorError(f"the HLO evaluator has no implementation of opcode "
                             f"'{instr.opcode}' (instruction {instr.name})")
    try:
        if ctx.batched and instr.opcode in _SCALAR_IDENTITY:
            if instr.opcode == "bitcast":
                # XLA's bitcast may change the element type: the bits are reinterpreted.
                return _coerce(instr.shape, numerics.bitcast_bits(operands[0], instr.shape), True)
            return _coerce(instr.shape, operands[0], True)
        with np.errstate(all="ignore"):
            if (instr.shape.element_type in NARROW_ELEMENT_TYPES
                    or numerics.involves_narrow(operands)):
                result = _evaluate_narrow(impl, instr, operands, ctx)
            else:
                result = impl(instr, operands, ctx)
        return _coerce(instr.shape, result, ctx.batched)
    except (CollectiveTimeoutError, CollectiveAbortedError):
        raise  # name the collective and the devices already; the caller must see them as is
    except EvaluatorError as exc:
        if instr.name and instr.name in str(exc):
            raise
        raise EvaluatorError(f"{exc} [while evaluating {_describe(instr, operands)}]") from exc
    except Exception as exc:  # noqa: BLE001 - re-raised with the instruction named
        raise EvaluatorError(f"{type(exc).__name__}: {exc} "
                             f"[while evaluating {_describe(instr, operands)}]") from exc


_NARROW_AS_IS = frozenset(("parameter", "constant", "tuple", "get-tuple-element", "call",
                           "fusion", "while", "conditional", "custom-call", "after-all"))


def _evaluate_narrow(impl, instr: Instruction, operands: list, ctx: _Context):
    """An instruction on narrow types (s4, f8, ...): computed in float32 or int8/uint8 and
    rounded or wrapped back to the narrow result type by _coerce."""
    if instr.opcode in _NARROW_AS_IS:
        return impl(instr, operands, ctx)
    if instr.opcode == "convert":
        return numerics.narrow_convert(np.asarray(operands[0]), instr.shape.dtype)
    special = numerics.narrow_bit_opcode(instr, operands)
    if special is not None:
        return special
    return impl(instr, [numerics.widen(v) for v in operands], ctx)


def evaluate_instruction(instr: Instruction, operand_values: list):
    """Evaluate one instruction on given operand values (used by constant folding).

    Called computations (reducers, loop bodies, ...) are evaluated as needed. Parameters
    cannot be evaluated without arguments and raise EvaluatorError.
    """
    if instr.opcode == "parameter":
        raise EvaluatorError(f"{instr.name}: a parameter has no value without arguments")
    value = _evaluate_one(instr, list(operand_values), _Context(False))
    return _materialize(_external(instr.shape, value))


def evaluate_computation(comp: Computation, args: list):
    """Evaluate a computation on argument values; returns an array or a tuple of values."""
    return _external(comp.root.shape, _evaluate(comp, list(args), batched=False))


def evaluate_module(module: Module, args: list) -> list[np.ndarray]:
    """Run the module's entry computation; a tuple root is flattened into its leaves.

    Arguments are checked against the entry parameters' shapes (count, dims and a dtype the
    value converts to without loss of kind).
    """
    entry = module.entry
    params = entry.parameters
    if len(args) != len(params):
        raise EvaluatorError(f"module {module.name} takes {len(params)} arguments "
                             f"({', '.join(str(p.shape) for p in params)}), got {len(args)}")
    checked = []
    for i, (param, arg) in enumerate(zip(params, args)):
        if param.shape.is_tuple:
            checked.append(arg)
            continue
        arr = np.asarray(arg)
        if arr.shape != param.shape.dims:
            raise EvaluatorError(f"argument {i} ({param.name}) has shape {arr.shape}, "
                                 f"expected {param.shape}")
        if arr.dtype != param.shape.dtype:
            if not np.can_cast(arr.dtype, param.shape.dtype, casting="same_kind"):
                raise EvaluatorError(f"argument {i} ({param.name}) has dtype {arr.dtype}, "
                                     f"expected {param.shape}")
            arr = arr.astype(param.shape.dtype)
        checked.append(arr)
    result = _external(entry.root.shape, _evaluate(entry, checked, batched=False))
    outs = [_materialize(v) for v in flatten_value(result)]
    # Outputs never alias the caller's arguments.
    return [o.copy() if any(np.may_share_memory(o, a) for a in checked
                            if isinstance(a, np.ndarray)) else o for o in outs]


# ---------------------------------------------------------------------------------------------
# Opcode table. Each implementation: (instr, operand values, context) -> value.


def _parameter(instr, ops, ctx):
    raise EvaluatorError(f"{instr.name}: parameter evaluated outside a computation")


def _constant(instr, ops, ctx):
    if instr.literal is None:
        raise EvaluatorError(f"{instr.name}: constant without a literal")
    return np.asarray(instr.literal)


def _unary(fn):
    return lambda instr, ops, ctx: fn(np.asarray(ops[0]))


def _binary(fn):
    return lambda instr, ops, ctx: fn(np.asarray(ops[0]), np.asarray(ops[1]))


def _compare(instr, ops, ctx):
    return ew.compare(ops[0], ops[1], instr.attrs.get("direction", "EQ"),
                      instr.attrs.get("comparison_type"))


def _select(instr, ops, ctx):
    return np.where(ops[0], ops[1], ops[2])


def _clamp(instr, ops, ctx):
    return ew.clamp(*(np.asarray(v) for v in ops))


def _convert(instr, ops, ctx):
    return ew.convert(np.asarray(ops[0]), instr.shape.dtype)


def _bitcast_convert(instr, ops, ctx):
    x = np.asarray(ops[0])
    if instr.operands[0].shape.element_type == "bf16":  # float32 storage -> its 16 bits
        x = x.astype(instr.operands[0].shape.dtype)
    return ew.bitcast_convert(x, instr.shape.dtype)


def _reduce_precision(instr, ops, ctx):
    x = np.asarray(ops[0])
    dtype = instr.operands[0].shape.dtype
    if dtype.itemsize == 1 and x.dtype != dtype:  # 8-bit floats arrive widened to float32
        x = x.astype(dtype)
    return ew.reduce_precision(x, int(instr.attrs["exponent_bits"]),
                               int(instr.attrs["mantissa_bits"]))


def _tuple(instr, ops, ctx):
    return tuple(ops)


def _get_tuple_element(instr, ops, ctx):
    return ops[0][int(instr.attrs["index"])]


def _call(instr, ops, ctx):
    comp = instr.called.get("to_apply") or instr.called.get("calls")
    if ctx.batched:
        return _evaluate(comp, ops, batched=True)
    return ctx.call(comp, ops)


def _fusion(instr, ops, ctx):
    comp = instr.called["calls"]
    if ctx.batched:
        return _evaluate(comp, ops, batched=True)
    return ctx.call(comp, ops)


def _map(instr, ops, ctx):
    outs = ctx.call_elementwise(instr.called["to_apply"], ops)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _while(instr, ops, ctx):
    cond, body = instr.called["condition"], instr.called["body"]
    state = ops[0]
    while bool(np.asarray(ctx.call(cond, [state]))):
        state = ctx.call(body, [state])
    return state


def _conditional(instr, ops, ctx):
    selector = np.asarray(ops[0])
    if "branch_computations" in instr.called:
        branches = list(instr.called["branch_computations"])
    else:
        branches = [instr.called["true_computation"], instr.called["false_computation"]]
    if selector.dtype == np.bool_:
        index = 0 if bool(selector) else 1
    else:
        index = int(selector)
        if index < 0 or index >= len(branches):
            index = len(branches) - 1  # XLA runs the last branch for out-of-range indices
    return ctx.call(branches[index], [ops[1 + index]])


def _custom_call(instr, ops, ctx):
    target = instr.attrs.get("custom_call_target", "")
    fn = custom_call_impl(target)
    if fn is None:
        # One entry per LAPACK routine: lapack_?potrf_ffi stands for the s/d/c/z variants.
        names = {re.sub(r"^lapack_[sdcz]", "lapack_?", t) for t in _CUSTOM_CALLS}
        known = ", ".join(sorted(names) + [p + "*" for p in _CUSTOM_CALL_PREFIXES])
        raise EvaluatorError(f"{instr.name}: custom-call target '{target}' has no evaluator "
                             f"implementation (registered targets: {known}); use "
                             f"minijax.compiler.evaluator.register_custom_call")
    return fn(ops, instr)


def _identity(instr, ops, ctx):
    return ops[0]


def _after_all(instr, ops, ctx):
    return ()


OPCODES: dict[str, Callable] = {
    "parameter": _parameter,
    "constant": _constant,
    "compare": _compare,
    "select": _select,
    "clamp": _clamp,
    "convert": _convert,
    "bitcast-convert": _bitcast_convert,
    "reduce-precision": _reduce_precision,
    "tuple": _tuple,
    "get-tuple-element": _get_tuple_element,
    "call": _call,
    "fusion": _fusion,
    "map": _map,
    "while": _while,
    "conditional": _conditional,
    "custom-call": _custom_call,
    "optimization-barrier": _identity,
    "add-dependency": _identity,
    "after-all": _after_all,
}
OPCODES.update({name: _unary(fn) for name, fn in ew.UNARY.items()})
OPCODES.update({name: _binary(fn) for name, fn in ew.BINARY.items()})


def _copy(instr, ops, ctx):
    """copy of an array or of a (nested) tuple: fresh arrays with the same values."""
    def fresh(v):
        return tuple(fresh(x) for x in v) if isinstance(v, tuple) else np.array(v, copy=True)
    return fresh(ops[0])


OPCODES["copy"] = _copy


def register_opcodes(table: dict[str, Callable]) -> None:
    """Add an opcode family's implementations (opcode -> fn(instr, operands, ctx))."""
    OPCODES.update(table)


def has_implementation(opcode: str) -> bool:
    """Whether the evaluator runs `opcode` (opcode table names or their aliases)."""
    return opcode in OPCODES
