"""jit: trace once per signature, lower to HLO, optimize, compile, cache, and call.

    f = minijax.jit(fun, static_argnums=..., donate_argnums=...)
    f(*args)                          # compiles on a cache miss, then runs
    f.lower(*args).as_text()          # HLO before optimization
    f.lower(*args).compile().as_text()  # HLO after optimization (+ cost/memory analysis)

Under another transformation (grad, vmap, an outer jit) the function is traced inline: the
result is the same as JAX's nested jit, and the outermost jit compiles everything at once.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import time
import warnings

import numpy as np

from minijax import core, display, float_checks, placement, ref, trace_events, tree_util
from minijax.api import ShapeDtypeStruct
from minijax.api_sharded_jit import (
    ConstrainedJitEntry,
    ShardedJit,
    constraint_mesh,
    delete_donated,
)
from minijax.api_util import (
    donated_flags,
    fun_name,
    fun_source,
    is_float0,
    leaf_arg_names,
    mark_float0,
    usable_donations,
)
from minijax.array import Array, ProcessShards
from minijax.backends import get_backend
from minijax.compiler import cache as cache_mod
from minijax.compiler import driver
from minijax.compiler.cache import _aval_text
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.lower import lower_jaxpr_to_module
from minijax.compiler.options import CompileOptions
from minijax.config import config, debug_level
from minijax.core import EvalTrace, ShapedArray, get_aval
from minijax.dispatch import place_buffer, target_device
from minijax.interpreters.partial_eval import trace_to_jaxpr
from minijax.sharding import NamedSharding, PartitionSpec
from minijax.traceback_util import api_boundary

_disable_jit = threading.local()


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """Run jitted functions eagerly (op by op) inside the block, with identical results."""
    previous = getattr(_disable_jit, "value", False)
    _disable_jit.value = disable
    try:
        yield
    finally:
        _disable_jit.value = previous


def _jit_disabled() -> bool:
    return getattr(_disable_jit, "value", False) or config.jax_disable_jit


def _log(message: str) -> None:
    print(f"[minijax] {message}", file=sys.stderr)


class _CompiledEntry:
    """A compiled program, the device it runs on, and what is needed to call it.

    `device`: where the executable runs; `array_device` is what its result Arrays record
    (None: an uncommitted host NumPy buffer on the host default device), `committed`
    whether they are committed (any committed argument makes them so)."""

    __slots__ = ("executable", "out_tree", "out_avals", "hoisted", "lowered", "module",
                 "timings", "donated", "device", "array_device", "committed")

    def __init__(self, executable, out_tree, out_avals, hoisted, lowered, module, timings,
                 donated, device, committed):
        self.executable = executable
        self.out_tree = out_tree
        self.out_avals = out_avals
        self.device = device
        self.committed = committed
        host_default = (not committed and placement.default_is_host()
                        and device == placement.default_device())
        self.array_device = None if host_default else device
        self.hoisted = [place_buffer(h if isinstance(h, Array) else np.asarray(h), device)
                        for h in hoisted]
        self.lowered = lowered
        self.module = module
        self.timings = timings
        self.donated = donated

    def call(self, flat_values):
        """Run on flat arguments (Arrays, NumPy values, scalars), placing each first."""
        device = self.device
        bufs = [place_buffer(x, device) for x in flat_values]
        outs = self.executable.execute(bufs + self.hoisted)
        dev, committed = self.array_device, self.committed
        arrays = [Array(o if type(o) is not np.ndarray or o.dtype == a.dtype
                        else o.astype(a.dtype), a.weak_type, dev, committed)
                  for o, a in zip(outs, self.out_avals, strict=True)]
        return tree_util.tree_unflatten(self.out_tree, arrays)

    def fast_caller(self):
        """A closure running this entry on a tuple of Arrays already on its device (the
        cached-call fast path)."""
        execute = self.executable.execute
        hoisted = self.hoisted
        out_avals = list(self.out_avals)
        dtypes = [a.dtype for a in out_avals]
        new = Array.__new__
        single = self.out_tree.num_leaves == 1 and tree_util.tree_structure(0) == self.out_tree
        unflatten, out_tree = tree_util.tree_unflatten, self.out_tree
        device, committed = self.array_device, self.committed
        ndarray = np.ndarray

        def wrap(o, aval, dt):
            if type(o) is ndarray and o.dtype != dt:
                o = o.astype(dt)
            a = new(Array)
            a._buf = o
            a.aval = aval
            a._device = device
            a._committed = committed
            return a

        if single:
            aval, dt = out_avals[0], dtypes[0]

            def call(args):
                return wrap(execute([x._buf if type(x) is Array else _numpy_value(x)
                                     for x in args] + hoisted)[0], aval, dt)
        else:
            def call(args):
                outs = execute([x._buf if type(x) is Array else _numpy_value(x)
                                for x in args] + hoisted)
                return unflatten(out_tree, [wrap(o, a, d) for o, a, d in
                                            zip(outs, out_avals, dtypes, strict=True)])
        return call


_NOT_FAST = object()
#: NumPy dtypes that are canonical whatever jax_enable_x64 says, so a NumPy argument of one
#: of them maps to the same compiled entry in both modes (float64 does not).
_MODE_FREE_DTYPES = frozenset(np.dtype(t) for t in (
    np.float32, np.float16, np.int32, np.uint32, np.int16, np.uint16, np.int8, np.uint8,
    np.bool_, np.complex64))


def _numpy_fast_key(x):
    """The fast-path key of a NumPy array argument (not weakly typed), or _NOT_FAST."""
    if type(x) is np.ndarray and x.dtype in _MODE_FREE_DTYPES:
        return (x.shape, x.dtype, False, None, False, np.ndarray)
    return _NOT_FAST


def _numpy_value(x):
    # A private copy, as device_put makes: an output may alias an input buffer, and the
    # caller may mutate its NumPy array after the call.
    return np.array(x, order="C", copy=True)
_FAST_MAX = 32
_current_trace = core.current_trace
_float_checks_enabled = float_checks.enabled


class _FunctionCacheWithFastPath(cache_mod.FunctionCache):
    """A FunctionCache plus `fast`: Array avals -> call closure, emptied with the cache."""

    def __init__(self):
        super().__init__()
        self.fast: dict = {}

    def clear(self) -> None:
        super().clear()
        self.fast.clear()


class JitWrapped:
    """A function compiled by minijax.jit. Call it, or `.lower(*args)` to inspect."""

    def __init__(self, fun, static_argnums=None, static_argnames=None, donate_argnums=(),
                 inline=False, backend=None, opt_level=2, donate_argnames=None):
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._static_argnums = _as_tuple(static_argnums)
        self._static_argnames = _as_tuple(static_argnames)
        self._donate_argnums = _as_tuple(donate_argnums)
        self._donate_argnames = _as_tuple(donate_argnames)
        self._inline = inline
        self._backend = backend
        self._opt_level = opt_level
        self._cache = _shared_function_cache(fun, (
            self._static_argnums, self._static_argnames, self._donate_argnums, inline,
            backend, opt_level, self._donate_argnames))
        self._fast_ok = not (self._static_argnums or self._static_argnames
                             or self._donate_argnums or self._donate_argnames)
        self._sharded = None  # the ShardedJit running calls on global Arrays
        self._name = fun_name(fun)
        self._source = fun_source(fun)

    def __repr__(self) -> str:
        return f"<jitted function {self._name}>"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    # ----------------------------------------------------------------- calling
    def _call(self, *args, **kwargs):
        # Fast path: positional minijax Arrays only, a signature seen before.
        if not kwargs and self._fast_ok:
            try:
                key = tuple([(x.aval.shape, x.aval.dtype, x.aval.weak_type, x._device,
                              x._committed) if type(x) is Array
                             else _numpy_fast_key(x) for x in args])
                call = self._cache.fast.get(key)
            except TypeError:
                call = None
            if call is not None and type(_current_trace()) is EvalTrace and not (
                    _disable_jit.__dict__.get("value") or config._values["jax_disable_jit"]
                    or _float_checks_enabled() or (Array.any_sharded and _split(args))):
                self._cache.stats.hits += 1
                return call(args)
        if _jit_disabled() or type(core.current_trace()) is not EvalTrace:
            return self._fun(*args, **kwargs)
        if self._partitioned(args, kwargs):
            return self._over_processes(args, kwargs)
        try:
            signature, dyn_leaves, call_fun, names = self._signature(args, kwargs)
        except _RefArguments:
            return ref.jit_call_with_refs(self, args, kwargs, self._like)
        except _GlobalArguments:
            return self._over_processes(args, kwargs)
        entry = self._cache.entries.get(signature)
        if entry is None:
            entry = self._compile(signature, dyn_leaves, call_fun, names())
        else:
            self._cache.stats.hits += 1
        if not kwargs and self._fast_ok and args and len(self._cache.fast) < _FAST_MAX:
            key = tuple([(x.aval.shape, x.aval.dtype, x.aval.weak_type, x._device,
                          x._committed) if type(x) is Array
                         else _numpy_fast_key(x) for x in args])
            # Only arguments already where the entry runs (no transfer) take the fast path.
            if _NOT_FAST not in key and all(
                    k[3] == entry.array_device for k in key) and (
                    entry.array_device is None or all(type(x) is Array for x in args)):
                self._cache.fast[key] = entry.fast_caller()
        if _float_checks_enabled():
            out = float_checks.checked_call(self._name, entry, dyn_leaves)
        else:
            out = entry.call(dyn_leaves)
        if len(signature.options) > 1:   # donated flat arguments
            donated = set(signature.options[1])
            delete_donated(dyn_leaves, [k in donated for k in range(len(dyn_leaves))],
                           [np.shape(x) for x in dyn_leaves],
                           [(a.shape, a.dtype) for a in entry.out_avals])
        return out

    __call__ = api_boundary(_call)

    def _signature(self, args, kwargs):
        nargs = len(args)
        static_nums = {i % nargs for i in self._static_argnums if -nargs <= i < nargs}
        static_items = []
        for i in sorted(static_nums):
            static_items.append((f"arg{i}", _check_hashable(args[i], f"argument {i}",
                                                            self._name)))
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self._static_argnames:
                static_items.append((k, _check_hashable(v, f"argument '{k}'", self._name)))
            else:
                dyn_kwargs[k] = v
        for i in range(nargs if self._static_argnames else 0):
            name = _positional_name(self._fun, i)
            if name is not None and name in self._static_argnames and i not in static_nums:
                static_nums.add(i)
                static_items.append((name, _check_hashable(args[i], f"argument '{name}'",
                                                           self._name)))
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_nums)
        leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        if ref.has_refs(leaves):
            raise _RefArguments
        if ProcessShards.made and any(type(getattr(x, "_buf", None)) is ProcessShards
                                      for x in leaves):
            raise _GlobalArguments
        if any(is_float0(x) for x in leaves):
            dyn_args, dyn_kwargs = mark_float0((dyn_args, dyn_kwargs))
            leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        avals = tuple(_aval_key(x) for x in leaves)
        device, committed = self._placement(leaves)
        options = (self._opt_level,)
        if self._donate_argnums or self._donate_argnames:
            # The flat arguments the call donates (Arrays and NumPy arrays).
            flags = donated_flags(self._fun, args, dyn_kwargs, self._donate_argnums,
                                  self._donate_argnames, static_nums)
            if len(flags) == len(leaves):   # (float0 leaves are dropped: none donated)
                options += (tuple(k for k, (f, x) in enumerate(zip(flags, leaves)) if f and (
                    type(x) is Array or isinstance(x, np.ndarray))),)
        signature = cache_mod.CallSignature(
            in_tree, avals, tuple(static_items), _device_key(device, committed), options)

        def call_fun(*flat):
            d_args, d_kwargs = tree_util.tree_unflatten(in_tree, flat)
            it = iter(d_args)
            full = [args[i] if i in static_nums else next(it) for i in range(nargs)]
            return self._fun(*full, **d_kwargs, **{k: v for k, v in kwargs.items()
                                                    if k in self._static_argnames})

        def names():
            # Argument names only matter on a cache miss (errors, miss explanations), so
            # they are computed then: inspect.signature costs tens of microseconds.
            found = leaf_arg_names(self._fun, list(dyn_args)) \
                if len(leaves) < 256 else [f"args[{i}]" for i in range(len(leaves))]
            found += [f"{k}" for k in sorted(dyn_kwargs)][:max(0, len(leaves) - len(found))]
            return found
        return signature, leaves, call_fun, names

    def _partitioned(self, args, kwargs) -> bool:
        """Whether an argument is split over several devices (the call is then
        partitioned as the arguments are split, as JAX does)."""
        return Array.any_sharded and _split(tree_util.tree_leaves((args, kwargs)))

    def _over_processes(self, args, kwargs):
        """Arguments laid out over several devices (split Arrays, or global Arrays over
        several processes' devices): the program is partitioned as their shardings say and
        runs on every device of their mesh (sharded jit with in/out_shardings left to the
        arguments and propagation; donated arguments are deleted after it)."""
        return self._sharded_jit()(*args, **kwargs)

    def _sharded_jit(self) -> ShardedJit:
        if self._sharded is None:
            self._sharded = ShardedJit(self._fun, None, None, self._static_argnums,
                                       self._static_argnames, self._donate_argnums,
                                       self._donate_argnames)
        return self._sharded

    def _like(self, fun) -> JitWrapped:
        """``fun`` jit-ed with this function's options."""
        return JitWrapped(fun, self._static_argnums, self._static_argnames,
                          self._donate_argnums, self._inline, self._backend, self._opt_level,
                          self._donate_argnames)

    def _placement(self, leaves):
        """(device, committed) this call runs on: jit(backend=...)'s device, else JAX's
        placement rules over the arguments (raises on committed devices that differ)."""
        if self._backend:
            return get_backend(self._backend).devices()[0], False
        return target_device(leaves, self._name)

    # ----------------------------------------------------------------- compiling
    def _trace(self, signature, call_fun, names):
        in_avals = [ShapedArray(s, d, w) for s, d, w in signature.avals]
        store = {}

        def flat_fun(*flat):
            out = call_fun(*flat)
            leaves, out_tree = tree_util.tree_flatten(out)
            if any(is_float0(x) for x in leaves):
                leaves, out_tree = tree_util.tree_flatten(mark_float0(out))
            store["out_tree"] = out_tree
            return leaves
        closed, _ = trace_to_jaxpr(flat_fun, in_avals, arg_names=names, fun_name=self._name,
                                   purpose="jit", fun_source=self._source)
        return closed, store["out_tree"]

    def _compile(self, signature, dyn_leaves, call_fun, names):
        with self._cache.lock:
            entry = self._cache.entries.get(signature)
            if entry is not None:
                return entry
            stats = self._cache.stats
            reason = cache_mod.explain_miss(signature, self._cache.entries.keys(), names)
            stats.misses += 1
            timings = trace_events.StageTimings(self._name) if trace_events.ACTIVE else {}
            t0 = time.perf_counter()
            closed, out_tree = self._trace(signature, call_fun, names)
            timings["trace"] = time.perf_counter() - t0
            mesh = constraint_mesh(closed)
            if mesh is not None:  # pmap or sharding constraints inside: run partitioned
                entry = ConstrainedJitEntry(closed, out_tree, mesh, self._name, names)
            else:
                lowered = Lowered(self, closed, out_tree, signature, names)
                timings["lower"] = lowered.lower_seconds
                entry = lowered._compile_entry(timings)
            if trace_events.ACTIVE:
                trace_events.add(f"jit compile {self._name}", "compile", t0,
                                 time.perf_counter() - t0, {"reason": reason,
                                                            "signature": _sig_text(signature)})
            stats.compiles += 1
            stats.compile_seconds += sum(timings.values())
            stats.history.append(reason)
            self._cache.entries.put(signature, entry, _entry_bytes(entry))
            if debug_level() >= 1 or config.jax_log_compiles or \
                    config.jax_explain_cache_misses:
                stages = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in timings.items())
                where = f" ({self._source.short()})" if self._source else ""
                _log(f"compiled {self._name}{where} for "
                     f"{_sig_text(signature)}: {stages}; kernels: "
                     f"{getattr(entry.executable, 'kernel_count', '?')}. Reason: {reason}")
            if stats.compiles == 8:
                warnings.warn(f"minijax.jit: {self._name} has been compiled 8 times; "
                              f"the last miss: {reason}. Set MINIJAX_DEBUG=1 to see every "
                              "recompile and why.", stacklevel=4)
            return entry

    def lower(self, *args, **kwargs) -> Lowered:
        """Trace and lower for these arguments; returns a Lowered (HLO before passes)."""
        if self._partitioned(args, kwargs):
            return self._sharded_jit().lower(*args, **kwargs)
        signature, _, call_fun, names = self._signature(args, kwargs)
        names = names()
        closed, out_tree = self._trace(signature, call_fun, names)
        lowered = Lowered(self, closed, out_tree, signature, names)
        lowered._keep_text = True
        return lowered

    def trace(self, *args, **kwargs):
        """The ClosedJaxpr jit traces for these arguments."""
        signature, _, call_fun, names = self._signature(args, kwargs)
        names = names()
        return self._trace(signature, call_fun, names)[0]

    def eval_shape(self, *args, **kwargs):
        signature, _, call_fun, names = self._signature(args, kwargs)
        names = names()
        closed, out_tree = self._trace(signature, call_fun, names)
        out = tree_util.tree_unflatten(
            out_tree, [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals])
        return tree_util.tree_map(
            lambda x: ShapeDtypeStruct(x.shape, x.dtype) if is_float0(x) else x, out)

    def _cache_size(self) -> int:
        return len(self._cache.entries)

    def clear_cache(self) -> None:
        self._cache.clear()

    @property
    def cache_stats(self):
        """Hits, misses, compiles and the reason for each compile."""
        return self._cache.stats


