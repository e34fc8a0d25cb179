"""A multi-device run whose collectives all meet in native code, prepared on one thread.

When every collective of a device program runs natively between the devices of this
process (native_entry.NativeEntry.all_native), no device needs Python during its call. The
calling thread then converts every device's arguments and prepares every call, posts
devices 1..n-1 to their device threads through mailboxes (codegen/cpu/mailbox.py), runs
device 0 itself, and waits for the others in native code. A device thread waits for its
next call in native code too (for up to IDLE_NS after its last one, then it sleeps until
the next run wakes it through a queue), so in a training loop no thread sleeps, wakes or
takes the GIL between steps; before, every step woke each device thread from sleep and the
threads took turns on the GIL to prepare their calls.
"""

from __future__ import annotations

import ctypes
import os
import queue
import threading

import llvmlite.ir as ir
import numpy as np

from minijax.backends.cpu.blas import hold_one_blas_thread, release_blas_threads
from minijax.backends.cpu.native_entry import _data
from minijax.backends.cpu.native_loops import CLOCK_GETTIME, SCHED_YIELD, SPIN_HINT
from minijax.backends.cpu.runtime import SYMBOL_PLACEHOLDER, get_jit
from minijax.backends.spmd import CollectiveAbortedError, InProcessTransport
from minijax.compiler.codegen.cpu import mailbox as M

#: How long a device thread waits for its next call in native code before it sleeps.
IDLE_NS = 2_000_000
_PREFIX = SYMBOL_PLACEHOLDER + "mailbox"


class _Functions:
    """post / serve / wait, compiled once per process."""

    def __init__(self):
        module = ir.Module("minijax_mailbox")
        M.MailboxEmitter(module, _PREFIX, SPIN_HINT)
        names = [f"{_PREFIX}.{n}" for n in ("post", "serve", "wait")]
        addrs = get_jit().compile(str(module), names)
        self.post = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_void_p)(addrs[names[0]])
        self.serve = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addrs[names[1]])
        self.wait = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(addrs[names[2]])


class _DeviceThread:
    """Device `index`'s thread: serves its mailbox, sleeping on a queue while away."""

    def __init__(self, index: int, functions: _Functions):
        self.functions = functions
        self.box = np.zeros(M.BOX_WORDS, np.int64)
        self.box[M.BOX_IDLE_NS] = IDLE_NS
        self.box[M.BOX_CLOCK], self.box[M.BOX_YIELD] = CLOCK_GETTIME, SCHED_YIELD
        self.address = _data(self.box)
        self.wakeups: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, daemon=True,
                         name=f"minijax-device-{index}-native").start()

    def _loop(self):
        while True:
            self.wakeups.get()
            self.box[M.BOX_STATE] = M.SERVING
            self.functions.serve(self.address)      # the GIL released while it serves

    def post(self, entry: int, buffers) -> int:
        """Hand the call over; returns its ticket for `wait`."""
        ticket = self.functions.post(self.address, entry, ctypes.addressof(buffers))
        if ticket < 0:      # the thread sleeps (or is about to): wake it to serve again
            self.wakeups.put(None)
        return abs(ticket)

    def wait(self, ticket: int) -> None:
        self.functions.wait(self.address, ticket)


_threads: dict[int, _DeviceThread] = {}
_functions: list = []
_lock = threading.Lock()


def _forget_threads() -> None:
    # A forked child has none of the parent's threads (their mailboxes may even read
    # SERVING): it starts its own on first use.
    _threads.clear()


os.register_at_fork(after_in_child=_forget_threads)


def _device_thread(index: int) -> _DeviceThread:
    thread = _threads.get(index)
    if thread is None:
        with _lock:
            if not _functions:
                _functions.append(_Functions())
            thread = _threads.get(index)
            if thread is None:
                thread = _threads[index] = _DeviceThread(index, _functions[0])
    return thread


def run_prepared(native, executable, per_device_args: list, transport: InProcessTransport):
    """Run native entry `native` (all of whose collectives meet natively) once per device
    of an in-process run; returns each device's outputs, or None when this run cannot
    (its all-reduces would call back: more devices than cores, say)."""
    n = len(per_device_args)
    shared = native.shared_block(transport, n)
    if shared is None:
        return None
    converted = [executable.convert_args(args) for args in per_device_args]
    calls = [native.prepare(args, rank, shared) for rank, args in enumerate(converted)]
    tickets = []
    hold_one_blas_thread()
    try:
        for rank in range(1, n):
            thread = _device_thread(rank)
            tickets.append((thread, thread.post(calls[rank][0], calls[rank][1])))
        native.call_prepared(calls[0][1])
    finally:
        # Even when interrupted: no posted call may outlive the buffers it reads.
        for thread, ticket in tickets:
            thread.wait(ticket)
        release_blas_threads()
    errors = [native.device_error(device, rank, transport, shared)
              for rank, (_, _, _, device) in enumerate(calls)]
    first = next((e for e in errors if e is not None
                  and not isinstance(e, CollectiveAbortedError)), None)
    first = first or next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
    return [outs for _, _, outs, _ in calls]
