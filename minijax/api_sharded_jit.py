"""jit with shardings: `jit(f, in_shardings=..., out_shardings=...)` partitioned by the SPMD
partitioner pass and run on every device of the mesh.

The function is traced and lowered over global shapes, as plain jit does; the entry's
parameters are annotated with their shardings (XLA text), `lax.with_sharding_constraint`
pins intermediates, and compiler/passes/spmd_partitioner.py turns the module into the one
each device runs (its blocks, plus the collectives the shardings need). That module is
compiled once and run on all the mesh's devices at once (backends/spmd.py); outputs are
Arrays sharded as `out_shardings` says, or as the partitioner propagated.

A plain `jit(f)` whose traced program pins shardings itself (pmap inside jit,
`lax.with_sharding_constraint`) runs the same way over the constraints' mesh
(`ConstrainedJitEntry`, a jit cache entry): arguments enter with their own sharding when
they lie on the mesh's devices, else as the program pins them; outputs are laid out as
propagation chose, as JAX's jit does.

`in_shardings` / `out_shardings` are NamedShardings (or None: an argument's own sharding
when it is a sharded Array, replicated otherwise; for outputs, what propagation chose), a
single one for every leaf or a pytree prefix. Under another transformation the function is
traced inline (the constraints are identities there), as jit is. Static arguments (by
number or name) and, without in_shardings, keyword arguments work as in plain jit;
donated arguments an output can use are deleted after the call (`delete_donated`, shared
with plain jit).

Donation. The per-device module gets `donated_params` (the parameters whose shards an
output can use, paired by per-device shape as JAX pairs them), as plain jit's module does,
for buffer assignment. The outputs of a partitioned program are assembled from the
devices' results into one host buffer per output; an output paired with a donated
argument of its global shape and dtype (`api_util.donation_pairs`) is assembled into that
argument's host buffer instead of a new one, when the argument alone holds it (no other
Array or NumPy view shares its memory) and no device's result reads from it: its shards
are then the donated shards' memory, as XLA aliases a donated input to an output.
"""

from __future__ import annotations

import functools
import sys
import warnings

import numpy as np

from minijax import core, global_arrays, placement, tree_util
from minijax.api_util import (
    donated_flags,
    donation_pairs,
    flatten_fun,
    positional_name,
    prefix_leaves,
    usable_donations,
)
from minijax.array import Array
from minijax.compiler import driver
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.hlo.sharding import spec_to_text
from minijax.compiler.lower import lower_jaxpr_to_module
from minijax.compiler.options import CompileOptions
from minijax.core import get_aval
from minijax.interpreters.partial_eval import trace_to_jaxpr
from minijax.lax.sharding_constraint import sharding_constraint_p
from minijax.sharding import Mesh, NamedSharding, PartitionSpec, Sharding


def _as_tuple(x) -> tuple:
    return () if x is None else (x,) if isinstance(x, int | str) else tuple(x)


def delete_donated(leaves, flags, in_shapes, outs) -> None:
    """After a jit call: delete the Arrays among the flat arguments `leaves` that it
    donates (`flags`, api_util.donated_flags) and could use, as JAX does: each output
    ((shape, dtype) in `outs`, per device) takes a donated input of its shape and dtype,
    then of its size (`in_shapes`: the inputs' per-device shapes). Using a deleted Array
    raises RuntimeError; donations no output could use warn as JAX's and stay valid."""
    ins = [(shape, np.dtype(x.dtype)) if f and type(x) is Array else None
           for x, f, shape in zip(leaves, flags, in_shapes, strict=True)]
    if not any(a is not None for a in ins):
        return
    used = usable_donations(ins, [(s, np.dtype(d)) for s, d in outs])
    unusable = [f"ShapedArray({x.dtype}[{','.join(map(str, x.shape))}])"
                for x, a, u in zip(leaves, ins, used) if a is not None and not u]
    if unusable:
        warnings.warn(f"Some donated buffers were not usable: {', '.join(unusable)}.\n"
                      "See an explanation at "
                      "https://docs.jax.dev/en/latest/faq.html#buffer-donation.", stacklevel=3)
    for x, u in zip(leaves, used):
        if u:
            x.delete()


def _is_sharding(x) -> bool:
    return x is None or isinstance(x, Sharding)


def _leaf_shardings(spec, tree, what: str) -> list:
    return prefix_leaves(spec, tree, _is_sharding, f"jit {what}")


def _dims(sharding, rank: int) -> tuple:
    return tuple(sharding.spec.axis_names_of(d) for d in range(rank))


