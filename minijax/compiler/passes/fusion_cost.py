"""How much code a fused computation becomes: the bound fusion keeps every kernel under.

The elemental emitter (codegen/elemental.py) emits each instruction of a fusion once per
distinct index object it is read at: elementwise users hand their own index to their
operands (a diamond of elementwise ops is emitted once), while data movement (slice,
transpose, concatenate, pad, broadcast, reshape, ...) makes a new index per read, so an
operand read through two different slices is emitted twice, and a chain of concatenates
of slices of concatenates doubles at every level. `emitted_size(body)` counts those
emissions exactly for that rule: the index objects reaching an instruction are named by
their origin (the data-movement read that made them, or the root), and an instruction's
count is the summed weight of the distinct origins that reach it.

Fusion uses it, with a cap on the body's instruction count, to bound the IR (and so the
LLVM time) per kernel and the per-step bookkeeping of growing one fusion.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction
from minijax.compiler.passes.opcodes import ELEMENTWISE

#: Most instructions a fused computation may hold.
MAX_FUSED_INSTRUCTIONS = 256
#: Most times one instruction may be emitted in a kernel (at different indices): XLA's
#: fusion allows 15 before it stops duplicating a producer into a consumer.
MAX_NODE_EMISSIONS = 16
#: Most element evaluations the emitter may generate for one fused kernel.
MAX_EMITTED = 1024

def _same_index(a, b) -> bool:
    return a.dims == b.dims and (a.layout == b.layout or a.minor_to_major == b.minor_to_major)


def _reads(user: Instruction) -> int:
    """Index objects `user` makes per operand and per own emission (straight-line windows
    read every position; everything else reads once, or once per loop body)."""
    if user.opcode == "reduce-window":
        size = 1
        for s in dict(user.attrs.get("window") or {}).get("size", ()):
            size *= s
        return size if size <= 16 else 1
    return 1


class EmissionCounts:
    """Emissions of every instruction of a fused computation, kept up to date cheaply as
    single instructions are fused in (`fused_instruction`); a fused fusion needs a new
    count. An instruction's origins are a bit set (a Python int): bit k is the k-th index
    origin made (bit 0: scalars, which are emitted once)."""

    def __init__(self, body: Computation, limit: int | None = None):
        self.origins: dict[int, int] = {}
        self.weights = [1]
        self._sums: dict[int, int] = {1: 1}
        self.counts: dict[int, int] = {}
        self.total = 0
        root = body.root
        if root.opcode == "tuple":
            for op in root.operands:
                self.origins[id(op)] = self.origins.get(id(op), 0) | self._fresh(1)
        else:
            self.origins[id(root)] = self._fresh(1)
        for instr in reversed(body.instructions):
            if id(instr) in self.origins:
                self._visit(instr)
                if limit is not None and self.total > limit:
                    return

    def _fresh(self, weight: int) -> int:
        self.weights.append(weight)
        return 1 << (len(self.weights) - 1)

    def _sum(self, bits: int) -> int:
        count = self._sums.get(bits)
        if count is None:
            count, rest, k = 0, bits, 0
            while rest:
                if rest & 1:
                    count += self.weights[k]
                rest >>= 1
                k += 1
            self._sums[bits] = count
        return count

    def count(self, instr: Instruction) -> int:
        """Emissions of `instr` (0 if unused)."""
        bits = self.origins.get(id(instr))
        return 0 if bits is None else self._sum(bits)

    def _visit(self, instr: Instruction) -> None:
        mine = self.origins[id(instr)]
        count = self._sum(mine)
        self.counts[id(instr)] = count
        self.total += count
        shape = instr.shape
        elementwise = instr.opcode in ELEMENTWISE
        for op in instr.operands:
            oshape = op.shape
            if not oshape.dims and oshape.element_type != "tuple":
                new = 1
            elif elementwise and _same_index(oshape, shape):
                new = mine
            else:
                new = self._fresh(count * _reads(instr))
            self.origins[id(op)] = self.origins.get(id(op), 0) | new

    def fused_instruction(self, param: Instruction, copy: Instruction) -> None:
        """`copy` (a new instruction whose operands are parameters) replaced `param`."""
        bits = self.origins.pop(id(param), 0)
        self.total -= self.counts.pop(id(param), 0)
        self.origins[id(copy)] = bits
        self._visit(copy)
        for op in dict.fromkeys(copy.operands):
            now = self.count(op)
            self.total += now - self.counts.get(id(op), 0)
            self.counts[id(op)] = now


def emission_counts(body: Computation, limit: int | None = None):
    """(total emissions, {id(instr): emissions}) of fused computation `body`; counting stops
    once the total passes `limit` (the total is then only known to exceed it)."""
    counts = EmissionCounts(body, limit)
    return counts.total, counts.counts


def emitted_size(body: Computation, limit: int | None = None) -> int:
    """Element evaluations the emitter generates for one output element of `body`."""
    return emission_counts(body, limit)[0]
