"""Layout assignment: every array is row-major.

A layout (minor_to_major) says how an array's elements sit in memory. minijax's backends
and the arguments they receive (numpy arrays) are all row-major, so this pass simply makes
every instruction's layout the default one (stored as `layout=None`, printed as
`{rank-1,...,0}`). Layouts read from a real XLA dump (say, a column-major `{0,1}`) are
physical details that do not change what an instruction computes, so dropping them is
safe here. A backend that wants other layouts would choose them in this pass and insert
`copy` instructions where layouts meet.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Module, Shape
from minijax.compiler.passes.base import Pass


def row_major(shape: Shape) -> Shape:
    """`shape` with the default layout, recursively for tuples."""
    if shape.is_tuple:
        return Shape.tuple([row_major(s) for s in shape.tuple_shapes])
    if shape.layout is None:
        return shape
    return Shape(shape.element_type, tuple(shape.dims))


def make_row_major(comp: Computation) -> bool:
    """Gives every instruction of `comp` the default layout; whether any changed."""
    changed = False
    for instr in comp.instructions:
        shape = row_major(instr.shape)
        if shape != instr.shape:
            instr.shape = shape
            changed = True
    return changed


class LayoutAssignment(Pass):
    name = "layout-assignment"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.reachable_computations():
            changed |= make_row_major(comp)
        return changed
