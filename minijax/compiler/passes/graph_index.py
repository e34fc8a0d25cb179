"""Incremental graph queries for passes that edit a computation many times (fusion).

`UserIndex(comp)` answers "who uses this instruction" in O(number of users) instead of a
scan of the whole computation, and stays correct while the editor reports its edits
(`replace`, `remove`, `operands_changed`) or calls `rebuild()` after a bigger rewrite.
`rebuild_work` counts the instructions visited by (re)builds, so tests can check that a
pass over n instructions does O(n) work for its user queries.

`insert_sorted(comp, value, block)` puts freshly appended instructions back into
topological order, exactly where `Computation.topological_sort()` would put them, but in
one cheap pass instead of a full depth-first search.
"""

from __future__ import annotations

from minijax.compiler.hlo.ir import Computation, Instruction, postorder


class UserIndex:
    """Users of every instruction of `comp`, in program order."""

    def __init__(self, comp: Computation):
        self.comp = comp
        self.rebuild_work = 0
        self.reorder_work = 0   # instructions visited by local reorders (sibling merges)
        self.queries = 0
        self.rebuild()

    def rebuild(self) -> None:
        """Recompute everything from `comp` (after edits that were not reported)."""
        instrs = self.comp.instructions
        self._position = {id(instr): k for k, instr in enumerate(instrs)}
        users: dict[int, dict[int, Instruction]] = {id(instr): {} for instr in instrs}
        for instr in instrs:
            for op in instr.operands:
                entry = users.get(id(op))
                if entry is not None:
                    entry[id(instr)] = instr
        self._users = users
        self.rebuild_work += len(instrs)

    def __contains__(self, instr: Instruction) -> bool:
        return id(instr) in self._users

    def positions(self) -> dict[int, int]:
        """id(instr) -> its index in the computation (as of the last rebuild; instructions
        that `replace` put in place of others take their positions)."""
        return self._position

    def has_users(self, instr: Instruction) -> bool:
        return bool(self._users[id(instr)])

    def users_unordered(self, instr: Instruction) -> list[Instruction]:
        """users_of(instr) in no particular order (no sort: for counting)."""
        return list(self._users[id(instr)].values())

    def users_of(self, instr: Instruction) -> list[Instruction]:
        """Distinct users of `instr` in `comp`, in program order (as utils.users_of)."""
        self.queries += 1
        found = list(self._users[id(instr)].values())
        if len(found) > 1:
            position = self._position
            found.sort(key=lambda u: position[id(u)])
        return found

    def replace(self, old: Instruction, new: Instruction) -> None:
        """`new` (not yet indexed) takes `old`'s place in the program: its position, its
        users (whose operands are rewritten) and, if `old` was the root, the root."""
        comp = self.comp
        users = self._users.pop(id(old))
        for user in users.values():
            user.operands = [new if op is old else op for op in user.operands]
        if comp.root is old:
            comp.root = new
        self._users[id(new)] = users
        self._position[id(new)] = self._position.pop(id(old))
        for op in old.operands:
            entry = self._users.get(id(op))
            if entry is not None:
                entry.pop(id(old), None)
        for op in new.operands:
            entry = self._users.get(id(op))
            if entry is not None:
                entry[id(new)] = new

    def merged(self, a: Instruction, b: Instruction, merged: Instruction, gtes,
               users) -> None:
        """Instructions `a` and `b` (b may be None) became `merged`, read by the new
        get-tuple-elements `gtes` and by the old users of `a` and `b` (`users`), whose
        operands the builder rewired. Positions come from renumber."""
        for part in (a, b):
            if part is None or part is merged:
                continue
            for op in part.operands:
                entry = self._users.get(id(op))
                if entry is not None:
                    entry.pop(id(part), None)
            del self._users[id(part)]
            self._position.pop(id(part), None)
        # users that now read a new get-tuple-element instead of `merged` leave its entry
        old = self._users.get(id(merged), {})
        self._users[id(merged)] = {k: u for k, u in old.items()
                                   if any(op is merged for op in u.operands)}
        for instr in [merged, *gtes]:
            self._users.setdefault(id(instr), {})
            for op in instr.operands:
                entry = self._users.get(id(op))
                if entry is not None:
                    entry[id(instr)] = instr
        for user in users:
            if id(user) in self._users:
                for op in user.operands:
                    entry = self._users.get(id(op))
                    if entry is not None:
                        entry[id(user)] = user

    def renumber(self, block, low: float, high: float) -> None:
        """Give the instructions of `block` (which replaced the run of the program whose
        positions went from `low` to `high`) increasing positions in [low, high], so the
        positions stay a topological numbering without renumbering the whole program."""
        position = self._position
        n = len(block)
        step = (high - low) / max(n - 1, 1)
        if step < 1e-6:   # too many subdivisions of one stretch: number everything again
            for k, instr in enumerate(self.comp.instructions):
                position[id(instr)] = k
            self.rebuild_work += len(self.comp.instructions)
            return
        for k, instr in enumerate(block):
            position[id(instr)] = low + k * step

    def remove(self, instr: Instruction) -> None:
        """`instr` left the computation (it must have no users left)."""
        for op in instr.operands:
            entry = self._users.get(id(op))
            if entry is not None:
                entry.pop(id(instr), None)
        del self._users[id(instr)]
        del self._position[id(instr)]

    def operands_changed(self, instr: Instruction, old_operands) -> None:
        """`instr.operands` was `old_operands` before an edit."""
        now = {id(op): op for op in instr.operands}
        for op in old_operands:
            if id(op) not in now:
                entry = self._users.get(id(op))
                if entry is not None:
                    entry.pop(id(instr), None)
        for key in now:
            entry = self._users.get(key)
            if entry is not None:
                entry[id(instr)] = instr


def replace_uses_and_sort(comp: Computation, old: Instruction, value: Instruction,
                          block: list[Instruction]) -> None:
    """Make the users of `old` use `value`, where `value` and the rest of `block` were just
    appended to `comp` (which was topologically sorted before) and only `value` is used by
    the rest of `comp`; an empty `block` means `value` was already in `comp`. Leaves `comp`
    in the order `topological_sort()` would give."""
    instrs = comp.instructions
    n = len(block)
    if n and (len(instrs) < n or any(a is not b for a, b in zip(instrs[-n:], block))):
        comp.replace_all_uses(old, value)
        comp.topological_sort()
        return
    if n:
        del instrs[-n:]
    first = None
    for k, instr in enumerate(instrs):
        ops = instr.operands
        if old in ops:
            instr.operands = [value if op is old else op for op in ops]
            if first is None:
                first = k
    if comp.root is old:
        comp.root = value
    ordered: list[Instruction] = []
    if not n:
        # The depth-first sort only moves what `value` needs from after its first user.
        if first is None or instrs.index(value) < first:
            return
        postorder([value], {id(i) for i in instrs[first:]}, set(), ordered)
        moved = {id(i) for i in ordered}
        instrs[first:] = ordered + [i for i in instrs[first:] if id(i) not in moved]
        return
    members = {id(i) for i in block}
    seen: set[int] = set()
    if first is not None:
        postorder([value], members, seen, ordered)
        instrs[first:first] = ordered
        ordered = []
    postorder(block, members, seen, ordered)  # copies nothing in the program reads
    instrs.extend(ordered)
