"""HloBuilder: append instructions to a computation, with shapes inferred.

    comp = Computation("main")
    b = HloBuilder(comp)
    x = b.parameter(0, Shape.array("f32", (4,)))
    y = b.multiply(x, b.broadcast(b.constant(np.float32(2)), (4,), ()))
    s = b.reduce(y, b.constant(np.float32(0)), (0,), scalar_computation("sum", "add", "f32"))
    b.set_root(b.tuple([s]))

Every method takes keyword arguments `metadata=dict(op_name=..., source_file=...,
source_line=...)` and `name=` (a fresh unique name is chosen otherwise). Unary and binary
elementwise opcodes have one method each, named after the opcode with `-` -> `_`
(`b.exponential_minus_one`, `b.shift_left`); Python keywords get a trailing `_`
(`b.and_`, `b.or_`, `b.not_`).
"""

from __future__ import annotations

import keyword

import numpy as np

from minijax.compiler.hlo import ir
from minijax.compiler.hlo.ir import Computation, Instruction, Shape, element_type_of
from minijax.compiler.hlo.shape_inference import (
    BINARY_OPCODES,
    UNARY_OPCODES,
    check_explicit_shape,
    infer_shape,
)

__all__ = ["HloBuilder", "scalar_computation"]


def _et(t) -> str:
    return t if isinstance(t, str) else element_type_of(t)


def _full_window(window: dict, rank: int) -> dict:
    size = tuple(window["size"])
    return {"size": size,
            "stride": tuple(window.get("stride") or (1,) * rank),
            "pad": tuple(tuple(p) for p in (window.get("pad") or ((0, 0),) * rank)),
            "lhs_dilate": tuple(window.get("lhs_dilate") or (1,) * rank),
            "rhs_dilate": tuple(window.get("rhs_dilate") or (1,) * rank),
            **({"rhs_reversal": tuple(window["rhs_reversal"])}
               if window.get("rhs_reversal") else {})}


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