def _to_spec(dims) -> PartitionSpec:
    parts = [None if not a else (a[0] if len(a) == 1 else tuple(a)) for a in dims]
    while parts and parts[-1] is None:
        parts.pop()
    return PartitionSpec(*parts)


class _Program:
    """One signature: the annotated module, the partitioned executable, output specs.

    `jaxpr` is the traced program over global shapes; `out_sh_for(out_avals)` gives the
    pinned output shardings (None: what propagation chooses)."""

    def __init__(self, jaxpr, avals, in_sh, out_sh_for, mesh, name, donated=None):
        self.mesh = mesh
        self.jaxpr = jaxpr
        self.module, self.hoisted = lower_jaxpr_to_module(self.jaxpr, name, name)
        for p, sh, aval in zip(self.module.entry.parameters, in_sh, avals):
            p.attrs["sharding"] = spec_to_text(mesh.axis_names, mesh.axis_sizes,
                                               _dims(sh, aval.ndim))
        self.before = module_to_text(self.module)
        # Imported here: `import minijax` loads no compiler pass (the pipeline loads on the
        # first compile too).
        from minijax.compiler.passes.all_reduce_combiner import AllReduceCombiner
        from minijax.compiler.passes.spmd_partitioner import partition_module
        out_sh = out_sh_for(self.jaxpr.out_avals)
        out_specs = [None if sh is None else _dims(sh, a.ndim)
                     for sh, a in zip(out_sh, self.jaxpr.out_avals, strict=True)]
        self.result_specs = partition_module(self.module, mesh.axis_names, mesh.axis_sizes,
                                             out_specs)
        AllReduceCombiner().run(self.module)
        self.out_shardings = [NamedSharding(mesh, _to_spec(s)) for s in self.result_specs]
        self.reuse = self._donate(avals, in_sh, donated or [False] * len(avals))
        self.backend = placement.backend_of(mesh.flat_devices()[0])
        local = len(global_arrays.local_part(mesh.flat_devices()))
        self.executable, self.optimized = driver.compile_module(
            self.module, self.backend, CompileOptions(
                backend=self.backend.name, **self.backend.device_program_options(local)))

    def _donate(self, avals, in_sh, donated) -> list:
        """Mark the donated parameters an output can use in the per-device module (as
        plain jit does) and return, per output, the donated argument whose host buffer
        may hold it (same global shape and dtype), or None."""
        out_avals = self.jaxpr.out_avals
        ins = [(sh.shard_shape(a.shape), np.dtype(a.dtype)) if d else None
               for a, sh, d in zip(avals, in_sh, donated, strict=True)]
        outs = [(sh.shard_shape(a.shape), np.dtype(a.dtype))
                for a, sh in zip(out_avals, self.out_shardings, strict=True)]
        self.module.donated_params = {k for k, u in enumerate(usable_donations(ins, outs))
                                      if u}
        return [k if k is not None and tuple(avals[k].shape) == tuple(a.shape) else None
                for k, a in zip(donation_pairs(ins, outs), out_avals, strict=True)]


def _run(program, leaves, in_sh, donated=None) -> list:
    """Run a partitioned program on its mesh: each of this process's devices gets its
    block of every argument (a view of the argument's host value, or its own shard of a
    global Array: nothing is copied when the argument is already laid out as `in_sh`
    says); returns the flat output Arrays (held in donated arguments' buffers where the
    module docstring says)."""
    mesh = program.mesh
    # This process's devices of the mesh (all of them but in a multi-process run).
    devices = global_arrays.local_part(mesh.flat_devices())
    blocks = [global_arrays.local_blocks(x, sh, devices)
              for x, sh in zip(leaves, in_sh, strict=True)]
    hoisted = [np.asarray(h) for h in program.hoisted]
    per_device = [[b[i] for b in blocks] + hoisted for i in range(len(devices))]
    outs = global_arrays.run_on_mesh(program.backend, program.executable,
                                     mesh.flat_devices(), per_device)
    del blocks, per_device   # the arguments' views: a donated buffer must be free of them
    into = [None] * len(program.reuse)
    if donated is not None and any(k is not None for k in program.reuse):
        results = [o for dev in outs for o in dev]
        taken: set = set()   # one Array passed for two donated arguments: one output
        for j, k in enumerate(program.reuse):
            if k is not None and donated[k] and id(leaves[k]) not in taken:
                buf = _exclusive_buffer(leaves[k])
                if buf is not None and not any(np.may_share_memory(o, buf) for o in results):
                    into[j] = buf
                    taken.add(id(leaves[k]))
    return [global_arrays.output_array(outs, devices, k, aval.shape, sh, aval, "jit",
                                       into[k])
            for k, (aval, sh) in enumerate(zip(program.jaxpr.out_avals,
                                               program.out_shardings, strict=True))]


