"""Algebraic simplification as a table of local rewrite rules.

Each rule looks at one instruction (and, usually, its operands) and either returns a
simpler instruction computing the same value or None. The table `RULES` maps an opcode to
its rules; the pass walks every computation in program order, applies the first rule that
fires, points all users at the replacement, and repeats sweeps until nothing changes (or
MAX_SWEEPS). Instructions left unused are deleted at the end of each sweep.

A rule receives a `Rewriter`, through which it creates any new instructions it needs; they
are inserted just before the instruction being rewritten. Every replacement must have the
same element type and dims as the original (the driver checks).

To add a rule: write a function `(instr, rw) -> Instruction | None` with a docstring that
states the identity, and list it under its opcode in RULES.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from minijax.compiler.hlo.ir import Computation, Instruction, Module, Shape
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.opcodes import SIDE_EFFECTING
from minijax.compiler.passes.utils import (
    NameUniquer,
    is_constant_equal,
    make_constant,
    optimizable_computations,
    reducer_opcode,
    remove_dead,
    replace_instruction,
    same_array_shape,
    scalar_constant_value,
)

MAX_SWEEPS = 8
_INTEGRAL = {"pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"}


class Rewriter:
    """Creates new instructions for a rule, placed just before the one being rewritten."""

    def __init__(self, comp: Computation, names: NameUniquer):
        self.comp = comp
        self.names = names
        self.anchor: Instruction | None = None

    def emit(self, opcode: str, shape: Shape, operands, **attrs) -> Instruction:
        instr = Instruction(opcode, shape, list(operands), attrs=attrs,
                            name=self.names.fresh(opcode))
        if self.anchor is not None:
            instr.metadata = dict(self.anchor.metadata)
        self.comp.instructions.insert(self.comp.instructions.index(self.anchor), instr)
        return instr

    def constant(self, value, shape: Shape) -> Instruction:
        """`value` in every element of `shape`: a scalar constant, broadcast if needed."""
        scalar = make_constant(value, Shape(shape.element_type, ()), self.names.fresh("constant"))
        self.comp.instructions.insert(self.comp.instructions.index(self.anchor), scalar)
        if not shape.dims:
            return scalar
        return self.emit("broadcast", _plain(shape), [scalar], dimensions=())

    def reshape(self, x: Instruction, dims) -> Instruction:
        if tuple(x.shape.dims) == tuple(dims):
            return x
        return self.emit("reshape", x.shape.with_dims(dims), [x])

    def transpose(self, x: Instruction, perm) -> Instruction:
        perm = tuple(perm)
        if perm == tuple(range(len(perm))):
            return x
        dims = [x.shape.dims[p] for p in perm]
        return self.emit("transpose", x.shape.with_dims(dims), [x], dimensions=perm)


def _plain(shape: Shape) -> Shape:
    return Shape(shape.element_type, tuple(shape.dims))


# ----------------------------------------------------------------------------------------
# Arithmetic identities
# ----------------------------------------------------------------------------------------

def _other_operand_if_identity(instr, identity):
    """For a commutative op: the operand beside a constant `identity`, else None."""
    x, y = instr.operands
    if is_constant_equal(y, identity):
        return x
    if is_constant_equal(x, identity):
        return y
    return None


def add_zero(instr, rw):
    """x + 0 -> x and 0 + x -> x."""
    return _other_operand_if_identity(instr, 0)


def subtract_zero(instr, rw):
    """x - 0 -> x."""
    x, y = instr.operands
    return x if is_constant_equal(y, 0) else None


def subtract_self_int(instr, rw):
    """x - x -> 0 for integers (for floats, inf - inf is NaN, so it is not an identity)."""
    x, y = instr.operands
    if x is y and instr.shape.element_type in _INTEGRAL:
        return rw.constant(0, instr.shape)
    return None


def multiply_one(instr, rw):
    """x * 1 -> x and 1 * x -> x."""
    return _other_operand_if_identity(instr, 1)


def multiply_zero_int(instr, rw):
    """x * 0 -> 0 for integers (for floats, inf * 0 and NaN * 0 are NaN)."""
    x, y = instr.operands
    if instr.shape.element_type in _INTEGRAL and (is_constant_equal(x, 0)
                                                  or is_constant_equal(y, 0)):
        return rw.constant(0, instr.shape)
    return None


def divide_one(instr, rw):
    """x / 1 -> x."""
    x, y = instr.operands
    return x if is_constant_equal(y, 1) else None


def idempotent_self(instr, rw):
    """max(x, x), min(x, x), and(x, x), or(x, x) -> x."""
    x, y = instr.operands
    return x if x is y else None


def double_negation(instr, rw):
    """-(-x) -> x, and not(not(x)) -> x."""
    (x,) = instr.operands
    if x.opcode == instr.opcode:
        return x.operands[0]
    return None


# ----------------------------------------------------------------------------------------
# Shape-changing ops: reshape, transpose, broadcast
# ----------------------------------------------------------------------------------------

def reshape_same_shape(instr, rw):
    """reshape(x) to x's own shape -> x (also for bitcast)."""
    (x,) = instr.operands
    return x if same_array_shape(x.shape, instr.shape) else None


