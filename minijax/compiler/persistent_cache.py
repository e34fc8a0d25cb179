"""The persistent (on-disk) compile cache, and the program fingerprint that keys it.

With MINIJAX_CACHE_DIR set, jit stores each optimized HLO module under the fingerprint of
the program it was compiled from, so that a new process tracing the same program skips the
pass pipeline (the CPU backend keeps its own object-code cache in the same directory, so
LLVM is skipped as well).

`module_fingerprint(module, backend, options)` hashes the lowered module's structure:
opcodes, shapes and layouts, operand positions, attributes, called computations,
parameter numbers and literal values, plus the module name, donated parameters, backend,
compile options, minijax/numpy/Python versions and this file's format version. Instruction
names and metadata (source locations) are left out, as JAX leaves debug info out of its
cache key: names come from a process-wide counter, so they differ between processes that
traced other programs first.

Entry files (`jit-<fingerprint>.bin`) hold a magic line, the full fingerprint, a SHA-256 of
the payload and the payload: the optimized module pickled without its buffer assignment
(recomputed on load: it is a pure function of the entry computation). Loading uses an
unpickler that only accepts the HLO IR classes and NumPy arrays. A corrupted, truncated,
stale or unreadable entry counts as `corrupt`, is ignored and gets rewritten after the
recompile. Writes go to a temporary file in the same directory and are moved into place
with os.replace, so concurrent processes only ever see complete entries (the last writer
wins; all writers store equivalent content).

A module stored or loaded here gets `module.cache_digest`, the SHA-256 of its payload: it
names that exact optimized module, so a backend can key what it derives from the module
(the CPU backend's compile plan) on it instead of printing the module.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys
import tempfile
import threading
from dataclasses import dataclass

import numpy as np

from minijax.compiler.hlo.ir import Module
from minijax.config import config
from minijax.version import __version__

FORMAT = "minijax-jit-cache-1"
_MAGIC = b"MINIJAX-JIT-1\n"
_ALLOWED_GLOBALS = frozenset({
    ("minijax.compiler.hlo.ir", "Computation"), ("minijax.compiler.hlo.ir", "Instruction"),
    ("minijax.compiler.hlo.ir", "Module"), ("minijax.compiler.hlo.ir", "Shape"),
    ("minijax.compiler.hlo.row_plan", "RowPlan"),  # Computation.row_plan
    ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy._core.numeric", "_frombuffer"), ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar"),
    ("builtins", "complex"), ("builtins", "frozenset"), ("builtins", "set"),
})


# --------------------------------------------------------------------------- fingerprint


def _literal_key(lit: np.ndarray):
    data = np.ascontiguousarray(lit).tobytes()
    if len(data) > 64:
        data = hashlib.sha256(data).digest()
    return (lit.dtype.str, lit.shape, data)


def _called_key(called: dict, comp_index: dict) -> tuple:
    return tuple((key, tuple(comp_index.get(id(c)) for c in
                             (value if isinstance(value, list) else [value])))
                 for key, value in called.items())


def structure_key(module) -> str:
    """A text that is equal for two modules exactly when they compile the same way
    (names and metadata aside)."""
    comps = module.computations
    comp_index = {id(c): k for k, c in enumerate(comps)}
    parts: list = [(module.name, comp_index.get(id(module.entry)),
                    tuple(sorted(module.donated_params)),
                    module.num_user_params,
                    tuple(sorted(module.attrs.items())))]
    for comp in comps:
        index = {id(i): k for k, i in enumerate(comp.instructions)}
        rows = []
        for i in comp.instructions:
            rows.append((
                i.opcode, i.shape, tuple(index.get(id(o), o.name) for o in i.operands),
                tuple(sorted(i.attrs.items())) if i.attrs else (),
                _called_key(i.called, comp_index) if i.called else (),
                i.parameter_number,
                None if i.literal is None else _literal_key(np.asarray(i.literal))))
        parts.append((index.get(id(comp.root)), rows))
    return repr(parts)


def module_fingerprint(module, backend: str, options: tuple) -> str:
    """The cache key of lowered `module` compiled for `backend` with `options`."""
    h = hashlib.sha256()
    for part in (FORMAT, structure_key(module), backend, repr(options), __version__,
                 np.__version__, f"{sys.version_info[0]}.{sys.version_info[1]}"):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


# --------------------------------------------------------------------------- disk cache


@dataclass
class DiskCacheStats:
    hits: int = 0
    misses: int = 0
    writes: int = 0
    corrupt: int = 0      # entries that existed but could not be used (then rewritten)
    write_errors: int = 0


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) not in _ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(f"jit cache entry refers to {module}.{name}")
        return super().find_class(module, name)


def _loads(payload: bytes):
    return _RestrictedUnpickler(io.BytesIO(payload)).load()


class DiskCache:
    """Optimized modules stored as files in `root` (see the module docstring)."""

    def __init__(self, root: str):
        self.root = root
        self.stats = DiskCacheStats()
        self._lock = threading.Lock()

    def path(self, fingerprint: str) -> str:
        return os.path.join(self.root, f"jit-{fingerprint[:48]}.bin")

    def load(self, fingerprint: str):
        """The module stored under `fingerprint`, or None (a miss, or an unusable entry)."""
        path = self.path(fingerprint)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            self._count("misses")
            return None
        except OSError:
            data = b""
        module = self._decode(data, fingerprint)
        if module is None:
            self._count("misses")
            self._count("corrupt")
        else:
            self._count("hits")
        return module

    def _decode(self, data: bytes, fingerprint: str):
        if not data.startswith(_MAGIC):
            return None
        header, sep, rest = data[len(_MAGIC):].partition(b"\n")
        digest, sep2, payload = rest.partition(b"\n")
        if not (sep and sep2) or header.decode("ascii", "replace") != fingerprint:
            return None
        if hashlib.sha256(payload).hexdigest().encode() != digest:
            return None
        try:
            module = _loads(payload)
        except Exception:  # truncated or foreign payload: a miss, never a crash
            return None
        if not isinstance(module, Module) or module.entry is None:
            return None
        module.cache_digest = digest.decode("ascii")
        return module

    def store(self, fingerprint: str, module) -> bool:
        """Write `module` under `fingerprint` atomically; False if it could not be stored."""
        assignment = module.buffer_assignment
        module.buffer_assignment = None
        try:
            payload = pickle.dumps(module, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            self._count("write_errors")
            return False
        finally:
            module.buffer_assignment = assignment
        try:
            _loads(payload)  # only store what a later process can load
        except Exception:
            self._count("write_errors")
            return False
        digest = hashlib.sha256(payload).hexdigest()
        data = _MAGIC + fingerprint.encode() + b"\n" + digest.encode() + b"\n" + payload
        try:
            os.makedirs(self.root, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-jit-", suffix=".bin")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, self.path(fingerprint))
            except BaseException:
                _remove_quietly(tmp)
                raise
        except OSError:
            self._count("write_errors")
            return False
        self._count("writes")
        module.cache_digest = digest
        return True

    def _count(self, field: str) -> None:
        with self._lock:
            setattr(self.stats, field, getattr(self.stats, field) + 1)


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


_caches: dict[str, DiskCache] = {}
_caches_lock = threading.Lock()


def get_disk_cache() -> DiskCache | None:
    """The DiskCache for the current MINIJAX_CACHE_DIR, or None when it is not set."""
    root = config._values["minijax_cache_dir"]
    if not root:
        return None
    root = os.path.abspath(os.path.expanduser(root))
    with _caches_lock:
        cache = _caches.get(root)
        if cache is None:
            cache = _caches[root] = DiskCache(root)
        return cache