def _refs(holder) -> int:
    buf = holder._buf
    return sys.getrefcount(buf)


def _base_refs(holder) -> int:
    return sys.getrefcount(holder._buf.base)


class _Probe:
    __slots__ = ("_buf",)


def _baselines() -> tuple[int, int]:
    probe = _Probe()
    probe._buf = np.empty(2)
    alone = _refs(probe)
    probe._buf = np.empty(2)[:]
    return alone, _base_refs(probe)


# The references to a buffer that one Array alone holds, and to the array a view that one
# Array alone holds is a view of.
_ALONE, _BASE_ALONE = _baselines()


def _exclusive_buffer(x):
    """The host buffer of Array `x` when nothing else refers to its memory (no other
    Array, no other NumPy view: writing it can change no other value), else None: its
    own NumPy array, or a view of an array only that view holds (device_put's copy).
    Memory of a backend's host allocator is never taken (the allocator holds it too)."""
    if type(x) is not Array or type(x._buf) is not np.ndarray:
        return None
    buf = x._buf
    if not buf.flags.c_contiguous or (not buf.flags.writeable and buf.base is None):
        return None
    base = buf.base
    del buf
    if base is not None:
        if not (type(base) is np.ndarray and base.base is None and base.flags.owndata):
            return None
        del base
        if _base_refs(x) > _BASE_ALONE:   # another view of it
            return None
    if _refs(x) > _ALONE:
        return None
    buf = x._buf
    if not buf.flags.writeable:   # Arrays hand out read-only views of memory they own
        try:
            buf.flags.writeable = True
        except ValueError:
            return None
    return buf


class ShardedJit:
    """`jit(f, in_shardings=..., out_shardings=...)`: see the module docstring."""

    def __init__(self, fun, in_shardings, out_shardings, static_argnums,
                 static_argnames=None, donate_argnums=None, donate_argnames=None):
        self._fun = fun
        self._in = in_shardings
        self._out = out_shardings
        self._static = _as_tuple(static_argnums)
        self._static_names = _as_tuple(static_argnames)
        self._donate = (_as_tuple(donate_argnums), _as_tuple(donate_argnames))
        self._cache: dict = {}
        functools.update_wrapper(self, fun)

    def _prepare(self, args, kwargs):
        """(call, dyn, statics): `call(dyn_args, dyn_kwargs)` runs the function with the
        static arguments (by number or name, positional or keyword) put back; `dyn` is
        (dynamic positional arguments, dynamic keyword arguments)."""
        if kwargs and self._in is not None:
            raise ValueError("pjit does not support kwargs when in_shardings is specified.")
        nargs = len(args)
        static_idx = {i % nargs for i in self._static if -nargs <= i < nargs}
        static_idx |= {i for i in range(nargs)
                       if positional_name(self._fun, i) in self._static_names}
        dyn_idx = [i for i in range(nargs) if i not in static_idx]
        static_kw = {k: v for k, v in kwargs.items() if k in self._static_names}
        dyn = (tuple(args[i] for i in dyn_idx),
               {k: v for k, v in kwargs.items() if k not in self._static_names})

        def call(dyn_args, dyn_kwargs):
            full = list(args)
            for i, a in zip(dyn_idx, dyn_args, strict=True):
                full[i] = a
            return self._fun(*full, **dyn_kwargs, **static_kw)
        statics = (tuple(args[i] for i in sorted(static_idx)), tuple(sorted(static_kw.items())),
                   frozenset(static_idx))
        return call, dyn, statics

    def _shardings(self, dyn, leaves):
        # in_shardings name the positional arguments (keyword ones are refused with them).
        given = _leaf_shardings(self._in, dyn[0], "in_shardings") if self._in is not None \
            else [None] * len(leaves)
        own = [getattr(x, "_sharding", None) for x in leaves]
        chosen = [g if g is not None else o for g, o in zip(given, own, strict=True)]
        meshes = [s.mesh for s in chosen if isinstance(s, NamedSharding)]
        out_leaves = [] if self._out is None or _is_sharding(self._out) else \
            tree_util.tree_leaves(self._out, is_leaf=_is_sharding)
        out_one = [self._out] if isinstance(self._out, NamedSharding) else []
        meshes += [s.mesh for s in out_leaves + out_one if isinstance(s, NamedSharding)]
        if not meshes:
            return None, None
        mesh = meshes[0]
        if any(m != mesh for m in meshes):
            raise ValueError("jit: every in/out sharding must use the same mesh; got "
                             f"{sorted({repr(m) for m in meshes})}")
        rep = NamedSharding(mesh, PartitionSpec())
        return mesh, [s if isinstance(s, NamedSharding) else rep for s in chosen]

    def _program(self, call, dyn, statics, leaves, in_tree, mesh, in_sh, donated=None):
        avals = [get_aval(x) for x in leaves]
        donated = tuple(donated) if donated is not None else None
        key = (in_tree, tuple((a.shape, a.dtype, a.weak_type) for a in avals),
               tuple(in_sh), statics, donated)
        program = self._cache.get(key)
        if program is None:
            flat_fun, store = flatten_fun(call, in_tree)

            def out_sh_for(out_avals):
                if self._out is None:
                    return [None] * len(out_avals)
                tree = tree_util.tree_unflatten(store["out_tree"], [0] * len(out_avals))
                return _leaf_shardings(self._out, tree, "out_shardings")
            name = getattr(self._fun, "__name__", "fun")
            jaxpr, _ = trace_to_jaxpr(flat_fun, avals, fun_name=name, purpose="jit")
            program = _Program(jaxpr, avals, in_sh, out_sh_for, mesh, name, donated)
            program.out_tree = store["out_tree"]
            self._cache[key] = program
        return program, avals

    def __call__(self, *args, **kwargs):
        call, dyn, statics = self._prepare(args, kwargs)
        leaves, in_tree = tree_util.tree_flatten(dyn)
        mesh, in_sh = self._shardings(dyn, leaves)
        if mesh is None or type(core.current_trace()) is not core.EvalTrace:
            # No mesh named, or traced inline by a transformation (also when only a value
            # the function closes over is traced).
            return call(*dyn)
        flags = donated_flags(self._fun, args, dyn[1], *self._donate, static=statics[2]) \
            if any(self._donate) else None
        program, avals = self._program(call, dyn, statics, leaves, in_tree, mesh, in_sh,
                                       flags)
        outs = _run(program, leaves, in_sh, flags)
        if flags is not None:
            delete_donated(leaves, flags,
                           [sh.shard_shape(a.shape) for sh, a in zip(in_sh, avals)],
                           [(o.sharding.shard_shape(o.shape), o.dtype) for o in outs])
        return tree_util.tree_unflatten(program.out_tree, outs)

    def lower(self, *args, **kwargs):
        """`.as_text()`: the HLO with sharding annotations, before partitioning;
        `.compile().as_text()`: the module every device runs, after partitioning and the
        optimization passes."""
        call, dyn, statics = self._prepare(args, kwargs)
        leaves, in_tree = tree_util.tree_flatten(dyn)
        mesh, in_sh = self._shardings(dyn, leaves)
        if mesh is None:
            raise ValueError("jit(...).lower: no NamedSharding among the in/out shardings")
        return _Lowered(self._program(call, dyn, statics, leaves, in_tree, mesh, in_sh)[0])


