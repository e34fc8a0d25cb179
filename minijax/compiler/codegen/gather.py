"""Per-element LLVM IR for XLA's gather, so that the loop emitters run it like any
elementwise kernel (vectorizable inner loop, outer loop split across threads).

An output element's position splits into batch dims (those not in `offset_dims`) and offset
dims. The batch position picks an index vector from the start indices (component k along
`index_vector_dim`, or the scalar itself when that dim is the indices' rank); component k
is the start along operand dim `start_index_map[k]`, clamped to [0, dim - slice size] as
XLA does. An operand batching dim takes the batch position of its paired indices batching
dim. Each window dim (neither collapsed nor batching) adds the matching offset dim's
position, in order.
"""

from __future__ import annotations

from minijax.compiler.codegen.index import Index
from minijax.compiler.codegen.llvm_types import I64, const, is_signed
from minijax.compiler.hlo.ir import Instruction

#: Element types the start indices may have.
INDEX_TYPES = frozenset({"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"})


def unsupported_gather_reason(instr: Instruction) -> str | None:
    """Why `instr` (a gather) has no per-element form (None if it has)."""
    et = instr.operands[1].shape.element_type
    if et not in INDEX_TYPES:
        return f"gather indices of type {et}"
    return None


def _ints(attrs, key) -> list[int]:
    return [int(d) for d in attrs.get(key, ())]


def _as_i64(b, value, element_type: str):
    width = value.type.width
    if width == 64:
        return value
    return b.sext(value, I64) if is_signed(element_type) else b.zext(value, I64)


class IndexVectors:
    """Reads the index vectors of a gather's start indices or a scatter's scatter indices
    at a batch position (the indices' dims without `vector_dim`, as i64 values)."""

    def __init__(self, em, indices: Instruction, vector_dim: int, position: list):
        self.em, self.indices, self.vector_dim = em, indices, vector_dim
        self.position = position
        self.has_vector = vector_dim < indices.shape.rank

    def batch_position(self, indices_dim: int):
        """The position along the batch dim that is indices dim `indices_dim`."""
        skip = self.has_vector and indices_dim > self.vector_dim
        return self.position[indices_dim - 1 if skip else indices_dim]

    def component(self, k: int):
        """Component k of the index vector, as i64."""
        at = list(self.position)
        if self.has_vector:
            at.insert(self.vector_dim, const(I64, k))
        v = self.em.emit(self.indices, Index(self.indices.shape, multi=at))
        return _as_i64(self.em.b, v, self.indices.shape.element_type)


def gather(em, instr: Instruction, index: Index):
    """The value of gather `instr` at output position `index` (em: the elemental emitter)."""
    b = em.b
    operand, indices = instr.operands
    a = instr.attrs
    offset_dims = sorted(_ints(a, "offset_dims"))
    collapsed = set(_ints(a, "collapsed_slice_dims"))
    start_map = _ints(a, "start_index_map")
    operand_batching = _ints(a, "operand_batching_dims")
    indices_batching = _ints(a, "start_indices_batching_dims")
    vector_dim = int(a.get("index_vector_dim", indices.shape.rank))
    sizes = _ints(a, "slice_sizes")
    dims = operand.shape.dims
    multi = index.get_multi(b) if instr.shape.rank else []
    batch = [m for p, m in enumerate(multi) if p not in offset_dims]
    window = [d for d in range(len(dims)) if d not in collapsed and d not in operand_batching]
    vectors = IndexVectors(em, indices, vector_dim, batch)
    src = []
    for d, size in enumerate(dims):
        if d in start_map:
            s = vectors.component(start_map.index(d))
            s = b.select(b.icmp_signed("<", s, const(I64, 0)), const(I64, 0), s)
            hi = const(I64, max(size - sizes[d], 0))
            s = b.select(b.icmp_signed(">", s, hi), hi, s)
        elif d in operand_batching:
            s = vectors.batch_position(indices_batching[operand_batching.index(d)])
        else:
            s = const(I64, 0)
        if d in window:
            s = b.add(s, multi[offset_dims[window.index(d)]])
        src.append(s)
    return em.emit(operand, Index(operand.shape, multi=src))
