"""Warm host memory: the CPU backend's caching allocator for kernel outputs and temporaries.

A fresh `np.empty` of a large array is fresh memory (glibc serves it with mmap, or from a
heap top it trims again when the array dies), so the first write of every page is a minor
page fault: an SGD update of a 784x512 weight ran at ~4 GB/s instead of ~17. This module
keeps that memory mapped between calls instead.

Blocks. Every request of at least MIN_BYTES is rounded up to a *size class* (four classes
per power of two, so at most 25% is rounded away) and served by a *block* of that class: a
C-contiguous `np.uint8` array (the owner, allocated once, 64 bytes more than the class) of
which the 64-byte-aligned part is handed out as `np.ndarray(dims, dtype, buffer=owner,
offset=...)`. NumPy makes every view of such an array, and every view of a view, hold the
owner, so a block is *idle* exactly when nothing but this cache references its owner
(`sys.getrefcount`, calibrated once against a probe): an Array, a NumPy array from
`np.asarray(x)`, a memoryview, a pickled-in-progress copy: as long as any of them lives,
the block is not handed out again. There is no per-array hook: a dead array's block is
found idle by the next request of its class (each class keeps its blocks in a list: the
free list is the idle blocks of that list). A block keeps the array it last handed out;
when the next request has the same shape and dtype and that array is idle too, the same
array object is handed out again (no new ndarray: a warm output costs about as much as
np.empty). Requests take a re-entrant lock: executables may run on several threads.

Release policy. Idle blocks are the cache; `minijax_host_cache_bytes` (config, bytes, 0:
no cache) caps their total. When a class has no idle block and a new one must be mapped,
the idle blocks of every class are counted first and the least recently used are released
(their owners dropped, so glibc unmaps them) until the new block fits under the cap;
requests larger than the cap bypass the cache. `release_idle()` drops every idle block now
(the process then holds only memory that live arrays use); lowering the option releases
idle blocks down to the new cap. Requests under MIN_BYTES (128 KiB) use `np.empty`: NumPy's
small-array cache and malloc's heap bins already reuse that memory without faults.
"""

from __future__ import annotations

import math
import os
import sys
import threading

import numpy as np

from minijax.config import config

#: Requests below this many bytes are plain np.empty arrays: glibc serves them from its heap
#: bins (below its initial mmap threshold, 128 KiB), reused without page faults, and in a
#: loop whose carry keeps last iteration's output alive a cache lookup (~5 us) costs more
#: than the np.empty (~0.3 us) it replaces (scan RNN: 3.2 -> 3.5-3.9 ms at 4 KiB).
MIN_BYTES = 1 << 17
ALIGN = 64

_getrefcount = sys.getrefcount
_empty = np.empty
_ndarray = np.ndarray
_values = config._values


