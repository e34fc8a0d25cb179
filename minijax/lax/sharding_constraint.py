"""lax.with_sharding_constraint: pin how an intermediate is laid out over a mesh.

The value is unchanged; in eager mode it is laid out as the sharding says (as JAX's); under
jit it lowers to XLA's `custom-call(x), custom_call_target="Sharding", sharding={...}`,
which the SPMD partitioner (compiler/passes/spmd_partitioner.py) reshards to (a plain jit
whose program holds one runs partitioned, api_sharded_jit.ConstrainedJitEntry). The
constraint is linear: tangents and cotangents carry the same constraint; vmap inserts an
unsplit batch dimension.
"""

from __future__ import annotations

import numpy as np

from minijax import tree_util
from minijax.array import ProcessShards, sharded
from minijax.compiler.hlo.sharding import spec_to_text
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import get_aval
from minijax.interpreters import ad, batching
from minijax.lax.utils import standard_primitive
from minijax.sharding import NamedSharding, PartitionSpec, _mesh_stack

__all__ = ["with_sharding_constraint"]


def with_sharding_constraint(x, shardings):
    """Constrain each leaf of `x` to its NamedSharding (a PartitionSpec uses the mesh of an
    enclosing `with mesh:`)."""
    def one(leaf, sharding):
        if isinstance(sharding, PartitionSpec):
            if not _mesh_stack:
                raise ValueError("with_sharding_constraint: a bare PartitionSpec needs a mesh "
                                 "(`with mesh:`); pass a NamedSharding instead")
            sharding = NamedSharding(_mesh_stack[-1], sharding)
        if not isinstance(sharding, NamedSharding):
            raise TypeError(f"with_sharding_constraint takes NamedShardings or "
                            f"PartitionSpecs, got {sharding!r}")
        return sharding_constraint_p.bind(leaf, sharding=sharding)
    leaves, tree = tree_util.tree_flatten(x)
    shards = shardings if not isinstance(shardings, (NamedSharding, PartitionSpec)) else None
    if shards is None:
        return tree_util.tree_unflatten(tree, [one(v, shardings) for v in leaves])
    return tree_util.tree_map(one, x, shards)


def _identity(x, *, sharding):
    return x


sharding_constraint_p = standard_primitive("sharding_constraint", lambda x, **p: x,
                                           _identity)


def _place(x, *, sharding):
    """Eagerly, x laid out as `sharding` says (JAX's constraint outside jit reshards), so
    eager vmap / grad of a pmap give its results their layout; global Arrays and
    shardings over several processes keep x as it is."""
    if type(getattr(x, "_buf", None)) is ProcessShards or not sharding.is_fully_addressable:
        return x
    value = np.asarray(x)
    sharding.devices_indices_map(value.shape)  # checks divisibility (JAX's ValueError)
    return sharded(value, sharding, get_aval(x).weak_type)


sharding_constraint_p.def_impl(_place)


def _transpose(ct, x, *, sharding):
    if type(ct) is ad.Zero:
        return [ct]
    return [sharding_constraint_p.bind(ct, sharding=sharding)]


def _batcher(trace, vals, dims, *, sharding):
    (x,), (d,) = vals, dims
    parts = list(sharding.spec) + [None] * (get_aval(x).ndim - 1 - len(sharding.spec))
    parts.insert(d, None)
    return sharding_constraint_p.bind(
        x, sharding=NamedSharding(sharding.mesh, PartitionSpec(*parts))), d


def _lowering(ctx, x, *, sharding):
    rank = x.shape.rank
    spec = tuple(sharding.spec.axis_names_of(d) for d in range(rank))
    text = spec_to_text(sharding.mesh.axis_names, sharding.mesh.axis_sizes, spec)
    return ctx.builder.custom_call([x], "Sharding", x.shape, metadata=ctx.metadata,
                                   sharding=text)


ad.deflinear(sharding_constraint_p, _transpose)
batching.primitive_batchers[sharding_constraint_p] = _batcher
register_lowering(sharding_constraint_p, _lowering)
