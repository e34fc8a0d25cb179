"""pmap: run a function on several devices at once, one slice of the mapped axis each.

    f = minijax.pmap(fun, axis_name="i")     # collectives: lax.psum(x, "i"), ...
    f(xs)                                    # xs.shape[0] == number of devices used

The function is traced once per signature for one device's slice (the mapped axis
removed), lowered to one HLO module whose collectives are XLA's all-reduce, all-gather,
... over all participants, compiled once, and run on the first n devices (or `devices=`)
at once (api_spmd.py). Outputs are Arrays sharded over those devices along `out_axes`.

Under another transformation (grad, vmap, jit of a function calling pmap, or a pmap whose
function closes over a traced value) pmap computes what JAX computes by running as
`vmap(fun, axis_name=...)` (api_spmd.device_axis_vmap): pmap's meaning is vmap's, with
collectives over the mapped axis (axis_index_groups included). The mapped size must still
fit the devices, as in JAX. Its mapped arguments and results are pinned to its devices,
split along the mapped axis (`with_sharding_constraint`, as JAX's pmap is a shard_map), so
a jit around it runs partitioned over them and its results carry JAX's shardings
(api_sharded_jit.ConstrainedJitEntry).

Outputs are NamedShardings over a one-axis mesh of the devices, named `axis_name` (or
'_internal_pmap_axis_name'), as JAX 0.10.2's. Each device's argument is a view of the
argument's host value, so a pmap's output fed back to it is not copied. In a
multi-process run, a global Array (global_arrays.py) laid out as pmap splits it gives each
process's devices their own shards; results are host-local, as in JAX.
"""

from __future__ import annotations

import functools

import numpy as np

from minijax import core, global_arrays, tree_util
from minijax.api_spmd import SpmdProgram, device_axis_vmap
from minijax.api_util import broadcast_prefix, flatten_fun, leaf_arg_names, normalize_argnums
from minijax.array import Array, sharded
from minijax.backends import get_backend
from minijax.backends import transport as processes
from minijax.core import get_aval
from minijax.lax.sharding_constraint import with_sharding_constraint
from minijax.lax.slicing import index_in_dim
from minijax.lax.structural import moveaxis
from minijax.sharding import Mesh, NamedSharding, PartitionSpec
from minijax.traceback_util import api_boundary