class HloBuilder:
    """Builds instructions into `computation` (a Computation, or a name for a new one)."""

    def __init__(self, computation: Computation | str):
        if isinstance(computation, str):
            computation = Computation(computation)
        self.computation = computation
        self._names = {i.name for i in computation.instructions}
        # Until set_root is called, the root follows the last added instruction (as XLA's
        # builder does) whenever the computation had no root.
        self._auto_root = computation.root is None

    # ------------------------------------------------------------------ core
    def _sync_names(self) -> None:
        # Others may add or remove instructions directly; keep the name set in step.
        if len(self._names) != len(self.computation.instructions):
            self._names = {i.name for i in self.computation.instructions}

    def _fresh_name(self, opcode: str) -> str:
        while True:
            name = f"{opcode}.{next(ir._name_counter)}"
            if name not in self._names:
                return name

    def add_instruction(self, opcode: str, operands=(), attrs=None, called=None,
                        shape: Shape | None = None, *, literal=None, parameter_number=None,
                        metadata=None, name=None) -> Instruction:
        """Append an instruction; its shape is inferred unless given (and then checked)."""
        operands = list(operands)
        attrs = dict(attrs or {})
        called = dict(called or {})
        shapes = [op.shape for op in operands]
        inferred = infer_shape(opcode, shapes, attrs, called)
        if shape is None:
            if inferred is None:
                raise ValueError(f"{opcode}: the result shape must be given explicitly")
            shape = inferred
        elif inferred is None:
            check_explicit_shape(opcode, shape, shapes, attrs, literal)
        self._sync_names()
        if name is None or name in self._names:
            name = self._fresh_name(opcode) if name is None else self._unique(name)
        instr = Instruction(opcode, shape, operands, attrs, called, name=name, literal=literal,
                            parameter_number=parameter_number, metadata=dict(metadata or {}))
        self._names.add(name)
        self.computation.add(instr)
        if self._auto_root:
            self.computation.root = instr
        return instr

    def _unique(self, name: str) -> str:
        i = 1
        while f"{name}.{i}" in self._names:
            i += 1
        return f"{name}.{i}"

    def set_root(self, instr: Instruction) -> Instruction:
        """Make `instr` the computation's root."""
        self._auto_root = False
        self.computation.root = instr
        return instr

    # ------------------------------------------------------------------ leaves
    def parameter(self, index: int, shape: Shape, name=None, *, metadata=None) -> Instruction:
        """`parameter(index)` of the given shape."""
        return self.add_instruction("parameter", (), shape=shape, parameter_number=index,
                                    metadata=metadata, name=name)

    def constant(self, value, dtype=None, *, metadata=None, name=None) -> Instruction:
        """A constant of any rank; `dtype` (numpy dtype or XLA type name) defaults to the
        value's dtype."""
        et = _et(dtype) if dtype is not None else element_type_of(np.asarray(value).dtype)
        arr = np.asarray(value, dtype=ir.numpy_dtype(et))
        return self.add_instruction("constant", (), shape=Shape(et, arr.shape), literal=arr,
                                    metadata=metadata, name=name)

    def iota(self, shape: Shape, iota_dimension: int, *, metadata=None, name=None):
        """`iota(), iota_dimension=d`."""
        return self.add_instruction("iota", (), {"iota_dimension": iota_dimension}, shape=shape,
                                    metadata=metadata, name=name)

    # ------------------------------------------------------------------ elementwise
    def unary(self, opcode: str, x, *, metadata=None, name=None) -> Instruction:
        """Any unary elementwise opcode."""
        return self.add_instruction(opcode, [x], metadata=metadata, name=name)

    def binary(self, opcode: str, x, y, *, metadata=None, name=None) -> Instruction:
        """Any binary elementwise opcode."""
        return self.add_instruction(opcode, [x, y], metadata=metadata, name=name)

    def compare(self, x, y, direction: str, comparison_type=None, *, metadata=None,
                name=None):
        """`compare(x, y), direction=LT[, type=TOTALORDER]` -> pred."""
        attrs = {"direction": direction}
        if comparison_type is not None:
            attrs["comparison_type"] = comparison_type
        return self.add_instruction("compare", [x, y], attrs, metadata=metadata, name=name)

    def select(self, pred, on_true, on_false, *, metadata=None, name=None):
        return self.add_instruction("select", [pred, on_true, on_false], metadata=metadata,
                                    name=name)

    def clamp(self, lo, x, hi, *, metadata=None, name=None):
        return self.add_instruction("clamp", [lo, x, hi], metadata=metadata, name=name)

    def convert(self, x, element_type, *, metadata=None, name=None):
        """Convert to another element type (numpy dtype or XLA name)."""
        return self.add_instruction("convert", [x], shape=Shape(_et(element_type),
                                                                x.shape.dims),
                                    metadata=metadata, name=name)

    def bitcast_convert(self, x, element_type, *, metadata=None, name=None):
        """Reinterpret the bits (same element size)."""
        return self.add_instruction("bitcast-convert", [x],
                                    shape=Shape(_et(element_type), x.shape.dims),
                                    metadata=metadata, name=name)

    def reduce_precision(self, x, exponent_bits, mantissa_bits, *, metadata=None, name=None):
        return self.add_instruction("reduce-precision", [x], {
            "exponent_bits": exponent_bits, "mantissa_bits": mantissa_bits},
            metadata=metadata, name=name)

    def map(self, operands, computation, dimensions=None, *, metadata=None, name=None):
        ops = _as_list(operands)
        dims = tuple(range(ops[0].shape.rank)) if dimensions is None else tuple(dimensions)
        return self.add_instruction("map", ops, {"dimensions": dims},
                                    {"to_apply": computation}, metadata=metadata, name=name)

    # ------------------------------------------------------------------ shape ops
    def broadcast(self, x, out_dims, dimensions, *, metadata=None, name=None):
        """`broadcast(x), dimensions={..}`: operand dim i becomes result dim dimensions[i]."""
        return self.add_instruction("broadcast", [x], {"dimensions": tuple(dimensions)},
                                    shape=Shape(x.shape.element_type, tuple(out_dims)),
                                    metadata=metadata, name=name)

    def reshape(self, x, dims, *, metadata=None, name=None):
        return self.add_instruction("reshape", [x], shape=Shape(x.shape.element_type,
                                                                tuple(dims)),
                                    metadata=metadata, name=name)

    def transpose(self, x, permutation, *, metadata=None, name=None):
        return self.add_instruction("transpose", [x], {"dimensions": tuple(permutation)},
                                    metadata=metadata, name=name)

    def reverse(self, x, dimensions, *, metadata=None, name=None):
        return self.add_instruction("reverse", [x], {"dimensions": tuple(dimensions)},
                                    metadata=metadata, name=name)

    def slice(self, x, starts, limits, strides=None, *, metadata=None, name=None):
        strides = strides or (1,) * len(starts)
        return self.add_instruction("slice", [x], {"slice": tuple(zip(starts, limits,
                                                                      strides))},
                                    metadata=metadata, name=name)

    def dynamic_slice(self, x, start_indices, sizes, *, metadata=None, name=None):
        return self.add_instruction("dynamic-slice", [x, *start_indices],
                                    {"dynamic_slice_sizes": tuple(sizes)},
                                    metadata=metadata, name=name)

    def dynamic_update_slice(self, x, update, start_indices, *, metadata=None, name=None):
        return self.add_instruction("dynamic-update-slice", [x, update, *start_indices],
                                    metadata=metadata, name=name)

    def concatenate(self, operands, dimension, *, metadata=None, name=None):
        return self.add_instruction("concatenate", list(operands), {"dimensions": (dimension,)},
                                    metadata=metadata, name=name)

    def pad(self, x, padding_value, padding, *, metadata=None, name=None):
        """`padding` is one (lo, hi) or (lo, hi, interior) per dimension."""
        pads = tuple((tuple(p) + (0,))[:3] for p in padding)
        return self.add_instruction("pad", [x, padding_value], {"padding": pads},
                                    metadata=metadata, name=name)

    # ------------------------------------------------------------------ reductions
    def reduce(self, operands, init_values, dimensions, computation, *, metadata=None,
               name=None):
        """Variadic reduce; returns a tuple-shaped instruction when there are several."""
        ops, inits = _as_list(operands), _as_list(init_values)
        return self.add_instruction("reduce", ops + inits, {"dimensions": tuple(dimensions)},
                                    {"to_apply": computation}, metadata=metadata, name=name)

    def reduce_window(self, operands, init_values, window: dict, computation, *,
                      metadata=None, name=None):
        ops, inits = _as_list(operands), _as_list(init_values)
        w = _full_window(window, ops[0].shape.rank)
        return self.add_instruction("reduce-window", ops + inits, {"window": w},
                                    {"to_apply": computation}, metadata=metadata, name=name)

    def select_and_scatter(self, operand, source, init_value, window: dict, select, scatter,
                           *, metadata=None, name=None):
        w = _full_window(window, operand.shape.rank)
        return self.add_instruction("select-and-scatter", [operand, source, init_value],
                                    {"window": w}, {"select": select, "scatter": scatter},
                                    metadata=metadata, name=name)

    # ------------------------------------------------------------------ contractions
    def dot(self, x, y, lhs_contracting=(), rhs_contracting=(), lhs_batch=(), rhs_batch=(),
            preferred_element_type=None, *, metadata=None, name=None):
        """Result dims: batch dims, then lhs free dims, then rhs free dims."""
        attrs = {"lhs_batch_dims": tuple(lhs_batch), "lhs_contracting_dims":
                 tuple(lhs_contracting), "rhs_batch_dims": tuple(rhs_batch),
                 "rhs_contracting_dims": tuple(rhs_contracting)}
        shape = infer_shape("dot", [x.shape, y.shape], attrs)
        if preferred_element_type is not None:
            shape = shape.with_type(_et(preferred_element_type))
        return self.add_instruction("dot", [x, y], attrs, shape=shape, metadata=metadata,
                                    name=name)

    def convolution(self, lhs, rhs, window: dict, dim_labels: str, feature_group_count=1,
                    batch_group_count=1, preferred_element_type=None, *, metadata=None,
                    name=None):
        """`convolution(lhs, rhs), window={..}, dim_labels=b01f_01io->b01f`."""
        attrs = {"window": _full_window(window, lhs.shape.rank - 2), "dim_labels": dim_labels,
                 "feature_group_count": feature_group_count,
                 "batch_group_count": batch_group_count}
        shape = infer_shape("convolution", [lhs.shape, rhs.shape], attrs)
        if preferred_element_type is not None:
            shape = shape.with_type(_et(preferred_element_type))
        return self.add_instruction("convolution", [lhs, rhs], attrs, shape=shape,
                                    metadata=metadata, name=name)

    # ------------------------------------------------------------------ indexing
    def gather(self, operand, indices, offset_dims, collapsed_slice_dims, start_index_map,
               index_vector_dim, slice_sizes, indices_are_sorted=False,
               operand_batching_dims=(), start_indices_batching_dims=(), *, metadata=None,
               name=None):
        attrs = {"offset_dims": tuple(offset_dims),
                 "collapsed_slice_dims": tuple(collapsed_slice_dims),
                 "start_index_map": tuple(start_index_map),
                 "operand_batching_dims": tuple(operand_batching_dims),
                 "start_indices_batching_dims": tuple(start_indices_batching_dims),
                 "index_vector_dim": index_vector_dim, "slice_sizes": tuple(slice_sizes),
                 "indices_are_sorted": indices_are_sorted}
        return self.add_instruction("gather", [operand, indices], attrs, metadata=metadata,
                                    name=name)

    def scatter(self, operands, indices, updates, computation, update_window_dims,
                inserted_window_dims, scatter_dims_to_operand_dims, index_vector_dim,
                indices_are_sorted=False, unique_indices=False, input_batching_dims=(),
                scatter_indices_batching_dims=(), *, metadata=None, name=None):
        attrs = {"update_window_dims": tuple(update_window_dims),
                 "inserted_window_dims": tuple(inserted_window_dims),
                 "scatter_dims_to_operand_dims": tuple(scatter_dims_to_operand_dims),
                 "input_batching_dims": tuple(input_batching_dims),
                 "scatter_indices_batching_dims": tuple(scatter_indices_batching_dims),
                 "index_vector_dim": index_vector_dim,
                 "indices_are_sorted": indices_are_sorted, "unique_indices": unique_indices}
        ops = _as_list(operands) + [indices] + _as_list(updates)
        return self.add_instruction("scatter", ops, attrs, {"to_apply": computation},
                                    metadata=metadata, name=name)

    def sort(self, operands, dimension, comparator, is_stable=False, *, metadata=None,
             name=None):
        return self.add_instruction("sort", _as_list(operands), {
            "dimensions": (dimension,), "is_stable": is_stable}, {"to_apply": comparator},
            metadata=metadata, name=name)

    # ------------------------------------------------------------------ tuples, control
    def tuple(self, elements, *, metadata=None, name=None):
        return self.add_instruction("tuple", list(elements), metadata=metadata, name=name)

    def get_tuple_element(self, t, index: int, *, metadata=None, name=None):
        return self.add_instruction("get-tuple-element", [t], {"index": index},
                                    metadata=metadata, name=name)

    def call(self, operands, computation, *, metadata=None, name=None):
        return self.add_instruction("call", list(operands), called={"to_apply": computation},
                                    metadata=metadata, name=name)

    def fusion(self, operands, computation, kind="kLoop", *, metadata=None, name=None):
        """`fusion(...), kind=kLoop, calls=computation`."""
        return self.add_instruction("fusion", list(operands), {"kind": kind},
                                    {"calls": computation}, metadata=metadata, name=name)

    def while_loop(self, init, condition, body, *, metadata=None, name=None):
        """`while(init), condition=.., body=..`."""
        return self.add_instruction("while", [init], called={"condition": condition,
                                                             "body": body},
                                    metadata=metadata, name=name)

    while_ = while_loop

    def conditional(self, branch_index, operands, branches, *, metadata=None, name=None):
        """With a pred selector and 2 branches: true/false_computation; else
        branch_computations={..} indexed by an s32 selector."""
        branches = list(branches)
        if branch_index.shape.element_type == "pred":
            called = {"true_computation": branches[0], "false_computation": branches[1]}
        else:
            called = {"branch_computations": branches}
        return self.add_instruction("conditional", [branch_index, *operands], called=called,
                                    metadata=metadata, name=name)

    def rng_bit_generator(self, state, shape: Shape, algorithm="rng_default", *,
                          metadata=None, name=None):
        """Result is (new state, random bits of `shape`)."""
        out = Shape.tuple([state.shape, shape])
        return self.add_instruction("rng-bit-generator", [state], {"algorithm": algorithm},
                                    shape=out, metadata=metadata, name=name)

    def custom_call(self, operands, target: str, shape: Shape, *, metadata=None, name=None,
                    **attrs):
        return self.add_instruction("custom-call", list(operands),
                                    {"custom_call_target": target, **attrs}, shape=shape,
                                    metadata=metadata, name=name)

    def after_all(self, tokens=(), *, metadata=None, name=None):
        return self.add_instruction("after-all", list(tokens), metadata=metadata, name=name)

    @staticmethod
    def scalar_computation(name: str, opcode: str, element_type) -> Computation:
        """See the module-level `scalar_computation`."""
        return scalar_computation(name, opcode, element_type)


