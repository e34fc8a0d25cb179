"""Row fusion: a chain of row reductions and their consumers becomes one kernel per row.

After the fusion pass, softmax over the rows of x is three kernels: the row maximum, a
multi-output fusion computing e = exp(x - max) and its row sum, and e / sum. x is read from
memory three times and e is written and read once. This pass merges such chains into one
fusion whose fused computation holds the reductions internally. The CPU code generator
(codegen/cpu/row_loops.py) runs it row by row: one inner loop per reduction stage (max, then the
sum of exp(x - max), ...) while the row stays in cache, then one loop writing the outputs,
so x is read from memory once and only the outputs are written.

The merge is producer-consumer: a fusion Q absorbs a producer fusion P when Q reads a value
of P that depends on a reduction inside P (a "row value" such as max, or a row-shaped value
computed from one, such as exp(x - max)). Merges repeat until none applies, so whole chains
(layer norm: mean, variance of x - mean, normalize; and their gradients) become one fusion.

A merged computation is accepted only if it has the row structure `analyze_row_fusion`
checks: every reduction reduces exactly the minor dimension of an array of dims
rows + (cols,); every value that depends on a reduction is either a row-shaped value
(dims rows + (cols,)) combined elementwise, or a per-row value (dims rows or rows + (1,))
combined elementwise, reshaped between those two forms, or broadcast back along the row
(broadcast dimensions = the leading dims). So each reduction's result is only ever read at
its own row. Rows must fit in cache (MAX_ROW_BYTES of row-shaped parameters), and there are
at most MAX_PASSES reduction stages. Values that do not depend on a reduction may be any
elementwise/indexing expression; they are recomputed in each stage that needs them, as
is every row-shaped value (never more often than the number of stages plus one).

The result is a `fusion` with kind=kInput (plain HLO text: it prints, parses and runs on
the evaluator like any fusion). Its plan is recorded on the fused computation
(`Computation.row_plan`), where the code generators read it (`row_plan.plan_for`). Every
decision is logged into `module.fusion_log`.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction, Module, Shape
from minijax.compiler.hlo.row_plan import (  # noqa: F401 - the plan is part of this pass's API
    MAX_PASSES,
    MAX_ROW_BYTES,
    RowPlan,
    analyze_row_fusion,
    record_row_plan,
    row_fusion_plan,
)
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.cse import eliminate_common_subexpressions
from minijax.compiler.passes.fusion_builder import (
    fused_computation,
    fusion_outputs,
    is_multi_output,
)
from minijax.compiler.passes.utils import (
    NameUniquer,
    clone,
    drop_unreachable_computations,
    reaches,
    remove_dead,
    sequential_computations,
)

MAX_OPERANDS = 64


def _dependent_ids(comp: Computation) -> set[int]:
    """ids of the instructions of `comp` that depend on one of its reductions."""
    dep: set[int] = set()
    for instr in comp.instructions:
        if instr.opcode == "reduce" or any(id(o) in dep for o in instr.operands):
            dep.add(id(instr))
    return dep


def _is_candidate(instr: Instruction) -> bool:
    return instr.opcode == "fusion" and instr.attrs.get("kind") in ("kLoop", "kInput")


class RowFusion(Pass):
    """The row fusion pass (see the module docstring)."""

    name = "row-fusion"

    def __init__(self, max_row_bytes: int = MAX_ROW_BYTES):
        self.max_row_bytes = max_row_bytes

    def run(self, module: Module) -> bool:
        self._log_list = module.fusion_log
        self._logged = set(self._log_list)
        self.names = NameUniquer(module)
        self.module = module
        self._tried: set[tuple[str, str]] = set()
        self._dependents: dict[int, tuple[Computation, set[int]]] = {}
        changed = False
        for comp in sequential_computations(module):
            while self._merge_one(comp):
                changed = True
        if changed:
            drop_unreachable_computations(module)
        return changed

    def _log(self, message: str) -> None:
        if message not in self._logged:
            self._logged.add(message)
            self._log_list.append(message)

    # -- choosing merges -----------------------------------------------------------------

    def _merge_one(self, comp: Computation) -> bool:
        users = comp.users()
        self._position = {id(instr): k for k, instr in enumerate(comp.instructions)}
        for consumer in comp.instructions:
            if not _is_candidate(consumer):
                continue
            for producer, read in self._row_producers(consumer):
                key = (producer.name, consumer.name)
                if key in self._tried:
                    continue
                self._tried.add(key)
                if self._try_merge(comp, users, producer, consumer, read):
                    return True
        return False

    def _dependent(self, body: Computation) -> set[int]:
        """_dependent_ids(body), computed once per fused computation (bodies are never
        edited here: a merge builds a new one), not again after every merge."""
        known = self._dependents.get(id(body))
        if known is None or known[0] is not body:
            known = self._dependents[id(body)] = (body, _dependent_ids(body))
        return known[1]

    def _row_producers(self, consumer: Instruction):
        """(producer fusion, indices of its outputs read) for each fusion operand of
        `consumer` that contains a reduction and hands `consumer` a value depending on it."""
        read: dict[int, tuple[Instruction, set[int]]] = {}
        for op in consumer.operands:
            if op.opcode == "get-tuple-element" and _is_candidate(op.operands[0]):
                producer, k = op.operands[0], op.attrs["index"]
            elif _is_candidate(op) and not is_multi_output(op):
                producer, k = op, 0
            else:
                continue
            read.setdefault(id(producer), (producer, set()))[1].add(k)
        for producer, indices in read.values():
            body = fused_computation(producer)
            dep = self._dependent(body)
            outs = fusion_outputs(producer)
            if any(id(outs[k]) in dep for k in indices):
                yield producer, indices

    def _try_merge(self, comp, users, producer, consumer, read) -> bool:
        label = f"{producer.name} into {consumer.name}"
        for op in consumer.operands:
            via_producer = op is producer or (op.opcode == "get-tuple-element"
                                              and op.operands[0] is producer)
            if not via_producer and reaches(producer, op, self._position):
                self._log(f"reject row fusion of {label}: {op.name} is between them")
                return False
        merged = self._merged_body(comp, users, producer, consumer)
        body, operands = merged[0], merged[1]
        if len(operands) > MAX_OPERANDS:
            self._log(f"reject row fusion of {label}: more than {MAX_OPERANDS} operands")
            return False
        plan = analyze_row_fusion(body, self.max_row_bytes)
        if isinstance(plan, str):
            self._log(f"reject row fusion of {label}: {plan}")
            return False
        self._log(f"row-fuse {label}: {len(plan.passes)} reduction stage(s) over rows of "
                  f"{plan.cols}, one kernel")
        record_row_plan(body, plan)  # codegen runs this plan (row_plan.plan_for)
        self._commit(comp, producer, consumer, *merged)
        return True

    # -- building the merged fusion ------------------------------------------------------

    def _merged_body(self, comp, users, producer, consumer):
        """A new fused computation computing `consumer`'s outputs and those of `producer`'s
        outputs read outside `consumer`. Returns (body, operands, consumer's output values,
        [(outer instruction reading a producer output elsewhere, that output's value)])."""
        body = Computation(self.names.fresh("fused_row"))
        params: dict[int, Instruction] = {}
        operands: list[Instruction] = []
        code: list[Instruction] = []

        def param_for(outer):
            p = params.get(id(outer))
            if p is None:
                p = Instruction("parameter", outer.shape, name=self.names.fresh(
                    f"param_{len(operands)}"), parameter_number=len(operands))
                params[id(outer)] = p
                operands.append(outer)
            return p

        def copy_body(fusion, source):
            inner = fused_computation(fusion)
            mapping = {}
            for instr in inner.instructions:
                if instr.opcode == "parameter":
                    mapping[id(instr)] = source(fusion.operands[instr.parameter_number])
                elif not (instr is inner.root and instr.opcode == "tuple"):
                    c = clone(instr, [mapping[id(o)] for o in instr.operands], instr.name)
                    code.append(c)
                    mapping[id(instr)] = c
            return [mapping[id(o)] for o in fusion_outputs(fusion)]

        p_outs = copy_body(producer, param_for)

        def consumer_source(outer):
            if outer is producer:
                return p_outs[0]
            if outer.opcode == "get-tuple-element" and outer.operands[0] is producer:
                return p_outs[outer.attrs["index"]]
            return param_for(outer)

        q_outs = copy_body(consumer, consumer_source)
        # Producer outputs that something other than the consumer still reads.
        external: list[tuple[Instruction, Instruction]] = []
        readers = [producer] if not is_multi_output(producer) else [
            u for u in users.get(producer, []) if u.opcode == "get-tuple-element"]
        for outer in readers:
            if outer is comp.root or any(u is not consumer for u in users.get(outer, [])):
                k = outer.attrs["index"] if outer is not producer else 0
                external.append((outer, p_outs[k]))
        values = list(dict.fromkeys(q_outs + [v for _, v in external]))
        body.instructions = [params[id(o)] for o in operands] + code
        tupled = len(values) > 1 or is_multi_output(consumer)
        if tupled:
            root = Instruction("tuple", Shape.tuple([v.shape for v in values]), values,
                               name=self.names.fresh("tuple"))
            body.instructions.append(root)
        else:
            root = values[0]
        body.root = root
        merged = eliminate_common_subexpressions(body)
        remove_dead(body)
        self._drop_unused_params(body, operands)
        q_outs = [merged.get(id(v), v) for v in q_outs]
        external = [(outer, merged.get(id(v), v)) for outer, v in external]
        return body, operands, q_outs, external

    @staticmethod
    def _drop_unused_params(body: Computation, operands: list[Instruction]) -> None:
        used = {id(o) for i in body.instructions for o in i.operands} | {id(body.root)}
        keep = []
        for p in body.parameters:
            if id(p) in used:
                keep.append((p, operands[p.parameter_number]))
            else:
                body.instructions.remove(p)
        operands[:] = [outer for _, outer in keep]
        for k, (p, _) in enumerate(keep):
            p.parameter_number = k

    def _commit(self, comp, producer, consumer, body, operands, q_outs, external) -> None:
        root = body.root
        fusion = Instruction("fusion", root.shape, list(operands), attrs={"kind": "kInput"},
                             called={"calls": body}, name=self.names.fresh("row_fusion"),
                             metadata=dict(consumer.metadata))
        self.module.add_computation(body)
        position = comp.instructions.index(consumer)
        comp.instructions.insert(position, fusion)
        values = list(root.operands) if root.opcode == "tuple" else [root]

        def index_of(value):
            # CSE may have merged an output into an earlier equal value.
            return next(k for k, v in enumerate(values) if v is value)

        def element(value):
            if root.opcode != "tuple":
                return fusion
            gte = Instruction("get-tuple-element", value.shape, [fusion],
                              attrs={"index": index_of(value)},
                              name=self.names.fresh("get-tuple-element"))
            comp.instructions.append(gte)
            return gte

        q_values = q_outs
        if is_multi_output(consumer):
            for u in [u for u in comp.instructions if consumer in u.operands]:
                u.operands = [fusion]
                u.attrs = dict(u.attrs, index=index_of(q_values[u.attrs["index"]]))
        else:
            comp.replace_all_uses(consumer, element(q_values[0]))
        for outer, value in external:
            if outer is producer:
                comp.replace_all_uses(producer, element(value))
            else:
                outer.operands = [fusion]
                outer.attrs = dict(outer.attrs, index=index_of(value))
        gone = {id(producer), id(consumer)}
        comp.instructions = [i for i in comp.instructions if id(i) not in gone and not (
            i.opcode == "get-tuple-element" and id(i.operands[0]) in gone)]
        comp.topological_sort()
