"""Eager primitives on device backends: one-op programs compiled and cached, as JAX does.

On a backend whose buffers are not host memory (`Backend.host_memory = False`), an eager
`bind` of a primitive with a NumPy implementation runs as a tiny jitted program: a
one-equation jaxpr lowered to HLO, compiled by the compiler driver for that backend, and
cached per (primitive, input avals, params, device). Its inputs and outputs stay on the
device.
"""

from __future__ import annotations

import threading

from minijax.compiler import cache as cache_mod
from minijax.compiler import driver
from minijax.compiler.lower import lower_jaxpr_to_module
from minijax.compiler.options import CompileOptions
from minijax.core import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from minijax.placement import backend_of

_cache: dict = {}
_lock = threading.Lock()
#: How many one-op programs were compiled (tests check the cache works).
compiles = 0


def _params_key(params: dict):
    key = tuple(sorted(params.items()))
    hash(key)
    return key


def executable(primitive, avals: tuple, params: dict, device):
    """The cached executable running `primitive` on arguments of `avals` on `device`."""
    try:
        key = (primitive, avals, _params_key(params), device)
    except TypeError:
        key = None  # unhashable params (rare): compile without caching the program
    if key is not None:
        found = _cache.get(key)
        if found is not None:
            return found
    exe = _compile(primitive, avals, params, device)
    if key is not None:
        with _lock:
            if len(_cache) > 4096:
                _cache.clear()
            _cache[key] = exe
    return exe


def _compile(primitive, avals, params, device):
    global compiles
    out = primitive.abstract_eval(*avals, **params)
    out_avals = list(out) if primitive.multiple_results else [out]
    invars = [Var(a) for a in avals]
    outvars = [Var(a) for a in out_avals]
    eqn = JaxprEqn(primitive, invars, outvars, params, None)
    closed = ClosedJaxpr(Jaxpr([], invars, outvars, [eqn]), [])
    module, hoisted = lower_jaxpr_to_module(closed, primitive.name)
    if hoisted:
        raise NotImplementedError(f"eager {primitive.name} on {device!r}: its lowering "
                                  f"hoists constants, which one-op programs do not pass")
    backend = backend_of(device)
    options = CompileOptions(backend=backend.name)
    exe, _ = driver.compile_module(module, backend, options, device=device)
    compiles += 1
    return exe


def clear() -> None:
    """Forget every compiled one-op program (minijax.clear_caches() calls this)."""
    with _lock:
        _cache.clear()


cache_mod.clear_hooks.append(clear)
