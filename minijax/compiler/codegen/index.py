"""Positions in arrays for the elemental emitter and the loop emitters: `Index` (a multi-index
and/or a linear offset, each computed from the other on demand) and the strides of a layout."""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.llvm_types import I64, const
from minijax.compiler.hlo.ir import Shape


def strides_of(shape: Shape) -> list[int]:
    """Element strides of each dimension under the shape's layout."""
    strides = [0] * shape.rank
    step = 1
    for d in shape.minor_to_major:
        strides[d] = step
        step *= shape.dims[d]
    return strides


class Index:
    """A position in an array of `shape`: a multi-index and/or a linear offset (i64 values)."""

    def __init__(self, shape: Shape, multi=None, linear=None):
        self.shape = shape
        self.multi = list(multi) if multi is not None else None
        self.linear = linear
        self.key = (shape.dims, shape.minor_to_major)

    def get_linear(self, b: ir.IRBuilder):
        if self.linear is None:
            total = const(I64, 0)
            for idx, stride, dim in zip(self.multi, strides_of(self.shape), self.shape.dims):
                if dim != 1:
                    total = b.add(total, b.mul(idx, const(I64, stride)))
            self.linear = total
        return self.linear

    def get_multi(self, b: ir.IRBuilder):
        if self.multi is None:
            dims = self.shape.dims
            multi = [const(I64, 0)] * len(dims)
            rest = self.linear
            for d in self.shape.minor_to_major:
                if dims[d] == 1:
                    continue
                multi[d] = b.urem(rest, const(I64, dims[d]))
                rest = b.udiv(rest, const(I64, dims[d]))
            self.multi = multi
        return self.multi

    def for_shape(self, b: ir.IRBuilder, shape: Shape) -> Index:
        """This index seen by an operand of `shape` with the same dims (layout may differ)."""
        if (shape.dims, shape.minor_to_major) == self.key:
            return self
        return Index(shape, multi=self.get_multi(b))


def scalar_index(shape: Shape) -> Index:
    return Index(shape, multi=[], linear=const(I64, 0))