class _Lowered:
    def __init__(self, program):
        self._program = program

    def as_text(self, dialect: str = "hlo") -> str:
        return self._program.before

    def compile(self):
        return _Compiled(self._program)


class _Compiled:
    def __init__(self, program):
        self._program = program

    def as_text(self) -> str:
        return module_to_text(self._program.optimized)


# ----------------------------------------------------------- plain jit pinning shardings


def constraint_mesh(closed) -> Mesh | None:
    """The mesh a plain jit's program runs on when it pins shardings itself: pmap inside
    jit constrains its mapped arguments and results to its devices, as does
    `lax.with_sharding_constraint`. The mesh of the first constraint, in program order,
    also inside control flow (pmap in a scan body or a cond branch; JAX names the
    result's mesh after the first pmap traced); None when there is none, or when the
    constraints use meshes over different device grids (the program then runs on one
    device, its values unchanged)."""
    meshes = _constraint_meshes(closed.jaxpr)
    if not meshes:
        return None
    first = meshes[0]
    grid = (first.devices.shape, tuple(first.devices.flat))
    if any((m.devices.shape, tuple(m.devices.flat)) != grid for m in meshes):
        return None
    return first


def _constraint_meshes(jaxpr) -> list:
    """The meshes of the sharding constraints in `jaxpr` and the jaxprs its equations
    call (loop bodies, branches), in program order."""
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive is sharding_constraint_p:
            out.append(eqn.params["sharding"].mesh)
            continue
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple | list) else (value,):
                sub = sub.jaxpr if isinstance(sub, core.ClosedJaxpr) else sub
                if isinstance(sub, core.Jaxpr):
                    out += _constraint_meshes(sub)
    return out


