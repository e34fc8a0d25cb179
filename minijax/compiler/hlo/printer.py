"""Print HLO modules, computations and instructions in XLA's HLO text syntax.

The output follows what current XLA prints (names without `%`, computations without a
signature, layouts on every array shape of rank >= 1):

    HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[]}

    region_0.4 {
      Arg_0.5 = f32[] parameter(0)
      Arg_1.6 = f32[] parameter(1)
      ROOT add.7 = f32[] add(Arg_0.5, Arg_1.6)
    }

    ENTRY main.9 {
      ...
    }

`minijax.compiler.hlo.parser.parse_module` reads it back; print -> parse -> print is the
identity.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from minijax.compiler.hlo.element_types import NARROW_ELEMENT_TYPES
from minijax.compiler.hlo.traversal import callees_first

if TYPE_CHECKING:  # ir.py imports this module (Module.__str__)
    from minijax.compiler.hlo.ir import Computation, Instruction, Module, Shape

# Known attributes, in the order they print (after the operand list). Values are Python
# objects (see ir.py); everything else in Instruction.attrs is printed raw.
ATTRIBUTE_ORDER = (
    "index", "iota_dimension", "dimensions", "slice", "dynamic_slice_sizes", "padding",
    "window", "dim_labels", "feature_group_count", "batch_group_count",
    "lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims",
    "offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
    "start_indices_batching_dims", "update_window_dims", "inserted_window_dims",
    "scatter_dims_to_operand_dims", "input_batching_dims", "scatter_indices_batching_dims",
    "index_vector_dim", "slice_sizes", "indices_are_sorted", "unique_indices", "direction",
    "comparison_type", "is_stable", "kind", "custom_call_target", "exponent_bits",
    "mantissa_bits", "distribution",
)
KNOWN_ATTRIBUTES = frozenset(ATTRIBUTE_ORDER)

# Opcodes whose XLA text name differs from minijax's internal name.
TEXT_OPCODE_NAMES = {"optimization-barrier": "opt-barrier"}

# Called-computation keys, in print order.
CALLED_ORDER = ("calls", "to_apply", "condition", "body", "select", "scatter",
                "true_computation", "false_computation", "branch_computations",
                "called_computations")

_INT_LISTS = frozenset((
    "dimensions", "dynamic_slice_sizes", "lhs_batch_dims", "lhs_contracting_dims",
    "rhs_batch_dims", "rhs_contracting_dims", "offset_dims", "collapsed_slice_dims",
    "start_index_map", "operand_batching_dims", "start_indices_batching_dims",
    "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
    "input_batching_dims", "scatter_indices_batching_dims", "slice_sizes",
))
# Integer lists that XLA leaves out when empty.
_OMIT_IF_EMPTY = frozenset((
    "lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims",
    "operand_batching_dims", "start_indices_batching_dims", "input_batching_dims",
    "scatter_indices_batching_dims",
))
_TRUE_FLAGS = frozenset(("indices_are_sorted", "unique_indices", "is_stable"))
_GROUP_COUNTS = frozenset(("feature_group_count", "batch_group_count"))
_QUOTED = frozenset(("custom_call_target",))
# Raw attributes that XLA prints after the metadata.
_AFTER_METADATA = ("backend_config",)


# ----------------------------------------------------------------------------- shapes

def shape_to_text(shape: Shape, print_layout: bool = True) -> str:
    """`f32[4,8]{1,0}`, `s32[]`, `(f32[4]{0}, pred[])`, `token[]`."""
    if shape.is_tuple:
        inner = ", ".join(shape_to_text(s, print_layout) for s in shape.tuple_shapes)
        return f"({inner})"
    text = f"{shape.element_type}[{','.join(str(d) for d in shape.dims)}]"
    if print_layout and shape.rank > 0 and shape.element_type != "token":
        text += "{" + ",".join(str(d) for d in shape.minor_to_major) + "}"
    return text


# ----------------------------------------------------------------------------- literals

def _float_text(value, dtype: np.dtype) -> str:
    """Shortest text that reads back to exactly `value` in `dtype` (XLA spelling)."""
    v = dtype.type(value)
    if math.isnan(float(v)):
        return "-nan" if np.signbit(v) else "nan"
    if math.isinf(float(v)):
        return "-inf" if v < 0 else "inf"
    a = abs(float(v))
    if a != 0 and (a >= 1e16 or a < 1e-4):
        return np.format_float_scientific(v, unique=True, trim="-")
    return np.format_float_positional(v, unique=True, trim="-")


def scalar_to_text(value, element_type: str) -> str:
    """One literal element as XLA prints it (`1.5`, `-inf`, `true`, `(1, 2)`)."""
    if element_type == "pred":
        return "true" if bool(value) else "false"
    if element_type in ("c64", "c128"):
        part = np.dtype(np.float32 if element_type == "c64" else np.float64)
        return f"({_float_text(value.real, part)}, {_float_text(value.imag, part)})"
    if element_type in ("f16", "bf16", "f32", "f64"):
        dt = np.dtype(np.float32) if element_type == "bf16" else np.dtype(element_type.replace(
            "f", "float"))
        return _float_text(value, dt)
    if element_type in NARROW_ELEMENT_TYPES and element_type[0] == "f":
        # Every f8/f4 value is exact in float32, whose shortest text reads back to it.
        return _float_text(float(value), np.dtype(np.float32))
    return str(int(value))


def literal_to_text(value: np.ndarray, element_type: str) -> str:
    """A literal of any rank: `1.5`, `{1, 2}`, `{ { 1, 2 }, { 3, 4 } }`."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        return scalar_to_text(arr[()], element_type)
    if arr.ndim == 1:
        return "{" + ", ".join(scalar_to_text(x, element_type) for x in arr) + "}"

    def nested(a):
        if a.shape[0] == 0 or a.size == 0:
            return "{}"
        if a.ndim == 1:
            return "{ " + ", ".join(scalar_to_text(x, element_type) for x in a) + " }"
        return "{ " + ", ".join(nested(sub) for sub in a) + " }"

    return nested(arr)


