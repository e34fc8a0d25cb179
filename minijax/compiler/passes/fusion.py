"""Fusion: merge producers into their consumers so intermediates never reach memory.

A fused kernel computes each output element by evaluating its whole expression tree for
that element ("elemental" code generation), so values inside a fusion live in registers.
The pass works in three phases over each sequential computation (the entry and control-flow
bodies):

1. Producer-consumer fusion. Consumers are visited from the root backwards; each consumer
   that can root a fusion (a loop-fusible op, or a reduce, which roots a kInput fusion)
   pulls in its operands one at a time while `should_fuse` accepts them. A producer with
   other users is duplicated into the fusion, but only when it is cheap: an expensive
   producer (exp, log, divide, ...) is never computed twice.
2. Multi-output fusion with a reduction: an elementwise producer rejected in phase 1 only
   because it has several users is fused into a reduction that consumes it, and also
   leaves that fusion as an extra output (softmax's exp: summed and also divided).
3. Sibling multi-output fusion: two fusions that read the same input and have the same
   loop shape become one kernel that reads the input once (mean and mean-of-squares).

dot, convolution, sort, gather, scatter, while, conditional and friends are never fused;
their elementwise epilogues fuse with each other as a loop fusion that reads the dot.

Every kernel's work is bounded (fusion_cost.py): a fusion holds at most
MAX_FUSED_INSTRUCTIONS instructions, and the elemental code it becomes at most MAX_EMITTED
element evaluations (data movement re-reads its operands at new indices, so duplicating
slices of concatenates into one kernel can grow its code exponentially). This keeps LLVM's
time per kernel and the bookkeeping per fusion step bounded, so compile time grows
linearly with the program. The bookkeeping around the steps is linear too: users come from
an incremental index (graph_index.py); a producer duplicated into fusions leaves the
program once its last user is fused (it would otherwise root a fusion of its own); a
producer is copied into at most MAX_DUPLICATES fusions unless it only reads constants;
sibling and extra-output merges reorder only the instructions between the two fusions;
each sibling is tried with the next MAX_SIBLING_WINDOW readers of an input, and the
dependency search between two candidates is bounded (MAX_SIBLING_SEARCH,
MAX_SIBLING_DISTANCE: further apart, they are not merged).

Lowering may hand this pass ready-made loop fusions (threefry2x32 is one multi-output
fusion): they root fusions like any loop fusion.

Every accept/reject decision is recorded, once, in `module.fusion_log`.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction, Module
from minijax.compiler.passes.base import Pass
from minijax.compiler.passes.fusion_builder import (
    FusionBuilder,
    fused_computation,
    fusion_outputs,
    is_multi_output,
    parameters_of,
)
from minijax.compiler.passes.fusion_cost import (
    MAX_EMITTED,
    MAX_FUSED_INSTRUCTIONS,
    MAX_NODE_EMISSIONS,
    EmissionCounts,
    emission_counts,
)
from minijax.compiler.passes.graph_index import UserIndex
from minijax.compiler.passes.opcodes import ELEMENTWISE, EXPENSIVE, LOOP_FUSIBLE
from minijax.compiler.passes.utils import (
    NameUniquer,
    drop_unreachable_computations,
    reaches,
    sequential_computations,
)

MAX_FUSION_OPERANDS = 64
#: Fusions a producer with several users may be copied into (chains of such producers
#: would otherwise be copied into every fusion downstream: quadratic compile time).
#: Producers of constants only (broadcast scalar constants, iota) are always copied; any
#: other producer, scalar arithmetic included (a graph of scalars, such as numpyro's
#: parameter updates and threefry keys, copied up to every fusion's size cap), is not.
MAX_DUPLICATES = 4
#: Largest fused body copied into several users (a bigger one is computed once).
MAX_DUPLICATED_BODY = 16
#: Most instructions the dependency check of two sibling fusions visits: siblings further
#: apart are not merged (a search per candidate pair across the whole program made sibling
#: fusion quadratic).
MAX_SIBLING_SEARCH = 256
#: Siblings further apart in the program are not merged (the merge reorders what lies
#: between them).
MAX_SIBLING_DISTANCE = 512
#: Readers of one input over one index space that each sibling is tried with (the next
#: ones in program order), and sweeps of sibling merging over the program.
MAX_SIBLING_WINDOW = 16
MAX_SIBLING_ROUNDS = 4


def _trivially_cheap(producer: Instruction) -> bool:
    """A producer that reads nothing computed: an iota, or a broadcast (or elementwise op)
    of scalar constants."""
    return all(op.opcode == "constant" and not op.shape.dims for op in producer.operands)


def _kind(instr: Instruction) -> str | None:
    return instr.attrs.get("kind") if instr.opcode == "fusion" else None


def is_expensive(instr: Instruction) -> bool:
    """True if computing `instr` (or anything inside it, for a fusion) is costly."""
    if instr.opcode == "fusion":
        return any(i.opcode in EXPENSIVE for i in fused_computation(instr).instructions)
    return instr.opcode in EXPENSIVE


def can_root_fusion(instr: Instruction) -> bool:
    """Loop-fusible ops, single-input reduces, loop fusions and single-output input fusions
    may be consumers."""
    if not instr.operands:
        return False
    if instr.opcode == "fusion":
        # (a multi-output loop fusion here was made by lowering, e.g. threefry's)
        return _kind(instr) == "kLoop" or (_kind(instr) == "kInput"
                                           and not is_multi_output(instr))
    if instr.shape.is_tuple:
        return False
    if instr.opcode == "reduce":
        return len(instr.operands) == 2
    return instr.opcode in LOOP_FUSIBLE


def _reduction_input_dims(instr: Instruction):
    """The input dims of a single-input reduce or kInput fusion (None for anything else)."""
    if instr.opcode == "reduce" and len(instr.operands) == 2:
        return tuple(instr.operands[0].shape.dims)
    return reduce_input_dims(instr) if _kind(instr) == "kInput" else None


def _stored_for(producer: Instruction, consumer: Instruction, users) -> Instruction | None:
    """A user that needs `producer` in a buffer (a dot, say), when `consumer` is a reduction
    over producer's index space: then producer should be an extra output of the reduction
    (phase 2), computed once, rather than copied into it and computed again by a kernel of
    its own for that user (the ReLU gradient, summed for the bias and multiplied by the
    weights)."""
    if producer.opcode not in ELEMENTWISE and _kind(producer) != "kLoop":
        return None
    if _reduction_input_dims(consumer) != tuple(producer.shape.dims):
        return None
    return next((u for u in users if u is not consumer and not can_root_fusion(u)), None)


def _reads_elements_repeatedly(consumer: Instruction, producer: Instruction) -> bool:
    """True if the consumer reads some element of `producer` more than once (broadcast)."""
    if consumer.opcode != "fusion":
        return consumer.opcode == "broadcast"
    body = fused_computation(consumer)
    index = next(i for i, op in enumerate(consumer.operands) if op is producer)
    param = parameters_of(body, len(consumer.operands))[index]
    return any(u.opcode == "broadcast" and u.operands and u.operands[0] is param
               for u in body.instructions)


def loop_signature(fusion: Instruction):
    """What one loop over the fusion's index space looks like: ("kLoop", dims) or
    ("kInput", reduce input dims, reduced dims)."""
    outputs = fusion_outputs(fusion)
    if _kind(fusion) == "kInput":
        reduce = next(o for o in outputs if o.opcode == "reduce")
        return ("kInput", tuple(reduce.operands[0].shape.dims),
                tuple(sorted(reduce.attrs["dimensions"])))
    return ("kLoop", tuple(outputs[0].shape.dims))


def reduce_input_dims(fusion: Instruction):
    return loop_signature(fusion)[1] if _kind(fusion) == "kInput" else None


def siblings_compatible(a: Instruction, b: Instruction) -> bool:
    """Two fusions can share one loop if their index spaces match."""
    sa, sb = loop_signature(a), loop_signature(b)
    if sa == sb:
        return True
    if sa[0] == sb[0]:
        return False
    return sa[1] == sb[1]  # a loop fusion over the reduce's input index space


class Fusion(Pass):
    """The fusion pass. `multi_output=False` stops after producer-consumer fusion."""

    name = "fusion"

    def __init__(self, multi_output: bool = True, max_operands: int = MAX_FUSION_OPERANDS,
                 max_instructions: int = MAX_FUSED_INSTRUCTIONS,
                 max_emitted: int = MAX_EMITTED):
        self.multi_output = multi_output
        self.max_operands = max_operands
        self.max_instructions = max_instructions
        self.max_emitted = max_emitted
        self.size_checks = 0   # emission counts computed (tests check this stays linear)
        self.pair_checks = 0   # sibling pairs examined (likewise)
        self._counts_key = self._counts = None
        self._sizes: dict[int, tuple] = {}   # id(body) -> (body, its sizes)
        # id(producer) -> (producer, ids of the fusions it was copied into)
        self._duplicates: dict[int, tuple] = {}

    def run(self, module: Module) -> bool:
        self._log_list = module.fusion_log
        self._logged = set(self._log_list)
        self.indexes: list[UserIndex] = []  # one per computation (tests read their counters)
        self._duplicates = {}
        names = NameUniquer(module)
        changed = False
        for comp in sequential_computations(module):
            index = UserIndex(comp)
            self.indexes.append(index)
            builder = FusionBuilder(module, comp, names, index)
            changed |= self._producer_consumer(comp, builder)
            if self.multi_output:
                changed |= self._reduce_extra_outputs(comp, builder)
                changed |= self._siblings(comp, builder)
        if changed:
            drop_unreachable_computations(module)
        return changed

    def _log(self, message: str, key: str | None = None) -> None:
        """Append `message` unless it (or an entry with the same `key`) is already there."""
        key = message if key is None else key
        if key not in self._logged:
            self._logged.add(key)
            self._log_list.append(message)

    # -- phase 1 -------------------------------------------------------------------------

    def should_fuse(self, producer: Instruction, consumer: Instruction,
                    users: list[Instruction]) -> tuple[bool, str]:
        """Decide whether `producer` may be fused into `consumer`; return (ok, reason)."""
        op = producer.opcode
        if producer.shape.is_tuple:
            return False, "tuple-shaped result"
        if op == "constant":
            if producer.shape.rank == 0:
                return True, "scalar constant"
            return False, "non-scalar constant stays in its own buffer"
        if op == "fusion":
            if is_multi_output(producer):
                return False, "multi-output fusion"
            if _kind(producer) != "kLoop":
                return False, "a reduction only fuses as the root of its fusion"
        elif op == "reduce":
            return False, "a reduction only fuses as the root of its fusion"
        elif op not in LOOP_FUSIBLE:
            return False, f"{op} is never fused into a loop fusion"
        expensive = is_expensive(producer)
        if len(users) > 1 and expensive:
            return False, f"expensive op with {len(users)} users"
        stored_for = _stored_for(producer, consumer, users) if len(users) > 1 else None
        if stored_for is not None:
            return False, (f"{stored_for.name} reads it from memory anyway: left to become an "
                           "extra output of the reduction instead of a copy")
        known = self._duplicates.get(id(producer))
        copies = known[1] if known is not None and known[0] is producer else ()
        if (len(users) > 1 and len(copies) >= MAX_DUPLICATES and id(consumer) not in copies
                and not _trivially_cheap(producer)):
            return False, f"already duplicated into {MAX_DUPLICATES} fusions"
        if (len(users) > 1 and op == "fusion"
                and len(fused_computation(producer).instructions) > MAX_DUPLICATED_BODY):
            return False, (f"a fusion of more than {MAX_DUPLICATED_BODY} instructions is "
                           "not copied into its users")
        if expensive and _reads_elements_repeatedly(consumer, producer):
            return False, "expensive producer would be recomputed for every broadcast copy"
        extra = len({id(o) for o in producer.operands} - {id(o) for o in consumer.operands})
        if len(consumer.operands) + extra > self.max_operands:
            return False, f"fusion would exceed {self.max_operands} operands"
        too_big = self._too_big(producer, consumer)
        if too_big:
            return False, too_big
        if op == "fusion":
            reason = "loop fusion producer"
        elif op in ELEMENTWISE:
            reason = "elementwise producer"
        else:
            reason = f"{op} producer"
        if len(users) > 1:
            reason += f", duplicated (cheap, {len(users)} users)"
        return True, reason

    def _body_size(self, instr: Instruction) -> tuple[int, int, int]:
        """(instructions, emitted element evaluations, most emissions of one instruction)
        of a fusion's body, or of `instr` alone when it is not a fusion."""
        if instr.opcode != "fusion":
            return 1, 1 + len(instr.operands), 1   # itself and the loads of its operands
        body = fused_computation(instr)
        # (the body is kept in the entry: a freed body's id may be reused by a new one)
        known = self._sizes.get(id(body))
        if known is None or known[0] is not body:
            self.size_checks += 1
            total, counts = emission_counts(body, self.max_emitted)
            known = self._sizes[id(body)] = (body, (len(body.instructions), total,
                                                    max(counts.values(), default=1)))
        return known[1]

    def _changed_body(self, fusion: Instruction) -> None:
        self._sizes.pop(id(fused_computation(fusion)), None)

    def _too_big(self, producer: Instruction, consumer: Instruction) -> str | None:
        """Why fusing `producer` into `consumer` would make a kernel too big, or None."""
        p_instrs, p_emitted, p_most = self._body_size(producer)
        if consumer.opcode != "fusion":
            c_instrs, c_emitted, reads = 1 + len(consumer.operands), 1, 1
        else:
            body = fused_computation(consumer)
            c_instrs = len(body.instructions)
            if c_instrs + p_instrs > self.max_instructions:
                return f"fusion would exceed {self.max_instructions} instructions"
            counts = self._consumer_counts(consumer)
            c_emitted = counts.total
            index = next(i for i, op in enumerate(consumer.operands) if op is producer)
            reads = max(1, counts.count(parameters_of(body, len(consumer.operands))[index]))
        if c_instrs + p_instrs > self.max_instructions:
            return f"fusion would exceed {self.max_instructions} instructions"
        if reads * p_most > MAX_NODE_EMISSIONS:
            return (f"its code would be emitted {reads * p_most} times (read at {reads} "
                    "indices)")
        if c_emitted + reads * p_emitted > self.max_emitted:
            return f"fused code would exceed {self.max_emitted} element evaluations"
        return None

    def _consumer_counts(self, consumer: Instruction) -> EmissionCounts:
        """The emission counts of the fusion being grown (kept up to date by _fused)."""
        if self._counts_key is not consumer or self._counts is None:
            self.size_checks += 1
            self._counts_key = consumer
            self._counts = EmissionCounts(fused_computation(consumer))
        return self._counts

    def _fused(self, fusion: Instruction, producer: Instruction, param, value) -> None:
        """Update the counts after `producer` replaced `param` in `fusion` by `value`."""
        counts = self._counts
        if self._counts_key is not fusion or counts is None:
            return
        if producer.opcode != "fusion" and id(value) not in counts.counts and all(
                op.opcode == "parameter" for op in value.operands):
            counts.fused_instruction(param, value)
        else:
            self._counts = None   # a fused fusion (or a reused copy): count again

    def _producer_consumer(self, comp: Computation, builder: FusionBuilder) -> bool:
        changed = False
        for consumer in reversed(list(comp.instructions)):
            if consumer not in builder.index or not can_root_fusion(consumer):
                continue
            changed |= self._grow(comp, builder, consumer)
        return changed

    def _grow(self, comp: Computation, builder: FusionBuilder, consumer: Instruction) -> bool:
        """Fuse as many of `consumer`'s producers into it as `should_fuse` allows."""
        label, current, rejected, changed = consumer.name, consumer, set(), False
        self._counts_key = self._counts = None
        progress = True
        while progress:
            progress = False
            for producer in list(dict.fromkeys(current.operands)):
                if id(producer) in rejected or producer.opcode == "parameter":
                    continue
                # (unsorted: a hub's users are sorted only for the log line, once)
                users = builder.index.users_unordered(producer)
                ok, reason = self.should_fuse(producer, current, users)
                if not ok:
                    rejected.add(id(producer))
                    key = f"reject {producer.name}: {reason}"
                    if key not in self._logged:
                        user_names = ", ".join(u.name for u in
                                               builder.index.users_of(producer))
                        self._log(f"reject {producer.name} -> ({user_names}): {reason}", key)
                    continue
                self._log(f"fuse {producer.name} into {label}: {reason}")
                if current.opcode != "fusion":
                    kind = "kInput" if current.opcode == "reduce" else "kLoop"
                    current = builder.wrap(current, kind)
                body = fused_computation(current)
                index = next(i for i, op in enumerate(current.operands) if op is producer)
                param = parameters_of(body, len(current.operands))[index]
                if len(users) > 1:
                    # Reaching the producer again along another path reuses its copy in
                    # this fusion: only distinct fusions count as duplicates.
                    known = self._duplicates.get(id(producer))
                    if known is None or known[0] is not producer:
                        known = self._duplicates[id(producer)] = (producer, set())
                    known[1].add(id(current))
                value = builder.fuse_producer(current, producer, keep=len(users) > 1)
                self._changed_body(current)
                self._fused(current, producer, param, value)
                changed = True
                # A copy reused along a second path (fusion_builder) can grow the code more
                # than estimated: then this fusion stops growing.
                progress = self._consumer_counts(current).total <= self.max_emitted
                break
        return changed

    # -- phase 2 -------------------------------------------------------------------------

    def _reduce_extra_outputs(self, comp: Computation, builder: FusionBuilder) -> bool:
        changed = False
        for fusion in list(comp.instructions):
            if fusion not in builder.index:
                continue
            if fusion.opcode == "reduce" and _reduction_input_dims(fusion) is not None:
                # a reduce that phase 1 left alone (its input was kept for a dot): it
                # becomes a fusion if that input can be one of its outputs
                producer = fusion.operands[0]
                if not self._extra_output_readers(builder, fusion, producer):
                    continue
                self._log(f"fuse {fusion.name} alone, to take {producer.name} as an output")
                fusion = builder.wrap(fusion, "kInput")
            elif _kind(fusion) != "kInput":
                continue
            for producer in list(dict.fromkeys(fusion.operands)):
                if not any(op is producer for op in fusion.operands):
                    continue  # growing the fusion after an earlier extra output pulled it in
                if self._try_extra_output(comp, builder, fusion, producer):
                    changed = True
                    # the producer's own operands may now feed only this fusion
                    self._grow(comp, builder, fusion)
        return changed

    def _extra_output_readers(self, builder, fusion, producer) -> list:
        """The users besides `fusion` that would read `producer` as an extra output of the
        reduction `fusion` (none: it cannot be one)."""
        loop_fusion = _kind(producer) == "kLoop" and not is_multi_output(producer)
        elementwise = producer.opcode in ELEMENTWISE and not producer.shape.is_tuple
        if not (loop_fusion or elementwise) or (
                _reduction_input_dims(fusion) != tuple(producer.shape.dims)):
            return []
        return [u for u in builder.index.users_of(producer) if u is not fusion]

    def _try_extra_output(self, comp, builder, fusion, producer) -> bool:
        others = self._extra_output_readers(builder, fusion, producer)
        if not others:
            return False
        names = ", ".join(u.name for u in others)
        too_big = self._too_big(producer, fusion)
        if too_big:
            self._log(f"reject {producer.name} as extra output of {fusion.name}: {too_big}")
            return False
        position = builder.index.positions()
        if any(reaches(producer, op, position, MAX_SIBLING_SEARCH)
               for op in fusion.operands if op is not producer):
            self._log(f"reject {producer.name} as extra output of {fusion.name}: "
                      "another path leads from it to the reduction (or more than "
                      f"{MAX_SIBLING_SEARCH} instructions lie between them)")
            return False
        self._log(f"fuse {producer.name} into {fusion.name} as an extra output: computed "
                  f"once in the reduction's loop, also read by ({names})")
        builder.add_output(fusion, producer)
        self._changed_body(fusion)
        return True

    # -- phase 3 -------------------------------------------------------------------------

    def _siblings(self, comp: Computation, builder: FusionBuilder) -> bool:
        """Merge sibling fusions, one shared input at a time, in sweeps over the program
        until one merges nothing (at most MAX_SIBLING_ROUNDS; a rejected pair stays
        rejected: merging never removes a path or shrinks a body)."""
        self._rejected_pairs: dict[tuple, tuple] = {}
        self._signatures: dict[int, tuple] = {}
        changed = False
        for _ in range(MAX_SIBLING_ROUNDS):
            progress = False
            for shared in list(comp.instructions):
                if shared in builder.index and self._merge_readers_of(shared, builder):
                    progress = True
            changed |= progress
            if not progress:
                break
        return changed

    def _signature(self, fusion: Instruction):
        known = self._signatures.get(id(fusion))
        if known is None or known[0] is not fusion:
            known = self._signatures[id(fusion)] = (fusion, loop_signature(fusion))
        return known[1]

    def _merge_readers_of(self, shared: Instruction, builder: FusionBuilder) -> bool:
        """Merge fusions reading `shared`, in one sweep: each fusion (or the fusion it was
        merged into) is tried with the next MAX_SIBLING_WINDOW readers over the same index
        space, so the work is linear in the number of readers."""
        groups: dict[tuple, list[Instruction]] = {}
        for user in builder.index.users_of(shared):
            if _kind(user) in ("kLoop", "kInput"):
                groups.setdefault(self._signature(user)[1], []).append(user)
        merged_any = False
        for group in groups.values():
            i = 0
            while i < len(group):
                a, j = group[i], i + 1
                while j < min(len(group), i + 1 + MAX_SIBLING_WINDOW):
                    b = group[j]
                    key = (id(a), id(b))
                    known = self._rejected_pairs.get(key)
                    if known is not None and known[0] is a and known[1] is b:
                        j += 1
                        continue
                    if not self._can_merge_siblings(a, b, shared, builder.index.positions()):
                        self._rejected_pairs[key] = (a, b)
                        j += 1
                        continue
                    kind = "kInput" if "kInput" in (_kind(a), _kind(b)) else "kLoop"
                    self._log(f"merge sibling fusions {a.name} and {b.name}: both read "
                              f"{shared.name}, same loop shape")
                    a = group[i] = builder.merge_siblings(a, b, kind)
                    del group[j]
                    merged_any = True
                i += 1
        return merged_any

    def _can_merge_siblings(self, a, b, shared, position=None) -> bool:
        self.pair_checks += 1
        if (position is not None
                and abs(position[id(a)] - position[id(b)]) > MAX_SIBLING_DISTANCE):
            self._log(f"reject sibling merge {a.name} + {b.name}: more than "
                      f"{MAX_SIBLING_DISTANCE} instructions apart")
            return False
        if not siblings_compatible(a, b):
            self._log(f"reject sibling merge {a.name} + {b.name} (both read {shared.name}): "
                      "different loop shapes")
            return False
        operands = {id(o) for o in a.operands} | {id(o) for o in b.operands}
        if len(operands) > self.max_operands:
            return False
        (a_instrs, a_emitted, _), (b_instrs, b_emitted, _) = (self._body_size(a),
                                                              self._body_size(b))
        if (a_instrs + b_instrs > self.max_instructions
                or a_emitted + b_emitted > self.max_emitted):
            return False
        if (reaches(a, b, position, MAX_SIBLING_SEARCH)
                or reaches(b, a, position, MAX_SIBLING_SEARCH)):
            self._log(f"reject sibling merge {a.name} + {b.name}: one depends on the other "
                      f"(or more than {MAX_SIBLING_SEARCH} instructions lie between them)")
            return False
        return True
