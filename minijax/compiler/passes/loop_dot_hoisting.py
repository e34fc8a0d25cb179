"""Loop dot hoisting: one batched dot before a counted loop instead of one small dot per step.

A scan over a sequence `xs` whose body multiplies the step's slice by a loop-invariant
matrix (an RNN's input projection `x_t @ W`) runs T small gemms, each too small to reach the
machine's FMA peak. The same products are rows of one large gemm over the whole sequence:

    dot(reshape(dynamic-slice(xs, i)), W)  ==  reshape(dynamic-slice(dot(xs, W), i'))

where `i'` is `i` moved to the position the sliced dim takes in the big dot's output. Both
sides clamp the index the same way (the sliced dim has the same size T), so the rewrite holds
for any index expression. The pass computes `dot(xs, W)` once in front of the while loop,
passes it into the loop as a new loop-invariant tuple element, and slices it per step.

It applies when
- the loop is counted: a counter starting at a constant, incremented by one, compared
  with `<` against a constant trip count N >= 2, and the sliced dim has size T <= N (so the
  hoisted dot computes no row the loop does not need);
- `xs` and `W` are loop-invariant tuple elements (the body passes them through unchanged);
- the slice takes one index along one dim and everything along the others, and a reshape
  drops that unit dim before the dot, which has no batch dims;
- the while's result is used only through get-tuple-element (its shape grows by the new
  element) and its condition and body are called by it alone;
- the hoisted product is at most _MAX_HOISTED_BYTES (memory is traded for speed).
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction, Module, Shape
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.utils import NameUniquer, make_constant, scalar_constant_value

_MAX_HOISTED_BYTES = 64 << 20


def _tuple_element(instr: Instruction, index: int) -> Instruction | None:
    """The instruction feeding element `index` of a `tuple` instruction, else None."""
    if instr.opcode != "tuple" or index >= len(instr.operands):
        return None
    return instr.operands[index]


def _is_element_of(instr: Instruction, param: Instruction) -> int | None:
    """The tuple index if `instr` is get-tuple-element(param, index), else None."""
    if instr.opcode == "get-tuple-element" and instr.operands[0] is param:
        return instr.attrs["index"]
    return None


def _trip_count(loop: Instruction) -> int | None:
    """The trip count of a loop counting up by one from a constant to a constant bound with
    `<`; None for any other loop."""
    cond, body = loop.called["condition"], loop.called["body"]
    compare = cond.root
    if compare.opcode != "compare" or compare.attrs.get("direction") != "LT":
        return None
    counter = _is_element_of(compare.operands[0], cond.parameters[0])
    bound = scalar_constant_value(compare.operands[1])
    start_instr = _tuple_element(loop.operands[0], counter) if counter is not None else None
    start = scalar_constant_value(start_instr) if start_instr is not None else None
    if counter is None or bound is None or start is None:
        return None
    step = _tuple_element(body.root, counter)
    if step is None or step.opcode != "add":
        return None
    a, b = step.operands
    if _is_element_of(a, body.parameters[0]) != counter:
        a, b = b, a
    if _is_element_of(a, body.parameters[0]) != counter or scalar_constant_value(b) != 1:
        return None
    return int(bound) - int(start)


def _invariant_index(instr: Instruction, body: Computation) -> int | None:
    """The tuple index of a loop-invariant element read by `instr` (the body passes that
    element back unchanged), else None."""
    index = _is_element_of(instr, body.parameters[0])
    passed = _tuple_element(body.root, index) if index is not None else None
    if passed is None or _is_element_of(passed, body.parameters[0]) != index:
        return None
    return index


def _sliced_dim(ds: Instruction) -> int | None:
    """The one dim a dynamic-slice takes a single index of (full extent elsewhere, start
    indices of the other dims constant zero), else None."""
    operand, starts = ds.operands[0], ds.operands[1:]
    sizes = tuple(ds.attrs.get("dynamic_slice_sizes", ()))
    if operand.shape.is_tuple or len(starts) != operand.shape.rank:
        return None
    dims = [d for d, (size, full) in enumerate(zip(sizes, operand.shape.dims)) if size != full]
    if len(dims) != 1 or sizes[dims[0]] != 1:
        return None
    d = dims[0]
    if any(scalar_constant_value(s) != 0 for k, s in enumerate(starts) if k != d):
        return None
    return d


class _Candidate:
    """One hoistable dot: which side reads the slice, and the pieces of the pattern."""

    def __init__(self, dot, side, ds, xs_index, w_index, sliced_dim, index):
        self.dot, self.side, self.ds = dot, side, ds
        self.xs_index, self.w_index = xs_index, w_index
        self.sliced_dim, self.index = sliced_dim, index


def _match(dot: Instruction, body: Computation, trips: int) -> _Candidate | None:
    if dot.attrs.get("lhs_batch_dims") or dot.attrs.get("rhs_batch_dims"):
        return None
    for side, position in (("lhs", 0), ("rhs", 1)):
        reshape, other = dot.operands[position], dot.operands[1 - position]
        if reshape.opcode != "reshape" or reshape.operands[0].opcode != "dynamic-slice":
            continue
        ds = reshape.operands[0]
        d = _sliced_dim(ds)
        if d is None:
            continue
        xs = ds.operands[0]
        squeezed = tuple(n for k, n in enumerate(ds.shape.dims) if k != d)
        if tuple(reshape.shape.dims) != squeezed or xs.shape.dims[d] > trips:
            continue
        xs_index, w_index = _invariant_index(xs, body), _invariant_index(other, body)
        if xs_index is None or w_index is None:
            continue
        return _Candidate(dot, side, ds, xs_index, w_index, d, ds.operands[1 + d])
    return None


def _hoisted_dot(c: _Candidate, xs: Instruction, w: Instruction, names) -> tuple:
    """The dot over the whole of `xs` and the position of the sliced dim in its output."""
    d = c.sliced_dim
    widen = {e: (e if e < d else e + 1) for e in range(xs.shape.rank - 1)}
    attrs = dict(c.dot.attrs)
    key = f"{c.side}_contracting_dims"
    attrs[key] = tuple(widen[e] for e in c.dot.attrs.get(key, ()))
    x_free = [e for e in range(xs.shape.rank - 1) if e not in c.dot.attrs.get(key, ())]
    p = sum(1 for e in x_free if widen[e] < d)  # sliced dim's place among xs's free dims
    xs_free_dims = [xs.shape.dims[widen[e]] for e in x_free]
    xs_free_dims.insert(p, xs.shape.dims[d])
    other_side = "rhs" if c.side == "lhs" else "lhs"
    w_contracting = c.dot.attrs.get(f"{other_side}_contracting_dims", ())
    w_free_dims = [n for e, n in enumerate(w.shape.dims) if e not in w_contracting]
    if c.side == "lhs":
        dims, operands, at = xs_free_dims + w_free_dims, [xs, w], p
    else:
        dims, operands, at = w_free_dims + xs_free_dims, [w, xs], len(w_free_dims) + p
    shape = Shape(c.dot.shape.element_type, tuple(dims))
    hoisted = Instruction("dot", shape, operands, attrs, name=names.fresh("hoisted_dot"),
                          metadata=dict(c.dot.metadata))
    return hoisted, at


def _outer_element(comp: Computation, loop: Instruction, index: int, names) -> Instruction:
    """Element `index` of the loop's initial tuple, as an instruction of `comp`."""
    init = loop.operands[0]
    direct = _tuple_element(init, index)
    if direct is not None:
        return direct
    shape = init.shape.tuple_shapes[index]
    return _insert_before(comp, loop, Instruction(
        "get-tuple-element", shape, [init], {"index": index}, name=names.fresh("gte")))


