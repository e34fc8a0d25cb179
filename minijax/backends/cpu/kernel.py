"""One generated CPU kernel as the CPU backend runs it (see cpu.py): its spec, entry
symbol, ctypes function and thread count; full reductions get a scratch buffer here."""

from __future__ import annotations

import ctypes

import numpy as np

from minijax.backends.cpu.memory import host_memory
from minijax.backends.cpu.thread_pool import get_pool
from minijax.compiler.codegen.cpu.loops import FULL_CHUNKS, SLOT_BYTES

#: Kernels whose elements-times-work is at least this run on several threads.
PARALLEL_THRESHOLD = 1 << 20
#: Kernels below this are called as builtins holding the GIL (~0.1 us a call); larger ones
#: through ctypes, which releases it (~2 us), so that the devices of a multi-device program
#: (and the user's other threads) run their kernels at the same time.
GIL_HOLD_MAX = 1 << 16

_KernelFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def _pyobject_data_offset() -> int | None:
    """Offset of the data pointer inside a numpy array object, if this numpy has it at 16."""
    probe = np.zeros(3)
    if ctypes.c_void_p.from_address(id(probe) + 16).value == probe.ctypes.data:
        return 16
    return None


_DATA_OFFSET = _pyobject_data_offset()


def _row_major(shape) -> bool:
    return shape.layout is None or shape.minor_to_major == tuple(range(shape.rank - 1, -1, -1))


class _Kernel:
    """One generated kernel: its spec, entry symbol, and (after the JIT) its ctypes function."""

    def __init__(self, spec, symbol, label):
        self.spec = spec
        self.symbol = symbol
        self.label = label
        self.fn = None
        self.fast = None          # builtin-function entry (single-thread kernels)
        self.fast_symbol = None
        self._keepalive = None
        out_bytes = sum(s.nbytes for s in spec.output_shapes)
        self.out_specs = [(s.dims, s.dtype) for s in spec.output_shapes]
        self.out_bytes = out_bytes
        total = spec.outer * spec.work
        self.threads = 1
        self.holds_gil_ok = total < GIL_HOLD_MAX
        if spec.outer >= 2 and total >= PARALLEL_THRESHOLD:
            self.threads = get_pool().num_threads
        # Full reductions take a scratch buffer of partials after the outputs and a final
        # combining call (start = FULL_CHUNKS), so they never use the fastcall entry.
        self.full = spec.mode == "full_reduce"
        self.scratch_bytes = FULL_CHUNKS * SLOT_BYTES * len(spec.output_shapes)
        self.scratch = host_memory().planned((self.scratch_bytes,), np.uint8)

    def launch(self, ptrs) -> None:
        if self.spec.outer == 0:
            return
        if self.full:
            scratch = self.scratch()
            n = len(ptrs)
            addr = id(scratch) if _DATA_OFFSET is not None else scratch.ctypes.data
            ptrs = (ctypes.c_void_p * (n + 1))(*ptrs, addr)
            if self.threads > 1:
                get_pool().parallel_for(self.fn, ptrs, FULL_CHUNKS, self.threads)
            else:
                self.fn(ptrs, 0, FULL_CHUNKS)
            self.fn(ptrs, FULL_CHUNKS, FULL_CHUNKS + 1)
            return
        if self.threads > 1:
            get_pool().parallel_for(self.fn, ptrs, self.spec.outer, self.threads)
        else:
            self.fn(ptrs, 0, self.spec.outer)


__all__ = ["GIL_HOLD_MAX", "PARALLEL_THRESHOLD"]
