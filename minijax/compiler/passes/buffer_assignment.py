"""Buffer assignment: give every value of the entry computation a memory slot.

The entry runs its instructions in list order (the "sequence"). Each array value an
instruction produces is a logical buffer, live from the instruction that defines it to the
last instruction that reads it. Some instructions produce no new memory and alias their
operand instead: tuple, get-tuple-element, bitcast and (row-major) reshape; an in-place
dynamic-update-slice reuses its operand's buffer when that operand is not read afterwards.

Slots are then handed out in definition order. A buffer takes a free slot (one whose
previous buffer is dead) of the same size, or the smallest larger one (best fit), or a new
slot. Parameters, constants and outputs get slots of their own, since they belong to the
caller or outlive the run; a donated parameter (its number in `module.donated_params`)
gives its slot up after its last use to a buffer of exactly its size.

Sizes: argument_bytes (parameters), output_bytes (the root's leaves), temp_bytes (slots
holding only intermediates), constant_bytes, and peak_bytes, the most memory held by live
slots at any point of the sequence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minijax.compiler.hlo.ir import Instruction, Module
from minijax.compiler.passes.base import Pass

ALIASING_OPS = frozenset({"tuple", "get-tuple-element", "bitcast", "reshape"})


@dataclass(eq=False)
class LogicalBuffer:
    """One array value that needs memory: `leaf` of `instr`'s (flattened) result."""

    instr: Instruction
    leaf: int
    size: int
    kind: str  # "parameter", "constant", "temp" or "output"
    start: int
    end: int
    donated: bool = False
    slot: int = -1

    @property
    def label(self) -> str:
        return self.instr.name if self.instr.shape.flat() == [self.instr.shape] \
            else f"{self.instr.name}{{{self.leaf}}}"


@dataclass(eq=False)
class Slot:
    """A piece of memory that buffers with disjoint lifetimes share."""

    index: int
    size: int
    kind: str
    buffers: list[LogicalBuffer] = field(default_factory=list)

    @property
    def start(self) -> int:
        return min(b.start for b in self.buffers)

    @property
    def end(self) -> int:
        return max(b.end for b in self.buffers)


class BufferAssignment:
    """The result: which slot holds each value, and how much memory that takes."""

    def __init__(self, module: Module, sequence, leaves, buffers, slots):
        self.module = module
        self.sequence: list[Instruction] = sequence
        self._leaves: dict[int, list[LogicalBuffer]] = leaves
        self.buffers: list[LogicalBuffer] = buffers
        self.slots: list[Slot] = slots
        root_buffers = {id(b): b for b in leaves[id(module.entry.root)]}.values()
        self.argument_bytes = sum(b.size for b in buffers if b.kind == "parameter")
        self.output_bytes = sum(b.size for b in root_buffers)
        self.temp_bytes = sum(s.size for s in slots if s.kind == "temp")
        self.constant_bytes = sum(s.size for s in slots if s.kind == "constant")
        self.peak_bytes = _peak_bytes(slots, len(sequence))

    def slots_of(self, instr: Instruction) -> tuple[int, ...]:
        """The slot of each flat leaf of `instr`'s result."""
        return tuple(b.slot for b in self._leaves[id(instr)])

    def slot_of(self, instr: Instruction, leaf: int = 0) -> int:
        """The slot holding (leaf `leaf` of) `instr`'s result."""
        return self._leaves[id(instr)][leaf].slot

    def buffers_of(self, instr: Instruction) -> list[LogicalBuffer]:
        return list(self._leaves[id(instr)])

    def live_bytes_at(self, position: int) -> int:
        """Bytes of slots that hold a live buffer while instruction `position` runs."""
        return sum(s.size for s in self.slots
                   if any(b.start <= position <= b.end for b in s.buffers))

    def to_text(self) -> str:
        entry = self.module.entry
        lines = [f"BufferAssignment for {self.module.name} (entry {entry.name}, "
                 f"{len(self.sequence)} instructions, {len(self.slots)} slots)"]
        for s in self.slots:
            users = ", ".join(f"{b.label}[{b.start}..{b.end}]" for b in s.buffers)
            lines.append(f"  slot {s.index}: {s.size} bytes {s.kind}: {users}")
        lines.append(f"  argument {self.argument_bytes} B, output {self.output_bytes} B, "
                     f"temp {self.temp_bytes} B, constant {self.constant_bytes} B, "
                     f"peak {self.peak_bytes} B")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<BufferAssignment {len(self.slots)} slots, temp={self.temp_bytes}, "
                f"peak={self.peak_bytes}>")


def _peak_bytes(slots: list[Slot], length: int) -> int:
    """max(live_bytes_at(t) for t in range(length)), by one sweep over slot intervals."""
    if length <= 0:
        return 0
    delta = [0] * (length + 1)
    for s in slots:
        lo = hi = None
        for b in sorted(s.buffers, key=lambda b: b.start):
            if hi is not None and b.start <= hi + 1:
                hi = max(hi, b.end)
                continue
            if hi is not None:
                _add_interval(delta, lo, hi, s.size, length)
            lo, hi = b.start, b.end
        if hi is not None:
            _add_interval(delta, lo, hi, s.size, length)
    peak = live = 0
    for t in range(length):
        live += delta[t]
        peak = max(peak, live)
    return peak


def _add_interval(delta: list[int], lo: int, hi: int, size: int, length: int) -> None:
    lo, hi = max(lo, 0), min(hi, length - 1)
    if lo <= hi:
        delta[lo] += size
        delta[hi + 1] -= size


