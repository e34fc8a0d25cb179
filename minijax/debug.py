"""Looking at values inside transformed functions: `minijax.debug.print`, `callback` and
`breakpoint`.

    @minijax.jit
    def f(x):
        minijax.debug.print("x = {x}", x=x)      # printed on every call, with x's value
        return x * 2

Both follow JAX (`jax.debug.print`, `jax.debug.callback`): the callback runs eagerly
outside transformations; under jit it is staged as a `debug_callback` equation, lowered to
an HLO `custom-call` (target `minijax.debug_callback.<id>`) that every backend runs on the
host with the runtime values (the CPU backend as an evaluator thunk, the interpreter
directly). Under vmap the callback runs once per batch element (in order); under grad and
jvp it sees the primal values (in the forward pass, once); inside scan/while/cond it runs
on every iteration / taken branch. Callbacks in one computation are chained by a token, so
they run in program order (`ordered=True` is accepted for JAX compatibility).

`breakpoint()` is a debug callback whose operands are the tracers among the calling frames'
locals: at run time it opens the debugger (`minijax/debugger.py`) on those frames with the
concrete values, so it stops once per call, once per batch element under vmap, and on every
iteration inside loops.
"""

from __future__ import annotations

import itertools
import os
import threading

import numpy as np

from minijax import core, debugger, tree_util
from minijax.array import Array
from minijax.compiler.hlo.ir import Shape
from minijax.compiler.lowering_registry import register_lowering
from minijax.interpreters import ad, batching
from minijax.lax.slicing import index_in_dim

__all__ = ["breakpoint", "callback", "print", "debug_callback_p"]

_builtin_print = print

debug_callback_p = core.Primitive("debug_callback")
debug_callback_p.multiple_results = True

# Targets are unique per lowering and per process (a compiled callback can never be
# replayed from the on-disk cache of another process).
_PROCESS_TOKEN = f"{os.getpid():x}{id(object()):x}"
_ids = itertools.count()
_lock = threading.Lock()


class _Callback:
    """The user's callback with the pytree structure of its arguments (a jaxpr parameter)."""

    __slots__ = ("fn", "in_tree", "name")

    def __init__(self, fn, in_tree, name):
        self.fn, self.in_tree, self.name = fn, in_tree, name

    def __call__(self, flat_values):
        arrays = [v if isinstance(v, Array) else Array(np.asarray(v)) for v in flat_values]
        args, kwargs = tree_util.tree_unflatten(self.in_tree, arrays)
        self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return self.name


def callback(fn, *args, ordered: bool = False, **kwargs) -> None:
    """Call `fn(*args, **kwargs)` with the concrete values of `args` (as jax.debug.callback).

    Works eagerly and under jit, vmap (once per batch element), grad/jvp (primal values)
    and control flow. `fn`'s return value is ignored.
    """
    if not callable(fn):
        raise TypeError(f"minijax.debug.callback expects a callable, got {fn!r}")
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    name = getattr(fn, "__name__", type(fn).__name__)
    debug_callback_p.bind(*leaves, callback=_Callback(fn, in_tree, name), ordered=ordered)


