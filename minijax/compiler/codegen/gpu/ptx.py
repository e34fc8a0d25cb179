"""LLVM IR -> PTX through llvmlite's NVPTX target; ptxas; the per-arch PTX/cubin disk cache.

`compile_ptx(ir_text, arch)` optimizes a kernel module at -O3 for `arch` ("sm_80",
"sm_90", ...) and returns PTX text. `assemble(ptx, arch)` runs `ptxas` (when installed)
and returns the cubin. `PtxCache` keeps both on disk under MINIJAX_CACHE_DIR/gpu/<arch>/,
keyed by the IR text, the architecture and the llvmlite/LLVM version, so a new process
loads a kernel module without running LLVM (nor ptxas) again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading

import llvmlite
import llvmlite.binding as llvm

from minijax.compiler.codegen.gpu.nvvm import DATA_LAYOUT, TRIPLE
from minijax.config import config

#: Architectures the tests assemble for (A100 and H100).
ARCHS = ("sm_80", "sm_90")
_lock = threading.Lock()
_machines: dict[str, object] = {}
_initialized = False


def _init() -> None:
    global _initialized
    if not _initialized:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _initialized = True


def arch_for(major: int, minor: int) -> str:
    """The PTX target for compute capability major.minor (sm_90a is not used)."""
    return f"sm_{major}{minor}"


def target_machine(arch: str):
    """The NVPTX target machine for `arch` (one per arch, created once)."""
    with _lock:
        tm = _machines.get(arch)
        if tm is None:
            _init()
            target = llvm.Target.from_triple(TRIPLE)
            tm = _machines[arch] = target.create_target_machine(cpu=arch, opt=3)
        return tm


def compile_ptx(ir_text: str, arch: str = "sm_80") -> str:
    """PTX for the kernel module `ir_text`, optimized at -O3 for `arch`."""
    tm = target_machine(arch)
    with _lock:
        mod = llvm.parse_assembly(ir_text)
        mod.triple = TRIPLE
        mod.data_layout = DATA_LAYOUT
        mod.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return tm.emit_assembly(mod)


def ptxas_path() -> str | None:
    """The ptxas executable on PATH (or in /usr/local/cuda/bin), if any."""
    found = shutil.which("ptxas")
    if found:
        return found
    default = "/usr/local/cuda/bin/ptxas"
    return default if os.path.exists(default) else None


class PtxasError(RuntimeError):
    """ptxas rejected generated PTX (the message holds its diagnostics)."""


def assemble(ptx: str, arch: str) -> bytes:
    """The cubin of `ptx` for `arch`, assembled by ptxas (PtxasError on failure)."""
    exe = ptxas_path()
    if exe is None:
        raise FileNotFoundError("ptxas is not installed (CUDA toolkit)")
    with tempfile.TemporaryDirectory(prefix="minijax-ptx-") as tmp:
        src, out = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        proc = subprocess.run([exe, f"-arch={arch}", src, "-o", out], capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            raise PtxasError(f"ptxas -arch={arch} failed:\n{proc.stderr.strip()}")
        with open(out, "rb") as f:
            return f.read()


def _version_tag() -> str:
    return f"llvmlite {llvmlite.__version__}|llvm {llvm.llvm_version_info}"


class PtxCache:
    """PTX and cubin files per architecture under `root`/gpu/<arch>/ (MINIJAX_CACHE_DIR)."""

    def __init__(self, root: str | None = None):
        self.root = root if root is not None else (config.minijax_cache_dir or None)

    def key(self, ir_text: str, arch: str) -> str:
        h = hashlib.sha256(ir_text.encode())
        h.update(f"|{arch}|{_version_tag()}".encode())
        return h.hexdigest()[:40]

    def _path(self, key: str, arch: str, ext: str) -> str | None:
        if not self.root:
            return None
        return os.path.join(self.root, "gpu", arch, f"{key}.{ext}")

    def read(self, key: str, arch: str, ext: str) -> bytes | None:
        path = self._path(key, arch, ext)
        if path is None or not os.path.exists(path):
            return None
        try:
            with open(path, "rb") as f:
                return f.read() or None
        except OSError:
            return None

    def write(self, key: str, arch: str, ext: str, data: bytes) -> None:
        path = self._path(key, arch, ext)
        if path is None:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix="." + ext)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError:
            pass

    def ptx(self, ir_text: str, arch: str) -> tuple[str, str]:
        """(key, PTX) for `ir_text`: from the cache, else compiled and stored."""
        key = self.key(ir_text, arch)
        data = self.read(key, arch, "ptx")
        if data is not None:
            return key, data.decode()
        text = compile_ptx(ir_text, arch)
        self.write(key, arch, "ptx", text.encode())
        return key, text

    def cubin(self, key: str, ptx: str, arch: str) -> bytes | None:
        """The cubin of `ptx` (cached under `key`), or None when ptxas is missing or fails
        (the driver then JIT-compiles the PTX)."""
        data = self.read(key, arch, "cubin")
        if data is not None:
            return data
        if ptxas_path() is None:
            return None
        try:
            data = assemble(ptx, arch)
        except (PtxasError, OSError):
            return None
        self.write(key, arch, "cubin", data)
        return data


__all__ = ["ARCHS", "PtxCache", "PtxasError", "arch_for", "assemble", "compile_ptx",
           "ptxas_path", "target_machine"]