def _make_unary(opcode):
    def method(self, x, *, metadata=None, name=None):
        return self.add_instruction(opcode, [x], metadata=metadata, name=name)
    method.__doc__ = f"`{opcode}(x)`."
    return method


def _make_binary(opcode):
    def method(self, x, y, *, metadata=None, name=None):
        return self.add_instruction(opcode, [x, y], metadata=metadata, name=name)
    method.__doc__ = f"`{opcode}(x, y)`."
    return method


def _method_name(opcode: str) -> str:
    n = opcode.replace("-", "_")
    return n + "_" if keyword.iskeyword(n) else n


for _op in sorted(UNARY_OPCODES - {"reduce-precision"}):
    setattr(HloBuilder, _method_name(_op), _make_unary(_op))
for _op in sorted(BINARY_OPCODES):
    setattr(HloBuilder, _method_name(_op), _make_binary(_op))


def scalar_computation(name: str, opcode: str, element_type) -> Computation:
    """A two-parameter scalar computation `ROOT r = T[] opcode(p0, p1)`, e.g. the `add`
    reducer for reduce. `opcode` may also be a comparison direction prefixed with
    `compare-` (`compare-LT`), giving a pred-valued comparator."""
    et = _et(element_type)
    comp = Computation(name)
    b = HloBuilder(comp)
    scalar = Shape(et, ())
    x = b.parameter(0, scalar, name=f"{name}.lhs")
    y = b.parameter(1, scalar, name=f"{name}.rhs")
    if opcode.startswith("compare-"):
        root = b.compare(x, y, opcode.split("-", 1)[1], name=f"{name}.root")
    else:
        root = b.binary(opcode, x, y, name=f"{name}.root")
    b.set_root(root)
    return comp