def pmap(fun=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=(), global_arg_shapes=None):
    """Map `fun` over the leading (or `in_axes`) axis of its arguments, one slice per device
    (jax.pmap). `static_broadcasted_argnums` are hashable arguments passed to every device
    as Python values; `donate_argnums` are arguments whose Arrays are deleted after the call
    (their buffers are the program's to reuse); `devices` picks the devices (default: the
    first n of the default backend)."""
    if fun is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes,
                                 out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums,
                                 devices=devices, backend=backend, axis_size=axis_size,
                                 donate_argnums=donate_argnums)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    cache: dict = {}
    name = axis_name if axis_name is not None else object()

    @functools.wraps(fun)
    @api_boundary
    def mapped(*args, **kwargs):
        nargs = len(args)
        static_idx = normalize_argnums(static, nargs, "pmap static_broadcasted_argnums") \
            if static else ()
        donate_idx = () if donate_argnums in ((), None) else normalize_argnums(
            donate_argnums, nargs, "pmap donate_argnums")
        dyn_idx = [i for i in range(nargs) if i not in static_idx]
        statics = tuple(args[i] for i in static_idx)
        dyn = tuple(args[i] for i in dyn_idx)
        axes_spec = in_axes
        if isinstance(in_axes, tuple):
            if len(in_axes) != nargs:
                raise ValueError(f"pmap in_axes must be an int, None, or a tuple of length "
                                 f"{nargs} (the number of positional arguments), got "
                                 f"{in_axes}")
            axes_spec = tuple(in_axes[i] for i in dyn_idx)

        def call(*dyn_args, **kw):
            full = list(args)
            for i, a in zip(dyn_idx, dyn_args, strict=True):
                full[i] = a
            return fun(*full, **kw)

        # Keyword arguments are mapped over their axis 0, as in JAX.
        leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
        try:
            axes = broadcast_prefix(axes_spec if isinstance(axes_spec, tuple)
                                    else (axes_spec,) * len(dyn), dyn)
        except ValueError:
            raise ValueError(f"pmap in_axes specification must be a tree prefix of the "
                             f"corresponding value, got specification {in_axes} for value "
                             f"tree {tree_util.tree_structure(dyn)}.") from None
        axes = axes + [0] * (len(leaves) - len(axes))

        def names():
            return leaf_arg_names(call, dyn) + [
                f"{k}{tree_util.keystr(p)}" for k, v in kwargs.items()
                for p, _ in tree_util.tree_flatten_with_path(v)[0]]
        avals = [get_aval(x) for x in leaves]
        # Arrays spread over several processes map their global axis: each process's
        # devices take its own shards (their per-process size is what must agree).
        spread = [k for k, x in enumerate(leaves) if global_arrays.is_global(x)]
        sizes = list(avals)
        for k in spread:
            if axes[k] is not None and -avals[k].ndim <= axes[k] < avals[k].ndim:
                ax = axes[k] % avals[k].ndim
                local = global_arrays.pmap_local_size(leaves[k], ax, names()[k])
                sizes[k] = avals[k].update(shape=avals[k].shape[:ax] + (local,)
                                           + avals[k].shape[ax + 1:])
        n = _mapped_size(names, sizes, axes, axis_size)
        devs = list(devices) if devices is not None else get_backend(backend).devices()
        traced = type(core.current_trace()) is not core.EvalTrace
        if n > len(devs) and traced and processes.process_count() > 1:
            raise ValueError(f"pmap under a transformation (jit, grad, vmap) in a run of "
                             f"{processes.process_count()} processes maps over this "
                             f"process's {len(devs)} devices, as JAX's does, but the mapped "
                             f"axis has size {n}. Hint: call the pmap outside jit to map "
                             "over every process's devices, or pass this process's part")
        if n > len(devs):
            raise ValueError(f"compiling computation that requires {n} logical devices, but "
                             f"only {len(devs)} XLA devices are available (num_replicas={n}); "
                             "set MINIJAX_NUM_CPU_DEVICES (or XLA_FLAGS=--xla_force_host_"
                             f"platform_device_count={n}) before minijax's first use")
        devs = devs[:n]
        # Several processes (distributed.initialize): each maps its n local devices, and the
        # named axis spans every process's (JAX's multi-process pmap); participant ids are
        # numbered process by process.
        procs = processes.process_count() if devices is None else 1
        axes = [None if a is None else a % avals[k].ndim for k, a in enumerate(axes)]
        mesh_axis = axis_name if isinstance(axis_name, str) else _PMAP_AXIS
        if traced:
            # Under jit / grad / vmap (also when only a closed-over value is traced): pmap
            # means vmap with the named axis. Its mapped arguments and results are pinned
            # to its devices, split along the mapped axis (JAX's shard_map inside jit), so
            # that a jit around it runs partitioned over them (api_sharded_jit).
            mesh = Mesh(np.array(devs, dtype=object), (mesh_axis,))
            pinned = tree_util.tree_unflatten(in_tree, [
                x if ax is None else _pin(x, mesh, ax)
                for x, ax in zip(leaves, axes, strict=True)])
            # Every result is mapped at 0, then moved to its out_axes; out_axes=None takes
            # device 0's value (JAX's pmap does not check that the devices agree).
            out = device_axis_vmap(call, axes_spec, 0, axis_name, axis_size)(
                *pinned[0], **pinned[1])
            out_leaves, out_tree = tree_util.tree_flatten(out)
            o_axes = broadcast_prefix(out_axes, tree_util.tree_unflatten(
                out_tree, [0] * out_tree.num_leaves))
            return tree_util.tree_unflatten(out_tree, [
                _pin(_place_mapped_axis(x, ax), mesh, ax)
                for x, ax in zip(out_leaves, o_axes, strict=True)])
        participants = None if procs == 1 else [processes.process_index() * n + i
                                                for i in range(n)]
        key = (in_tree, tuple((a.shape, a.dtype, a.weak_type) for a in avals), tuple(axes),
               _hashable(statics), tuple(devs), procs)
        entry = cache.get(key)
        if entry is None:
            dev_avals = [a if ax is None else a.update(shape=a.shape[:ax] + a.shape[ax + 1:])
                         for a, ax in zip(avals, axes, strict=True)]
            flat_fun, store = flatten_fun(lambda a, kw: call(*a, **kw), in_tree)
            program = SpmdProgram(flat_fun, dev_avals, (name,), (n * procs,), devs,
                                  _fun_name(fun), names(), participants)
            out_tree = store["out_tree"]
            o_axes = broadcast_prefix(out_axes, tree_util.tree_unflatten(
                out_tree, [0] * out_tree.num_leaves))
            mesh = Mesh(np.array(devs, dtype=object), (mesh_axis,))
            entry = cache[key] = (program, out_tree, o_axes, mesh)
        program, out_tree, o_axes, mesh = entry
        # Each device's slice is a view of the argument's host value: an argument laid out
        # over these devices (a pmap's output fed back) is used in place, not copied.
        hosts = [None if k in spread else np.asarray(x) for k, x in enumerate(leaves)]
        per_device = [[h if ax is None or h is None else _slice(h, ax, i)
                       for h, ax in zip(hosts, axes, strict=True)] for i in range(n)]
        for k in spread:
            blocks = global_arrays.pmap_blocks(leaves[k], axes[k], devs, mesh_axis,
                                               names()[k])
            for i in range(n):
                per_device[i][k] = blocks[i]
        outs = program.run(per_device)
        results = []
        for k, (aval, ax) in enumerate(zip(program.out_avals, o_axes, strict=True)):
            if ax is None:  # device 0's value, on every device
                results.append(sharded(np.asarray(outs[0][k]),
                                       NamedSharding(mesh, PartitionSpec()), aval.weak_type))
                continue
            ax = ax % (aval.ndim + 1)
            value = np.stack([dev[k] for dev in outs], axis=ax)
            spec = PartitionSpec(*([None] * ax + [mesh_axis]))
            results.append(sharded(value, NamedSharding(mesh, spec), aval.weak_type))
        for i in donate_idx:
            for leaf in tree_util.tree_leaves(args[i]):
                if isinstance(leaf, Array):
                    leaf.delete()
        return tree_util.tree_unflatten(out_tree, results)

    mapped._programs = cache  # compiled SpmdPrograms per signature (for inspection)
    return mapped