class Lowered:
    """A traced and lowered program (`jit(f).lower(*args)`)."""

    def __init__(self, wrapped: JitWrapped, closed_jaxpr, out_tree, signature, arg_names):
        self._wrapped = wrapped
        self.jaxpr = closed_jaxpr
        self.out_tree = out_tree
        self.signature = signature
        self.arg_names = arg_names
        t0 = time.perf_counter()
        self.module, self.hoisted = lower_jaxpr_to_module(closed_jaxpr, wrapped._name,
                                                          wrapped._name)
        self.module.donated_params = _donated_params(signature, closed_jaxpr.out_avals)
        self.lower_seconds = time.perf_counter() - t0
        # Printed on demand (as_text, dumps); compiling keys its caches on a structural
        # fingerprint instead. `_keep_text`: print before optimizing mutates the module.
        self._text = None
        self._keep_text = False
        self._fingerprints: dict = {}

    def as_text(self, dialect: str = "hlo") -> str:
        """The HLO text before optimization."""
        if self._text is None:
            self._text = module_to_text(self.module)
        return self._text

    def fingerprint(self, backend: str, opt_level: int) -> str:
        """The compile-cache key of this program for `backend` at `opt_level`."""
        key = (backend, opt_level)
        fp = self._fingerprints.get(key)
        if fp is None:
            fp = self._fingerprints[key] = driver.fingerprint(
                self.module, backend, CompileOptions(opt_level=opt_level, backend=backend))
        return fp

    @property
    def fun_name(self) -> str:
        return self._wrapped._name

    def compile(self) -> Compiled:
        """Optimize and compile (through the compile cache's shared executable level)."""
        entry = self._compile_entry({})
        return Compiled(entry, self)

    def _compile_entry(self, timings) -> _CompiledEntry:
        timings["lower"] = self.lower_seconds
        device, committed = _device_from_key(self.signature.backend)
        backend = placement.backend_of(device)
        options = CompileOptions(opt_level=self._wrapped._opt_level, backend=backend.name)
        t0 = time.perf_counter()
        fp = self.fingerprint(backend.name, options.opt_level)
        timings["fingerprint"] = time.perf_counter() - t0

        def before_text():
            if self._text is None and (self._keep_text or driver.dump_flags().dump_to):
                self.as_text()
        executable, module = driver.compile_module(
            self.module, backend, options, fp=fp,
            device=None if device == backend.devices()[0] else device,
            stats=self._wrapped._cache.stats, timings=timings, before_text=before_text,
            dump_source=self)
        return _CompiledEntry(executable, self.out_tree, list(self.jaxpr.out_avals),
                              self.hoisted, self, module, timings, self.module.donated_params,
                              device, committed)

    def cost_analysis(self) -> dict:
        from minijax.compiler.analysis import cost_analysis  # lazy: loads a compiler pass
        return cost_analysis(self.module)

    def _repr_html_(self) -> str:
        return display.lowered_html(self)


