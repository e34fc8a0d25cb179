"""Reduction primitives. Template: reduce_sum (others follow the same block layout)."""

from __future__ import annotations

import numpy as np

from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.lax.utils import standard_primitive


def _reduce_abstract_eval(name):
    def rule(x, *, axes):
        for a in axes:
            if not 0 <= a < x.ndim:
                raise ValueError(f"{name}: axis {a} is out of bounds for {x.str_short()}")
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type)
    return rule


def reduce_sum(operand, axes):
    """Sum over `axes` (a tuple of non-negative dimension indices)."""
    axes = tuple(sorted(int(a) for a in axes))
    return reduce_sum_p.bind(operand, axes=axes)


reduce_sum_p = standard_primitive(
    "reduce_sum", _reduce_abstract_eval("reduce_sum"),
    lambda x, *, axes: np.sum(x, axis=axes, dtype=np.asarray(x).dtype))


def _reduce_sum_transpose(ct, x, *, axes):
    from minijax.lax.structural import broadcast_in_dim
    shape = x.aval.shape
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim(ct, shape, kept)]


def _reduce_sum_batch(trace, vals, dims, *, axes):
    (x,), (d,) = vals, dims
    new_axes = tuple(a + 1 if a >= d else a for a in axes)
    out_dim = d - sum(1 for a in axes if a < d)
    return reduce_sum_p.bind(x, axes=new_axes), out_dim


def _reduce_sum_lower(ctx, x, *, axes):
    b = ctx.builder
    et = ctx.element_type(ctx.avals_in[0].dtype)
    init = b.constant(np.zeros((), ctx.avals_in[0].dtype))
    add = b.scalar_computation("add", "add", et)
    return b.reduce(x, init, axes, add, metadata=ctx.metadata)


ad.deflinear(reduce_sum_p, _reduce_sum_transpose)
batching.primitive_batchers[reduce_sum_p] = _reduce_sum_batch
register_lowering(reduce_sum_p, _reduce_sum_lower)

_ = get_aval