def _on_mesh(x, mesh: Mesh, wanted: NamedSharding | None) -> NamedSharding:
    """The sharding argument `x` enters a program over `mesh` with: its own when it is
    laid out over the same grid of devices (mesh axes renamed in order), else the one the
    program pins it to (`wanted`), else replicated. The devices get their blocks as views
    of its host value (the program reshards what differs)."""
    own = getattr(x, "_sharding", None)
    if isinstance(own, NamedSharding):
        if own.mesh == mesh:
            return own
        if (own.mesh.devices.shape == mesh.devices.shape
                and list(own.mesh.devices.flat) == mesh.flat_devices()):
            rename = dict(zip(own.mesh.axis_names, mesh.axis_names, strict=True))
            parts = [None if p is None or p is PartitionSpec.UNCONSTRAINED
                     else tuple(rename[a] for a in p) if isinstance(p, tuple) else rename[p]
                     for p in own.spec]
            return NamedSharding(mesh, PartitionSpec(*parts))
    if wanted is not None and wanted.mesh == mesh:
        return wanted
    return NamedSharding(mesh, PartitionSpec())


def _drop_size_one_axes(sharding: NamedSharding) -> NamedSharding:
    """JAX's jit reports a dimension split over mesh axes of size 1 as not split."""
    sizes = sharding.mesh.shape
    dims = [tuple(a for a in sharding.spec.axis_names_of(d) if sizes[a] > 1)
            for d in range(len(sharding.spec))]
    return NamedSharding(sharding.mesh, _to_spec(dims))


_NOWHERE = object()


class ConstrainedJitEntry:
    """A plain `jit(f)` cache entry for a program that pins shardings (pmap inside jit,
    `lax.with_sharding_constraint`): partitioned by the SPMD partitioner over the
    constraints' mesh and run on its devices, as JAX's jit does. Arguments enter with
    their own sharding when they lie on the mesh's devices (a pmap's output fed back to
    it is used where it is), replicated otherwise; outputs are laid out as propagation
    chose. One partitioned program per tuple of argument shardings."""

    array_device = _NOWHERE  # never equal to an argument's device: no jit fast path
    executable = None
    hoisted: list = []

    def __init__(self, closed, out_tree, mesh: Mesh, name: str, arg_names: list):
        self.jaxpr = closed
        self.lowered = self  # float_checks replays `entry.lowered.jaxpr`
        self.out_tree = out_tree
        self.out_avals = list(closed.out_avals)
        self.mesh = mesh
        self.name = name
        self.arg_names = arg_names
        self.timings: dict = {}
        self._programs: dict = {}
        # The sharding each argument is constrained to right away (pmap's mapped arguments).
        position = {v: k for k, v in enumerate(closed.jaxpr.invars)}
        self._wanted = [None] * len(position)
        for eqn in closed.jaxpr.eqns:
            if eqn.primitive is sharding_constraint_p and eqn.invars[0] in position:
                k = position[eqn.invars[0]]
                self._wanted[k] = self._wanted[k] or eqn.params["sharding"]

    def _check_placement(self, leaves) -> None:
        ids = [d.id for d in self.mesh.flat_devices()]
        for k, x in enumerate(leaves):
            if getattr(x, "_committed", False) and getattr(x, "_sharding", None) is None:
                name = self.arg_names[k] if k < len(self.arg_names) else f"args[{k}]"
                aval = x.aval
                shape = f"{np.dtype(aval.dtype).name}[{','.join(map(str, aval.shape))}]"
                platform = x._device.platform.upper()
                raise ValueError(
                    f"Received incompatible devices for jitted computation. Got argument "
                    f"{name} of {self.name} with shape {shape} and with device ids "
                    f"[{x._device.id}] on platform {platform} and pmap / sharding "
                    f"constraints inside jit with device ids {ids} on platform {platform}. "
                    "Hint: pass the argument uncommitted (not device_put to one device), "
                    "or device_put it with a NamedSharding over those devices.")

    def call(self, leaves):
        """Run on flat arguments; returns the output pytree."""
        self._check_placement(leaves)
        in_sh = tuple(_on_mesh(x, self.mesh, w)
                      for x, w in zip(leaves, self._wanted, strict=True))
        program = self._programs.get(in_sh)
        if program is None:
            avals = list(self.jaxpr.in_avals)
            program = _Program(self.jaxpr, avals, in_sh, lambda outs: [None] * len(outs),
                               self.mesh, self.name)
            program.out_shardings = [_drop_size_one_axes(s) for s in program.out_shardings]
            self._programs[in_sh] = program
        return tree_util.tree_unflatten(self.out_tree, _run(program, leaves, in_sh))
