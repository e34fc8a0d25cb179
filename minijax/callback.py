"""Host callbacks with results: `minijax.pure_callback` and
`minijax.experimental.io_callback` (as jax.pure_callback / jax.experimental.io_callback).

    def host_fn(x):                          # runs in Python, on the host, with Arrays
        return np.sort(np.asarray(x))
    y = minijax.pure_callback(host_fn, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

Eagerly the callback runs at once. Under jit it is staged as a `pure_callback` /
`io_callback` equation and lowered with the debug callbacks' mechanism
(`minijax.debug.lower_host_callback`): a `custom-call` that every backend runs on the host
with the runtime values. The callback receives Arrays and must return values of the declared
shapes (the dtypes are converted). Under vmap, `pure_callback` follows `vmap_method`:
'sequential' / 'sequential_unrolled' (one call per batch element), 'expand_dims' (one call;
batched arguments carry the batch axis first, unbatched ones a size-1 axis),
'broadcast_all' (one call; every argument broadcast to the batch) or 'legacy_vectorized'
(as 'expand_dims'). `io_callback` runs once per batch element and cannot be vmapped when
`ordered=True`. Neither is differentiable (use custom_jvp / custom_vjp around them).
"""

from __future__ import annotations

import numpy as np

from minijax import core, dtypes, tree_util
from minijax.array import Array
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray
from minijax.debug import lower_host_callback
from minijax.interpreters import ad, batching
from minijax.lax.slicing import index_in_dim
from minijax.numpy import broadcast_to, expand_dims, moveaxis, stack

__all__ = ["io_callback", "pure_callback"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)

pure_callback_p = core.Primitive("pure_callback")
pure_callback_p.multiple_results = True
io_callback_p = core.Primitive("io_callback")
io_callback_p.multiple_results = True


class _HostFunction:
    """The user's callback with its argument structure and declared results (a jaxpr
    parameter; compared by identity)."""

    __slots__ = ("fn", "in_tree", "out_tree", "out_avals", "name")

    def __init__(self, fn, in_tree, out_tree, out_avals):
        self.fn, self.in_tree, self.out_tree, self.out_avals = fn, in_tree, out_tree, out_avals
        self.name = getattr(fn, "__name__", type(fn).__name__)

    def __call__(self, flat_values, out_avals=None):
        """Run the callback on host values; returns one NumPy array per declared result."""
        out_avals = self.out_avals if out_avals is None else out_avals
        arrays = [v if isinstance(v, Array) else Array(np.asarray(v)) for v in flat_values]
        args, kwargs = tree_util.tree_unflatten(self.in_tree, arrays)
        result = self.fn(*args, **kwargs)
        leaves, tree = tree_util.tree_flatten(result)
        if tree != self.out_tree:
            raise TypeError(f"Callback {self.name} returned a result with structure {tree}; "
                            f"the declared result_shape_dtypes have structure "
                            f"{self.out_tree}")
        out = []
        for i, (leaf, aval) in enumerate(zip(leaves, out_avals, strict=True)):
            value = np.asarray(leaf)
            if value.shape != tuple(aval.shape):
                raise RuntimeError(f"Callback {self.name} returned an array of shape "
                                   f"{value.shape} for result {i}, but its declared shape is "
                                   f"{tuple(aval.shape)} (result_shape_dtypes)")
            out.append(np.asarray(value, dtype=aval.dtype))
        return out

    def __repr__(self) -> str:
        return self.name


def _result_avals(name, result_shape_dtypes):
    leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
    avals = []
    for leaf in leaves:
        if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            raise TypeError(f"{name}: result_shape_dtypes must be a pytree of objects with "
                            f".shape and .dtype (e.g. jax.ShapeDtypeStruct), got {leaf!r}")
        avals.append(ShapedArray(tuple(leaf.shape),
                                 dtypes.canonicalize_dtype(np.dtype(leaf.dtype))))
    return avals, tree


def _prepare(name, callback, result_shape_dtypes, args, kwargs):
    if not callable(callback):
        raise TypeError(f"{name}: expected a callable, got {callback!r}")
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    leaves = [x if isinstance(x, (Array, core.Tracer)) else Array(np.asarray(
        x, dtype=dtypes.canonicalize_dtype(np.asarray(x).dtype))) for x in leaves]
    out_avals, out_tree = _result_avals(name, result_shape_dtypes)
    return leaves, _HostFunction(callback, in_tree, out_tree, out_avals), out_tree


