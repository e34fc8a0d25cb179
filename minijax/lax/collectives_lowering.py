"""HLO lowering of the collectives inside pmap / shard_map: XLA's all-reduce, all-gather,
reduce-scatter, collective-permute, all-to-all and partition-id.

The axis names of a collective become replica groups of participant ids (the devices the
SPMD program runs on, row-major over the mesh axes bound in interpreters/axis_env.py),
written as JAX writes them: `channel_id=1, replica_groups={{0,1},{2,3}},
use_global_device_ids=true`. Outside pmap/shard_map there are no device axes: a collective
reaching the compiler there names a vmap axis that was never batched, which is an error.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.evaluator.collectives import groups_text
from minijax.compiler.hlo.ir import Shape
from minijax.compiler.lowering_registry import register_lowering
from minijax.interpreters import axis_env
from minijax.lax import collectives as c
from minijax.lax import collectives_all_to_all as a2a


def _env(what: str, names):
    env = axis_env.current()
    missing = [n for n in names if env is None or n not in env.names]
    if missing:
        raise NameError(f"{what}: unbound axis name {missing[0]!r} in a compiled program; "
                        "collectives need an enclosing vmap(..., axis_name=...), pmap or "
                        "shard_map that binds it.")
    return env


def _group_attrs(env, names, axis_index_groups=None, **extra) -> dict:
    groups = env.groups(names)
    if axis_index_groups is not None:
        # Each group of the axis split by axis index: member i of an axis group is the
        # participant at index i along the (single) named axis.
        groups = [tuple(g[i] for i in sub) for g in groups for sub in axis_index_groups]
    attrs = {"channel_id": "1", "replica_groups": groups_text(groups)}
    attrs.update(extra)
    attrs["use_global_device_ids"] = "true"
    return attrs


def _all_reduce(opcode):
    def rule(ctx, x, *, axis_name, axis_index_groups=None):
        env = _env(ctx.metadata.get("op_name", opcode), axis_name)
        et = x.shape.element_type
        comp = ctx.scalar_computation(f"region_{opcode}", opcode, et)
        return ctx.builder.add_instruction("all-reduce", [x],
                                           _group_attrs(env, axis_name, axis_index_groups),
                                           {"to_apply": comp}, shape=x.shape,
                                           metadata=ctx.metadata)
    return rule


def _all_gather(ctx, x, *, axis_name, axis, tiled, axis_size, axis_index_groups=None):
    env = _env("all_gather", axis_name)
    b = ctx.builder
    dims = list(x.shape.dims)
    if not tiled:
        dims.insert(axis, 1)
        x = b.reshape(x, tuple(dims), metadata=ctx.metadata)
    dims[axis] *= axis_size
    shape = Shape.array(x.shape.element_type, tuple(dims))
    attrs = _group_attrs(env, axis_name, axis_index_groups, dimensions=(axis,))
    return b.add_instruction("all-gather", [x], attrs, shape=shape, metadata=ctx.metadata)


def _psum_scatter(ctx, x, *, axis_name, scatter_dimension, tiled, axis_size,
                  axis_index_groups=None):
    env = _env("psum_scatter", axis_name)
    b = ctx.builder
    dims = list(x.shape.dims)
    dims[scatter_dimension] //= axis_size
    comp = ctx.scalar_computation("region_add", "add", x.shape.element_type)
    attrs = _group_attrs(env, axis_name, axis_index_groups, dimensions=(scatter_dimension,))
    out = b.add_instruction(
        "reduce-scatter", [x], attrs, {"to_apply": comp},
        shape=Shape.array(x.shape.element_type, tuple(dims)), metadata=ctx.metadata)
    if not tiled:
        del dims[scatter_dimension]
        out = b.reshape(out, tuple(dims), metadata=ctx.metadata)
    return out


def _ppermute(ctx, x, *, axis_name, perm):
    env = _env("ppermute", axis_name)
    pairs = [(g[s], g[t]) for g in env.groups(axis_name) for s, t in perm]
    return ctx.builder.add_instruction(
        "collective-permute", [x], {"channel_id": "1", "source_target_pairs":
                                    groups_text(pairs)}, shape=x.shape, metadata=ctx.metadata)


def _axis_index(ctx, *, axis_name):
    (name,) = axis_name
    env = _env("axis_index", axis_name)
    b = ctx.builder
    pid = b.add_instruction("partition-id", [], shape=Shape.array("u32", ()),
                            metadata=ctx.metadata)
    idx = b.convert(pid, "s32", metadata=ctx.metadata)
    stride = env.stride(name)
    if stride != 1:
        idx = b.divide(idx, b.constant(np.int32(stride)), metadata=ctx.metadata)
    if env.axis_size(name) * stride != env.size:
        idx = b.remainder(idx, b.constant(np.int32(env.axis_size(name))),
                          metadata=ctx.metadata)
    return idx


def _all_to_all(ctx, x, *, axis_name, split_axis, concat_axis, tiled, axis_size,
                axis_index_groups=None):
    """Locally: bring the chunks to send to a leading axis; all-to-all along it (member j's
    row i goes to member i's row j); then put the received rows at concat_axis."""
    env = _env("all_to_all", axis_name)
    b, md, n = ctx.builder, ctx.metadata, axis_size
    dims = list(x.shape.dims)
    if tiled:
        dims[split_axis:split_axis + 1] = [n, dims[split_axis] // n]
        x = b.reshape(x, tuple(dims), metadata=md)
        front = split_axis
    else:
        front = split_axis
    perm = [front] + [d for d in range(len(dims)) if d != front]
    x = b.transpose(x, tuple(perm), metadata=md)
    x = b.add_instruction("all-to-all", [x],
                          _group_attrs(env, axis_name, axis_index_groups, dimensions=(0,)),
                          shape=x.shape, metadata=md)
    rest = list(range(1, len(dims)))
    rest.insert(concat_axis, 0)
    x = b.transpose(x, tuple(rest), metadata=md)
    if tiled:
        out = list(x.shape.dims)
        out[concat_axis:concat_axis + 2] = [out[concat_axis] * out[concat_axis + 1]]
        x = b.reshape(x, tuple(out), metadata=md)
    return x


register_lowering(c.psum_p, _all_reduce("add"))
register_lowering(c.pmax_p, _all_reduce("maximum"))
register_lowering(c.pmin_p, _all_reduce("minimum"))
register_lowering(c.all_gather_p, _all_gather)
register_lowering(c.psum_scatter_p, _psum_scatter)
register_lowering(c.ppermute_p, _ppermute)
register_lowering(c.axis_index_p, _axis_index)
register_lowering(a2a.all_to_all_p, _all_to_all)
