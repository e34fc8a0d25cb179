"""Named axes of the devices a program runs on (pmap, shard_map): the SPMD axis environment.

While pmap or shard_map traces and lowers its function, the mesh's axes are bound here:
names and sizes, row-major over the participants (participant p runs on the p-th device of
the mesh). Collectives find their axis size here when no enclosing vmap binds the name
(an inner vmap with the same name shadows it), and their lowering turns axis names into
XLA replica groups of participant ids.
"""

from __future__ import annotations

import contextlib
import math
import threading

import numpy as np

_local = threading.local()


class SpmdAxes:
    """The mesh axes of one SPMD program: `names[k]` has `sizes[k]` devices."""

    def __init__(self, names, sizes):
        self.names = tuple(names)
        self.sizes = tuple(int(s) for s in sizes)
        self.size = math.prod(self.sizes)

    def axis_size(self, name) -> int:
        return self.sizes[self.names.index(name)]

    def stride(self, name) -> int:
        """Participant-id step between neighbours along `name` (row-major)."""
        k = self.names.index(name)
        return math.prod(self.sizes[k + 1:])

    def groups(self, names) -> tuple:
        """Replica groups (tuples of participant ids) of a collective over `names`: the
        participants that differ only in those axes, ordered row-major over `names` in the
        order given."""
        ids = np.arange(self.size).reshape(self.sizes)
        over = [self.names.index(n) for n in names]
        rest = [k for k in range(len(self.names)) if k not in over]
        ids = ids.transpose(rest + over).reshape(-1, math.prod(self.sizes[k] for k in over))
        return tuple(tuple(int(v) for v in row) for row in ids)


def current() -> SpmdAxes | None:
    """The innermost SPMD axis environment (None outside pmap / shard_map)."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def lookup(name) -> int | None:
    """The size of SPMD axis `name`, or None when no pmap/shard_map binds it."""
    env = current()
    if env is not None and name in env.names:
        return env.axis_size(name)
    return None


@contextlib.contextmanager
def spmd_axes(names, sizes):
    """Bind mesh axes `names` (sizes `sizes`) while a pmap/shard_map body is traced/lowered."""
    if current() is not None:
        raise NotImplementedError(
            "minijax does not nest pmap/shard_map inside another pmap/shard_map yet; use "
            "vmap(..., axis_name=...) for the inner axis, or one shard_map over a 2-D mesh.")
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(SpmdAxes(names, sizes))
    try:
        yield stack[-1]
    finally:
        stack.pop()
