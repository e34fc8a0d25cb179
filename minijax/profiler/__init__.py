"""minijax.profiler: timelines of compiles and kernel executions (as jax.profiler).

    with minijax.profiler.trace("/tmp/trace"):
        train_step(params, batch)            # compiles and runs, recorded

writes a Chrome trace-event JSON file (`<log_dir>/plugins/profile/<run>/<host>.trace.json`,
JAX's layout) that opens in https://ui.perfetto.dev and chrome://tracing. It holds spans
for each compile's stages (trace, lower, fingerprint, optimize with one span per pass,
codegen with the LLVM compilation), one span per kernel, library call or host thunk each
execution runs (named after the fusion and its source line, with bytes moved and GB/s in
the args), and the user's own spans (`TraceAnnotation`, `annotate_function`).
`save_device_memory_profile` writes the live device buffers grouped by shape and dtype.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import socket
import time

from minijax import trace_events as recorder
from minijax.array import Array

__all__ = ["trace", "start_trace", "stop_trace", "TraceAnnotation", "annotate",
           "annotate_function", "StepTraceAnnotation", "device_memory_profile",
           "save_device_memory_profile"]

_log_dir: list[str] = []


def start_trace(log_dir, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False) -> None:
    """Start recording; `stop_trace()` writes the trace under `log_dir`."""
    if recorder.ACTIVE:
        raise RuntimeError("Profile has already been started. Only one profile may be run "
                           "at a time.")
    _log_dir[:] = [os.fspath(log_dir)]
    recorder.start()


def stop_trace() -> str:
    """Stop recording and write the trace-event JSON; returns the file's path."""
    if not recorder.ACTIVE:
        raise RuntimeError("No profile started")
    events = recorder.stop()
    run = time.strftime("%Y_%m_%d_%H_%M_%S")
    folder = os.path.join(_log_dir[0], "plugins", "profile", run)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{socket.gethostname()}.trace.json")
    meta = [{"name": "process_name", "ph": "M", "pid": os.getpid(),
             "args": {"name": "minijax"}}]
    with open(path, "w") as f:
        json.dump({"traceEvents": meta + events, "displayTimeUnit": "ms"}, f)
    return path


@contextlib.contextmanager
def trace(log_dir, create_perfetto_link: bool = False, create_perfetto_trace: bool = False):
    """Record everything run inside the block into a trace under `log_dir`."""
    start_trace(log_dir)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation:
    """A user span in the trace: `with TraceAnnotation("data loading"): ...`."""

    def __init__(self, name: str, **kwargs):
        self.name = name
        self.args = {k: str(v) for k, v in kwargs.items()}
        self._start = None

    def __enter__(self):
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if recorder.ACTIVE and self._start is not None:
            recorder.add(self.name, "user", self._start, time.perf_counter() - self._start,
                         self.args or None)
        return False


class StepTraceAnnotation(TraceAnnotation):
    """A training-step span: `with StepTraceAnnotation("train", step_num=i): ...`."""


annotate = TraceAnnotation


def annotate_function(func=None, name: str | None = None, **kwargs):
    """Decorator: every call of `func` becomes a span named after it."""
    if func is None:
        return functools.partial(annotate_function, name=name, **kwargs)
    label = name or getattr(func, "__qualname__", getattr(func, "__name__", "function"))

    @functools.wraps(func)
    def wrapper(*args, **kw):
        with TraceAnnotation(label, **kwargs):
            return func(*args, **kw)
    return wrapper


def _live_arrays() -> list[Array]:
    return [o for o in gc.get_objects() if type(o) is Array]


def device_memory_profile(backend: str | None = None) -> bytes:
    """The live device buffers as JSON bytes: total bytes, then one entry per
    (device, shape, dtype) with its count and bytes, largest first. (JAX returns a pprof
    protobuf; minijax's host buffers are NumPy arrays, listed here from the live Arrays.)"""
    groups: dict[tuple, list[int]] = {}
    seen: set[int] = set()
    for a in _live_arrays():
        base = a._value.base if a._value.base is not None else a._value
        shared = id(base) in seen
        seen.add(id(base))
        key = (str(a.device), str(a.dtype), tuple(a.shape))
        entry = groups.setdefault(key, [0, 0])
        entry[0] += 1
        entry[1] += 0 if shared else a.nbytes
    buffers = [{"device": d, "dtype": t, "shape": list(s), "count": c, "bytes": b}
               for (d, t, s), (c, b) in groups.items()]
    buffers.sort(key=lambda e: -e["bytes"])
    profile = {"total_bytes": sum(e["bytes"] for e in buffers),
               "num_arrays": sum(e["count"] for e in buffers), "buffers": buffers}
    return json.dumps(profile, indent=1).encode()


def save_device_memory_profile(filename, backend: str | None = None) -> None:
    """Write `device_memory_profile()` to `filename`."""
    with open(filename, "wb") as f:
        f.write(device_memory_profile(backend))
