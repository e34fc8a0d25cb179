"""Parse XLA's HLO text syntax into a `Module` (the inverse of `printer.module_to_text`).

Reads what current XLA and JAX print (`jax.jit(f).lower(*a).as_text(dialect="hlo")`) and
post-optimization dumps: names with or without `%`, computation signatures
`%name (p: f32[4]) -> f32[4] {`, an `HloModule` header with attributes, comments
`/*index=5*/`, layouts with tiling (`{1,0:T(8,128)}`, only minor_to_major is kept), operands
written with their shapes (`add(f32[4] %a, f32[4] %b)`), metadata with any keys, and
unknown attributes (`sharding`, `frontend_attributes`, `backend_config`, ...), which are
kept in `Instruction.attrs` as raw strings so that they print back.
"""

from __future__ import annotations

import re

from minijax.compiler.hlo import opcodes
from minijax.compiler.hlo.ir import Computation, Instruction, Module, Shape, callees_first
from minijax.compiler.hlo.parser_lexer import Cursor, HloParseError
from minijax.compiler.hlo.printer import CALLED_ORDER
from minijax.compiler.hlo.shape_inference import HloShapeError, infer_shape

__all__ = ["parse_module", "parse_computation", "parse_shape", "HloParseError"]

_INT_LIST_KEYS = frozenset((
    "dimensions", "dynamic_slice_sizes", "lhs_batch_dims", "lhs_contracting_dims",
    "rhs_batch_dims", "rhs_contracting_dims", "offset_dims", "collapsed_slice_dims",
    "start_index_map", "operand_batching_dims", "start_indices_batching_dims",
    "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
    "input_batching_dims", "scatter_indices_batching_dims", "slice_sizes", "fft_length",
))
_INT_KEYS = frozenset(("index", "iota_dimension", "index_vector_dim", "feature_group_count",
                       "batch_group_count", "exponent_bits", "mantissa_bits",
                       "feature_index"))
_BOOL_KEYS = frozenset(("indices_are_sorted", "unique_indices", "is_stable"))
_WORD_KEYS = frozenset(("direction", "kind", "dim_labels", "distribution", "fft_type"))
_CALLED_KEYS = frozenset(CALLED_ORDER)
# XLA's text names for opcodes that minijax spells differently inside.
OPCODE_ALIASES = {"opt-barrier": "optimization-barrier"}
_DIRECTIONS = frozenset(("EQ", "NE", "LT", "LE", "GT", "GE"))


def parse_shape(text: str):
    """Parse one shape, e.g. `f32[4,8]{1,0}` or `(f32[], s32[2]{0})`."""
    cur = Cursor(text)
    shape = cur.shape()
    if not cur.at_end():
        raise cur.error("unexpected text after the shape")
    return shape


def parse_module(text: str) -> Module:
    """Parse HLO module text into a Module. Raises HloParseError with line and column."""
    cur = Cursor(text)
    name = "module"
    module_attrs: dict[str, str] = {}
    if cur.keyword_ahead("HloModule"):
        cur.name()
        name = cur.name("the module name")
        while cur.peek(newlines=False) == ",":
            cur.expect(",")
            key = cur.name("a module attribute")
            cur.expect("=")
            module_attrs[key] = cur.raw_value()
    _skip_stack_frame_tables(cur)
    computations: list[Computation] = []
    entry = None
    pending: list[tuple[Instruction, str, list[str], int]] = []
    positions: dict[int, int] = {}
    while not cur.at_end():
        comp, is_entry = _computation(cur, pending, positions)
        if any(c.name == comp.name for c in computations):
            raise cur.error(f"duplicate computation name {comp.name!r}")
        computations.append(comp)
        if is_entry:
            if entry is not None:
                raise cur.error("more than one ENTRY computation")
            entry = comp
    if not computations:
        raise cur.error("no computations in the module")
    by_name = {c.name: c for c in computations}
    for instr, key, names, pos in pending:
        missing = [n for n in names if n not in by_name]
        if missing:
            raise cur.error(f"unknown computation {missing[0]!r} in {key}= of {instr.name}", pos)
        comps = [by_name[n] for n in names]
        instr.called[key] = (comps if key in ("branch_computations", "called_computations")
                             else comps[0])
    module = Module(name, computations, entry if entry is not None else computations[-1])
    _infer_missing_shapes(cur, module, positions)
    module_attrs.pop("entry_computation_layout", None)
    module.attrs = module_attrs
    return module