def _leaf_range(shape, index: int) -> tuple[int, int]:
    """The flat-leaf range of element `index` of tuple shape `shape`."""
    start = sum(len(s.flat()) for s in shape.tuple_shapes[:index])
    return start, start + len(shape.tuple_shapes[index].flat())


class _Liveness:
    """Builds logical buffers (with aliasing) and their live ranges over the sequence."""

    def __init__(self, module: Module):
        self.module = module
        self.sequence = list(module.entry.instructions)
        self.position = {id(i): k for k, i in enumerate(self.sequence)}
        self.last_use: dict[int, int] = {}
        for k, instr in enumerate(self.sequence):
            for op in instr.operands:
                self.last_use[id(op)] = k
        self.donated = set(module.donated_params)
        self.leaves: dict[int, list[LogicalBuffer]] = {}
        self.buffers: list[LogicalBuffer] = []
        self.aliases: dict[int, list[Instruction]] = {}  # buffer id -> instructions holding it

    def _new(self, instr: Instruction, kind: str) -> list[LogicalBuffer]:
        k = self.position[id(instr)]
        out = []
        for leaf, shape in enumerate(instr.shape.flat()):
            buf = LogicalBuffer(instr, leaf, shape.nbytes, kind, k, k)
            if kind == "parameter" and instr.parameter_number in self.donated:
                buf.donated = True
            self.buffers.append(buf)
            out.append(buf)
        return out

    def _can_update_in_place(self, instr: Instruction) -> bool:
        """dynamic-update-slice may write into its operand's buffer if no one reads that
        buffer afterwards and the caller does not own it."""
        target = self.leaves[id(instr.operands[0])]
        if len(target) != 1 or not (target[0].kind == "temp" or target[0].donated):
            return False
        here = self.position[id(instr)]
        holders = self.aliases.get(id(target[0]), [])
        return all(self.last_use.get(id(h), -1) <= here for h in holders)

    def _leaves_for(self, instr: Instruction) -> list[LogicalBuffer]:
        op = instr.opcode
        if op == "parameter":
            return self._new(instr, "parameter")
        if op == "constant":
            return self._new(instr, "constant")
        if op == "tuple":
            return [b for o in instr.operands for b in self.leaves[id(o)]]
        if op == "get-tuple-element":
            lo, hi = _leaf_range(instr.operands[0].shape, instr.attrs["index"])
            return self.leaves[id(instr.operands[0])][lo:hi]
        if op in ALIASING_OPS and not instr.shape.is_tuple:
            return list(self.leaves[id(instr.operands[0])])
        if op == "dynamic-update-slice" and self._can_update_in_place(instr):
            return list(self.leaves[id(instr.operands[0])])
        return self._new(instr, "temp")

    def run(self) -> None:
        end_of_program = len(self.sequence) - 1
        for k, instr in enumerate(self.sequence):
            leaves = self._leaves_for(instr)
            self.leaves[id(instr)] = leaves
            for buf in leaves:
                self.aliases.setdefault(id(buf), []).append(instr)
                buf.end = max(buf.end, self.last_use.get(id(instr), k))
        for buf in self.leaves[id(self.module.entry.root)]:
            if buf.kind == "temp":
                buf.kind = "output"
            buf.end = end_of_program
        for buf in self.buffers:
            if buf.kind == "constant" or (buf.kind == "parameter" and not buf.donated):
                buf.start, buf.end = 0, end_of_program


def _assign_slots(buffers: list[LogicalBuffer]) -> list[Slot]:
    """Greedy best-fit slot assignment in definition order."""
    slots: list[Slot] = []
    free: list[Slot] = []  # slots whose buffers are all dead, reusable
    busy: list[Slot] = []
    end: dict[int, int] = {}  # slot index -> Slot.end, kept as buffers are added
    for buf in sorted(buffers, key=lambda b: (b.start, b.end)):
        if busy and any(end[s.index] < buf.start for s in busy):
            for s in [s for s in busy if end[s.index] < buf.start]:
                busy.remove(s)
                if s.kind == "temp" or (s.kind == "parameter" and s.buffers[0].donated):
                    free.append(s)
        slot = _best_fit(free, buf)
        if slot is None:
            slot = Slot(len(slots), buf.size, buf.kind)
            slots.append(slot)
        else:
            free.remove(slot)  # a donated argument's slot keeps kind "parameter"
        slot.buffers.append(buf)
        end[slot.index] = max(end.get(slot.index, buf.end), buf.end)
        buf.slot = slot.index
        busy.append(slot)
    return slots


def _best_fit(free: list[Slot], buf: LogicalBuffer) -> Slot | None:
    if buf.kind in ("parameter", "constant"):
        return None
    fits = []
    for s in free:
        if s.kind == "parameter":  # a donated argument: only an exact size match
            if s.size == buf.size:
                fits.append(s)
        elif buf.kind == "temp" and s.size >= buf.size:
            fits.append(s)
    return min(fits, key=lambda s: (s.size, s.index), default=None)


def assign_buffers(module: Module) -> BufferAssignment:
    """Compute the BufferAssignment of `module`'s entry computation."""
    liveness = _Liveness(module)
    liveness.run()
    slots = _assign_slots(liveness.buffers)
    return BufferAssignment(module, liveness.sequence, liveness.leaves, liveness.buffers,
                            slots)


class BufferAssignmentPass(Pass):
    """Sets `module.buffer_assignment`; never changes the HLO."""

    name = "buffer-assignment"

    def run(self, module: Module) -> bool:
        module.buffer_assignment = assign_buffers(module)
        return False
