"""The CPU backend's LLVM side: host target, -O3 pipeline, one JIT, object cache.

`get_jit().compile(parts, symbols)` turns LLVM IR text (one module, or a list of
(module text, optimization level) parts that together define the symbols, see
cpu/llvm_parts.py) into native code and returns the address of each named symbol. Level 3
is the -O3 pipeline below; level 0 skips the optimizer and uses LLVM's fast code generator
(for entry-point wrappers). Several parts are optimized and code-generated in parallel on
the backend's thread pool: each in its own LLVM context with its own target machine, and
through llvmlite's C functions called without llvmlite's process-wide lock (ctypes releases
the GIL), so the work really runs on several cores. Their object files are linked into one
library.

Every module goes through object files: when MINIJAX_CACHE_DIR is set, they are stored there
under a key hashing the IR, the target and the llvmlite/LLVM versions, and a later process
loads them without running LLVM's optimizer or code generator. Cache files carry a
checksum; a corrupted or truncated entry is ignored and rewritten. Writes are atomic
(temporary file + os.replace).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import tempfile
import threading
import time

import llvmlite
import llvmlite.binding as llvm
from llvmlite.binding import ffi

from minijax import trace_events
from minijax.backends.cpu.thread_pool import get_pool
from minijax.config import config

_MAGIC = b"MINIJAX-OBJ-2\n"
SYMBOL_PLACEHOLDER = "__MJPREFIX__"


def _raw(name: str):
    """llvmlite's C function `name` without llvmlite's global lock (the plain ctypes
    function where this llvmlite wraps it; the wrapper otherwise)."""
    fn = getattr(ffi.lib, name)
    return getattr(fn, "_cfn", fn)


class Jit:
    """The process's JIT: target machines for the host and one LLJIT instance."""

    def __init__(self):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.triple = llvm.get_process_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.tm = self._target_machine()
        self.lljit = llvm.create_lljit_compiler(self.tm, use_jit_link=True)
        self.lock = threading.RLock()
        self._loaded: dict[str, dict[str, int]] = {}
        self._keepalive: list = []
        # LLJIT keeps a library's name even when linking it fails, so every link attempt
        # gets a fresh name: a retry after a failed compile must not collide with it.
        self._links = 0
        # Target machines (per optimization level) for parallel code generation, each
        # used by one thread at a time.
        self._spare_tms: dict[int, list] = {}
        self._tm_lock = threading.Lock()
        self.stats = {"compiled": 0, "cache_hits": 0, "llvm_seconds": 0.0, "parts": 0}

    def _target_machine(self, opt: int = 3):
        target = llvm.Target.from_triple(self.triple)
        return target.create_target_machine(cpu=self.cpu, features=self.features, opt=opt,
                                            reloc="pic", codemodel="small", jit=True)

    def target_id(self) -> str:
        return (f"{self.triple}|{self.cpu}|{self.features}|llvmlite {llvmlite.__version__}|"
                f"llvm {llvm.llvm_version_info}")

    def key(self, ir_text: str | list) -> str:
        """The object-cache key of one module's text or a list of (text, level) parts."""
        h = hashlib.sha256()
        if isinstance(ir_text, str):
            h.update(ir_text.encode())
        else:
            for text, level in _parts(ir_text):
                h.update(b"%d|%d\0" % (level, len(text)))
                h.update(text.encode())
        h.update(self.target_id().encode())
        return h.hexdigest()

    @staticmethod
    def parallelism() -> int:
        """How many parts a module is split into for compilation (the thread pool's size)."""
        return get_pool().num_threads

    def _tuning(self, level: int = 3):
        """-O3 options: loop vectorizer on; SLP vectorizer and unroller off."""
        pto = llvm.create_pipeline_tuning_options(speed_level=level)
        pto.loop_vectorization = True
        # Our kernels are loops the loop vectorizer handles (it still interleaves). The
        # unroller only grew code (MLP step: ~40% of -O3 + object emission) and SLP cost
        # ~15% on math-heavy kernels, neither with a measurable runtime gain here.
        pto.slp_vectorization = False
        pto.loop_unrolling = False
        return pto

    def optimize(self, ir_text: str):
        """Parse, verify and optimize IR at -O3 (in the global context; for dumps)."""
        mod = llvm.parse_assembly(ir_text)
        mod.triple = self.triple
        mod.data_layout = str(self.tm.target_data)
        mod.verify()
        pb = llvm.create_pass_builder(self.tm, self._tuning())
        pb.getModulePassManager().run(mod, pb)
        return mod

    def emit_object(self, ir_text: str, level: int = 3) -> bytes:
        """The object file of one module: parsed into a fresh context, verified, optimized
        at `level` (3 or 0) and code-generated with a target machine no other thread is
        using. Safe to call from several threads at once; the long LLVM calls run without
        the GIL."""
        with self._tm_lock:
            spare = self._spare_tms.setdefault(level, [])
            tm = spare.pop() if spare else None
        if tm is None:
            tm = self._target_machine(level)
        ctx = llvm.create_context()
        mod = None
        try:
            with ffi.OutputString() as err:
                ptr = _raw("LLVMPY_ParseAssembly")(ctx, ctypes.c_char_p(ir_text.encode()), err)
                if not ptr:
                    raise RuntimeError(f"LLVM IR parsing error\n{err}")
            mod = llvm.ModuleRef(ptr, ctx)
            mod.triple = self.triple
            mod.data_layout = str(tm.target_data)
            mod.verify()
            pb = llvm.create_pass_builder(tm, self._tuning(level))
            _raw("LLVMPY_RunNewModulePassManager")(pb.getModulePassManager(), mod, pb)
            with ffi.OutputString() as err:
                buf = _raw("LLVMPY_TargetMachineEmitToMemory")(tm, mod, 1, err)
                if not buf:
                    raise RuntimeError(str(err))
            try:
                return ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(buf),
                                        ffi.lib.LLVMPY_GetBufferSize(buf))
            finally:
                ffi.lib.LLVMPY_DisposeMemoryBuffer(buf)
        finally:
            if mod is not None:
                mod.close()
            ctx.close()
            with self._tm_lock:
                self._spare_tms[level].append(tm)

    def _emit_objects(self, parts: list[tuple[str, int]]) -> list[bytes]:
        if len(parts) == 1:
            return [self.emit_object(*parts[0])]
        objs: list = [None] * len(parts)

        def work(_, start, end):
            for k in range(start, end):
                objs[k] = self.emit_object(*parts[k])
        get_pool().parallel_for(work, None, len(parts), len(parts))
        return objs

    def load_key(self, key: str, symbols: list[str]) -> dict[str, int] | None:
        """Like compile() for IR whose key is `key`, from memory or the disk cache only:
        None when the object is in neither (the caller then emits the IR and compiles)."""
        with self.lock:
            if key not in self._loaded and self._cached_objects(key) is None:
                return None
            return self.compile(None, symbols, key=key)

    def compile(self, ir_text: str | list | None, symbols: list[str],
                key: str | None = None) -> dict[str, int]:
        """Native addresses of `symbols` (names with SYMBOL_PLACEHOLDER) defined by
        ir_text: one module's text (-O3), or a list of (text, level) parts compiled in
        parallel."""
        key = key or self.key(ir_text)
        prefix = "mj" + key[:16] + "_"
        with self.lock:
            loaded = self._loaded.get(key)
            if loaded is None:
                objs = self._cached_objects(key)
                t0 = time.perf_counter()
                fresh = objs is None
                if fresh:
                    parts = _parts(ir_text)
                    objs = self._emit_objects([(text.replace(SYMBOL_PLACEHOLDER, prefix),
                                                level) for text, level in parts])
                    if trace_events.ACTIVE:
                        trace_events.add("LLVM compile", "codegen", t0,
                                         time.perf_counter() - t0, {"parts": len(parts)})
                    self.stats["compiled"] += 1
                    self.stats["parts"] += len(parts)
                else:
                    self.stats["cache_hits"] += 1
                builder = llvm.JITLibraryBuilder()
                for obj in objs:
                    builder.add_object_img(obj)
                builder.add_current_process()
                for s in symbols:
                    builder.export_symbol(s.replace(SYMBOL_PLACEHOLDER, prefix))
                self._links += 1
                try:
                    tracker = builder.link(self.lljit, f"lib{prefix}{self._links}")
                except RuntimeError as exc:
                    raise RuntimeError(
                        f"LLVM JIT could not link the compiled kernels: {exc}. Usually the "
                        "generated code calls a function this process does not define; LLVM "
                        "names it in the 'JIT session error' it prints on stderr") from exc
                if fresh:  # only objects that linked go to the disk cache
                    self._store_objects(key, objs)
                self._keepalive.append(tracker)
                loaded = {s.replace(SYMBOL_PLACEHOLDER, prefix): tracker[
                    s.replace(SYMBOL_PLACEHOLDER, prefix)] for s in symbols}
                self._loaded[key] = loaded
                self.stats["llvm_seconds"] += time.perf_counter() - t0
            out = {}
            for s in symbols:
                real = s.replace(SYMBOL_PLACEHOLDER, prefix)
                out[s] = loaded.get(real, 0)
                if not out[s]:
                    raise RuntimeError(f"JIT: symbol {real} not found")
            return out

    def optimized_ir(self, ir_text: str) -> str:
        """The IR after the -O3 pipeline (for dumps)."""
        return str(self.optimize(ir_text.replace(SYMBOL_PLACEHOLDER, "dump_")))

    def assembly(self, ir_text: str) -> str:
        return self.tm.emit_assembly(self.optimize(ir_text.replace(SYMBOL_PLACEHOLDER, "dump_")))

    # ---------------------------------------------------------------- plans
    def read_plan(self, key: str) -> dict | None:
        """A stored compile plan (what the backend needs besides the object), or None."""
        path = self._cache_path(key)
        if path is None:
            return None
        try:
            with open(path[:-2] + ".plan.json") as f:
                plan = json.load(f)
        except (OSError, ValueError):
            return None
        return plan if isinstance(plan, dict) and plan.get("key") == key else None

    def write_plan(self, key: str, plan: dict) -> None:
        path = self._cache_path(key)
        if path is None:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-",
                                       suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(dict(plan, key=key), f)
            os.replace(tmp, path[:-2] + ".plan.json")
        except OSError:
            pass

    # ---------------------------------------------------------------- object cache
    @staticmethod
    def _cache_path(key: str) -> str | None:
        root = config._values["minijax_cache_dir"]
        if not root:
            return None
        return os.path.join(root, f"cpu-{key[:40]}.o")

    def _cached_objects(self, key: str) -> list[bytes] | None:
        """The object files stored under `key`, or None (absent, corrupt or truncated)."""
        path = self._cache_path(key)
        if path is None or not os.path.exists(path):
            return None
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        if not data.startswith(_MAGIC):
            return None
        digest, _, payload = data[len(_MAGIC):].partition(b"\n")
        if not payload or hashlib.sha256(payload).hexdigest().encode() != digest:
            return None
        return _unpack(payload)

    def _store_objects(self, key: str, objs: list[bytes]) -> None:
        path = self._cache_path(key)
        if path is None:
            return
        payload = _pack(objs)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".o")
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
            os.replace(tmp, path)
        except OSError:
            pass


def _parts(ir_text: str | list) -> list[tuple[str, int]]:
    """(text, level) parts of compile()'s argument (plain texts are -O3)."""
    if isinstance(ir_text, str):
        return [(ir_text, 3)]
    return [(p, 3) if isinstance(p, str) else (p[0], int(p[1])) for p in ir_text]


def _pack(objs: list[bytes]) -> bytes:
    return b"".join(len(o).to_bytes(8, "little") + o for o in objs)


def _unpack(payload: bytes) -> list[bytes] | None:
    """The object files of a cache entry's payload; None unless it is well formed."""
    objs, pos = [], 0
    while pos < len(payload):
        if pos + 8 > len(payload):
            return None
        size = int.from_bytes(payload[pos:pos + 8], "little")
        pos += 8
        if size == 0 or pos + size > len(payload):
            return None
        objs.append(payload[pos:pos + size])
        pos += size
    return objs or None


_jit: Jit | None = None
_jit_lock = threading.Lock()


def get_jit() -> Jit:
    """The process-wide JIT (created on first use)."""
    global _jit
    with _jit_lock:
        if _jit is None:
            _jit = Jit()
        return _jit
