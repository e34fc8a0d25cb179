"""Graph surgery for fusion: create fusion instructions and move instructions into them.

A fusion instruction `f = fusion(a, b, ...), kind=kLoop, calls=fused_computation` runs its
fused computation as one kernel; the fused computation's parameter i is f's operand i. The
FusionBuilder keeps that correspondence while instructions move in:

  wrap(x)                  x becomes the root of a new one-instruction fusion
  fuse_producer(f, p)      p's computation is copied into f, in place of the parameter for p
  add_output(f, p)         like fuse_producer, and p's value also leaves f as an extra output
  merge_siblings(a, b)     two fusions become one multi-output fusion

Multi-output fusions have a tuple root; outside, their users read them via get-tuple-element.
The decisions (what to fuse) live in fusion.py; this file only edits the graph.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction, Module, Shape
from minijax.compiler.passes.cse import eliminate_common_subexpressions
from minijax.compiler.passes.graph_index import UserIndex, replace_uses_and_sort
from minijax.compiler.passes.opcodes import has_side_effects
from minijax.compiler.passes.utils import NameUniquer, clone

KIND_PREFIX = {"kLoop": "loop", "kInput": "input", "kOutput": "output"}


def fused_computation(fusion: Instruction) -> Computation:
    return fusion.called["calls"]


def is_multi_output(instr: Instruction) -> bool:
    return instr.opcode == "fusion" and fused_computation(instr).root.opcode == "tuple"


def fusion_outputs(fusion: Instruction) -> list[Instruction]:
    """The values a fusion produces: the root, or the root tuple's operands."""
    root = fused_computation(fusion).root
    return list(root.operands) if root.opcode == "tuple" else [root]


def parameters_of(body: Computation, count: int) -> list[Instruction]:
    """The fused computation's parameters; the builder keeps them first, in order."""
    head = body.instructions[:count]
    if len(head) == count and all(p.opcode == "parameter" and p.parameter_number == k
                                  for k, p in enumerate(head)):
        return head
    return body.parameters


def _parameter(body: Computation, number: int) -> Instruction:
    instrs = body.instructions
    if number < len(instrs):
        p = instrs[number]
        if p.opcode == "parameter" and p.parameter_number == number:
            return p
    return body.parameters[number]


