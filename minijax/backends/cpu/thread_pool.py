"""A small persistent thread pool that splits a kernel's outer loop across cores.

Kernels are ctypes functions, which release the GIL while they run, so plain Python threads
run them in parallel. The calling thread runs the first chunk itself.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading

from minijax.compiler.cache import clear_caches
from minijax.config import config

#: Pieces per thread: finer pieces balance load when threads start late.
PIECES_PER_THREAD = 4


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_num_threads() -> int:
    """MINIJAX_NUM_THREADS if set, else the number of usable cores."""
    requested = config._values["minijax_num_threads"]
    if requested:
        return max(1, int(requested))
    return usable_cores()


class ThreadPool:
    """`parallel_for(fn, arg, total, chunks)` calls fn(arg, start, end) on [0, total) pieces."""

    def __init__(self, num_threads: int):
        self.num_threads = num_threads
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()

    def _start(self):
        with self._lock:
            while len(self._workers) < self.num_threads - 1:
                t = threading.Thread(target=self._work, daemon=True,
                                     name=f"minijax-cpu-{len(self._workers)}")
                t.start()
                self._workers.append(t)

    def _work(self):
        get = self._tasks.get
        while True:
            job = get()
            job.help()

    def parallel_for(self, fn, arg, total: int, chunks: int) -> None:
        """Run fn over [0, total) in contiguous pieces on up to `chunks` threads.

        The caller takes pieces too and keeps going while helpers have not picked any
        up, so a helper thread that the OS does not schedule in time (a busy machine)
        costs nothing: the call never waits for a piece that no thread has started.
        """
        threads = max(1, min(chunks, total, self.num_threads))
        if threads == 1:
            fn(arg, 0, total)
            return
        if len(self._workers) < self.num_threads - 1:
            self._start()
        pieces = min(total, threads * PIECES_PER_THREAD)
        job = _Job(fn, arg, total, pieces)
        for _ in range(threads - 1):
            self._tasks.put(job)
        job.help()
        job.wait()


    def lend(self, fn, arg, count: int, keepalive=None) -> None:
        """Have up to `count` pool threads call fn(arg) once each, without waiting for them
        (a native loop's team, codegen/cpu/team.py: fn returns when the loop has ended,
        at once if it ended before the thread got to it). `keepalive` is held until then."""
        count = min(count, self.num_threads - 1)
        if count <= 0:
            return
        if len(self._workers) < self.num_threads - 1:
            self._start()
        lent = _Lent(fn, arg, keepalive)
        for _ in range(count):
            self._tasks.put(lent)


class _Lent:
    """A call lent to pool threads (ThreadPool.lend)."""

    __slots__ = ("fn", "arg", "keepalive")

    def __init__(self, fn, arg, keepalive):
        self.fn, self.arg, self.keepalive = fn, arg, keepalive

    def help(self) -> None:
        self.fn(self.arg)


class _Job:
    """One parallel_for: pieces handed out by an atomic counter; the last finisher signals."""

    __slots__ = ("fn", "arg", "bounds", "pieces", "next", "lock", "finished", "done", "error")

    def __init__(self, fn, arg, total, pieces):
        self.fn, self.arg, self.pieces = fn, arg, pieces
        step, extra = divmod(total, pieces)
        bounds = [0]
        for c in range(pieces):
            bounds.append(bounds[-1] + step + (1 if c < extra else 0))
        self.bounds = bounds
        self.next = itertools.count().__next__
        self.lock = threading.Lock()
        self.finished = 0
        self.done = threading.Event()
        self.error = None

    def help(self) -> None:
        pieces, bounds, fn, arg = self.pieces, self.bounds, self.fn, self.arg
        while True:
            c = self.next()
            if c >= pieces:
                return
            try:
                fn(arg, bounds[c], bounds[c + 1])
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                self.error = exc
            with self.lock:
                self.finished += 1
                if self.finished == pieces:
                    self.done.set()

    def wait(self) -> None:
        self.done.wait()
        if self.error is not None:
            raise self.error


_pool: ThreadPool | None = None
# A thread running one device's part of a multi-device program uses that device's share.
_device_local = threading.local()
_shares: dict[tuple[int, int], ThreadPool] = {}


def get_pool() -> ThreadPool:
    """The pool kernels launched on this thread use: the running device's share of the
    threads inside a multi-device execution, else the process-wide pool (sized by
    MINIJAX_NUM_THREADS on first use)."""
    global _pool
    share = getattr(_device_local, "pool", None)
    if share is not None:
        return share
    if _pool is None:
        _pool = ThreadPool(default_num_threads())
    return _pool


def device_share(index: int, count: int) -> ThreadPool:
    """Device `index` of `count` devices running at once: its own pool of about
    threads / count threads (at least one; the remainder goes to the first devices)."""
    key = (index, count)
    pool = _shares.get(key)
    if pool is None:
        total = default_num_threads()
        size = max(1, total // count + (1 if index < total % count else 0))
        pool = _shares[key] = ThreadPool(size)
    return pool


def set_device_share(pool: ThreadPool | None) -> None:
    """Make this thread's kernels use `pool` (None: the process-wide pool again)."""
    _device_local.pool = pool


def _num_threads_changed(_value) -> None:
    # Programs compiled so far were planned for the old pool: forget them, and give later
    # compiles a pool of the new size (the old pool's idle daemon threads just wait).
    global _pool
    _pool = None
    _shares.clear()
    clear_caches()


config.on_change("minijax_num_threads", _num_threads_changed)
