"""The trace-event recorder behind minijax.profiler (a leaf, stdlib only: the compiler
and the backends import it).

While a trace is active (`ACTIVE` is True) the compiler and the backends add "complete"
events (Chrome trace-event format, phase "X": name, category, start and duration in
microseconds, thread, args). Hooks test the module-level `ACTIVE` flag, so a program that
is not being traced pays one global read per compile or per execution, nothing per kernel.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

ACTIVE = False
_events: list[dict] = []
_lock = threading.Lock()
_epoch = time.perf_counter()


def _us(t: float) -> float:
    return round((t - _epoch) * 1e6, 3)


def add(name: str, category: str, start: float, duration: float, args=None) -> None:
    """Record a span that started at `start` (time.perf_counter()) and lasted `duration` s."""
    event = {"name": name, "cat": category, "ph": "X", "ts": _us(start),
             "dur": max(round(duration * 1e6, 3), 0.001), "pid": os.getpid(),
             "tid": threading.get_ident()}
    if args:
        event["args"] = args
    with _lock:
        _events.append(event)


@contextlib.contextmanager
def span(name: str, category: str, **args):
    """Record the enclosed block as one span when a trace is active."""
    if not ACTIVE:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        add(name, category, start, time.perf_counter() - start, args or None)


class StageTimings(dict):
    """A compile's stage timings dict ({"trace": seconds, ...}) that also records each
    stage as a span ending when it is stored (a stage stored twice is recorded once)."""

    def __init__(self, fun_name: str):
        super().__init__()
        self.fun_name = fun_name

    def __setitem__(self, key, value) -> None:
        if key not in self:
            now = time.perf_counter()
            add(f"{key} {self.fun_name}", "compile", now - value, value)
        super().__setitem__(key, value)


def start() -> None:
    global ACTIVE
    with _lock:
        _events.clear()
    ACTIVE = True


def stop() -> list[dict]:
    """End recording; returns the events in start-time order."""
    global ACTIVE
    ACTIVE = False
    with _lock:
        events = sorted(_events, key=lambda e: (e["ts"], -e["dur"]))
        _events.clear()
    return events
