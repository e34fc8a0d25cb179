"""The compiler driver: lowered HLO module -> fingerprint -> caches -> backend pipeline ->
backend compile -> dumps.

    executable, optimized = compile_module(module, backend, options)

is what jit (api_jit.Lowered) and eager one-op programs on device backends
(minijax/eager_compiled.py) call. In order:

1. fingerprint: a structural hash of the lowered module + backend name + options
   (persistent_cache.module_fingerprint), unless the caller already has one;
2. the process-wide in-memory executable cache (cache.executable_cache), keyed on the
   fingerprint and the device;
3. the persistent (disk) cache of optimized modules, when MINIJAX_CACHE_DIR is set;
4. the backend's own pass pipeline (`backend.passes(options)`, run by compiler/pipeline.py),
   whose result is stored on disk;
5. `backend.compile_for(optimized, options, device)` (device None: the default one);
6. dumps (MINIJAX_FLAGS=--dump_to=DIR): HLO before/after, per-pass HLO, options, and what
   the backend's executable writes (LLVM IR, PTX).

The lowered module is optimized in place (callers that want its text print it first, or
pass `before_text`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace

from minijax.compiler import cache as cache_mod
from minijax.compiler import persistent_cache
from minijax.compiler.options import CompileOptions
from minijax.config import config


class _NoDumps:
    dump_to = dump_pass_re = None
    dump_as_dot = False


def dump_flags():
    """The MINIJAX_FLAGS dump flags (dumps.py is imported only when flags are set)."""
    if not (config._values["minijax_flags"] or "").strip():
        return _NoDumps
    from minijax.compiler import dumps  # lazy: see the docstring
    return dumps.dump_flags()


def fingerprint(module, backend_name: str, options: CompileOptions) -> str:
    """The compile-cache key of a lowered module for a backend and options."""
    extra = (options.opt_level,) + (("device",) if options.native_device_program else ())
    return persistent_cache.module_fingerprint(module, backend_name, extra)


def module_bytes(module) -> int:
    """An estimate of a module's memory (its literals) for the caches' byte budgets."""
    return 4096 + sum(i.literal.nbytes for c in module.computations for i in c.instructions
                      if i.literal is not None)


# The passes and the elemental emitter recurse along operand chains: one fused chain of a
# few hundred elementwise operations (common in probabilistic programs' scalar math) needs
# more than Python's default 1000 frames. Python 3.11+ keeps Python frames off the C stack.
# Raised by each compile that finds it lower (importing minijax leaves it alone).
_RECURSION_LIMIT = 20000


def compile_module(module, backend, options: CompileOptions | None = None, *,
                   fp: str | None = None, device=None, stats=None,
                   timings: dict | None = None, before_text: Callable[[], str] | None = None,
                   dump_source=None):
    """Compile a lowered module for `backend`; returns (executable, optimized module).

    `fp`: a precomputed fingerprint. `device`: the device the executable must run on (part
    of the in-memory cache key). `stats`: a CacheStats receiving disk hits/misses/writes.
    `timings`: receives per-stage seconds. `before_text`: called before the module is
    optimized (to keep its pre-optimization text). `dump_source`: an object with
    `as_text()`, `arg_names` and `signature.avals` (api_jit.Lowered) written into dumps.
    """
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    options = options or CompileOptions(backend=backend.name)
    timings = {} if timings is None else timings
    if fp is None:
        t0 = time.perf_counter()
        fp = fingerprint(module, backend.name, options)
        timings["fingerprint"] = time.perf_counter() - t0
    key = fp if device is None else (fp, device)
    flags = dump_flags()
    cached = cache_mod.executable_cache.get(key)
    if cached is not None and not flags.dump_to:
        return cached
    if flags.dump_to:
        options = replace(options, dump_to=flags.dump_to, dump_pass_re=flags.dump_pass_re)
    disk = None if flags.dump_to else persistent_cache.get_disk_cache()
    optimized = _load_optimized(disk, fp, stats, timings)
    if optimized is None:
        if before_text is not None:
            before_text()
        optimized = optimize(module, backend, options, timings)
        if disk is not None:
            t0 = time.perf_counter()
            if disk.store(fp, optimized) and stats is not None:
                stats.disk_writes += 1
            timings["cache_store"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    executable = backend.compile_for(optimized, options, device)
    timings["codegen"] = time.perf_counter() - t0
    cache_mod.executable_cache.put(key, (executable, optimized), module_bytes(optimized))
    if flags.dump_to and dump_source is not None:
        from minijax.compiler import dumps  # lazy: only when MINIJAX_FLAGS asks for dumps
        dumps.dump_module(flags, getattr(dump_source, "fun_name", module.name), dump_source,
                          optimized, executable, timings)
    return executable, optimized


def optimize(module, backend, options: CompileOptions, timings: dict | None = None):
    """Run the backend's pass pipeline on `module` (in place); returns it."""
    # Imported here: a call served from the caches never loads the pipeline.
    from minijax.compiler.pipeline import optimize as run_pipeline
    t0 = time.perf_counter()
    out = run_pipeline(module, options, passes=backend.passes(options))
    if timings is not None:
        timings["optimize"] = time.perf_counter() - t0
    return out


def _load_optimized(disk, fp: str, stats, timings: dict):
    """The optimized module from the persistent cache (buffer assignment recomputed),
    or None."""
    if disk is None:
        return None
    t0 = time.perf_counter()
    module = disk.load(fp)
    if module is None:
        if stats is not None:
            stats.disk_misses += 1
    else:
        # Lazy: a disk-cache hit loads this one pass, never the pipeline.
        from minijax.compiler.passes.buffer_assignment import assign_buffers
        module.buffer_assignment = assign_buffers(module)
        if stats is not None:
            stats.disk_hits += 1
    timings["cache_load"] = time.perf_counter() - t0
    return module
