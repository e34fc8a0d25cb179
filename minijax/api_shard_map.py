"""shard_map: manual SPMD. The function sees one device's block of each argument and
talks to the other devices through collectives over the mesh's axis names.

    @partial(shard_map, mesh=mesh, in_specs=(P('x', None), P()), out_specs=P('x'))
    def f(block, w): ...

Each argument is split as its PartitionSpec says (dimension d split over the named mesh
axes), the function is traced once for the block shapes, lowered to one HLO module
(collectives: XLA's all-reduce, all-gather, ... with replica groups from the mesh, see
lax/collectives_lowering.py), compiled once and run on every device of the mesh
(api_spmd.py). Outputs are assembled as `out_specs` says into Arrays sharded over the mesh.

`check_vma=True` (JAX's default; `check_rep` is its old name) checks, from the traced
program, that an output whose spec leaves out a mesh axis cannot vary along it (a psum /
pmax / pmin over the axis makes a value invariant; axis_index, ppermute, all_gather,
psum_scatter and all_to_all make it vary), and raises JAX's ValueError otherwise.

Under another transformation (jit, grad, vmap) the same function runs as nested
`vmap(..., axis_name=a)` over the mesh axes on one device: the same values.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from minijax import core, global_arrays, tree_util
from minijax.api_spmd import SpmdProgram, device_axis_vmap
from minijax.api_util import flatten_fun, prefix_leaves
from minijax.core import get_aval
from minijax.lax import collectives as coll
from minijax.lax.collectives_all_to_all import all_to_all_p
from minijax.lax.structural import reshape, transpose
from minijax.sharding import Mesh, NamedSharding, PartitionSpec, _mesh_stack
from minijax.traceback_util import api_boundary

# Collectives whose result no longer varies along their axes, and those that make it vary.
_INVARIANT = {coll.psum_p, coll.pmax_p, coll.pmin_p}
_VARYING = {coll.axis_index_p, coll.ppermute_p, coll.all_gather_p, coll.psum_scatter_p,
            all_to_all_p}


def shard_map(f=None, /, *, out_specs, in_specs=None, mesh=None, axis_names=frozenset(),
              check_vma=True, check_rep=None):
    """Map `f` over blocks of its arguments on the devices of `mesh` (jax.shard_map)."""
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                 axis_names=axis_names, check_vma=check_vma,
                                 check_rep=check_rep)
    check = check_vma if check_rep is None else check_rep
    cache: dict = {}

    @functools.wraps(f)
    @api_boundary
    def wrapped(*args):
        m = mesh if mesh is not None else (_mesh_stack[-1] if _mesh_stack else None)
        if not isinstance(m, Mesh):
            raise ValueError("shard_map requires a mesh: pass mesh=Mesh(...) or call it inside "
                             "`with mesh:`")
        leaves, in_tree = tree_util.tree_flatten(args)
        specs = _leaf_specs(in_specs, args, "in_specs")
        avals = [get_aval(x) for x in leaves]
        for spec, aval in zip(specs, avals, strict=True):
            _check_spec(m, spec, aval.shape, "in_specs")
        if type(core.current_trace()) is not core.EvalTrace:
            # Under jit / grad / vmap, also when only a closed-over value is traced.
            return _emulate(f, m, specs, out_specs, leaves, in_tree)
        key = (in_tree, tuple((a.shape, a.dtype, a.weak_type) for a in avals), tuple(specs),
               m)
        entry = cache.get(key)
        if entry is None:
            local = [a.update(shape=_block_shape(m, s, a.shape)) for a, s in zip(avals, specs)]
            flat_fun, store = flatten_fun(lambda *a: f(*a), in_tree)
            program = SpmdProgram(flat_fun, local, m.axis_names, m.axis_sizes,
                                  m.flat_devices(), f"shmap_{getattr(f, '__name__', 'fun')}")
            out_tree = store["out_tree"]
            o_specs = _leaf_specs(out_specs, tree_util.tree_unflatten(
                out_tree, [0] * out_tree.num_leaves), "out_specs")
            if check:
                _check_vma(program.jaxpr, specs, o_specs, m)
            entry = cache[key] = (program, out_tree, o_specs)
        program, out_tree, o_specs = entry
        # This process's devices of the mesh (all of them but in a multi-process run).
        devices = global_arrays.local_part(m.flat_devices())
        blocks = [global_arrays.local_blocks(x, NamedSharding(m, s), devices)
                  for x, s in zip(leaves, specs, strict=True)]
        hoisted = [np.asarray(h) for h in program.hoisted]
        per_device = [[b[i] for b in blocks] + hoisted for i in range(len(devices))]
        outs = global_arrays.run_on_mesh(program.backend, program.executable,
                                         m.flat_devices(), per_device)
        results = []
        for k, (aval, spec) in enumerate(zip(program.out_avals, o_specs, strict=True)):
            sizes = m.shape
            shape = tuple(n * math.prod(sizes[a] for a in spec.axis_names_of(d))
                          for d, n in enumerate(aval.shape))
            results.append(global_arrays.output_array(outs, devices, k, shape,
                                                      NamedSharding(m, spec), aval, "shard_map"))
        return tree_util.tree_unflatten(out_tree, results)

    wrapped._programs = cache
    return wrapped


def _is_spec(x) -> bool:
    return x is None or isinstance(x, PartitionSpec)


def _leaf_specs(specs, tree, what: str) -> list:
    """One PartitionSpec per leaf of `tree` (`specs` is a prefix of it; None means P())."""
    if specs is None:
        raise ValueError(f"shard_map: {what} must be given (minijax does not infer them)")
    return [PartitionSpec() if spec is None else spec
            for spec in prefix_leaves(specs, tree, _is_spec, f"shard_map {what}")]


def _check_spec(mesh, spec, shape, what) -> None:
    if len(spec) > len(shape):
        raise ValueError(f"shard_map {what}: {spec} has more entries than the rank of an "
                         f"argument of shape {shape}")
    for name in spec.all_names():
        if name not in mesh.axis_names:
            raise ValueError(f"shard_map {what}: {spec} names axis {name!r}, not in the "
                             f"mesh's axes {mesh.axis_names}")
    for d in range(len(spec)):
        n = math.prod(mesh.shape[a] for a in spec.axis_names_of(d))
        if shape[d] % n:
            raise ValueError(f"shard_map {what}: dimension {d} of an argument of shape {shape} "
                             f"(size {shape[d]}) is not divisible by {n}, the number of "
                             f"devices its spec {spec} splits it over")


def _block_shape(mesh, spec, shape) -> tuple:
    return tuple(n // math.prod(mesh.shape[a] for a in spec.axis_names_of(d))
                 for d, n in enumerate(shape))


# ----------------------------------------------------------------------------- check_vma


def _check_vma(closed, in_specs, out_specs, mesh) -> None:
    env = {}
    for v, spec in zip(closed.jaxpr.invars, in_specs, strict=True):
        env[v] = frozenset(spec.all_names())

    def read(v):
        return env.get(v, frozenset()) if isinstance(v, core.Var) else frozenset()

    for eqn in closed.jaxpr.eqns:
        vary = frozenset().union(*[read(v) for v in eqn.invars])
        names = eqn.params.get("axis_name", ())
        names = names if isinstance(names, tuple) else (names,)
        if eqn.primitive in _INVARIANT and eqn.params.get("axis_index_groups") is None:
            vary = vary - set(names)
        elif eqn.primitive in _VARYING:
            vary = vary | set(names)
        else:
            vary = vary | _varying_inside(eqn.params)
        for v in eqn.outvars:
            env[v] = vary
    for k, (v, spec) in enumerate(zip(closed.jaxpr.outvars, out_specs, strict=True)):
        extra = read(v) - set(spec.all_names())
        if extra:
            raise ValueError(
                f"shard_map out_specs[{k}] is {spec} which implies that the corresponding "
                f"output value is only varying across mesh axes "
                f"{set(spec.all_names()) or '{}'} and not {set(sorted(extra))}, but it was "
                f"inferred to be possibly varying over {set(sorted(read(v)))}. The mesh given "
                f"has shape {mesh.axis_sizes} with corresponding axis names "
                f"{mesh.axis_names}. Check if these output values are meant to be replicated "
                "over those mesh axes (e.g. lax.psum over them); if so, consider disabling "
                "the check by passing the check_vma=False argument to `shard_map`.")


def _varying_inside(params) -> frozenset:
    out = frozenset()
    for value in params.values():
        for sub in (value if isinstance(value, (tuple, list)) else (value,)):
            jaxpr = getattr(sub, "jaxpr", sub)
            if isinstance(jaxpr, core.Jaxpr):
                for eqn in jaxpr.eqns:
                    if eqn.primitive in _VARYING:
                        names = eqn.params.get("axis_name", ())
                        out |= set(names if isinstance(names, tuple) else (names,))
                    out |= _varying_inside(eqn.params)
    return out


# ----------------------------------------------------------------------------- emulation


def _to_blocks(x, mesh, spec):
    """Global x -> [mesh dims named by spec (mesh order)..., block dims...]."""
    shape = list(get_aval(x).shape)
    sizes = mesh.shape
    split, where = [], {}
    for d, n in enumerate(shape):
        names = spec.axis_names_of(d)
        for a in names:
            where[a] = len(split)
            split.append(sizes[a])
        split.append(n // math.prod(sizes[a] for a in names))
    x = reshape(x, tuple(split))
    block_dims = [i for i in range(len(split)) if i not in where.values()]
    order = [where[a] for a in mesh.axis_names if a in where] + block_dims
    return transpose(x, tuple(order))


def _from_blocks(y, mesh, spec):
    """The inverse of _to_blocks for an output of the nested vmaps."""
    named = [a for a in mesh.axis_names if a in spec.all_names()]
    shape = list(get_aval(y).shape)
    k = len(named)
    block = shape[k:]
    perm, out_shape = [], []
    for d, n in enumerate(block):
        names = spec.axis_names_of(d)
        perm.extend(named.index(a) for a in names)
        perm.append(k + d)
        out_shape.append(n * math.prod(mesh.shape[a] for a in names))
    return reshape(transpose(y, tuple(perm)), tuple(out_shape))


def _emulate(f, mesh, in_specs, out_specs, leaves, in_tree):
    blocks = [_to_blocks(x, mesh, s) for x, s in zip(leaves, in_specs, strict=True)]

    def fn(*flat):
        return f(*tree_util.tree_unflatten(in_tree, flat))
    for a in reversed(mesh.axis_names):
        fn = _vmap_level(fn, a, mesh.shape[a], [0 if a in s.all_names() else None
                                                for s in in_specs], out_specs)
    out = fn(*blocks)
    o_leaves, o_tree = tree_util.tree_flatten(out)
    specs = _leaf_specs(out_specs, out, "out_specs")
    return tree_util.tree_unflatten(o_tree, [_from_blocks(y, mesh, s)
                                             for y, s in zip(o_leaves, specs, strict=True)])


def _vmap_level(fn, name, size, in_axes, out_specs):
    """vmap over mesh axis `name`: outputs whose spec names it are stacked at 0, the others
    must be the same on every member (out_axes None)."""
    spec_leaves, spec_tree = tree_util.tree_flatten(out_specs, is_leaf=_is_spec)
    out_axes = tree_util.tree_unflatten(
        spec_tree, [0 if s is not None and name in s.all_names() else None
                    for s in spec_leaves])
    return device_axis_vmap(fn, tuple(in_axes), out_axes, name, size)
