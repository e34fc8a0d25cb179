"""Dot canonicalization: every dot becomes a batched matrix product BLAS can run.

A general dot has any number of batch, contracting and free dims, in any positions. Backends
only want one form, so each dot is rewritten as

    lhs' = reshape(transpose(lhs, batch + free + contracting), [B..., M, K])
    rhs' = reshape(transpose(rhs, batch + contracting + free), [B..., K, N])
    out  = reshape(dot(lhs', rhs'), original output dims)

with M, K, N the products of the free/contracting dims (1 when there are none), batch dims
kept separate and first. The original output is [batch..., lhs free..., rhs free...], which
is exactly [B..., M, N] reshaped. Identity transposes and reshapes are not emitted.

An operand may also stay stored transposed in its last two dims: lhs as [B..., K, M]
(contracting dim nb) and rhs as [B..., N, K] (contracting dim nb+1). BLAS reads those with
a trans flag at no cost, so when an operand's dims are already in the order batch +
contracting + free (lhs) or batch + free + contracting (rhs) that orientation is chosen and
no transpose is emitted for it.
"""

from __future__ import annotations

import math

from minijax.compiler.hlo.ir import Computation, Instruction, Module, Shape
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.utils import NameUniquer, optimizable_computations

_DIM_KEYS = ("lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims", "rhs_contracting_dims")


def _dims(dot: Instruction, key: str) -> tuple[int, ...]:
    return tuple(dot.attrs.get(key, ()))


def is_canonical(dot: Instruction) -> bool:
    """True if `dot` is already [batch..., m, k] x [batch..., k, n], either operand possibly
    stored transposed in its last two dims ([batch..., k, m] or [batch..., n, k])."""
    lhs, rhs = dot.operands
    nb = len(_dims(dot, "lhs_batch_dims"))
    batch = tuple(range(nb))
    last_two = ((nb,), (nb + 1,))
    return (lhs.shape.rank == nb + 2 and rhs.shape.rank == nb + 2
            and _dims(dot, "lhs_batch_dims") == batch and _dims(dot, "rhs_batch_dims") == batch
            and _dims(dot, "lhs_contracting_dims") in last_two
            and _dims(dot, "rhs_contracting_dims") in last_two)


def _is_identity(perm) -> bool:
    return list(perm) == list(range(len(perm)))


class _Emitter:
    def __init__(self, comp: Computation, names: NameUniquer, anchor: Instruction):
        self.comp, self.names, self.anchor = comp, names, anchor

    def emit(self, opcode, shape, operands, **attrs) -> Instruction:
        instr = Instruction(opcode, shape, list(operands), attrs=attrs,
                            name=self.names.fresh(opcode), metadata=dict(self.anchor.metadata))
        self.comp.instructions.insert(self.comp.instructions.index(self.anchor), instr)
        return instr

    def transpose(self, x: Instruction, perm) -> Instruction:
        perm = tuple(perm)
        if perm == tuple(range(len(perm))):
            return x
        shape = x.shape.with_dims([x.shape.dims[p] for p in perm])
        return self.emit("transpose", shape, [x], dimensions=perm)

    def reshape(self, x: Instruction, dims) -> Instruction:
        if tuple(x.shape.dims) == tuple(dims):
            return x
        return self.emit("reshape", x.shape.with_dims(dims), [x])


def _canonicalize(comp: Computation, names: NameUniquer, dot: Instruction) -> None:
    lhs, rhs = dot.operands
    lb, rb = _dims(dot, "lhs_batch_dims"), _dims(dot, "rhs_batch_dims")
    lc, rc = _dims(dot, "lhs_contracting_dims"), _dims(dot, "rhs_contracting_dims")
    lf = [d for d in range(lhs.shape.rank) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.shape.rank) if d not in rb and d not in rc]
    batch = [lhs.shape.dims[d] for d in lb]
    m = math.prod(lhs.shape.dims[d] for d in lf)
    k = math.prod(lhs.shape.dims[d] for d in lc)
    n = math.prod(rhs.shape.dims[d] for d in rf)
    e = _Emitter(comp, names, dot)
    nb = len(batch)
    # An operand already laid out transposed is read that way (a BLAS trans flag).
    lhs_t = not _is_identity([*lb, *lf, *lc]) and _is_identity([*lb, *lc, *lf])
    rhs_t = not _is_identity([*rb, *rc, *rf]) and _is_identity([*rb, *rf, *rc])
    if lhs_t:
        new_lhs = e.reshape(lhs, [*batch, k, m])
    else:
        new_lhs = e.reshape(e.transpose(lhs, [*lb, *lf, *lc]), [*batch, m, k])
    if rhs_t:
        new_rhs = e.reshape(rhs, [*batch, n, k])
    else:
        new_rhs = e.reshape(e.transpose(rhs, [*rb, *rc, *rf]), [*batch, k, n])
    attrs = {key: v for key, v in dot.attrs.items() if key not in _DIM_KEYS}
    attrs.update(lhs_batch_dims=tuple(range(nb)), rhs_batch_dims=tuple(range(nb)),
                 lhs_contracting_dims=(nb if lhs_t else nb + 1,),
                 rhs_contracting_dims=(nb + 1 if rhs_t else nb,))
    new_dot = e.emit("dot", Shape(dot.shape.element_type, (*batch, m, n)), [new_lhs, new_rhs],
                     **attrs)
    result = e.reshape(new_dot, dot.shape.dims)
    comp.replace_all_uses(dot, result)
    comp.instructions.remove(dot)


class DotCanonicalization(Pass):
    name = "dot-canonicalization"

    def run(self, module: Module) -> bool:
        names = NameUniquer(module)
        changed = False
        for comp in optimizable_computations(module):
            for instr in list(comp.instructions):
                if instr.opcode == "dot" and not is_canonical(instr):
                    _canonicalize(comp, names, instr)
                    changed = True
        return changed