def reshape_of_reshape(instr, rw):
    """reshape(reshape(x)) -> reshape(x): only the final dims matter in row-major order."""
    (x,) = instr.operands
    if x.opcode == "reshape":
        return rw.reshape(x.operands[0], instr.shape.dims)
    return None


def reshape_of_scalar_broadcast(instr, rw):
    """reshape(broadcast(scalar)) -> broadcast(scalar) straight to the reshape's dims."""
    (x,) = instr.operands
    if x.opcode == "broadcast" and x.operands[0].shape.rank == 0:
        return rw.emit("broadcast", _plain(instr.shape), [x.operands[0]], dimensions=())
    return None


def transpose_identity(instr, rw):
    """transpose(x, {0,1,..,n-1}) -> x."""
    perm = tuple(instr.attrs["dimensions"])
    return instr.operands[0] if perm == tuple(range(len(perm))) else None


def transpose_of_transpose(instr, rw):
    """transpose(transpose(x, p), q) -> transpose(x, r) with r[i] = p[q[i]]."""
    (x,) = instr.operands
    if x.opcode != "transpose":
        return None
    p, q = x.attrs["dimensions"], instr.attrs["dimensions"]
    return rw.transpose(x.operands[0], [p[i] for i in q])


def broadcast_identity(instr, rw):
    """broadcast(x) that adds no dims and keeps their order -> x."""
    (x,) = instr.operands
    dims = tuple(instr.attrs.get("dimensions", ()))
    if same_array_shape(x.shape, instr.shape) and dims == tuple(range(x.shape.rank)):
        return x
    return None


def broadcast_of_broadcast(instr, rw):
    """broadcast(broadcast(x, a), b) -> broadcast(x, c) with c[i] = b[a[i]]."""
    (x,) = instr.operands
    if x.opcode != "broadcast":
        return None
    inner, outer = x.attrs.get("dimensions", ()), instr.attrs.get("dimensions", ())
    return rw.emit("broadcast", _plain(instr.shape), [x.operands[0]],
                   dimensions=tuple(outer[i] for i in inner))


# ----------------------------------------------------------------------------------------
# convert
# ----------------------------------------------------------------------------------------

_INT_BITS = {"s8": 8, "s16": 16, "s32": 32, "s64": 64}
_UINT_BITS = {"u8": 8, "u16": 16, "u32": 32, "u64": 64}
_FLOAT_MANTISSA = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}
_FLOAT_ORDER = {"bf16": ("f32", "f64"), "f16": ("f32", "f64"), "f32": ("f64",)}


def is_exact_conversion(src: str, dst: str) -> bool:
    """True if converting src -> dst loses nothing (every src value is a dst value)."""
    if src == dst or src == "pred":
        return src == dst or dst in _INTEGRAL or dst in _FLOAT_MANTISSA
    if src in _FLOAT_ORDER:
        return dst in _FLOAT_ORDER[src]
    bits = _INT_BITS.get(src) or _UINT_BITS.get(src)
    if bits is None:
        return False
    if dst in _FLOAT_MANTISSA:
        return bits <= _FLOAT_MANTISSA[dst]
    if src in _INT_BITS:
        return dst in _INT_BITS and _INT_BITS[dst] >= bits
    return (dst in _UINT_BITS and _UINT_BITS[dst] >= bits) or (
        dst in _INT_BITS and _INT_BITS[dst] > bits)


def convert_same_type(instr, rw):
    """convert(x) to x's own element type -> x."""
    (x,) = instr.operands
    return x if same_array_shape(x.shape, instr.shape) else None