class Compiled:
    """A compiled program (`jit(f).lower(*args).compile()`): callable and inspectable."""

    def __init__(self, entry: _CompiledEntry, lowered: Lowered):
        self._entry = entry
        self._lowered = lowered

    def as_text(self) -> str:
        """The HLO text after optimization (fusions, buffer assignment summary)."""
        return module_to_text(self._entry.module)

    def cost_analysis(self) -> dict:
        """flops, transcendentals and bytes accessed of the optimized program."""
        from minijax.compiler.analysis import cost_analysis  # lazy: loads a compiler pass
        return cost_analysis(self._entry.module)

    def memory_analysis(self):
        """Argument, output, temporary and peak bytes from buffer assignment."""
        from minijax.compiler.analysis import memory_analysis  # lazy: loads a compiler pass
        return memory_analysis(self._entry.module)

    @property
    def kernel_count(self) -> int:
        return getattr(self._entry.executable, "kernel_count", 0)

    def _repr_html_(self) -> str:
        """Jupyter: the fused graph (SVG with Graphviz) and the highlighted HLO."""
        return display.compiled_html(self)

    def __call__(self, *args, **kwargs):
        signature, leaves, _, _ = self._lowered._wrapped._signature(args, kwargs)
        if signature != self._lowered.signature:
            raise TypeError("Compiled function called with arguments of a different "
                            f"signature: {cache_mod.explain_miss(signature, [self._lowered.signature], self._lowered.arg_names)}")  # noqa: E501
        return self._entry.call(leaves)