# ----------------------------------------------------------------------------- attributes

def _ints(values) -> str:
    return "{" + ",".join(str(int(v)) for v in values) + "}"


def padding_to_text(padding) -> str:
    """`0_0x1_2` or, when any interior padding is nonzero, `0_0_0x1_2_1`."""
    padding = [tuple(p) + (0,) * (3 - len(p)) for p in padding]
    interior = any(p[2] for p in padding)
    return "x".join(f"{lo}_{hi}_{it}" if interior else f"{lo}_{hi}" for lo, hi, it in padding)


def window_to_text(window: dict) -> str:
    """`{size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`."""
    size = tuple(window.get("size", ()))
    if not size:
        return "{}"
    rank = len(size)
    parts = ["size=" + "x".join(str(s) for s in size)]
    stride = tuple(window.get("stride") or (1,) * rank)
    if any(s != 1 for s in stride):
        parts.append("stride=" + "x".join(str(s) for s in stride))
    pad = tuple(tuple(p) for p in (window.get("pad") or ((0, 0),) * rank))
    if any(p != (0, 0) for p in pad):
        parts.append("pad=" + "x".join(f"{lo}_{hi}" for lo, hi in pad))
    for key in ("lhs_dilate", "rhs_dilate"):
        vals = tuple(window.get(key) or (1,) * rank)
        if any(v != 1 for v in vals):
            parts.append(f"{key}=" + "x".join(str(v) for v in vals))
    rev = tuple(window.get("rhs_reversal") or (0,) * rank)
    if any(rev):
        parts.append("rhs_reversal=" + "x".join(str(int(bool(v))) for v in rev))
    return "{" + " ".join(parts) + "}"


def slice_to_text(slices) -> str:
    """`{[0:4], [1:9:2]}` (a stride of 1 is left out, as XLA does)."""
    out = []
    for s in slices:
        start, limit = s[0], s[1]
        stride = s[2] if len(s) > 2 else 1
        out.append(f"[{start}:{limit}]" if stride == 1 else f"[{start}:{limit}:{stride}]")
    return "{" + ", ".join(out) + "}"


def _quote(s: str) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def metadata_to_text(metadata: dict) -> str:
    """`{op_name="..." source_file="..." source_line=12}` (strings quoted, ints bare)."""
    parts = []
    for key, value in metadata.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            parts.append(f"{key}={_quote(value)}")
        else:
            parts.append(f"{key}={int(value)}")
    return "{" + " ".join(parts) + "}"


def _raw_attr_text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)) and all(isinstance(v, (int, np.integer)) for v in value):
        return _ints(value)
    return str(value)


