"""The compile cache: shape-specialized executables, bounded by bytes, with explanations.

Levels:
- per jitted function, `FunctionCache` maps a *call signature* (argument treedef, avals
  with weak types, static argument values, backend, options) to a compiled entry; this is
  the fast path of a cached call;
- process-wide, `ExecutableCache` maps a *program fingerprint* (a hash of the lowered
  module's structure, backend and options: persistent_cache.module_fingerprint) to an
  executable, so re-created functions (a re-run notebook cell) that trace to the same
  program skip compilation;
- with MINIJAX_CACHE_DIR set, persistent_cache.DiskCache keeps the optimized modules on
  disk under the same fingerprint, so a new process skips the pass pipeline.
The in-memory levels are LRU-bounded by an estimate of the bytes they hold;
`clear_caches()` empties them (not the disk).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from minijax.dtypes import short_name

DEFAULT_MAX_BYTES = 1 << 30
_all_function_caches: weakref.WeakSet = weakref.WeakSet()


@dataclass(frozen=True)
class CallSignature:
    """What a compiled entry is specialized on. Fields are compared to explain misses."""

    in_tree: object
    avals: tuple            # ((shape, dtype, weak_type), ...) per flat argument
    static_args: tuple      # ((name, value), ...)
    backend: str
    options: tuple


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    compiles: int = 0
    evictions: int = 0
    compile_seconds: float = 0.0
    history: list = field(default_factory=list)
    disk_hits: int = 0      # optimized modules read from MINIJAX_CACHE_DIR
    disk_misses: int = 0
    disk_writes: int = 0


class LRUByBytes:
    """An LRU mapping whose total of per-entry byte sizes stays under `max_bytes`."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self._data: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.RLock()
        self.evictions = 0

    def get(self, key):
        with self._lock:
            item = self._data.get(key)
            if item is None:
                return None
            self._data.move_to_end(key)
            return item[0]

    def put(self, key, value, nbytes: int) -> None:
        with self._lock:
            if key in self._data:
                self._bytes -= self._data.pop(key)[1]
            self._data[key] = (value, nbytes)
            self._bytes += nbytes
            while self._bytes > self.max_bytes and len(self._data) > 1:
                _, (_, size) = self._data.popitem(last=False)
                self._bytes -= size
                self.evictions += 1

    def keys(self) -> list:
        with self._lock:
            return list(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._data)

    @property
    def nbytes(self) -> int:
        return self._bytes


class FunctionCache:
    """The compiled entries of one jitted function."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.entries = LRUByBytes(max_bytes)
        self.stats = CacheStats()
        self.lock = threading.RLock()
        _all_function_caches.add(self)

    def clear(self) -> None:
        self.entries.clear()


class ExecutableCache:
    """Process-wide: program fingerprint -> executable."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.entries = LRUByBytes(max_bytes)
        self.hits = 0
        self.misses = 0

    def get(self, fingerprint):
        value = self.entries.get(fingerprint)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def put(self, fingerprint, executable, nbytes: int) -> None:
        self.entries.put(fingerprint, executable, nbytes)


executable_cache = ExecutableCache()


#: Other caches of compiled code (eager one-op programs) register their `clear` here.
clear_hooks: list = []


def clear_caches() -> None:
    """Empty every compile cache (all jitted functions, the shared executable cache and the
    caches registered in `clear_hooks`)."""
    for cache in list(_all_function_caches):
        cache.clear()
    executable_cache.entries.clear()
    for hook in clear_hooks:
        hook()


# --------------------------------------------------------------------------- explanations


def _aval_text(aval) -> str:
    shape, dtype, weak = aval
    return f"{short_name(dtype)}[{','.join(map(str, shape))}]" + ("{weak_type}" if weak else "")


def explain_miss(new: CallSignature, old_keys: list, arg_names: list[str]) -> str:
    """Describe how `new` differs from the closest previously compiled signature."""
    if not old_keys:
        return "first call (nothing compiled yet for this function)"
    best_diffs = None
    for old in old_keys:
        diffs = _differences(new, old, arg_names)
        if best_diffs is None or len(diffs) < len(best_diffs):
            best_diffs = diffs
    if not best_diffs:
        return "an equivalent entry was evicted from the cache (cache too small?)"
    return "; ".join(best_diffs[:6]) + (" ..." if len(best_diffs) > 6 else "")


def _differences(new: CallSignature, old: CallSignature, names: list[str]) -> list[str]:
    out = []
    if new.in_tree != old.in_tree:
        out.append(f"argument structure changed: {old.in_tree} -> {new.in_tree}")
        return out
    for i, (a, b) in enumerate(zip(new.avals, old.avals, strict=True)):
        name = names[i] if i < len(names) else f"args[{i}]"
        if a == b:
            continue
        (sa, da, wa), (sb, db, wb) = a, b
        if sa != sb:
            if len(sa) != len(sb):
                out.append(f"argument {name}: rank changed {_aval_text(b)} -> {_aval_text(a)}")
            else:
                dims = [f"dim {k}: {y} -> {x}" for k, (x, y) in enumerate(zip(sa, sb)) if x != y]
                out.append(f"argument {name}: shape {_aval_text(b)} -> {_aval_text(a)} "
                           f"({', '.join(dims)})")
        elif da != db:
            out.append(f"argument {name}: dtype {_aval_text(b)} -> {_aval_text(a)}")
        elif wa != wb:
            out.append(f"argument {name}: weak type changed {_aval_text(b)} -> {_aval_text(a)}"
                       " (a Python scalar vs an array; pass jnp.asarray(x, dtype) to avoid "
                       "recompiles)")
    old_static = dict(old.static_args)
    for key, value in new.static_args:
        if key not in old_static:
            out.append(f"static argument {key} is new")
        elif old_static[key] != value:
            out.append(f"static argument {key}: {old_static[key]!r} -> {value!r}")
    if new.backend != old.backend:
        out.append(f"backend {old.backend} -> {new.backend}")
    if new.options != old.options:
        out.append(f"compile options {old.options} -> {new.options}")
    return out