_STACK_FRAME_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def _skip_stack_frame_tables(cur: Cursor) -> None:
    """Skip the source-location tables XLA prints after the header of optimized modules
    (`FileNames` / `1 "f.py"`, `StackFrames` / `1 {file_location_id=1 ...}`, ...)."""
    while any(cur.keyword_ahead(word) for word in _STACK_FRAME_SECTIONS):
        cur.name()
        while re.match(r"\d", cur.peek()):
            cur.integer()
            if cur.peek() == '"':
                cur.string()
            else:
                cur.raw_value()


def _infer_missing_shapes(cur: Cursor, module: Module, positions: dict) -> None:
    """Give instructions written without a result shape the shape XLA infers for them."""
    for comp in callees_first(module.computations):
        for instr in comp.instructions:
            if instr.shape is not None:
                continue
            pos = positions.get(id(instr))
            try:
                shape = infer_shape(instr.opcode, [op.shape for op in instr.operands],
                                    instr.attrs, instr.called)
            except HloShapeError as e:
                raise cur.error(f"cannot infer the shape of {instr.name}: {e}", pos) from None
            if shape is None:
                raise cur.error(f"cannot infer the shape of {instr.name} ({instr.opcode}); "
                                f"write it, e.g. `{instr.name} = f32[4] {instr.opcode}(...)`",
                                pos)
            instr.shape = shape


def parse_computation(text: str) -> Computation:
    """Parse a single computation that calls no other computation."""
    module = parse_module(text)
    return module.entry


def _computation(cur: Cursor, pending: list, positions: dict) -> tuple[Computation, bool]:
    is_entry = False
    if cur.keyword_ahead("ENTRY"):
        cur.name()
        is_entry = True
    name = cur.name("a computation name")
    signature: dict[int, Shape] = {}
    if cur.peek() == "(":  # signature: (p0: f32[4], ...) -> f32[4]
        cur.expect("(")
        if not cur.accept(")"):
            while True:
                cur.name("a parameter name")
                cur.expect(":")
                signature[len(signature)] = cur.shape()
                if cur.accept(")"):
                    break
                cur.expect(",", "',' or ')' in the signature")
        cur.expect("->")
        cur.shape()
    cur.expect("{", "'{' opening the computation")
    parsed: list[_Parsed] = []
    root = None
    while not cur.accept("}"):
        if cur.at_end():
            raise cur.error(f"missing '}}' closing computation {name!r}")
        top, is_root = _instruction(cur, pending, parsed)
        if is_root:
            if root is not None:
                raise cur.error(f"computation {name!r} has two ROOT instructions", top.pos)
            root = top.instr
    while cur.peek() == ",":  # e.g. `}, execution_thread="x"`
        cur.expect(",")
        cur.name()
        cur.expect("=")
        cur.raw_value()
    by_name: dict[str, Instruction] = {}
    for p in parsed:
        if p.instr.name in by_name:
            raise cur.error(f"duplicate instruction name {p.instr.name!r} in {name!r}", p.pos)
        by_name[p.instr.name] = p.instr
    for p in parsed:
        operands = []
        for op in p.operands:
            if isinstance(op, Instruction):
                operands.append(op)
            elif op in by_name:
                operands.append(by_name[op])
            else:
                raise cur.error(f"unknown operand {op!r} of {p.instr.name} in {name!r}", p.pos)
        p.instr.operands = operands
        if p.instr.opcode == "parameter" and p.instr.shape is None:
            if p.instr.parameter_number not in signature:
                raise cur.error(f"parameter {p.instr.name} has no shape (write it, or give "
                                f"the computation a signature)", p.pos)
            p.instr.shape = signature[p.instr.parameter_number]
    if not parsed:
        raise cur.error(f"computation {name!r} is empty")
    instructions = [p.instr for p in parsed]
    comp = Computation(name, instructions, root if root is not None else instructions[-1])
    comp.topological_sort()
    positions.update((id(p.instr), p.pos) for p in parsed)
    return comp, is_entry


