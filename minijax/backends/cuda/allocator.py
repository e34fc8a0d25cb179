"""A caching device-memory allocator that grows on demand.

Device allocations (cuMemAlloc) are slow and synchronizing, so freed blocks are kept in
free lists per size class and reused; the allocator never reserves memory up front. Size
classes: multiples of 512 bytes up to 1 MiB, then multiples of 2 MiB (so a block is reused
only for requests at most a class apart). When the device is out of memory, every cached
free block is released and the allocation retried once; if it still fails, the error names
the request and the largest live buffers with the label (source line) of each.

The raw allocator is injected (`raw_alloc(nbytes) -> address`, raw `free(address)`), so
this file knows nothing of CUDA and is tested on the host.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

SMALL_ROUND = 512
LARGE_THRESHOLD = 1 << 20
LARGE_ROUND = 2 << 20


class DeviceOutOfMemory(MemoryError):
    """The device has no room for an allocation (see the message for what holds memory)."""


def size_class(nbytes: int) -> int:
    """Bytes actually allocated for a request of `nbytes` (see the module docstring)."""
    nbytes = max(int(nbytes), 1)
    step = SMALL_ROUND if nbytes <= LARGE_THRESHOLD else LARGE_ROUND
    return -(-nbytes // step) * step


@dataclass
class Block:
    """One allocation: its address, class size, requested size and label while live."""

    ptr: int
    size: int
    requested: int = 0
    label: str = ""


def _fmt(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


class CachingAllocator:
    """Size-class free lists over a raw allocator (see the module docstring)."""

    def __init__(self, raw_alloc: Callable[[int], int], raw_free: Callable[[int], None],
                 is_oom: Callable[[BaseException], bool] = lambda e: isinstance(e, MemoryError),
                 device: str = "device"):
        self._raw_alloc, self._raw_free, self._is_oom = raw_alloc, raw_free, is_oom
        self.device = device
        self._free: dict[int, list[Block]] = {}
        self._live: dict[int, Block] = {}
        self._lock = threading.Lock()
        self.stats = {"allocs": 0, "reused": 0, "raw_allocs": 0, "raw_frees": 0,
                      "bytes_reserved": 0, "bytes_in_use": 0, "peak_bytes_in_use": 0}

    def allocate(self, nbytes: int, label: str = "") -> Block:
        """A block of at least `nbytes` bytes (a cached one of the same class if any)."""
        size = size_class(nbytes)
        with self._lock:
            self.stats["allocs"] += 1
            free = self._free.get(size)
            if free:
                block = free.pop()
                self.stats["reused"] += 1
            else:
                block = Block(self._raw(size), size)
            block.requested, block.label = int(nbytes), label
            self._live[block.ptr] = block
            self.stats["bytes_in_use"] += size
            self.stats["peak_bytes_in_use"] = max(self.stats["peak_bytes_in_use"],
                                                  self.stats["bytes_in_use"])
            return block

    def _raw(self, size: int) -> int:
        try:
            ptr = self._raw_alloc(size)
        except BaseException as exc:  # noqa: BLE001 - only OOM is retried, see is_oom
            if not self._is_oom(exc):
                raise
            self._release_cached()
            try:
                ptr = self._raw_alloc(size)
            except BaseException as exc2:  # noqa: BLE001
                if not self._is_oom(exc2):
                    raise
                raise DeviceOutOfMemory(self._oom_message(size)) from exc2
        self.stats["raw_allocs"] += 1
        self.stats["bytes_reserved"] += size
        return ptr

    def _release_cached(self) -> None:
        for blocks in self._free.values():
            for block in blocks:
                self._raw_free(block.ptr)
                self.stats["raw_frees"] += 1
                self.stats["bytes_reserved"] -= block.size
        self._free.clear()

    def _oom_message(self, size: int) -> str:
        live = sorted(self._live.values(), key=lambda b: -b.size)
        lines = [f"out of memory on {self.device} allocating {_fmt(size)}; "
                 f"{_fmt(self.stats['bytes_in_use'])} in {len(live)} live buffers"]
        if live:
            lines.append("largest live buffers:")
            lines += [f"  {_fmt(b.size)}  {b.label or '(no label)'}" for b in live[:8]]
        lines.append("hint: free arrays you no longer need (del x), donate arguments, or "
                     "use smaller batches")
        return "\n".join(lines)

    def free(self, block: Block) -> None:
        """Return `block` to its size class's free list (not to the device)."""
        with self._lock:
            if self._live.pop(block.ptr, None) is None:
                return
            self.stats["bytes_in_use"] -= block.size
            block.label = ""
            self._free.setdefault(block.size, []).append(block)

    def empty_cache(self) -> None:
        """Give every cached free block back to the device."""
        with self._lock:
            self._release_cached()

    def live_blocks(self) -> list[Block]:
        with self._lock:
            return list(self._live.values())


__all__ = ["Block", "CachingAllocator", "DeviceOutOfMemory", "size_class"]
