"""Running one compiled program on several devices at once (SPMD), in one process.

`run_spmd(backend, executable, devices, per_device_args)` runs the same executable once per
device, each on its own worker thread (and, on the CPU backend, on its own share of the
thread pool). The program's collectives (all-reduce, all-gather, reduce-scatter,
collective-permute, all-to-all; compiler/evaluator/collectives.py) meet through a
`Transport`, found in the thread's `CollectiveContext`:

- `Transport.exchange(key, rank, group, value, combine)` is the one operation every
  collective is built from: each member of `group` contributes `value`; once all have
  arrived, each calls `combine(values)` on the list of contributions in group order and
  gets its own result, and nobody returns before everybody has combined (so contributions
  are read in place, never copied, and may be reused by their owner afterwards);
- `InProcessTransport` implements it for threads of one process, with a deadline
  (`minijax_collective_timeout`): a participant that never arrives makes the others raise
  `CollectiveTimeoutError` naming who is missing, and a participant that fails wakes the
  others with `CollectiveAbortedError` instead of leaving them waiting.

A transport between processes (MPI) implements the same two methods: `exchange` for the
members living in other processes sends/receives their contributions, `abort` tells the
other processes. Reductions always combine contributions in group order, so every device
and every run gets the same bits.
"""

from __future__ import annotations

import ctypes
import queue
import threading
import time
from dataclasses import dataclass

from minijax.config import config


class CollectiveTimeoutError(RuntimeError):
    """A collective waited longer than `minijax_collective_timeout` for its participants."""


class CollectiveAbortedError(RuntimeError):
    """Another participant of a multi-device program failed while this one waited."""


class Transport:
    """Moves collective contributions between the participants of one program run."""

    def exchange(self, key, rank: int, group: tuple, value, combine, what: str = ""):
        """Contribute `value` as participant `rank` of `group` (participant ids, in order);
        returns `combine(values)` where `values` lists every member's contribution in
        group order. `key` is the same for the members of one collective instance."""
        raise NotImplementedError

    def abort(self, error: BaseException, rank: int) -> None:
        """Participant `rank` failed with `error`: wake every waiting participant."""
        raise NotImplementedError


class InProcessTransport(Transport):
    """Threads of one process: contributions are shared by reference, under one lock."""

    def __init__(self, size: int, timeout: float | None = None):
        self.size = size
        self.timeout = config._values["minijax_collective_timeout"] if timeout is None \
            else timeout
        self._cond = threading.Condition()
        self._slots: dict = {}
        self._error: BaseException | None = None
        self._failed_rank = None
        # Nonzero once a participant failed: native code waiting at a collective polls it.
        self.abort_flag = ctypes.c_int64(0)

    def _wait(self, ready, slot_key, rank, group, what, deadline) -> None:
        while not ready():
            if self._error is not None:
                raise self.aborted_error(what) from self._error
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                arrived = sorted(self._slots.get(slot_key, {}).get("values", {}))
                error = self.timeout_error(rank, group, arrived, what)
                self._error, self._failed_rank = error, rank
                self.abort_flag.value = 1
                self._cond.notify_all()
                raise error
            self._cond.wait(remaining)

    def exchange(self, key, rank, group, value, combine, what=""):
        group = tuple(group)
        slot_key = (key, group)
        n = len(group)
        deadline = time.monotonic() + self.timeout
        with self._cond:
            slot = self._slots.get(slot_key)
            if slot is None:
                slot = self._slots[slot_key] = {"values": {}, "done": 0}
            slot["values"][rank] = value
            if len(slot["values"]) == n:
                self._cond.notify_all()
            self._wait(lambda: len(slot["values"]) == n, slot_key, rank, group, what, deadline)
        values = slot["values"]
        result = combine([values[r] for r in group])
        with self._cond:
            slot["done"] += 1
            if slot["done"] == n:
                del self._slots[slot_key]
                self._cond.notify_all()
            self._wait(lambda: slot["done"] == n, slot_key, rank, group, what, deadline)
        return result

    def abort(self, error, rank):
        with self._cond:
            if self._error is None:
                self._error, self._failed_rank = error, rank
            self.abort_flag.value = 1
            self._cond.notify_all()

    def timeout_error(self, rank, group, arrived, what: str = "") -> CollectiveTimeoutError:
        """The error of participant `rank` whose wait at collective `what` for `group` timed
        out with only `arrived` there."""
        missing = [r for r in group if r not in arrived]
        return CollectiveTimeoutError(
            f"{what or 'collective'} on device {rank}: participants {missing} of "
            f"group {list(group)} did not arrive within {self.timeout:g} s (only "
            f"{list(arrived)} did). A device failed or took another path through the "
            "program; raise minijax_collective_timeout (MINIJAX_COLLECTIVE_TIMEOUT) "
            "if it is just slow.")

    def aborted_error(self, what: str = "") -> CollectiveAbortedError:
        """The error of a participant waiting at collective `what` once another failed."""
        if self._error is None:     # native code saw the failure before Python recorded it
            return CollectiveAbortedError(f"{what or 'collective'}: another participant "
                                          "failed or timed out")
        return CollectiveAbortedError(
            f"{what or 'collective'}: participant {self._failed_rank} failed "
            f"({type(self._error).__name__}: {self._error})")


