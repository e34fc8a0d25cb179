"""Collectives of a multi-device program whose devices live in several processes.

backends/spmd.py runs a program on this process's devices, one thread each, and their
collectives meet through a `spmd.Transport`. In a multi-process run (distributed.initialize)
every process runs the same program on its own devices; participant ids are global (the
position of the device among all the program's devices), and `CrossProcessTransport` joins
the two levels:

1. the local participants of a collective meet in-process (spmd.InProcessTransport, their
   contributions shared by reference);
2. the first of them to combine exchanges the local contributions with every other process
   that holds a member of a local participant's group (replica groups partition the
   participants, so that relation is symmetric), through the process transport's
   `exchange_arrays` (MPI point-to-point, straight from the arrays' memory), keyed by the
   collective's sequence number;
3. each local participant combines its group's contributions in group order, as in one
   process, so results are bit-identical everywhere.

A timeout or failure in step 2 is raised by every local participant (the same exception),
and the other processes time out on their side.
"""

from __future__ import annotations

import threading

import numpy as np

from minijax.backends.spmd import InProcessTransport, Transport
from minijax.backends.transport.base import ProcessTransport


def _flat(value) -> list:
    return list(value) if isinstance(value, tuple) else [value]


def _unflat(arrays: list, like):
    return tuple(arrays) if isinstance(like, tuple) else arrays[0]


class CrossProcessTransport(Transport):
    """spmd.Transport over the devices of several processes (see the module docstring).

    `local` lists the global participant ids run by this process; `process_of[r]` is the
    process running participant r."""

    def __init__(self, processes: ProcessTransport, local: list[int], process_of: list[int]):
        self.processes = processes
        self.local = tuple(local)
        self.process_of = list(process_of)
        self.inner = InProcessTransport(len(self.local))
        self._lock = threading.Lock()
        self._tables: dict = {}

    def exchange(self, key, rank, group, value, combine, what=""):
        group = tuple(group)

        def combine_local(entries):
            table = self._table(key, entries, what)
            return combine([table[r] for r in group])
        return self.inner.exchange(key, rank, self.local, (rank, group, value), combine_local,
                                   what)

    def abort(self, error, rank):
        self.inner.abort(error, rank)

    def _table(self, key, entries, what) -> dict:
        """Every contribution the local groups need, fetched once per collective."""
        with self._lock:
            slot = self._tables.get(key)
            if slot is None:
                try:
                    slot = [self._fetch(key, entries, what), None, 0]
                except BaseException as exc:  # noqa: BLE001 - every local participant raises it
                    slot = [None, exc, 0]
                self._tables[key] = slot
            slot[2] += 1
            if slot[2] == len(self.local):
                del self._tables[key]
        if slot[1] is not None:
            raise slot[1]
        return slot[0]

    def _fetch(self, key, entries, what) -> dict:
        me = self.processes.process_index
        table = {r: v for r, _, v in entries}
        peers = sorted({self.process_of[r] for _, g, _ in entries for r in g} - {me})
        if not peers:
            return table
        template = [np.asarray(a) for a in _flat(entries[0][2])]
        mine = [a for r in sorted(table) for a in _flat(table[r])]
        sends = [(q, a) for q in peers for a in mine]
        received: dict = {}
        recvs = []
        for q in peers:
            for r in (r for r, p in enumerate(self.process_of) if p == q):
                arrays = [np.empty(t.shape, t.dtype) for t in template]
                received[r] = arrays
                recvs.extend((q, a) for a in arrays)
        number = key[-1] if isinstance(key, tuple) else key
        self.processes.exchange_arrays(sends, recvs, int(number),
                                       f"{what or 'collective'} between processes {[me] + peers}")
        like = entries[0][2]
        table.update({r: _unflat(arrays, like) for r, arrays in received.items()})
        return table


def spmd_transport(local: list[int], size: int, processes: ProcessTransport | None = None,
                   process_of: list[int] | None = None):
    """The spmd.Transport for a program with `size` participants of which this process runs
    `local` (global ids): in-process when every participant is local. `process_of[r]` is
    the process running participant r (default: numbered process by process, the same
    number in each, as pmap does; a mesh of global devices would pass
    `[d.process_index for d in devices]`)."""
    if len(local) == size:
        return InProcessTransport(size)
    if processes is None or processes.process_count == 1:
        raise ValueError(f"a program of {size} participants runs {len(local)} of them here "
                         "but there is no other process (call minijax.distributed.initialize "
                         "under mpiexec)")
    if process_of is None:
        per_process = size // processes.process_count
        process_of = [r // per_process for r in range(size)]
    return CrossProcessTransport(processes, local, process_of)