def convert_of_exact_convert(instr, rw):
    """convert(convert(x, A->B), B->C) -> convert(x, A->C) when A->B is exact (widening)."""
    (mid,) = instr.operands
    if mid.opcode != "convert":
        return None
    x = mid.operands[0]
    if not is_exact_conversion(x.shape.element_type, mid.shape.element_type):
        return None
    if x.shape.element_type == instr.shape.element_type:
        return x
    return rw.emit("convert", _plain(instr.shape), [x])


# ----------------------------------------------------------------------------------------
# slice, concatenate, pad
# ----------------------------------------------------------------------------------------

def _slice_config(instr):
    return [tuple(s) for s in instr.attrs["slice"]]


def full_slice(instr, rw):
    """slice(x) that keeps every element -> x."""
    (x,) = instr.operands
    if all(start == 0 and limit == d and stride == 1
           for (start, limit, stride), d in zip(_slice_config(instr), x.shape.dims)):
        return x
    return None


def slice_of_slice(instr, rw):
    """slice(slice(x, a), b) -> slice(x, c): start = a.start + b.start * a.stride and
    stride = a.stride * b.stride, per dimension."""
    (mid,) = instr.operands
    if mid.opcode != "slice":
        return None
    config = []
    for (a0, _, ast), (b0, _, bst), n in zip(_slice_config(mid), _slice_config(instr),
                                              instr.shape.dims):
        start, stride = a0 + b0 * ast, ast * bst
        limit = start + (n - 1) * stride + 1 if n > 0 else start
        config.append((start, limit, stride))
    return rw.emit("slice", _plain(instr.shape), [mid.operands[0]], slice=tuple(config))


def _adjacent(a: Instruction, b: Instruction, axis: int) -> bool:
    """True if slices a and b of the same array touch along `axis` (a just before b) and
    cut the other dims identically."""
    if a.opcode != "slice" or b.opcode != "slice" or a.operands[0] is not b.operands[0]:
        return False
    sa, sb = _slice_config(a), _slice_config(b)
    if sa[axis][2] != 1 or sb[axis][2] != 1 or sa[axis][1] != sb[axis][0]:
        return False
    return all(sa[d] == sb[d] for d in range(len(sa)) if d != axis)


def concat_of_adjacent_slices(instr, rw):
    """concatenate(slice(x, [a:b]), slice(x, [b:c])) -> slice(x, [a:c]) along the
    concatenated axis; runs of adjacent slices among other operands merge too."""
    axis = instr.attrs["dimensions"][0]
    merged: list[Instruction] = []
    changed = False
    for op in instr.operands:
        if merged and _adjacent(merged[-1], op, axis):
            prev = merged[-1]
            config = _slice_config(prev)
            config[axis] = (config[axis][0], _slice_config(op)[axis][1], 1)
            dims = list(prev.shape.dims)
            dims[axis] += op.shape.dims[axis]
            merged[-1] = rw.emit("slice", prev.shape.with_dims(dims), [prev.operands[0]],
                                 slice=tuple(config))
            changed = True
        else:
            merged.append(op)
    if not changed:
        return None
    if len(merged) == 1:
        return merged[0]
    return rw.emit("concatenate", _plain(instr.shape), merged, dimensions=(axis,))


def concat_single_operand(instr, rw):
    """concatenate(x) -> x."""
    return instr.operands[0] if len(instr.operands) == 1 else None


def pad_nothing(instr, rw):
    """pad(x, v) with all-zero padding config -> x."""
    x = instr.operands[0]
    if all(tuple(p) == (0, 0, 0) for p in instr.attrs["padding"]):
        return x
    return None


# ----------------------------------------------------------------------------------------
# reduce, select, tuples
# ----------------------------------------------------------------------------------------

def _is_identity_init(init: Instruction, reducer: str, element_type: str) -> bool:
    if reducer == "add":
        return is_constant_equal(init, 0)
    value = scalar_constant_value(init)
    if value is None:
        return False
    dtype = np.dtype(Shape(element_type).dtype)
    is_float = element_type.startswith(("f", "bf"))  # bf16 and the f8 types too
    if reducer == "maximum":
        lowest = -np.inf if is_float else np.iinfo(dtype).min
        return bool(value == lowest)
    if reducer == "minimum":
        highest = np.inf if is_float else np.iinfo(dtype).max
        return bool(value == highest)
    return False