def size_class(nbytes: int) -> int:
    """The block size serving `nbytes` (>= MIN_BYTES): 2^p, 1.25*2^p, 1.5*2^p or 1.75*2^p."""
    step = 1 << max(nbytes.bit_length() - 3, 6)
    return -(-nbytes // step) * step


# A block is a list [owner, offset, last use, view, (dims, dtype) of view]: `view` is the
# array last handed out from it (kept, so that the next request of the same shape gets the
# same array object back instead of a new one: ~0.7 us less per output).
_OWNER, _OFFSET, _USED, _VIEW, _KEY = range(5)


def _is_idle(block, idle: int) -> bool:
    """Whether nothing but the cache holds `block`'s memory. `idle` is the calibrated count
    `sys.getrefcount` reports here for an array that only a list holds."""
    if block[_VIEW] is None:
        return _getrefcount(block[_OWNER]) == idle
    # The kept view holds the owner once more; every other view holds one or the other.
    return _getrefcount(block[_VIEW]) == idle and _getrefcount(block[_OWNER]) == idle + 1


def _first_idle(blocks, idle: int):
    """The first idle block of `blocks`, or None."""
    for block in blocks:
        if _is_idle(block, idle):
            return block
    return None


def _calibrate() -> int:
    """The reference count `_is_idle` sees for an array that only its block holds, checked
    against views held from outside."""
    owner = np.empty(64, np.uint8)
    block = [owner, 0, 0, None, None]
    del owner
    for idle in range(1, 16):
        if not _is_idle(block, idle):
            continue
        ok = True
        outside = block[_OWNER][:]  # a view holds the owner: then it is not idle
        ok &= not _is_idle(block, idle)
        del outside
        block[_VIEW] = _ndarray((16,), np.float32, buffer=block[_OWNER])
        ok &= _is_idle(block, idle)
        outside = block[_VIEW]
        ok &= not _is_idle(block, idle)
        outside = block[_VIEW].reshape(4, 4)  # a view of the kept view holds the owner
        ok &= not _is_idle(block, idle)
        del outside
        ok &= _is_idle(block, idle)
        if ok:
            return idle
        block[_VIEW] = None
    raise RuntimeError("minijax: cannot calibrate sys.getrefcount for the host cache")


def _bytes(block) -> int:
    """A block's size class (its owner has ALIGN bytes more)."""
    return len(block[0]) - ALIGN


def _drop(blocks: list, block) -> None:
    """Remove `block` from its class list (by identity: blocks hold arrays) and empty it
    (a request's hint may still name it: an emptied block is never idle)."""
    for k, b in enumerate(blocks):
        if b is block:
            del blocks[k]
            break
    block[_OWNER] = block[_VIEW] = block[_KEY] = None


class HostMemory:
    """The process's cache of host blocks (see the module docstring)."""

    def __init__(self):
        self._classes: dict[int, list] = {}
        self._lock = threading.RLock()
        self._tick = 0
        self._idle_refs = _calibrate()
        self.stats = {"blocks_mapped": 0, "blocks_released": 0, "bypassed": 0}

    # ------------------------------------------------------------------ allocation
    def planned(self, dims, dtype):
        """A function of no arguments returning a fresh C-contiguous array `dims`/`dtype`
        (for an output whose shape is known when the program is planned)."""
        dims = tuple(int(d) for d in dims)
        dtype = np.dtype(dtype)
        nbytes = math.prod(dims) * dtype.itemsize
        if nbytes < MIN_BYTES:
            return lambda: _empty(dims, dtype)
        size = size_class(nbytes)
        blocks = self._classes.setdefault(size, [])
        take, key = self._take, (dims, dtype)
        hint = [None]  # the block this request got last time: in a loop, usually idle again
        return lambda: take(blocks, size, dims, dtype, key, hint)

    def empty(self, dims, dtype) -> np.ndarray:
        """A C-contiguous array of `dims`/`dtype` from the cache (np.empty's contract)."""
        dims = (int(dims),) if isinstance(dims, (int, np.integer)) else tuple(
            int(d) for d in dims)
        dtype = np.dtype(dtype)
        nbytes = math.prod(dims) * dtype.itemsize
        if nbytes < MIN_BYTES:
            return _empty(dims, dtype)
        size = size_class(nbytes)
        blocks = self._classes.get(size)
        if blocks is None:
            blocks = self._classes.setdefault(size, [])
        return self._take(blocks, size, dims, dtype)

    def zeros(self, dims, dtype) -> np.ndarray:
        out = self.empty(dims, dtype)
        out.fill(0)
        return out

    def _take(self, blocks, size, dims, dtype, key=None, hint=None):
        if not _values["minijax_host_cache_bytes"]:
            return _empty(dims, dtype)
        if key is None:
            key = (dims, dtype)
        lock = self._lock
        lock.acquire()
        try:
            block = None if hint is None else hint[0]
            if block is None or not _is_idle(block, self._idle_refs):
                block = _first_idle(blocks, self._idle_refs)
                if block is None:
                    block = self._new_block(blocks, size)
                    if block is None:
                        return _empty(dims, dtype)
                if hint is not None:
                    hint[0] = block
            # Holding the owner marks the block busy at once: a garbage collection during
            # the view's creation may run finalizers that allocate on this thread (the lock
            # is re-entrant), and they must not be handed this block too.
            owner = block[_OWNER]
            self._tick += 1
            block[_USED] = self._tick
            kept = block[_KEY]
            if kept is key or kept == key:
                return block[_VIEW]
            view = block[_VIEW] = _ndarray(dims, dtype, buffer=owner, offset=block[_OFFSET])
            block[_KEY] = key
            return view
        finally:
            lock.release()

    def _new_block(self, blocks, size):
        cap = _values["minijax_host_cache_bytes"]
        if size > cap:
            self.stats["bypassed"] += 1
            return None
        idle = self._idle_blocks()
        total = sum(_bytes(b) for _, b in idle)
        if total + size > cap:
            idle.sort(key=lambda cb: cb[1][_USED])  # least recently used first
            for cls_blocks, block in idle:
                if total + size <= cap:
                    break
                total -= _bytes(block)
                _drop(cls_blocks, block)
                self.stats["blocks_released"] += 1
        owner = _empty(size + ALIGN, np.uint8)
        block = [owner, (-owner.ctypes.data) % ALIGN, 0, None, None]
        blocks.append(block)
        self.stats["blocks_mapped"] += 1
        return block

    def _idle_blocks(self) -> list:
        """(class list, block) of every idle block."""
        idle = self._idle_refs
        return [(blocks, block) for blocks in self._classes.values() for block in blocks
                if _is_idle(block, idle)]

    # ------------------------------------------------------------------ policy
    def release_idle(self, keep_bytes: int = 0) -> int:
        """Drop least recently used idle blocks until at most `keep_bytes` stay cached;
        returns the bytes released."""
        with self._lock:
            idle = self._idle_blocks()
            total = sum(_bytes(b) for _, b in idle)
            idle.sort(key=lambda cb: cb[1][_USED])
            released = 0
            for cls_blocks, block in idle:
                if total <= keep_bytes:
                    break
                total -= _bytes(block)
                released += _bytes(block)
                _drop(cls_blocks, block)
                self.stats["blocks_released"] += 1
            return released

    def usage(self) -> dict:
        """Bytes of blocks in use (held by arrays) and idle (cached), and block counts."""
        with self._lock:
            idle = self._idle_blocks()
            idle_bytes = sum(_bytes(b) for _, b in idle)
            mapped = sum(_bytes(b) for blocks in self._classes.values() for b in blocks)
            return {"idle_bytes": idle_bytes, "in_use_bytes": mapped - idle_bytes,
                    "idle_blocks": len(idle),
                    "blocks": sum(len(b) for b in self._classes.values()), **self.stats}


_memory = HostMemory()


def host_memory() -> HostMemory:
    """The process-wide cache of host blocks."""
    return _memory


def release_idle(keep_bytes: int = 0) -> int:
    """Return idle cached host memory to the system (see HostMemory.release_idle)."""
    return _memory.release_idle(keep_bytes)


config.on_change("minijax_host_cache_bytes", lambda cap: _memory.release_idle(cap))


def _after_fork_in_child() -> None:
    # A fork while another thread held the lock would leave it held forever in the child.
    _memory._lock = threading.RLock()


os.register_at_fork(after_in_child=_after_fork_in_child)
