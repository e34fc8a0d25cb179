"""The HLO data model: shapes, instructions, computations and modules.

This mirrors XLA's HLO closely enough that the text printer and parser can speak XLA's
syntax (`name = f32[4,8]{1,0} add(a, b)`). Instructions hold their operands directly (a
graph, not a list of names); attributes are plain Python values keyed by the XLA attribute
name they print as (see ATTRIBUTE CONVENTIONS below).

ATTRIBUTE CONVENTIONS (Instruction.attrs):
  dimensions: tuple[int, ...]            broadcast, reduce, transpose, reverse, concatenate
                                          (concatenate uses a 1-tuple), sort
  iota_dimension: int                    iota
  slice: tuple[(start, limit, stride)]   slice
  dynamic_slice_sizes: tuple[int, ...]   dynamic-slice
  padding: tuple[(lo, hi, interior)]     pad
  window: dict(size, stride, pad=[(lo,hi)], lhs_dilate, rhs_dilate)   reduce-window, conv
  lhs_batch_dims, rhs_batch_dims, lhs_contracting_dims, rhs_contracting_dims: tuple  dot
  dim_labels: str, feature_group_count: int, batch_group_count: int    convolution
  direction: str ("EQ","NE","LT","LE","GT","GE"), comparison_type: str | None   compare
  index: int                             get-tuple-element
  offset_dims, collapsed_slice_dims, start_index_map, index_vector_dim, slice_sizes,
  operand_batching_dims, start_indices_batching_dims, indices_are_sorted    gather
  update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims, index_vector_dim,
  input_batching_dims, scatter_indices_batching_dims, indices_are_sorted,
  unique_indices                         scatter
  is_stable: bool                        sort
  kind: str ("kLoop","kInput","kOutput") fusion
  custom_call_target: str                custom-call
  exponent_bits, mantissa_bits: int      reduce-precision
  distribution: str                      rng
Called computations live in Instruction.called: a dict with keys among "to_apply", "calls",
"condition", "body", "true_computation", "false_computation", and "branch_computations"
(a list), and "select"/"scatter" for select-and-scatter.
Constants keep their value in Instruction.literal (a numpy array of the shape's dtype).
Parameters keep their index in Instruction.parameter_number.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from minijax.compiler.hlo.element_types import (  # noqa: F401  (re-exported)
    ELEMENT_TYPES,
    NARROW_ELEMENT_TYPES,
    element_type_of,
    numpy_dtype,
)
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.hlo.traversal import callees_first, postorder  # noqa: F401


@dataclass(frozen=True)
class Shape:
    """An array shape (element type, dims, minor-to-major layout) or a tuple of shapes.

    `layout` is None for the default row-major layout {rank-1,...,0}. A tuple shape has
    element_type "tuple" and its members in `tuple_shapes`. A token has element_type "token".
    """

    element_type: str
    dims: tuple[int, ...] = ()
    layout: tuple[int, ...] | None = None
    tuple_shapes: tuple[Shape, ...] | None = None

    @staticmethod
    def array(dtype_or_type, dims, layout=None) -> Shape:
        et = dtype_or_type if isinstance(dtype_or_type, str) else element_type_of(dtype_or_type)
        return Shape(et, tuple(int(d) for d in dims), None if layout is None else tuple(layout))

    @staticmethod
    def tuple(shapes) -> Shape:
        return Shape("tuple", (), None, tuple(shapes))

    @property
    def is_tuple(self) -> bool:
        return self.element_type == "tuple"

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def dtype(self) -> np.dtype:
        return ELEMENT_TYPES[self.element_type]

    @property
    def size(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        if self.is_tuple:
            return sum(s.nbytes for s in self.tuple_shapes)
        if self.element_type == "token":
            return 0
        return self.size * self.dtype.itemsize

    @property
    def minor_to_major(self) -> tuple[int, ...]:
        if self.layout is not None:
            return self.layout
        return tuple(range(self.rank - 1, -1, -1))

    def with_dims(self, dims) -> Shape:
        return Shape(self.element_type, tuple(dims))

    def with_type(self, element_type: str) -> Shape:
        return Shape(element_type, self.dims, self.layout)

    def flat(self) -> list[Shape]:
        """The array leaves of a (possibly nested) tuple shape, in order."""
        if not self.is_tuple:
            return [self]
        return [leaf for s in self.tuple_shapes for leaf in s.flat()]


@dataclass(eq=False)
class Instruction:
    """One HLO instruction. Compare by identity; `name` is unique within a module."""

    opcode: str
    shape: Shape
    operands: list[Instruction] = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    called: dict = field(default_factory=dict)
    name: str = ""
    literal: np.ndarray | None = None
    parameter_number: int | None = None
    metadata: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<{self.name} = {self.opcode} {self.shape}>"

    def called_computations(self) -> list[Computation]:
        out = []
        for value in self.called.values():
            out.extend(value if isinstance(value, list) else [value])
        return out


_name_counter = itertools.count()


class Computation:
    """An ordered list of instructions (operands before users) with one root.

    Besides its instructions, a computation carries this declared state:

    - `row_plan`: for a fused computation, the row-fusion decision (hlo/row_plan.py): the
      RowPlan its kernel runs, or a string saying why it is no row fusion; None while
      undecided. The row-fusion pass records it; `row_plan.plan_for` decides (once) for a
      computation it never saw. Kept in disk-cache entries.
    """

    # The class-level default also covers computations unpickled from older cache entries.
    row_plan = None

    def __init__(self, name: str, instructions=None, root: Instruction | None = None):
        self.name = name
        self.instructions: list[Instruction] = list(instructions or [])
        self.root = root if root is not None else (self.instructions[-1]
                                                   if self.instructions else None)
        self.row_plan = None

    @property
    def parameters(self) -> list[Instruction]:
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda i: i.parameter_number)

    def add(self, instr: Instruction) -> Instruction:
        """Append an instruction (its operands must already be in the computation)."""
        if not instr.name:
            instr.name = f"{instr.opcode.replace('-', '_')}.{next(_name_counter)}"
        self.instructions.append(instr)
        return instr

    def users(self) -> dict[Instruction, list[Instruction]]:
        """Map each instruction to the instructions that use it (in order, with repeats)."""
        users: dict[Instruction, list[Instruction]] = {i: [] for i in self.instructions}
        for instr in self.instructions:
            for op in instr.operands:
                users.setdefault(op, []).append(instr)
        return users

    def replace_all_uses(self, old: Instruction, new: Instruction) -> None:
        for instr in self.instructions:
            instr.operands = [new if op is old else op for op in instr.operands]
        if self.root is old:
            self.root = new

    def topological_sort(self) -> None:
        """Reorder instructions so operands precede users; drop nothing."""
        order: list[Instruction] = []
        postorder(self.instructions, {id(i) for i in self.instructions}, set(), order)
        self.instructions = order

    def __repr__(self) -> str:
        return f"<Computation {self.name}: {len(self.instructions)} instructions>"


class Module:
    """An HLO module: computations with one entry. `computations` lists callees first.

    Besides the computations, a module carries this declared state (and nothing else: passes
    and the compiler attach only these):

    - `attrs`: the `HloModule name, key=value` header attributes (raw strings);
    - `num_user_params`: how many entry parameters are the user's arguments (the rest are
      hoisted constants), None when not lowered from a jaxpr;
    - `donated_params`: entry parameter numbers whose buffers the caller donates (jit's
      donate_argnums), which buffer assignment may reuse for outputs;
    - `fusion_log`: one line per decision of the fusion passes (dumps, tests);
    - `pass_timings`: seconds per pass of the last pipeline run;
    - `buffer_assignment`: the BufferAssignment (passes/buffer_assignment.py), set by the last
      pass of the pipeline and recomputed after a disk-cache load;
    - `cache_digest`: the persistent cache's digest of this exact module (SHA-256 of its
      payload) when it was stored or loaded there, else None.
    """

    # Class-level defaults also cover modules unpickled from older cache entries.
    num_user_params: int | None = None
    donated_params: frozenset | set = frozenset()
    fusion_log: list = []
    pass_timings: dict = {}
    buffer_assignment = None
    cache_digest: str | None = None

    def __init__(self, name: str, computations=None, entry: Computation | None = None):
        self.name = name
        self.computations: list[Computation] = list(computations or [])
        if entry is not None and entry not in self.computations:
            self.computations.append(entry)
        self.entry = entry if entry is not None else (self.computations[-1]
                                                      if self.computations else None)
        # Module-level attributes from the `HloModule name, key=value` header (raw strings,
        # printed back as they are; entry_computation_layout is recomputed when printing).
        self.attrs: dict[str, str] = {}
        self.donated_params = set()
        self.fusion_log = []
        self.pass_timings = {}

    def add_computation(self, comp: Computation) -> Computation:
        self.computations.insert(max(len(self.computations) - 1, 0)
                                 if self.entry in self.computations else
                                 len(self.computations), comp)
        return comp

    def reachable_computations(self) -> list[Computation]:
        """Computations reachable from the entry, callees before callers."""
        return callees_first([self.entry])

    def __str__(self) -> str:
        return module_to_text(self)