def _insert_before(comp: Computation, anchor: Instruction, instr: Instruction):
    comp.instructions.insert(comp.instructions.index(anchor), instr)
    return instr


def _rewrite(comp: Computation, loop: Instruction, found: list[_Candidate], names) -> None:
    body, cond = loop.called["body"], loop.called["condition"]
    body_param, cond_param = body.parameters[0], cond.parameters[0]
    n = len(loop.shape.tuple_shapes)
    new_elements = list(loop.shape.tuple_shapes)
    outer_values = [_outer_element(comp, loop, k, names) for k in range(n)]
    body_reads: list[Instruction] = []
    for k, c in enumerate(found):
        hoisted, at = _hoisted_dot(c, outer_values[c.xs_index], outer_values[c.w_index], names)
        _insert_before(comp, loop, hoisted)
        outer_values.append(hoisted)
        new_elements.append(hoisted.shape)
        read = Instruction("get-tuple-element", hoisted.shape, [body_param], {"index": n + k},
                           name=names.fresh("hoisted_rows"))
        index_type = c.index.shape.element_type
        zero = make_constant(0, Shape(index_type, ()), names.fresh("constant"))
        starts = [c.index if r == at else zero for r in range(hoisted.shape.rank)]
        sizes = tuple(1 if r == at else m for r, m in enumerate(hoisted.shape.dims))
        row = Instruction("dynamic-slice", Shape(hoisted.shape.element_type, sizes),
                          [read, *starts], {"dynamic_slice_sizes": sizes},
                          name=names.fresh("dynamic_slice"))
        squeezed = Instruction("reshape", c.dot.shape, [row], name=names.fresh("reshape"))
        for instr in (read, zero, row, squeezed):
            _insert_before(body, c.dot, instr)
        body.replace_all_uses(c.dot, squeezed)
        body.instructions.remove(c.dot)
        body_reads.append(read)
    new_shape = Shape.tuple(new_elements)
    new_init = Instruction("tuple", new_shape, outer_values, name=names.fresh("tuple"))
    _insert_before(comp, loop, new_init)
    loop.operands = [new_init]
    loop.shape = new_shape
    body_param.shape = cond_param.shape = new_shape
    body.root.operands = list(body.root.operands) + body_reads
    body.root.shape = new_shape
    body.topological_sort()