def reduce_of_broadcast(instr, rw):
    """Reducing only dims that a broadcast added: max/min give the broadcast operand back,
    sum gives it times the number of copies. The remaining added dims are re-broadcast."""
    if len(instr.operands) != 2 or instr.shape.is_tuple:
        return None
    b, init = instr.operands
    reducer = reducer_opcode(instr.called["to_apply"])
    if b.opcode != "broadcast" or reducer not in ("add", "maximum", "minimum"):
        return None
    if instr.shape.element_type == "pred" or not _is_identity_init(
            init, reducer, instr.shape.element_type):
        return None
    kept = tuple(b.attrs.get("dimensions", ()))
    reduced = set(instr.attrs["dimensions"])
    copies = math.prod(b.shape.dims[d] for d in reduced)
    if reduced & set(kept) or copies == 0:
        return None
    x = b.operands[0]
    if reducer == "add" and copies != 1:
        x = rw.emit("multiply", _plain(x.shape), [x, rw.constant(copies, x.shape)])
    remaining = [d for d in range(b.shape.rank) if d not in reduced]
    position = {d: k for k, d in enumerate(remaining)}
    return rw.emit("broadcast", _plain(instr.shape), [x],
                   dimensions=tuple(position[d] for d in kept))


def select_constant_predicate(instr, rw):
    """select(true, a, b) -> a, select(false, a, b) -> b, and select(p, a, a) -> a."""
    pred, on_true, on_false = instr.operands
    if on_true is on_false:
        return on_true
    value = scalar_constant_value(pred)
    if value is None:
        return None
    return on_true if bool(value) else on_false


def tuple_element_of_tuple(instr, rw):
    """get-tuple-element(tuple(a, b, ...), i) -> the i-th operand."""
    (t,) = instr.operands
    if t.opcode == "tuple":
        return t.operands[instr.attrs["index"]]
    return None


Rule = Callable[[Instruction, Rewriter], "Instruction | None"]

RULES: dict[str, list[Rule]] = {
    "add": [add_zero],
    "subtract": [subtract_zero, subtract_self_int],
    "multiply": [multiply_one, multiply_zero_int],
    "divide": [divide_one],
    "maximum": [idempotent_self],
    "minimum": [idempotent_self],
    "and": [idempotent_self],
    "or": [idempotent_self],
    "negate": [double_negation],
    "not": [double_negation],
    "reshape": [reshape_same_shape, reshape_of_reshape, reshape_of_scalar_broadcast],
    "bitcast": [reshape_same_shape],
    "transpose": [transpose_identity, transpose_of_transpose],
    "broadcast": [broadcast_identity, broadcast_of_broadcast],
    "convert": [convert_same_type, convert_of_exact_convert],
    "slice": [full_slice, slice_of_slice],
    "concatenate": [concat_single_operand, concat_of_adjacent_slices],
    "pad": [pad_nothing],
    "reduce": [reduce_of_broadcast],
    "select": [select_constant_predicate],
    "get-tuple-element": [tuple_element_of_tuple],
}


class AlgebraicSimplifier(Pass):
    """Applies RULES until a fixed point. `log` lists each rewrite as "rule: old -> new"."""

    name = "algebraic-simplifier"

    def __init__(self, rules: dict[str, list[Rule]] | None = None):
        self.rules = RULES if rules is None else rules
        self.log: list[str] = []

    def run(self, module: Module) -> bool:
        names = NameUniquer(module)
        changed = False
        for comp in optimizable_computations(module):
            for _ in range(MAX_SWEEPS):
                if not self._sweep(comp, names):
                    break
                changed = True
                remove_dead(comp, keep=lambda i: i.opcode in SIDE_EFFECTING)
        return changed

    def _sweep(self, comp: Computation, names: NameUniquer) -> bool:
        rw = Rewriter(comp, names)
        changed = False
        for instr in list(comp.instructions):
            for rule in self.rules.get(instr.opcode, ()):
                rw.anchor = instr
                new = rule(instr, rw)
                if new is None or new is instr:
                    continue
                if not same_array_shape(new.shape, instr.shape):
                    raise AssertionError(f"rule {rule.__name__} changed the shape of "
                                         f"{instr.name}: {instr.shape} -> {new.shape}")
                self.log.append(f"{rule.__name__}: {instr.name} -> {new.name}")
                replace_instruction(comp, instr, new)
                changed = True
                break
        return changed
