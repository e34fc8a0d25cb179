"""`Emit`: a small builder of elementwise HLO expressions, used by the lowerings of the ops
XLA has no opcode for (elementwise_lowering.py, special_lowering.py)."""

from __future__ import annotations

import functools

import numpy as np

from minijax import dtypes


class Emit:
    """Elementwise HLO expression builder for values of `aval`'s shape and dtype."""

    def __init__(self, ctx, aval):
        self.ctx = ctx
        self.b = ctx.builder
        self.md = ctx.metadata
        self.shape = tuple(aval.shape)
        self.dtype = np.dtype(aval.dtype)

    def retyped(self, dtype) -> Emit:
        """The same builder for values of another dtype (same shape)."""
        other = object.__new__(Emit)
        other.__dict__.update(self.__dict__)
        other.dtype = np.dtype(dtype)
        return other

    def c(self, value, dtype=None):
        """A constant broadcast to the shape (of `dtype`, default the values' dtype)."""
        const = self.b.constant(np.asarray(value, dtype or self.dtype), metadata=self.md)
        if self.shape:
            const = self.b.broadcast(const, self.shape, (), metadata=self.md)
        return const

    def op(self, opcode, *xs):
        return self.b.add_instruction(opcode, list(xs), metadata=self.md)

    def _arg(self, x):
        return self.c(x) if isinstance(x, (int, float, complex)) else x

    def add(self, x, y):
        return self.op("add", self._arg(x), self._arg(y))

    def sub(self, x, y):
        return self.op("subtract", self._arg(x), self._arg(y))

    def mul(self, x, y):
        return self.op("multiply", self._arg(x), self._arg(y))

    def div(self, x, y):
        return self.op("divide", self._arg(x), self._arg(y))

    def cmp(self, x, y, direction):
        return self.b.compare(self._arg(x), self._arg(y), direction, metadata=self.md)

    def select(self, pred, x, y):
        return self.b.select(pred, self._arg(x), self._arg(y), metadata=self.md)

    def lt(self, x, y):
        return self.cmp(x, y, "LT")

    def convert(self, x, dtype):
        return self.b.convert(x, np.dtype(dtype), metadata=self.md)

    def poly(self, u, coeffs):
        """sum_k coeffs[k] u^k by Horner's rule."""
        acc = self.c(coeffs[-1])
        for coeff in coeffs[-2::-1]:
            acc = self.add(self.mul(acc, u), coeff)
        return acc

    def piecewise(self, x, bounds, branches):
        """branches[i] where bounds[i-1] <= x < bounds[i] (the last one above bounds[-1])."""
        out = branches[-1]
        for bound, branch in zip(bounds[::-1], branches[-2::-1], strict=True):
            out = self.select(self.lt(x, bound), branch, out)
        return out

    def __getattr__(self, opcode):
        # e.g. e.log(x), e.sqrt(x), e.atan2(x, y), e.round_nearest_even(x)
        name = opcode.replace("_", "-")
        return lambda *xs: self.op(name, *xs)


def in_float32_at_least(fn):
    """Evaluate a real expansion of 16-bit floats in float32 and round the result back,
    as XLA does for its transcendental expansions; wider and complex types are kept."""
    @functools.wraps(fn)
    def wrapper(e: Emit, *xs):
        if dtypes.kind(e.dtype) != "f" or e.dtype.itemsize >= 4:
            return fn(e, *xs)
        wide = e.retyped(np.float32)
        out = fn(wide, *(wide.convert(x, np.float32) for x in xs))
        return e.convert(out, e.dtype)
    return wrapper