def _callers(module: Module) -> dict[int, int]:
    count: dict[int, int] = {}
    for comp in module.reachable_computations():
        for instr in comp.instructions:
            for called in instr.called_computations():
                count[id(called)] = count.get(id(called), 0) + 1
    return count


def _hoistable(comp: Computation, loop: Instruction, callers, users) -> list[_Candidate]:
    body, cond = loop.called["body"], loop.called["condition"]
    if (callers.get(id(body)) != 1 or callers.get(id(cond)) != 1
            or body.root.opcode != "tuple" or len(body.parameters) != 1
            or len(cond.parameters) != 1
            or any(u.opcode != "get-tuple-element" for u in users.get(loop, []))
            or loop is comp.root):
        return []
    for param, callee in ((body.parameters[0], body), (cond.parameters[0], cond)):
        if any(param in i.operands and i.opcode != "get-tuple-element"
               for i in callee.instructions):
            return []
    trips = _trip_count(loop)
    if trips is None or trips < 2:
        return []
    found, budget = [], _MAX_HOISTED_BYTES
    for instr in body.instructions:
        if instr.opcode != "dot":
            continue
        c = _match(instr, body, trips)
        if c is None:
            continue
        size = instr.shape.nbytes * c.ds.operands[0].shape.dims[c.sliced_dim]
        if size <= budget:
            found.append(c)
            budget -= size
    return found


class LoopDotHoisting(Pass):
    name = "loop-dot-hoisting"

    def run(self, module: Module) -> bool:
        changed = False
        names = NameUniquer(module)
        callers = _callers(module)
        for comp in module.reachable_computations():
            users = comp.users()
            for loop in [i for i in comp.instructions if i.opcode == "while"]:
                found = _hoistable(comp, loop, callers, users)
                if found:
                    _rewrite(comp, loop, found, names)
                    changed = True
        return changed
