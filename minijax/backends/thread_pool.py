"""A small persistent thread pool that splits a kernel's outer loop across cores.

Kernels are ctypes functions, which release the GIL while they run, so plain Python threads
run them in parallel. The calling thread runs the first chunk itself.
"""

from __future__ import annotations

import os
import queue
import threading


def default_num_threads() -> int:
    """MINIJAX_NUM_THREADS if set, else the number of usable cores."""
    env = os.environ.get("MINIJAX_NUM_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


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
            fn, arg, start, end, done = get()
            try:
                fn(arg, start, end)
                done.put(None)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                done.put(exc)

    def parallel_for(self, fn, arg, total: int, chunks: int) -> None:
        """Run fn over [0, total) in `chunks` contiguous pieces; returns when all are done."""
        chunks = max(1, min(chunks, total, self.num_threads))
        if chunks == 1:
            fn(arg, 0, total)
            return
        if len(self._workers) < self.num_threads - 1:
            self._start()
        done: queue.SimpleQueue = queue.SimpleQueue()
        step, extra = divmod(total, chunks)
        bounds = [0]
        for c in range(chunks):
            bounds.append(bounds[-1] + step + (1 if c < extra else 0))
        for c in range(1, chunks):
            self._tasks.put((fn, arg, bounds[c], bounds[c + 1], done))
        fn(arg, bounds[0], bounds[1])
        errors = [done.get() for _ in range(chunks - 1)]
        for err in errors:
            if err is not None:
                raise err


_pool: ThreadPool | None = None


def get_pool() -> ThreadPool:
    """The process-wide pool (sized by MINIJAX_NUM_THREADS on first use)."""
    global _pool
    if _pool is None:
        _pool = ThreadPool(default_num_threads())
    return _pool