class _Parsed:
    """An instruction as read: its operands are names, or nested instructions."""

    __slots__ = ("instr", "operands", "pos")

    def __init__(self, instr: Instruction, operands: list, pos: int):
        self.instr, self.operands, self.pos = instr, operands, pos


def _attribute_ahead(cur: Cursor) -> bool:
    """After an instruction's `)`: whether `, key=` follows (not `, operand`)."""
    save = cur.pos
    try:
        if not cur.accept(","):
            return False
        cur.name()
        return cur.peek() == "="
    except HloParseError:
        return False
    finally:
        cur.pos = save


def _instruction(cur: Cursor, pending: list, parsed: list, nested: bool = False):
    """`[ROOT] name = [shape] opcode(operands), attributes`; when `nested`, only the part
    after `=` (an operand written as an instruction, e.g. `add(s32[] parameter(0), ...)`)."""
    cur.skip_ws()
    pos = cur.pos
    is_root = False
    name = ""
    if not nested:
        if cur.keyword_ahead("ROOT"):
            cur.name()
            is_root = True
        name = cur.name("an instruction name")
        cur.expect("=", "'=' after the instruction name")
    shape = cur.shape() if cur.shape_ahead() else None
    opcode = cur.opcode()
    opcode = OPCODE_ALIASES.get(opcode, opcode)
    opcode = opcodes.canonical(opcode)
    instr = Instruction(opcode, shape, name=name)
    cur.expect("(", f"'(' after {opcode}")
    operands: list = []
    if opcode == "constant":
        if not cur.accept(")"):
            if shape is None:
                raise cur.error("a constant needs its shape, e.g. f32[2] constant({1, 2})")
            instr.literal = cur.literal(shape)
            cur.expect(")", "')' closing the constant")
    elif opcode == "parameter":
        instr.parameter_number = cur.integer("a parameter number")
        cur.expect(")")
    elif not cur.accept(")"):
        while True:
            operands.append(_operand(cur, pending, parsed))
            if cur.accept(")"):
                break
            cur.expect(",", "',' or ')' in the operand list")
    while _attribute_ahead(cur) if nested else cur.peek() == ",":
        cur.expect(",")
        key_pos = cur.pos
        key = cur.name("an attribute name")
        cur.expect("=", f"'=' after {key}")
        value_pos = cur.pos
        raw = cur.raw_value(allow_empty=key == "padding")  # a rank-0 pad prints `padding=`
        try:
            _set_attribute(instr, key, raw, pending, value_pos)
        except HloParseError as e:
            msg = str(e).split(": ", 1)[-1].split("\n")[0]
            raise cur.error(f"bad value for attribute {key}: {msg}", key_pos) from None
        except (ValueError, KeyError, IndexError) as e:
            raise cur.error(f"bad value for attribute {key}: {raw!r} ({e})", key_pos) from None
    if nested:
        instr.name = f"{opcode.replace('-', '_')}.anon.{len(parsed)}"
    parsed.append(_Parsed(instr, operands, pos))
    return parsed[-1], is_root


def _operand(cur: Cursor, pending: list, parsed: list):
    """`name`, `f32[4] name`, or a nested instruction `[shape] opcode(...)`."""
    save = cur.pos
    if cur.shape_ahead():
        cur.shape()
    word = cur.name("an operand name")
    if cur.peek() != "(":
        return word
    cur.pos = save
    return _instruction(cur, pending, parsed, nested=True)[0].instr


# ----------------------------------------------------------------------------- attributes

def _int_list(raw: str) -> tuple[int, ...]:
    body = raw.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError("expected {i,j,...}")
    body = body[1:-1].strip()
    return tuple(int(x) for x in body.split(",")) if body else ()


def _xs(raw: str) -> tuple[int, ...]:
    return tuple(int(x) for x in raw.split("x"))


