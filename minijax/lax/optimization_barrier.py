"""optimization_barrier: an identity over a pytree that the compiler may not look through
(jax.lax.optimization_barrier).

It lowers to HLO's `optimization-barrier` on a tuple of every leaf, so no pass moves a
computation across it, merges a value inside it with one outside (CSE), or folds it away;
JVP, transpose and vmap keep the barrier on tangents, cotangents and batched values.
"""

from __future__ import annotations

import numpy as np

from minijax import tree_util
from minijax.compiler.lowering_registry import register_lowering
from minijax.interpreters import ad, batching
from minijax.lax.utils import standard_primitive


def optimization_barrier(operand, /):
    """Return `operand` (any pytree of arrays) unchanged, behind a barrier that compiler
    passes cannot move computations across (e.g. to force an evaluation order or stop
    rematerialised values from being merged with the originals)."""
    leaves, treedef = tree_util.tree_flatten(operand)
    if not leaves:
        return operand
    outs = optimization_barrier_p.bind(*leaves)
    return tree_util.tree_unflatten(treedef, list(outs))


def _impl(*xs):
    return [np.asarray(x) for x in xs]


optimization_barrier_p = standard_primitive(
    "optimization_barrier", lambda *avals: list(avals), _impl, multiple_results=True)


def _jvp(primals, tangents):
    outs = optimization_barrier_p.bind(*primals)
    live = [i for i, t in enumerate(tangents) if type(t) is not ad.Zero]
    t_out = list(tangents)
    if live:
        for i, t in zip(live, optimization_barrier_p.bind(*[tangents[i] for i in live])):
            t_out[i] = t
    return outs, t_out


def _transpose(cts, *args):
    live = [i for i, ct in enumerate(cts) if type(ct) is not ad.Zero and ct is not None]
    out = [None if ct is None else ct for ct in cts]
    if live:
        for i, ct in zip(live, optimization_barrier_p.bind(*[cts[i] for i in live])):
            out[i] = ct
    return out


def _batcher(trace, vals, dims):
    return list(optimization_barrier_p.bind(*vals)), list(dims)


def _lowering(ctx, *xs):
    b = ctx.builder
    tup = b.tuple(list(xs), metadata=ctx.metadata)
    barrier = b.add_instruction("optimization-barrier", [tup], metadata=ctx.metadata)
    return [b.get_tuple_element(barrier, i) for i in range(len(xs))]


ad.primitive_jvps[optimization_barrier_p] = _jvp
ad.primitive_transposes[optimization_barrier_p] = _transpose
ad.linear_primitives.add(optimization_barrier_p)
batching.primitive_batchers[optimization_barrier_p] = _batcher
register_lowering(optimization_barrier_p, _lowering)