@dataclass
class CollectiveContext:
    """What the collectives of the program running on this thread need to know."""

    rank: int                 # this participant (replica-id / partition-id)
    size: int                 # participants in the program
    transport: Transport
    sequence: int = 0         # collectives run so far: the key of the next one

    def next_key(self) -> int:
        self.sequence += 1
        return self.sequence


_local = threading.local()


def current_context() -> CollectiveContext | None:
    """The context of the multi-device program running on this thread (None: one device)."""
    return getattr(_local, "context", None)


class _Worker:
    """A daemon thread running one device's parts of multi-device programs, in order."""

    def __init__(self, index: int):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, daemon=True, name=f"minijax-device-{index}").start()

    def _loop(self):
        while True:
            job = self.jobs.get()
            done = job()
            # Dropped before signalling: holding the finished job would keep its program's
            # arguments and results alive until the next one (their memory; a donated
            # argument's buffer the caller reuses for an output once every part is done).
            del job
            done()


_workers: dict[int, _Worker] = {}
_workers_lock = threading.Lock()
# One multi-device program at a time: each device's worker runs its parts in order, so two
# programs interleaved on two devices could wait on each other forever.
_run_lock = threading.Lock()


def _worker(index: int) -> _Worker:
    worker = _workers.get(index)
    if worker is None:
        with _workers_lock:
            worker = _workers.get(index)
            if worker is None:
                worker = _workers[index] = _Worker(index)
    return worker


def run_spmd(backend, executable, devices: list, per_device_args: list,
             transport: Transport | None = None, participants: list | None = None,
             size: int | None = None) -> list:
    """Run `executable` once per device with that device's arguments, concurrently;
    returns each device's flat outputs. Participant i (partition-id i) runs on devices[i],
    unless `participants` gives the global ids of `devices` among the program's `size`
    participants (the rest run in other processes, reached through `transport`).

    The first failure is raised (other participants waiting at a collective stop with
    CollectiveAbortedError); a collective that waits too long raises
    CollectiveTimeoutError."""
    n = len(devices)
    if len(per_device_args) != n:
        raise ValueError(f"run_spmd: {len(per_device_args)} argument lists for {n} devices")
    transport = transport or InProcessTransport(n)
    ids = list(range(n)) if participants is None else list(participants)
    size = n if size is None else size
    results: list = [None] * n
    errors: list = [None] * n
    finished = threading.Semaphore(0)

    def part(i):
        _local.context = CollectiveContext(ids[i], size, transport)
        try:
            results[i] = backend.run_on_device(
                devices[i], n, lambda: executable.execute(per_device_args[i]))
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller below
            errors[i] = exc
            transport.abort(exc, ids[i])
        finally:
            _local.context = None

    def job(i):
        def run():   # returns what signals the caller, called once the job is dropped
            try:
                part(i)
            except BaseException as exc:  # noqa: BLE001 - part's own failures are recorded
                errors[i] = errors[i] or exc
            return finished.release
        return run

    with _run_lock:
        if participants is None and n > 1 and isinstance(transport, InProcessTransport):
            prepared = backend.run_all_devices(executable, per_device_args, transport)
            if prepared is not None:
                return prepared
        for i in range(1, n):
            _worker(i).jobs.put(job(i))
        part(0)
        for _ in range(n - 1):
            finished.acquire()
    first = next((e for e in errors if e is not None
                  and not isinstance(e, CollectiveAbortedError)), None)
    first = first or next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
    return results


__all__ = ["CollectiveAbortedError", "CollectiveContext", "CollectiveTimeoutError",
           "InProcessTransport", "Transport", "current_context", "run_spmd"]
