"""Layout normalization: make a module's meaning independent of its layouts.

HLO read from a real XLA dump carries physical layouts (`f32[9,5]{0,1}`, tiles, memory
spaces). For every opcode but one a layout only says where elements sit in memory, not what
is computed: `copy` between layouts is the identity on values. The exception is `bitcast`,
which reinterprets the operand's physical element sequence (and may change the element
type): `f32[9,5]{0,1} bitcast(f32[5,9]{1,0})` is a transpose. This pass rewrites each
bitcast into logical operations (transpose -> reshape -> bitcast-convert -> reshape ->
transpose, identity steps left out) and then drops every layout, so that the passes and
backends after it, which assume row-major arrays, compute what XLA computes. It runs
first in the pipeline; minijax's own lowering emits no bitcast, so its modules are left as
they are.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction, Module, Shape
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.layout_assignment import make_row_major
from minijax.compiler.passes.utils import NameUniquer


def _major_to_minor(shape: Shape) -> tuple[int, ...]:
    return tuple(reversed(shape.minor_to_major))


class _Emitter:
    """Appends logical ops for one bitcast, all in row-major layout."""

    def __init__(self, names: NameUniquer, bitcast: Instruction):
        self.names, self.bitcast, self.new = names, bitcast, []

    def emit(self, opcode: str, shape: Shape, operand: Instruction, **attrs) -> Instruction:
        instr = Instruction(opcode=opcode, shape=shape, operands=[operand], attrs=attrs,
                            name=self.names.fresh(f"{self.bitcast.name}.{opcode}"),
                            metadata=dict(self.bitcast.metadata))
        self.new.append(instr)
        return instr

    def transpose(self, x: Instruction, perm: tuple[int, ...]) -> Instruction:
        if perm == tuple(range(len(perm))):
            return x
        dims = tuple(x.shape.dims[p] for p in perm)
        return self.emit("transpose", Shape(x.shape.element_type, dims), x,
                         dimensions=list(perm))

    def reshape(self, x: Instruction, dims) -> Instruction:
        dims = tuple(int(d) for d in dims)
        if dims == tuple(x.shape.dims):
            return x
        return self.emit("reshape", Shape(x.shape.element_type, dims), x)

    def convert_bits(self, x: Instruction, element_type: str) -> Instruction:
        """x (row-major, 1-D unless the type keeps its width) as `element_type`'s bits."""
        src = x.shape.dtype.itemsize
        dst = Shape(element_type, ()).dtype.itemsize
        if src == dst:
            return self.emit("bitcast-convert", Shape(element_type, x.shape.dims), x)
        n = x.shape.size
        if src > dst:
            wide = self.emit("bitcast-convert", Shape(element_type, (n, src // dst)), x)
            return self.reshape(wide, (n * src // dst,))
        if (n * src) % dst:
            raise ValueError(f"bitcast {self.bitcast.name}: {x.shape} has {n * src} bytes, "
                             f"not a whole number of {element_type} elements")
        grouped = self.reshape(x, (n * src // dst, dst // src))
        return self.emit("bitcast-convert", Shape(element_type, (n * src // dst,)), grouped)


def logical_bitcast(bitcast: Instruction, names: NameUniquer) -> list[Instruction]:
    """Row-major instructions computing `bitcast`'s value; the last one is the result."""
    operand = bitcast.operands[0]
    src, out = operand.shape, bitcast.shape
    e = _Emitter(names, bitcast)
    src_major, out_major = _major_to_minor(src), _major_to_minor(out)
    x = e.transpose(operand, src_major)          # logical -> physical element order
    if out.element_type != src.element_type:
        width_kept = out.dtype.itemsize == src.dtype.itemsize
        x = e.convert_bits(x if width_kept else e.reshape(x, (src.size,)), out.element_type)
    x = e.reshape(x, (out.dims[d] for d in out_major))
    inverse = tuple(sorted(range(out.rank), key=lambda i: out_major[i]))
    x = e.transpose(x, inverse)                   # physical order -> out's logical dims
    if x is operand:                              # a no-op bitcast: keep an instruction
        x = e.reshape(e.emit("copy", Shape(src.element_type, src.dims), operand), out.dims)
    return e.new


def _is_plain_reshape(bitcast: Instruction) -> bool:
    src, out = bitcast.operands[0].shape, bitcast.shape
    return (src.element_type == out.element_type and src.layout is None and out.layout is None)


class LayoutNormalization(Pass):
    name = "layout-normalization"

    def run(self, module: Module) -> bool:
        names: NameUniquer | None = None
        changed = False
        for comp in module.reachable_computations():
            for instr in list(comp.instructions):
                if instr.opcode != "bitcast" or not instr.operands:
                    continue
                if _is_plain_reshape(instr):
                    instr.opcode = "reshape"
                else:
                    names = names or NameUniquer(module)
                    self._replace(comp, instr, logical_bitcast(instr, names))
                changed = True
            changed |= make_row_major(comp)
        return changed

    @staticmethod
    def _replace(comp: Computation, bitcast: Instruction, new: list[Instruction]) -> None:
        position = comp.instructions.index(bitcast)
        comp.instructions[position:position + 1] = new
        comp.replace_all_uses(bitcast, new[-1])
