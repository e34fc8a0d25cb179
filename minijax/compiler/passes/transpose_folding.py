"""Transpose folding: absorb transposes around a dot into the dot itself.

Operand side: dot(transpose(a, perm), b) reads a's dims through the permutation: dim j of
the transpose is dim perm[j] of a. So the dot can read `a` directly if its batch and
contracting dims are renamed through perm. The dot's output lists the free (non-batch,
non-contracting) dims of each operand in increasing order, so folding is only done when the
renamed free dims stay in the same relative order; otherwise the result would come out
transposed.

Output side: a dot's result is [batch..., lhs free..., rhs free...]. A transpose that keeps
the batch dims in place and swaps the two free groups (the gradient of a matmul with
respect to its right operand, dW = (x^T g)^T) is the same dot with its operands swapped,
so transpose(dot(a, b)) becomes dot(b, a) when the transpose is the dot's only user.
Together with dot canonicalization (which accepts an operand stored transposed, read by
BLAS with a trans flag) this leaves no transpose to materialize around matmuls.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction, Module
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.utils import NameUniquer, optimizable_computations, remove_dead

_SIDES = (("lhs", "rhs"), ("rhs", "lhs"))


def _fold(dot: Instruction, side: str, index: int) -> bool:
    t = dot.operands[index]
    if t.opcode != "transpose":
        return False
    perm = tuple(t.attrs["dimensions"])
    batch = tuple(dot.attrs.get(f"{side}_batch_dims", ()))
    contracting = tuple(dot.attrs.get(f"{side}_contracting_dims", ()))
    free = [d for d in range(len(perm)) if d not in batch and d not in contracting]
    renamed_free = [perm[d] for d in free]
    if renamed_free != sorted(renamed_free):
        return False
    dot.attrs[f"{side}_batch_dims"] = tuple(perm[d] for d in batch)
    dot.attrs[f"{side}_contracting_dims"] = tuple(perm[d] for d in contracting)
    dot.operands[index] = t.operands[0]
    return True


def _swaps_free_groups(dot: Instruction, perm: tuple[int, ...]) -> bool:
    """True if `perm` maps [batch, lhs free, rhs free] to [batch, rhs free, lhs free]."""
    lhs, rhs = dot.operands
    nb = len(dot.attrs.get("lhs_batch_dims", ()))
    nl = lhs.shape.rank - nb - len(dot.attrs.get("lhs_contracting_dims", ()))
    nr = rhs.shape.rank - nb - len(dot.attrs.get("rhs_contracting_dims", ()))
    if nl == 0 or nr == 0:
        return False
    want = (*range(nb), *range(nb + nl, nb + nl + nr), *range(nb, nb + nl))
    return perm == want


def _fold_output(comp: Computation, t: Instruction, use_count: dict, names) -> bool:
    dot = t.operands[0]
    if (dot.opcode != "dot" or use_count.get(id(dot), 0) != 1 or dot is comp.root
            or not _swaps_free_groups(dot, tuple(t.attrs["dimensions"]))):
        return False
    attrs = dict(dot.attrs)
    for key in ("batch_dims", "contracting_dims"):
        for mine, other in _SIDES:
            attrs[f"{mine}_{key}"] = tuple(dot.attrs.get(f"{other}_{key}", ()))
    # The transpose becomes the swapped dot in place (same shape and position).
    t.opcode, t.attrs, t.name = "dot", attrs, names.fresh("dot")
    t.operands = [dot.operands[1], dot.operands[0]]
    return True


class TransposeFolding(Pass):
    name = "transpose-folding"

    def run(self, module: Module) -> bool:
        changed = False
        names = NameUniquer(module)
        for comp in optimizable_computations(module):
            use_count: dict[int, int] = {}
            for instr in comp.instructions:
                for op in instr.operands:
                    use_count[id(op)] = use_count.get(id(op), 0) + 1
            comp_changed = False
            for instr in comp.instructions:
                if instr.opcode == "transpose":
                    comp_changed |= _fold_output(comp, instr, use_count, names)
                if instr.opcode == "dot":
                    comp_changed |= _fold(instr, "lhs", 0)
                    comp_changed |= _fold(instr, "rhs", 1)
            if comp_changed:
                remove_dead(comp)
                changed = True
        return changed