def print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:  # noqa: A001
    """Print `fmt.format(*args, **kwargs)` with the runtime values (as jax.debug.print).

    Unlike Python's print inside jit (which shows tracers once, while tracing), this prints
    the values on every execution.
    """
    if not isinstance(fmt, str):
        raise TypeError(f"minijax.debug.print: the format string must be a str, got "
                        f"{type(fmt).__name__}")

    def _print(*a, **k):
        _builtin_print(fmt.format(*a, **k), flush=True)
    _print.__name__ = f"print({fmt!r})"
    callback(_print, *args, ordered=ordered, **kwargs)


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token=None, **kwargs):
    """Stop in an interactive debugger here, with the runtime values (as jax.debug.breakpoint).

    The debugger's frames are the calling frames (innermost first; `filter_frames=False`
    keeps minijax's internal ones, `num_frames` keeps only that many); their local arrays
    hold concrete values also under jit, vmap (one stop per batch element) and grad (the
    primal values). Commands: `p`/`pp` EXPR, `l`/`list`, `u`/`up`, `d`/`down`, `w`/`where`,
    `c`/`continue`, `q`/`quit` (raises `SystemExit(0)`, as JAX's debugger). `backend` picks
    a registered debugger (`minijax.debugger.register_debugger`; "cli" is the default);
    `kwargs` go to it (the "cli" one takes `stdin`/`stdout`).

    `token` (a pytree of arrays, exclusive with `ordered`) is returned unchanged and the
    breakpoint runs once its value is computed; without it, returns None.
    """
    if token is not None and ordered:
        raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
    operands, rebuild = debugger.capture_frames(1, filter_frames, num_frames)
    run = debugger.get_debugger(backend)

    def _breakpoint(_token, *values):
        frames = rebuild(values)
        thread_id = (None if threading.current_thread() is threading.main_thread()
                     else threading.get_ident())
        with debugger.debug_lock:
            run(frames, thread_id, **kwargs)
    _breakpoint.__name__ = "breakpoint"
    callback(_breakpoint, token, *operands, ordered=ordered)
    return token


# --------------------------------------------------------------------------- rules


def _impl(*values, callback, ordered):
    callback(list(values))
    return []


def _abstract_eval(*avals, callback, ordered):
    return []


def _jvp(primals, tangents, *, callback, ordered):
    # As JAX: the callback sees the primal values; it has no outputs, so no tangents.
    debug_callback_p.bind(*primals, callback=callback, ordered=ordered)
    return [], []


def _batch(trace, vals, dims, *, callback, ordered):
    # One call per batch element, in order (JAX's behaviour for debug callbacks).
    for i in range(trace.axis_size):
        sliced = [v if d is batching.not_mapped else index_in_dim(v, i, d, keepdims=False)
                  for v, d in zip(vals, dims, strict=True)]
        debug_callback_p.bind(*sliced, callback=callback, ordered=ordered)
    return [], []


def lower_host_callback(ctx, operands, run, *, ordered: bool = True):
    """Lower a host callback to a `custom-call` (target `minijax.debug_callback.<id>`,
    registered with the evaluator) whose result is the tuple of `ctx.avals_out`.

    `run(values)` gets the operands as NumPy arrays at run time and returns one NumPy value
    per output. With `ordered`, the call takes the previous ordered callback's result as an
    extra operand, so ordered callbacks of one computation run in program order. Shared by
    debug callbacks and minijax.pure_callback / experimental.io_callback."""
    # Lazy: the HLO interpreter loads on first use, not at `import minijax`.
    from minijax.compiler.evaluator import register_custom_call
    with _lock:
        target = f"minijax.debug_callback.{_PROCESS_TOKEN}.{next(_ids)}"
    n = len(operands)

    def evaluate(ops, instr):
        return tuple(run([np.array(o, copy=True) for o in ops[:n]]))
    register_custom_call(target, evaluate)
    b = ctx.builder
    previous = getattr(b, "_debug_callback_chain", None) if ordered else None
    chain = [previous] if previous is not None else []
    shape = Shape.tuple([ctx.shape_of(a) for a in ctx.avals_out])
    out = b.custom_call(list(operands) + chain, target, shape, metadata=ctx.metadata)
    if ordered:
        b._debug_callback_chain = out
    return [b.get_tuple_element(out, i, metadata=ctx.metadata)
            for i in range(len(ctx.avals_out))]


def _lower(ctx, *operands, callback, ordered):
    def run(values):
        callback(values)
        return ()
    # Debug callbacks always keep their program order.
    return lower_host_callback(ctx, operands, run, ordered=True)


debug_callback_p.def_impl(_impl)
debug_callback_p.def_abstract_eval(_abstract_eval)
ad.primitive_jvps[debug_callback_p] = _jvp
batching.primitive_batchers[debug_callback_p] = _batch
register_lowering(debug_callback_p, _lower)
