"""The CPU backend's LLVM side: host target, -O3 pipeline, one MCJIT engine, object cache.

`get_jit().compile(ir_text, symbols)` turns LLVM IR text into native code and returns the
address of each named symbol. Every module goes through an object file: when
MINIJAX_CACHE_DIR is set, the object file is stored there under a key hashing the IR, the
target and the llvmlite/LLVM versions, and a later process loads it without running LLVM's
optimizer or code generator. Cache files carry a checksum; a corrupted or truncated entry is
ignored and rewritten. Writes are atomic (temporary file + os.replace).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time

import llvmlite
import llvmlite.binding as llvm

_MAGIC = b"MINIJAX-OBJ-1\n"
SYMBOL_PLACEHOLDER = "__MJPREFIX__"


class Jit:
    """The process's JIT: a target machine for the host and one MCJIT execution engine."""

    def __init__(self):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.triple = llvm.get_process_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        target = llvm.Target.from_triple(self.triple)
        self.tm = target.create_target_machine(cpu=self.cpu, features=self.features, opt=3,
                                               reloc="pic", codemodel="small", jit=True)
        self.lljit = llvm.create_lljit_compiler(self.tm, use_jit_link=True)
        self.lock = threading.RLock()
        self._loaded: dict[str, dict[str, int]] = {}
        self._keepalive: list = []
        self.stats = {"compiled": 0, "cache_hits": 0, "llvm_seconds": 0.0}

    def target_id(self) -> str:
        return (f"{self.triple}|{self.cpu}|{self.features}|llvmlite {llvmlite.__version__}|"
                f"llvm {llvm.llvm_version_info}")

    def key(self, ir_text: str) -> str:
        h = hashlib.sha256()
        h.update(ir_text.encode())
        h.update(self.target_id().encode())
        return h.hexdigest()

    def optimize(self, ir_text: str):
        """Parse, verify and optimize IR at -O3 (loop vectorizer on; SLP vectorizer and
        unroller off)."""
        mod = llvm.parse_assembly(ir_text)
        mod.triple = self.triple
        mod.data_layout = str(self.tm.target_data)
        mod.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        # Our kernels are loops the loop vectorizer handles (it still interleaves). The
        # unroller only grew code (MLP step: ~40% of -O3 + object emission) and SLP cost
        # ~15% on math-heavy kernels, neither with a measurable runtime gain here.
        pto.slp_vectorization = False
        pto.loop_unrolling = False
        pb = llvm.create_pass_builder(self.tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return mod

    def load_key(self, key: str, symbols: list[str]) -> dict[str, int] | None:
        """Like compile() for IR whose key is `key`, from memory or the disk cache only:
        None when the object is in neither (the caller then emits the IR and compiles)."""
        with self.lock:
            if key not in self._loaded and self._cached_object(key) is None:
                return None
            return self.compile(None, symbols, key=key)

    def compile(self, ir_text: str | None, symbols: list[str],
                key: str | None = None) -> dict[str, int]:
        """Native addresses of `symbols` (names with SYMBOL_PLACEHOLDER) defined by ir_text."""
        key = key or self.key(ir_text)
        prefix = "mj" + key[:16] + "_"
        with self.lock:
            loaded = self._loaded.get(key)
            if loaded is None:
                obj = self._cached_object(key)
                t0 = time.perf_counter()
                if obj is None:
                    text = ir_text.replace(SYMBOL_PLACEHOLDER, prefix)
                    obj = self.tm.emit_object(self.optimize(text))
                    self.stats["compiled"] += 1
                    self._store_object(key, obj)
                else:
                    self.stats["cache_hits"] += 1
                builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
                for s in symbols:
                    builder.export_symbol(s.replace(SYMBOL_PLACEHOLDER, prefix))
                tracker = builder.link(self.lljit, "lib" + prefix)
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
        root = os.environ.get("MINIJAX_CACHE_DIR")
        if not root:
            return None
        return os.path.join(root, f"cpu-{key[:40]}.o")

    def _cached_object(self, key: str) -> bytes | None:
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
        rest = data[len(_MAGIC):]
        digest, _, payload = rest.partition(b"\n")
        if hashlib.sha256(payload).hexdigest().encode() != digest or not payload:
            return None
        return payload

    def _store_object(self, key: str, obj: bytes) -> None:
        path = self._cache_path(key)
        if path is None:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".o")
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(obj).hexdigest().encode() + b"\n" + obj)
            os.replace(tmp, path)
        except OSError:
            pass


_jit: Jit | None = None
_jit_lock = threading.Lock()


def get_jit() -> Jit:
    """The process-wide JIT (created on first use)."""
    global _jit
    with _jit_lock:
        if _jit is None:
            _jit = Jit()
        return _jit