def _known_attr_text(key: str, value) -> str | None:
    """`key=value` for a known attribute, or None when XLA would leave it out."""
    if key in _INT_LISTS:
        if key in _OMIT_IF_EMPTY and not value:
            return None
        return f"{key}={_ints(value)}"
    if key in _TRUE_FLAGS:
        return f"{key}=true" if value else None
    if key in _GROUP_COUNTS:
        return None if value in (None, 1) else f"{key}={int(value)}"
    if key == "comparison_type":
        return None if value is None else f"type={value}"
    if key == "slice":
        return f"slice={slice_to_text(value)}"
    if key == "padding":
        return f"padding={padding_to_text(value)}"
    if key == "window":
        return f"window={window_to_text(value)}"
    if key in _QUOTED:
        return f"{key}={_quote(value)}"
    if value is None:
        return None
    return f"{key}={_raw_attr_text(value)}"


def attributes_to_text(instr: Instruction) -> list[str]:
    """The `key=value` strings that follow an instruction's operand list, in print order."""
    parts = []
    attrs = instr.attrs
    for key in ATTRIBUTE_ORDER:
        if key in attrs:
            text = _known_attr_text(key, attrs[key])
            if text is not None:
                parts.append(text)
    for key in CALLED_ORDER:
        if key in instr.called:
            value = instr.called[key]
            if isinstance(value, (list, tuple)):
                parts.append(f"{key}={{{', '.join(c.name for c in value)}}}")
            else:
                parts.append(f"{key}={value.name}")
    for key, value in attrs.items():
        if key not in KNOWN_ATTRIBUTES and key not in _AFTER_METADATA:
            parts.append(f"{key}={_raw_attr_text(value)}")
    if instr.metadata:
        parts.append(f"metadata={metadata_to_text(instr.metadata)}")
    for key in _AFTER_METADATA:
        if key in attrs:
            parts.append(f"{key}={_raw_attr_text(attrs[key])}")
    return parts


# ----------------------------------------------------------------------------- instructions

def instruction_to_text(instr: Instruction, is_root: bool = False) -> str:
    """One instruction line (without indentation), e.g. `add.3 = f32[4]{0} add(a, b)`."""
    if instr.opcode == "parameter":
        args = str(instr.parameter_number)
    elif instr.opcode == "constant":
        args = "" if instr.literal is None else literal_to_text(instr.literal,
                                                                instr.shape.element_type)
    else:
        args = ", ".join(op.name for op in instr.operands)
    opcode = TEXT_OPCODE_NAMES.get(instr.opcode, instr.opcode)
    text = f"{instr.name} = {shape_to_text(instr.shape)} {opcode}({args})"
    attrs = attributes_to_text(instr)
    if attrs:
        text += ", " + ", ".join(attrs)
    return ("ROOT " + text) if is_root else text


def computation_to_text(comp: Computation, is_entry: bool = False) -> str:
    """A computation block: `name {`, indented instructions with ROOT, `}`."""
    lines = [("ENTRY " if is_entry else "") + comp.name + " {"]
    for instr in comp.instructions:
        lines.append("  " + instruction_to_text(instr, is_root=instr is comp.root))
    lines.append("}")
    return "\n".join(lines)


def entry_computation_layout(module: Module) -> str:
    """`{(f32[4]{0}, s32[])->f32[4]{0}}` from the entry's parameters and root."""
    entry = module.entry
    params = ", ".join(shape_to_text(p.shape) for p in entry.parameters)
    result = shape_to_text(entry.root.shape) if entry.root is not None else "()"
    return f"{{({params})->{result}}}"


def _print_order(module: Module) -> list[Computation]:
    """All computations, callees before callers, the entry last."""
    roots = [c for c in module.computations if c is not module.entry]
    if module.entry is not None:
        roots.append(module.entry)
    return callees_first(roots)


def module_to_text(module: Module) -> str:
    """The whole module in XLA's HLO text syntax (header, then computations)."""
    header = f"HloModule {module.name}"
    if module.entry is not None:
        header += f", entry_computation_layout={entry_computation_layout(module)}"
    for key, value in module.attrs.items():
        if key != "entry_computation_layout":
            header += f", {key}={value}"
    blocks = [header]
    for comp in _print_order(module):
        blocks.append(computation_to_text(comp, is_entry=comp is module.entry))
    return "\n\n".join(blocks) + "\n"