class FusionBuilder:
    """Edits fusions inside one computation `comp` of `module`."""

    def __init__(self, module: Module, comp: Computation, names: NameUniquer,
                 index: UserIndex | None = None):
        self.module, self.comp, self.names = module, comp, names
        # Users of comp's instructions, updated by wrap and fuse_producer (the multi-output
        # edits leave it to the caller to rebuild it).
        self.index = index
        # id(fusion) -> {id(producer): (producer, its copy)} for the non-fusion producers
        # copied in so far: a producer reached again along another path reuses its copy
        # (a CSE of the whole body after every step made fusion quadratic in its size).
        self._copies: dict[int, dict[int, tuple]] = {}

    # -- parameters ----------------------------------------------------------------------

    def _param_for(self, fusion: Instruction, outer: Instruction) -> Instruction:
        """The fused parameter that reads `outer`, added as a new operand if needed."""
        body = fused_computation(fusion)
        for i, op in enumerate(fusion.operands):
            if op is outer:
                return _parameter(body, i)
        number = len(fusion.operands)
        param = Instruction("parameter", outer.shape, name=self.names.fresh(f"param_{number}"),
                            parameter_number=number)
        body.instructions.insert(number, param)
        fusion.operands.append(outer)
        return param

    def _remove_param(self, fusion: Instruction, index: int) -> None:
        body = fused_computation(fusion)
        params = parameters_of(body, len(fusion.operands))
        body.instructions.remove(params[index])
        fusion.operands.pop(index)
        for p in params[index + 1:]:
            p.parameter_number -= 1

    # -- moving code into a fusion -------------------------------------------------------

    def _copy_into(self, fusion: Instruction, producer: Instruction, rename: bool):
        """Copy `producer` (an instruction, or a fusion's whole body) into `fusion`; return
        the copy of its result and the list of copies (appended to the fused computation).
        `rename` gives the copies fresh names (used when the producer also stays outside)."""
        body = fused_computation(fusion)

        def name_of(instr):
            return self.names.fresh(instr.name) if rename else instr.name

        if producer.opcode != "fusion":
            operands = [self._param_for(fusion, op) for op in producer.operands]
            copy = clone(producer, operands, name_of(producer))
            body.instructions.append(copy)
            return copy, [copy]
        inner = fused_computation(producer)
        mapping = {id(p): self._param_for(fusion, producer.operands[p.parameter_number])
                   for p in inner.parameters}
        block = []
        for instr in inner.instructions:
            if instr.opcode == "parameter":
                continue
            copy = clone(instr, [mapping[id(op)] for op in instr.operands], name_of(instr))
            block.append(copy)
            mapping[id(instr)] = copy
        body.instructions.extend(block)
        return mapping[id(inner.root)], block

    def _substitute_param(self, fusion: Instruction, producer: Instruction, rename: bool):
        """Replace the parameter reading `producer` by a copy of the producer's code."""
        body = fused_computation(fusion)
        index = next(i for i, op in enumerate(fusion.operands) if op is producer)
        old_param = _parameter(body, index)
        copies = self._copies.setdefault(id(fusion), {})
        known = copies.get(id(producer))
        reuse = known is not None and known[0] is producer and any(
            i is known[1] for i in body.instructions)
        # The body stays sorted by moving only the new (or reused) code in front of its
        # first user: a full topological sort after every step made fusion quadratic.
        value, block = (known[1], []) if reuse else self._copy_into(fusion, producer, rename)
        self._remove_param(fusion, index)
        replace_uses_and_sort(body, old_param, value, block)
        if producer.opcode != "fusion":
            copies[id(producer)] = (producer, value)
            return value
        # A fused producer's body may repeat code already in this fusion; keep one copy.
        return eliminate_common_subexpressions(body).get(id(value), value)

    def wrap(self, instr: Instruction, kind: str) -> Instruction:
        """Replace `instr` by a fusion whose body holds just (a copy of) `instr`."""
        body = Computation(self.names.fresh(f"fused_{instr.opcode}"))
        prefix = KIND_PREFIX[kind]
        fusion = Instruction("fusion", instr.shape, [], attrs={"kind": kind},
                             called={"calls": body},
                             name=self.names.fresh(f"{prefix}_{instr.opcode}_fusion"),
                             metadata=dict(instr.metadata))
        operands = [self._param_for(fusion, op) for op in instr.operands]
        copy = clone(instr, operands, instr.name)
        body.add(copy)
        body.root = copy
        self.module.add_computation(body)
        position = self.comp.instructions.index(instr)
        if self.index is not None:
            self.index.replace(instr, fusion)
        else:
            self.comp.replace_all_uses(instr, fusion)
        self.comp.instructions[position] = fusion
        return fusion

    def fuse_producer(self, fusion: Instruction, producer: Instruction,
                      keep: bool) -> Instruction:
        """Move `producer` into `fusion`. With keep=True the producer has other users and
        stays outside too (it is duplicated); otherwise it leaves the computation. Returns
        the fused value that replaced the producer's parameter."""
        before = list(fusion.operands)
        value = self._substitute_param(fusion, producer, rename=keep)
        # A producer passed as several operands (CSE merged two equal ones) feeds several
        # parameters: each reads the fused copy, or the producer could leave while read.
        while any(op is producer for op in fusion.operands):
            self._substitute_param(fusion, producer, rename=keep)
        if not keep:
            self.comp.instructions.remove(producer)
        if self.index is not None:
            self.index.operands_changed(fusion, before)
            if not keep:
                self.index.remove(producer)
                self.drop_dead(producer.operands)
            else:
                self.drop_dead([producer])
        return value

    def drop_dead(self, candidates) -> int:
        """Remove those of `candidates` (and then of their operands) that no longer have a
        user: a producer duplicated into fusions whose last user was fused is dead. Left in
        place it would root a fusion copying its whole ancestry (DCE deletes it afterwards):
        on chains of multi-user producers (threefry's rounds) that made fusion quadratic.
        Returns how many were removed."""
        index, comp = self.index, self.comp
        removed: set[int] = set()
        stack = list(candidates)
        while stack:
            instr = stack.pop()
            if (id(instr) in removed or instr not in index or instr is comp.root
                    or instr.opcode == "parameter" or index.has_users(instr)
                    or has_side_effects(instr)):
                continue
            index.remove(instr)
            removed.add(id(instr))
            stack.extend(instr.operands)
        if removed:
            comp.instructions = [i for i in comp.instructions if id(i) not in removed]
        return len(removed)

    # -- multi-output --------------------------------------------------------------------

    def _redirect(self, old: Instruction, new: Instruction) -> None:
        """Point every user of `old` except `new` itself at `new`."""
        for instr in self.comp.instructions:
            if instr is not new:
                instr.operands = [new if op is old else op for op in instr.operands]
        if self.comp.root is old:
            self.comp.root = new

    def _tuple_element(self, fusion: Instruction, index: int) -> Instruction:
        shape = fusion.shape.tuple_shapes[index]
        gte = Instruction("get-tuple-element", shape, [fusion], attrs={"index": index},
                          name=self.names.fresh("get-tuple-element"))
        self.comp.instructions.append(gte)
        return gte

    def _set_outputs(self, fusion: Instruction, outputs: list[Instruction]) -> None:
        body = fused_computation(fusion)
        if body.root is not None and body.root.opcode == "tuple":
            body.instructions.remove(body.root)
        root = Instruction("tuple", Shape.tuple([o.shape for o in outputs]), list(outputs),
                           name=self.names.fresh("tuple"))
        body.add(root)
        body.root = root
        fusion.shape = root.shape

    def _expose_as_tuple(self, fusion: Instruction) -> None:
        """Turn a single-output fusion into a 1-tuple one; its users read element 0."""
        if is_multi_output(fusion):
            return
        self._set_outputs(fusion, fusion_outputs(fusion))
        self._redirect(fusion, self._tuple_element(fusion, 0))

    def add_output(self, fusion: Instruction, producer: Instruction) -> None:
        """Fuse `producer` into `fusion` and make its value an extra output, which the
        producer's other users then read through a get-tuple-element."""
        if self.index is None:
            self._expose_as_tuple(fusion)
            value = self._substitute_param(fusion, producer, rename=False)
            self._set_outputs(fusion, fusion_outputs(fusion) + [value])
            extra = self._tuple_element(fusion, len(fusion.shape.tuple_shapes) - 1)
            self._redirect(producer, extra)
            self.comp.instructions.remove(producer)
            self.comp.topological_sort()
            return
        # With an index: the same edits, the users found through the index and the order
        # repaired between the producer and the fusion only (no whole-program sort).
        index = self.index
        fusion_users = index.users_of(fusion)
        producer_users = [u for u in index.users_of(producer) if u is not fusion]
        gtes = []
        if not is_multi_output(fusion):
            self._set_outputs(fusion, fusion_outputs(fusion))
            first = Instruction("get-tuple-element", fusion.shape.tuple_shapes[0], [fusion],
                                attrs={"index": 0}, name=self.names.fresh("get-tuple-element"))
            gtes.append(first)
            for user in fusion_users:
                user.operands = [first if op is fusion else op for op in user.operands]
            if self.comp.root is fusion:
                self.comp.root = first
            fusion_users = []
        before = list(fusion.operands)
        value = self._substitute_param(fusion, producer, rename=False)
        self._set_outputs(fusion, fusion_outputs(fusion) + [value])
        extra = Instruction("get-tuple-element", value.shape, [fusion],
                            attrs={"index": len(fusion.shape.tuple_shapes) - 1},
                            name=self.names.fresh("get-tuple-element"))
        gtes.append(extra)
        for user in producer_users:
            user.operands = [extra if op is producer else op for op in user.operands]
        if self.comp.root is producer:
            self.comp.root = extra
        self._splice(producer, fusion, [fusion, *gtes], {id(producer), *map(id, gtes)})
        index.operands_changed(fusion, before)
        index.merged(producer, None, fusion, gtes, producer_users + fusion_users)

    def merge_siblings(self, a: Instruction, b: Instruction, kind: str) -> Instruction:
        """Replace fusions `a` and `b` (neither depending on the other) by one multi-output
        fusion computing both. With an index, the index, the program order and the
        index's positions are updated in place (the work is the number of instructions
        between `a` and `b` plus their users): a rebuild and a sort of the whole
        computation per merge made sibling fusion quadratic."""
        body = Computation(self.names.fresh("fused_multi_output"))
        merged = Instruction("fusion", Shape.tuple([]), [], attrs={"kind": kind},
                             called={"calls": body},
                             name=self.names.fresh(f"{KIND_PREFIX[kind]}_multi_output_fusion"),
                             metadata=dict(a.metadata))
        body.root = None
        offsets, outputs = [], []
        for part in (a, b):
            offsets.append(len(outputs))
            outputs += self._copy_outputs(merged, part)
        self.module.add_computation(body)
        self._set_outputs(merged, outputs)
        eliminate_common_subexpressions(body)  # the siblings' shared subexpressions
        if self.index is None:
            return self._place_merged_by_sorting(a, b, merged, offsets)
        index = self.index
        users = {id(part): index.users_of(part) for part in (a, b)}
        new_gtes: list[Instruction] = []
        for part, offset in zip((a, b), offsets):
            if is_multi_output(part):
                for user in users[id(part)]:
                    user.operands = [merged]
                    user.attrs = dict(user.attrs, index=user.attrs["index"] + offset)
            else:
                gte = Instruction("get-tuple-element", fusion_outputs(part)[0].shape,
                                  [merged], attrs={"index": offset},
                                  name=self.names.fresh("get-tuple-element"))
                new_gtes.append(gte)
                for user in users[id(part)]:
                    user.operands = [gte if op is part else op for op in user.operands]
                if self.comp.root is part:
                    self.comp.root = gte
        position = self.index.positions()
        lower, upper = (a, b) if position[id(a)] < position[id(b)] else (b, a)
        # users were already rewired: what reads merged or its new elements moves too
        self._splice(lower, upper, [merged, *new_gtes],
                     {id(lower), id(merged), *map(id, new_gtes)})
        index.merged(a, b, merged, new_gtes, users[id(a)] + users[id(b)])
        return merged

    def _splice(self, lower: Instruction, upper: Instruction, new: list[Instruction],
                moved: set[int]) -> None:
        """Replace the run of the program from `lower` to `upper` (lower first) by: what in
        between does not depend on anything in `moved`, then `new`, then what does (in
        their order). The callers guarantee that nothing in between both depends on
        `lower` and is needed by `new`, so the order stays topological; only the run is
        visited, and the index's positions are renumbered within it."""
        position = self.index.positions()
        instrs = self.comp.instructions
        lo, hi = instrs.index(lower), instrs.index(upper)
        before, after = [], []
        for instr in instrs[lo + 1:hi]:
            if any(id(op) in moved for op in instr.operands):
                moved.add(id(instr))
                after.append(instr)
            else:
                before.append(instr)
        block = before + new + after
        instrs[lo:hi + 1] = block
        self.index.renumber(block, position[id(lower)], position[id(upper)])
        self.index.reorder_work += hi - lo + 1

    def _place_merged_by_sorting(self, a, b, merged, offsets) -> Instruction:
        position = max(self.comp.instructions.index(a), self.comp.instructions.index(b))
        self.comp.instructions.insert(position + 1, merged)
        for part, offset in zip((a, b), offsets):
            if is_multi_output(part):
                for user in [u for u in self.comp.instructions if part in u.operands]:
                    user.operands = [merged]
                    user.attrs = dict(user.attrs, index=user.attrs["index"] + offset)
            else:
                self._redirect(part, self._tuple_element(merged, offset))
            self.comp.instructions.remove(part)
        self.comp.topological_sort()
        return merged

    def _copy_outputs(self, merged: Instruction, part: Instruction) -> list[Instruction]:
        """Copy the body of fusion `part` into `merged` (names kept: `part` goes away)."""
        inner = fused_computation(part)
        body = fused_computation(merged)
        mapping = {id(p): self._param_for(merged, part.operands[p.parameter_number])
                   for p in inner.parameters}
        for instr in inner.instructions:
            if instr.opcode == "parameter" or (instr is inner.root and instr.opcode == "tuple"):
                continue
            copy = clone(instr, [mapping[id(op)] for op in instr.operands], instr.name)
            body.instructions.append(copy)
            mapping[id(instr)] = copy
        return [mapping[id(o)] for o in fusion_outputs(part)]