def parse_window(raw: str) -> dict:
    """`{size=3x3 stride=1x1 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=..}` -> a full window dict."""
    body = raw.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError("expected {size=...}")
    fields = dict(part.split("=", 1) for part in body[1:-1].split())
    size = _xs(fields.pop("size")) if "size" in fields else ()
    rank = len(size)
    window = {"size": size,
              "stride": _xs(fields.pop("stride")) if "stride" in fields else (1,) * rank,
              "pad": (tuple(tuple(int(v) for v in p.split("_")) for p in
                            fields.pop("pad").split("x")) if "pad" in fields
                      else ((0, 0),) * rank),
              "lhs_dilate": _xs(fields.pop("lhs_dilate")) if "lhs_dilate" in fields
              else (1,) * rank,
              "rhs_dilate": _xs(fields.pop("rhs_dilate")) if "rhs_dilate" in fields
              else (1,) * rank}
    if "rhs_reversal" in fields:
        window["rhs_reversal"] = tuple(bool(int(v)) for v in fields.pop("rhs_reversal")
                                       .split("x"))
    if fields:
        raise ValueError(f"unknown window field {next(iter(fields))!r}")
    for key in ("stride", "pad", "lhs_dilate", "rhs_dilate"):
        if len(window[key]) != rank:
            raise ValueError(f"window {key} has {len(window[key])} entries, size has {rank}")
    return window


def parse_padding(raw: str) -> tuple[tuple[int, int, int], ...]:
    """`0_0x1_2_1` -> ((0, 0, 0), (1, 2, 1))."""
    out = []
    if not raw.strip():
        return ()
    for part in raw.strip().split("x"):
        vals = [int(v) for v in part.split("_")]
        if len(vals) == 2:
            vals.append(0)
        if len(vals) != 3:
            raise ValueError("expected lo_hi or lo_hi_interior")
        out.append(tuple(vals))
    return tuple(out)


def parse_slice(raw: str) -> tuple[tuple[int, int, int], ...]:
    """`{[0:4], [1:9:2]}` -> ((0, 4, 1), (1, 9, 2))."""
    out = []
    for m in re.finditer(r"\[([^\]]*)\]", raw):
        vals = [int(v) for v in m.group(1).split(":")]
        if len(vals) == 2:
            vals.append(1)
        if len(vals) != 3:
            raise ValueError("expected [start:limit] or [start:limit:stride]")
        out.append(tuple(vals))
    if not out and raw.replace(" ", "") != "{}":
        raise ValueError("expected {[start:limit:stride], ...}")
    return tuple(out)


def _metadata(raw: str) -> dict:
    cur = Cursor(raw)
    cur.expect("{")
    meta: dict = {}
    while not cur.accept("}"):
        key = cur.name("a metadata key")
        cur.expect("=")
        if cur.peek() == '"':
            meta[key] = cur.string()
        else:
            tok = cur.match(re.compile(r"[^\s}]+"), "a metadata value")
            meta[key] = int(tok) if re.fullmatch(r"-?\d+", tok) else tok
        cur.accept(",")
    return meta


def _set_attribute(instr: Instruction, key: str, raw: str, pending: list, pos: int) -> None:
    attrs = instr.attrs
    if key in _CALLED_KEYS:
        names = ([n.strip().lstrip("%") for n in raw.strip()[1:-1].split(",") if n.strip()]
                 if raw.startswith("{") else [raw.lstrip("%")])
        pending.append((instr, key, names, pos))
        # Placeholder keeps the print order until the name is resolved.
        instr.called[key] = None
    elif key in _INT_LIST_KEYS:
        attrs[key] = _int_list(raw)
    elif key in _INT_KEYS:
        attrs[key] = int(raw)
    elif key in _BOOL_KEYS:
        if raw not in ("true", "false"):
            raise ValueError("expected true or false")
        attrs[key] = raw == "true"
    elif key in ("type", "comparison_type") and instr.opcode == "compare":
        attrs["comparison_type"] = raw
    elif key == "direction":
        if raw not in _DIRECTIONS:
            raise ValueError(f"direction must be one of {sorted(_DIRECTIONS)}")
        attrs[key] = raw
    elif key in _WORD_KEYS:
        attrs[key] = raw
    elif key == "slice":
        attrs[key] = parse_slice(raw)
    elif key == "padding":
        attrs[key] = parse_padding(raw)
    elif key == "window":
        attrs[key] = parse_window(raw)
    elif key == "custom_call_target":
        attrs[key] = Cursor(raw).string() if raw.startswith('"') else raw
    elif key == "epsilon":
        attrs[key] = float(raw)
    elif key == "metadata":
        instr.metadata = _metadata(raw)
    else:
        attrs[key] = raw