def pure_callback(callback, result_shape_dtypes, *args, sharding=None,
                  vmap_method: str | None = None, **kwargs):
    """Call the side-effect-free host function `callback(*args, **kwargs)` from (possibly
    transformed) minijax code, as jax.pure_callback.

    `result_shape_dtypes` is a pytree of objects with .shape and .dtype describing the
    results. `vmap_method` says how vmap calls it (see the module docstring); without one,
    vmapping raises NotImplementedError as in JAX."""
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be one of the allowed methods "
                         f"{list(VMAP_METHODS)}, but got: {vmap_method}")
    if sharding is not None:
        raise NotImplementedError("pure_callback: sharding= is not supported in minijax")
    leaves, fn, out_tree = _prepare("pure_callback", callback, result_shape_dtypes, args,
                                    kwargs)
    outs = pure_callback_p.bind(*leaves, callback=fn, vmap_method=vmap_method)
    return tree_util.tree_unflatten(out_tree, list(outs))


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered: bool = False,
                **kwargs):
    """Call the host function `callback(*args, **kwargs)`, which may have side effects, as
    jax.experimental.io_callback. It is never removed or duplicated; with `ordered=True`
    calls run in program order (and cannot be vmapped)."""
    if sharding is not None:
        raise NotImplementedError("io_callback: sharding= is not supported in minijax")
    leaves, fn, out_tree = _prepare("io_callback", callback, result_shape_dtypes, args,
                                    kwargs)
    outs = io_callback_p.bind(*leaves, callback=fn, ordered=bool(ordered))
    return tree_util.tree_unflatten(out_tree, list(outs))


# --------------------------------------------------------------------------- rules


def _impl(*values, callback, **_):
    return [Array(v) for v in callback(list(values))]


def _abstract_eval(*avals, callback, **_):
    return list(callback.out_avals)


def _pure_jvp(primals, tangents, **_):
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _io_jvp(primals, tangents, **_):
    raise ValueError("IO callbacks do not support JVP.")


def _sequential(prim, trace, vals, dims, params):
    outs = []
    for i in range(trace.axis_size):
        sliced = [v if d is batching.not_mapped else index_in_dim(v, i, d, keepdims=False)
                  for v, d in zip(vals, dims, strict=True)]
        outs.append(prim.bind(*sliced, **params))
    stacked = [stack([o[k] for o in outs]) for k in range(len(params["callback"].out_avals))]
    return stacked, [0] * len(stacked)


def _batched_callback(fn, size):
    """The callback with its declared results batched (a leading axis of `size`)."""
    avals = [ShapedArray((size,) + tuple(a.shape), a.dtype) for a in fn.out_avals]
    return _HostFunction(fn.fn, fn.in_tree, fn.out_tree, avals)


def _pure_batch(trace, vals, dims, *, callback, vmap_method):
    params = {"callback": callback, "vmap_method": vmap_method}
    if vmap_method is None:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one "
            "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            "'legacy_vectorized'. Got vmap_method=None.")
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequential(pure_callback_p, trace, vals, dims, params)
    size = trace.axis_size
    moved = []
    for v, d in zip(vals, dims, strict=True):
        if d is batching.not_mapped:
            v = expand_dims(v, 0)
            if vmap_method == "broadcast_all":
                v = broadcast_to(v, (size,) + tuple(v.shape[1:]))
        else:
            v = moveaxis(v, d, 0)
        moved.append(v)
    outs = pure_callback_p.bind(*moved, callback=_batched_callback(callback, size),
                                vmap_method=vmap_method)
    return list(outs), [0] * len(outs)


def _io_batch(trace, vals, dims, *, callback, ordered):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    return _sequential(io_callback_p, trace, vals, dims,
                       {"callback": callback, "ordered": ordered})


def _pure_lower(ctx, *operands, callback, vmap_method):
    avals = ctx.avals_out
    return lower_host_callback(ctx, operands, lambda vals: callback(vals, avals),
                               ordered=False)


def _io_lower(ctx, *operands, callback, ordered):
    avals = ctx.avals_out
    return lower_host_callback(ctx, operands, lambda vals: callback(vals, avals),
                               ordered=ordered)


for _p, _jvp, _batch, _lower in ((pure_callback_p, _pure_jvp, _pure_batch, _pure_lower),
                                 (io_callback_p, _io_jvp, _io_batch, _io_lower)):
    _p.def_impl(_impl)
    _p.def_abstract_eval(_abstract_eval)
    ad.primitive_jvps[_p] = _jvp
    batching.primitive_batchers[_p] = _batch
    register_lowering(_p, _lower)