def jit(fun=None, *, static_argnums=None, static_argnames=None, donate_argnums=(),
        donate_argnames=None, inline=False, backend=None, device=None, keep_unused=False,
        opt_level=2, in_shardings=None, out_shardings=None):
    """Compile `fun` with minijax's XLA-style compiler (as jax.jit).

    `static_argnums`/`static_argnames` mark hashable arguments that are baked into the
    program (a new value recompiles); `opt_level` 0..2 trades run time for compile time.
    `in_shardings`/`out_shardings` (NamedShardings) partition the program over a mesh's
    devices (api_sharded_jit.py).
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames,
                                 donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames, inline=inline,
                                 backend=backend, opt_level=opt_level,
                                 in_shardings=in_shardings, out_shardings=out_shardings)
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    if _names_a_sharding(in_shardings) or _names_a_sharding(out_shardings):
        return ShardedJit(fun, in_shardings, out_shardings, static_argnums, static_argnames,
                          donate_argnums, donate_argnames)
    return JitWrapped(fun, static_argnums, static_argnames, donate_argnums, inline, backend,
                      opt_level, donate_argnames)


# --------------------------------------------------------------------------- helpers


def _names_a_sharding(tree) -> bool:
    """Whether in/out_shardings name any sharding: a pytree of only Nones (flax.nnx passes
    ``out_shardings=(None, None, None)``) is plain jit, compiled and cached as such."""
    is_spec = lambda x: isinstance(x, PartitionSpec)  # noqa: E731
    return any(leaf is not None for leaf in tree_util.tree_leaves(tree, is_leaf=is_spec))


class _GlobalArguments(Exception):
    """Raised by JitWrapped._signature for Arrays spread over several processes, or split
    over several devices by a NamedSharding."""


def _split(args) -> bool:
    """Whether an argument is an Array split over several devices by a NamedSharding."""
    for x in args:
        sharding = getattr(x, "_sharding", None) if type(x) is Array else None
        if isinstance(sharding, NamedSharding) and len(sharding.device_set) > 1:
            return True
    return False


class _RefArguments(Exception):
    """Raised by JitWrapped._signature for arguments holding mutable refs (handled by
    minijax.ref's discharge)."""


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    if isinstance(x, (int, str)):
        return (x,)
    return tuple(x)


def _positional_name(fun, i):
    code = getattr(fun, "__code__", None)
    if code is None or i >= code.co_argcount:
        return None
    return code.co_varnames[i]


def _check_hashable(value, what: str, name: str):
    try:
        hash(value)
    except TypeError as e:  # JAX's ValueError (a list is not made a tuple silently)
        raise ValueError(
            f"Non-hashable static arguments are not supported. An error occurred while "
            f"trying to hash an object of type {type(value)}, {value!r}, passed as {what} of "
            f"jit({name}). The error was:\nTypeError: {e}\nStatic arguments must be "
            "hashable: use a tuple instead of a list or array, or a frozen dataclass.") from None
    return value


def _aval_key(x):
    t = type(x)
    if t is Array:
        a = x.aval
        return (a.shape, a.dtype, a.weak_type)
    if t in (int, float, complex, bool):
        a = get_aval(x)
        return (a.shape, a.dtype, a.weak_type)
    if isinstance(x, core.Tracer):
        a = x.aval
        return (a.shape, a.dtype, a.weak_type)
    a = get_aval(x if isinstance(x, (np.ndarray, np.generic, Array)) else np.asarray(x))
    return (a.shape, a.dtype, a.weak_type)


def _device_key(device, committed: bool) -> str:
    """The CallSignature `backend` field: where the call runs ("cpu:0", "cuda:0!" when
    committed)."""
    return f"{device.backend}:{device.id}" + ("!" if committed else "")


def _device_from_key(key: str):
    committed = key.endswith("!")
    name, _, device_id = key.rstrip("!").partition(":")
    device_id = int(device_id or 0)
    # Ids are global in a multi-process run: look the device up by id, not position.
    devices = get_backend(name).devices()
    return next((d for d in devices if d.id == device_id), devices[0]), committed


class _JitCaches:
    """The compiled entries of one Python function, shared by all its jit wrappers."""

    __slots__ = ("owner", "by_options")

    def __init__(self, owner):
        self.owner = owner
        self.by_options: dict = {}


_CACHES_ATTR = "_minijax_jit_caches"


def _shared_function_cache(fun, options) -> _FunctionCacheWithFastPath:
    """The cache of `fun` for these jit options: a new `jit(f)` of the same function reuses
    the compiled entries and their traces, as JAX caches on the function. The cache lives
    on the function object (so it dies with it); `owner` guards against functools.wraps
    copying it onto another function. Callables without a __dict__ get a private cache."""
    holder = getattr(fun, "__dict__", {}).get(_CACHES_ATTR)
    if holder is None or holder.owner is not fun:
        holder = _JitCaches(fun)
        try:
            fun.__dict__[_CACHES_ATTR] = holder
        except (AttributeError, TypeError):
            return _FunctionCacheWithFastPath()
    try:
        cache = holder.by_options.get(options)
    except TypeError:  # unhashable option values
        return _FunctionCacheWithFastPath()
    if cache is None:
        cache = holder.by_options[options] = _FunctionCacheWithFastPath()
    return cache


def _donated_params(signature, out_avals) -> set:
    """The entry parameters whose buffers the program may reuse: the donated ones an
    output can use (JAX's pairing; the call deletes exactly those Arrays after it)."""
    donated = signature.options[1] if len(signature.options) > 1 else ()
    if not donated:
        return set()
    ins = [(a[0], np.dtype(a[1])) if k in donated else None
           for k, a in enumerate(signature.avals)]
    used = usable_donations(ins, [(a.shape, np.dtype(a.dtype)) for a in out_avals])
    return {k for k, u in enumerate(used) if u}


def _entry_bytes(entry) -> int:
    return 4096 + sum(int(h.nbytes) for h in entry.hoisted)


def _sig_text(signature) -> str:
    parts = [_aval_text(a) for a in signature.avals]
    if signature.static_args:
        parts += [f"{k}={v!r}" for k, v in signature.static_args]
    return "(" + ", ".join(parts) + ")"


def _clear_fast_paths(_value=None) -> None:
    """Forget every jitted function's fast path (they assume the default device)."""
    for cache in list(cache_mod._all_function_caches):
        fast = getattr(cache, "fast", None)
        if fast is not None:
            fast.clear()


for _option in ("minijax_backend", "jax_platforms"):
    config.on_change(_option, _clear_fast_paths)