#: The mesh axis of a pmap without an axis_name (JAX's name for it).
_PMAP_AXIS = "_internal_pmap_axis_name"


def _pin(x, mesh, ax):
    """x constrained to `mesh`'s devices, split along `ax` (None: replicated)."""
    if not isinstance(x, (core.Tracer, Array, np.ndarray, np.generic)):
        return x
    ndim = np.ndim(x)
    parts = [] if ax is None else [None] * (ax % max(ndim, 1)) + [mesh.axis_names[0]]
    return with_sharding_constraint(x, NamedSharding(mesh, PartitionSpec(*parts)))


def _place_mapped_axis(x, ax):
    """A result mapped at axis 0 with its mapped axis at `ax` (None: index 0 taken)."""
    if ax is None:
        return index_in_dim(x, 0, 0, keepdims=False)
    ax = ax % np.ndim(x)
    return x if ax == 0 else moveaxis(x, 0, ax)


def _slice(value: np.ndarray, axis: int, i: int) -> np.ndarray:
    """`np.take(value, i, axis)` as a view (contiguous along a leading axis)."""
    return value[(slice(None),) * axis + (i,)]


def _mapped_size(arg_names, avals, axes, axis_size) -> int:
    """The mapped axis size; `arg_names()` names the leaves for an error message."""
    sizes = {}
    for k, (aval, ax) in enumerate(zip(avals, axes, strict=True)):
        if ax is None:
            continue
        if not -aval.ndim <= ax < aval.ndim:
            raise ValueError(f"pmap was requested to map its argument along axis {ax}, which "
                             f"implies that its rank should be at least {ax + 1}, but is only "
                             f"{aval.ndim} (its shape is {aval.shape})")
        sizes.setdefault(aval.shape[ax], []).append(k)
    if len(sizes) > 1:
        names = arg_names()
        detail = "; ".join(f"{', '.join(names[i] for i in v)} of size {k}"
                           for k, v in sizes.items())
        raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: {detail}")
    if sizes:
        n = next(iter(sizes))
        if axis_size is not None and axis_size != n:
            raise ValueError(f"pmap: axis_size={axis_size} but the mapped axes have size {n}")
        return n
    if axis_size is None:
        raise ValueError("pmap requires at least one argument with a mapped axis, or "
                         "axis_size=")
    return int(axis_size)


def _hashable(statics):
    try:
        hash(statics)
    except TypeError:
        raise ValueError("Non-hashable static arguments are not supported: pmap's "
                         f"static_broadcasted_argnums must be hashable, got {statics!r}") \
            from None
    return statics


def _fun_name(fun) -> str:
    return f"pmap_{getattr(fun, '__name__', 'fun')}"
