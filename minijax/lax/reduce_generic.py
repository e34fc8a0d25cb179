"""The generic `lax.reduce(operands, init_values, computation, dimensions)`.

A computation that is a recognized monoid (lax.add with init 0, lax.mul with 1, lax.max
with -inf, lax.min with inf, bitwise and/or/xor on bools with their identities) becomes the
matching reduce_* primitive, as in JAX. Anything else is traced to a scalar jaxpr and bound
as the variadic `reduce` primitive, whose JVP is the JVP of a pairwise reduction tree of
the computation, and whose lowering inlines the jaxpr as the HLO reducer computation.

Also holds helpers shared with the generic reduce_window: tracing a Python reducer into a
scalar jaxpr, and applying such a jaxpr elementwise to arrays (through a batch trace).
"""

from __future__ import annotations

import operator

import numpy as np

from minijax import core, tree_util
from minijax.compiler.hlo.ir import Shape
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, Tracer, get_aval, set_current_trace
from minijax.interpreters import ad, batching
from minijax.interpreters.partial_eval import trace_to_jaxpr
from minijax.lax import elementwise, elementwise_int, slicing, structural
from minijax.lax import reductions as r
from minijax.lax.reductions import max_identity, min_identity
from minijax.lax.structural import bdim_at_front, broadcast_in_dim, moveaxis, reshape, transpose
from minijax.lax.utils import is_scalar_literal, promote_scalars, standard_primitive

# --------------------------------------------------------------------------- helpers


def concrete_value(x):
    """The NumPy value of `x` if it is known at trace time, else None."""
    if isinstance(x, Tracer):
        x = x.to_concrete_value()
        if x is None:
            return None
    try:
        return np.asarray(x)
    except Exception:  # noqa: BLE001 - anything unconvertible is simply not concrete
        return None


def _lax_function(name: str):
    """lax.<name> (a user may pass it as the reducer), or None."""
    return getattr(elementwise, name, None) or getattr(elementwise_int, name, None)


def monoid_name(computation, init_value):
    """'add', 'mul', 'max', 'min', 'and', 'or' or 'xor' when `computation` is a monoid
    minijax recognizes and `init_value` is a concrete value equal to its identity."""
    init = concrete_value(init_value)
    if init is None or init.shape != ():
        return None
    dtype = get_aval(init_value).dtype
    candidates = {"add": ("add", operator.add), "mul": ("mul", operator.mul),
                  "max": ("max",), "min": ("min",),
                  "and": ("bitwise_and", "and_", operator.and_),
                  "or": ("bitwise_or", "or_", operator.or_),
                  "xor": ("bitwise_xor", "xor", operator.xor)}
    for kind, names in candidates.items():
        fns = [_lax_function(n) if isinstance(n, str) else n for n in names]
        if not any(f is not None and f is computation for f in fns):
            continue
        if kind in ("and", "or", "xor") and dtype != np.bool_:
            return None
        identity = {"add": np.zeros((), dtype), "mul": np.ones((), dtype),
                    "max": max_identity(dtype) if dtype.kind != "c" else None,
                    "min": min_identity(dtype) if dtype.kind != "c" else None,
                    "and": np.array(True), "or": np.array(False), "xor": np.array(False)}[kind]
        if identity is not None and np.array_equal(init, identity):
            return kind
        return None
    return None


def trace_reducer(computation, avals, name, tree=None):
    """Trace `computation(x_tree, y_tree)` on scalars of `avals` (the flat element types,
    arranged as the pytree `tree`, a single leaf by default) into a ClosedJaxpr taking 2n
    flat scalars and returning n."""
    n = len(avals)
    scalars = [ShapedArray((), a.dtype, False) for a in avals]

    def call(*args):
        xs, ys = list(args[:n]), list(args[n:])
        if tree is None:
            out = computation(xs[0], ys[0]) if n == 1 else computation(tuple(xs), tuple(ys))
        else:
            out = computation(tree_util.tree_unflatten(tree, xs),
                              tree_util.tree_unflatten(tree, ys))
        leaves = tree_util.tree_leaves(out)
        if len(leaves) != n:
            raise TypeError(f"{name}: the computation must return {n} value(s) (one per "
                            f"operand), got {len(leaves)}")
        return leaves
    closed, _ = trace_to_jaxpr(call, scalars + scalars, fun_name=getattr(
        computation, "__name__", ""), purpose=name)
    for out, a in zip(closed.out_avals, scalars, strict=True):
        if out.shape != () or out.dtype != a.dtype:
            raise TypeError(f"{name}: the computation must return scalars of the operand "
                            f"dtypes {[s.str_short() for s in scalars]}, got "
                            f"{[o.str_short() for o in closed.out_avals]}")
    return closed


def apply_scalar_jaxpr(closed, args):
    """Apply a jaxpr on scalars elementwise to equally shaped arrays (or tracers)."""
    shape = get_aval(args[0]).shape
    size = int(np.prod(shape, dtype=np.int64))
    flat = [reshape(a, (size,)) for a in args]
    trace = batching.BatchTrace(core.current_trace(), size)
    tracers = [batching.BatchTracer(trace, a, 0) for a in flat]
    with set_current_trace(trace):
        outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *tracers)
    results = []
    for o in outs:
        if isinstance(o, batching.BatchTracer) and o._trace is trace:
            val = moveaxis(o.val, o.batch_dim, 0)
        else:
            val = bdim_at_front(o, None, size)
        results.append(reshape(val, shape))
    return results


def scalar_inits(operands, inits):
    """Python scalar init values take their operand's dtype (as lax does for scalars)."""
    return [promote_scalars("reduce", x, i, same_kind=False)[1] if is_scalar_literal(i) else i
            for x, i in zip(operands, inits, strict=False)]


# --------------------------------------------------------------------------- reduce


def reduce(operands, init_values, computation, dimensions):
    """Reduce `operands` (an array or a pytree of equally shaped arrays) over `dimensions`
    with `computation(acc, x)`, starting from `init_values` (same structure, scalars)."""
    flat_ops, tree = tree_util.tree_flatten(operands)
    flat_inits, init_tree = tree_util.tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(f"reduce: operands and init_values must have the same structure, got "
                         f"{tree} and {init_tree}")
    flat_inits = scalar_inits(flat_ops, flat_inits)
    ndim = get_aval(flat_ops[0]).ndim if flat_ops else 0
    dims = tuple(sorted(int(d) + ndim if int(d) < 0 else int(d) for d in dimensions))
    if len(flat_ops) == 1:
        kind = monoid_name(computation, flat_inits[0])
        prim = {"add": r.reduce_sum_p, "mul": r.reduce_prod_p, "max": r.reduce_max_p,
                "min": r.reduce_min_p, "and": r.reduce_and_p, "or": r.reduce_or_p,
                "xor": r.reduce_xor_p}.get(kind)
        if prim is not None and get_aval(flat_ops[0]).dtype == get_aval(flat_inits[0]).dtype:
            return tree_util.tree_unflatten(tree, [prim.bind(flat_ops[0], axes=dims)])
    avals = [get_aval(x) for x in flat_inits]
    closed = trace_reducer(computation, avals, "reduce", tree)
    outs = reduce_p.bind(*flat_ops, *flat_inits, computation=closed, dimensions=dims)
    return tree_util.tree_unflatten(tree, outs)


def _reduce_abstract_eval(*avals, computation, dimensions):
    n = len(avals) // 2
    ops, inits = avals[:n], avals[n:]
    shape = ops[0].shape
    for a in ops:
        if a.shape != shape:
            raise TypeError(f"reduce: all operands must have the same shape, got "
                            f"{', '.join(o.str_short() for o in ops)}")
    for a, i in zip(ops, inits, strict=True):
        if i.shape != () or i.dtype != a.dtype:
            raise TypeError(f"reduce: init values must be scalars of the operand dtypes, got "
                            f"operands {', '.join(o.str_short() for o in ops)} and init "
                            f"values {', '.join(v.str_short() for v in inits)}")
    for d in dimensions:
        if not 0 <= d < len(shape):
            raise ValueError(f"reduce: dimension {d} is out of bounds for {ops[0].str_short()}")
    out_shape = tuple(s for k, s in enumerate(shape) if k not in dimensions)
    return [ShapedArray(out_shape, a.dtype, False) for a in ops]


def _reduce_impl(*args, computation, dimensions):
    n = len(args) // 2
    xs = [np.asarray(a) for a in args[:n]]
    inits = [np.asarray(a) for a in args[n:]]
    kept = [d for d in range(xs[0].ndim) if d not in dimensions]
    out_shape = tuple(xs[0].shape[d] for d in kept)
    k = int(np.prod([xs[0].shape[d] for d in dimensions], dtype=np.int64))
    accs = [np.broadcast_to(i, out_shape) for i in inits]
    if k == 0 or 0 in out_shape:
        return [np.array(a) for a in accs]
    vals = [np.transpose(x, list(dimensions) + kept).reshape((k,) + out_shape) for x in xs]
    while k > 1:  # a pairwise tree: log2(k) elementwise applications of the reducer
        h = k // 2
        combined = apply_scalar_jaxpr(computation, [v[:h] for v in vals]
                                      + [v[h:2 * h] for v in vals])
        combined = [np.asarray(c) for c in combined]
        vals = [np.concatenate([c, v[2 * h:]]) for c, v in zip(combined, vals, strict=True)]
        k = h + k % 2
    outs = apply_scalar_jaxpr(computation, [np.array(a) for a in accs] + [v[0] for v in vals])
    return [np.asarray(o) for o in outs]


reduce_p = standard_primitive("reduce", _reduce_abstract_eval, _reduce_impl,
                              multiple_results=True)


def _tree_reduce(computation, dimensions, n, *args):
    """The reduction as lax operations: a pairwise tree over the flattened reduced axis."""
    xs, inits = list(args[:n]), list(args[n:])
    shape = get_aval(xs[0]).shape
    kept = [d for d in range(len(shape)) if d not in dimensions]
    out_shape = tuple(shape[d] for d in kept)
    k = int(np.prod([shape[d] for d in dimensions], dtype=np.int64))
    vals = [reshape(transpose(x, tuple(dimensions) + tuple(kept)), (k,) + out_shape)
            for x in xs]
    accs = [broadcast_in_dim(i, out_shape, ()) for i in inits]
    if k == 0:
        return accs
    rank = 1 + len(out_shape)

    def part(v, lo, hi):
        return slicing.slice(v, (lo,) + (0,) * (rank - 1), (hi,) + out_shape)
    while k > 1:
        h = k // 2
        combined = apply_scalar_jaxpr(computation, [part(v, 0, h) for v in vals]
                                      + [part(v, h, 2 * h) for v in vals])
        if k % 2:
            combined = [structural.concatenate([c, part(v, 2 * h, k)], 0)
                        for c, v in zip(combined, vals, strict=True)]
        vals, k = combined, h + k % 2
    firsts = [reshape(v, out_shape) for v in vals]
    return apply_scalar_jaxpr(computation, accs + firsts)


def _reduce_jvp(primals, tangents, *, computation, dimensions):
    n = len(primals) // 2
    outs = reduce_p.bind(*primals, computation=computation, dimensions=dimensions)

    def fun(*args):
        return _tree_reduce(computation, dimensions, n, *args)
    _, t_out = ad.jvp_flat(fun, list(primals), list(tangents))
    return outs, t_out


def _reduce_batch(trace, vals, dims, *, computation, dimensions):
    n = len(vals) // 2
    size = trace.axis_size
    if any(d is not batching.not_mapped for d in dims[n:]):
        raise NotImplementedError("reduce: batching over init_values is not supported; "
                                  "map only the operands")
    ops = [bdim_at_front(v, d, size) for v, d in zip(vals[:n], dims[:n], strict=True)]
    new_dims = tuple(d + 1 for d in dimensions)
    return reduce_p.bind(*ops, *vals[n:], computation=computation,
                         dimensions=new_dims), [0] * n


def lower_reducer(ctx, closed, name):
    """Lower a scalar reducer jaxpr into a new HLO computation (the reducer of a reduce)."""
    cb = ctx.new_computation(name)
    params = [cb.parameter(i, Shape(ctx.element_type(a.dtype), ()))
              for i, a in enumerate(closed.in_avals)]
    outs = ctx.lower_jaxpr(closed, params, builder=cb)
    cb.set_root(outs[0] if len(outs) == 1 else cb.tuple(outs))
    return cb.computation


def _reduce_lower(ctx, *args, computation, dimensions):
    n = len(args) // 2
    comp = lower_reducer(ctx, computation, "reducer")
    out = ctx.builder.reduce(list(args[:n]), list(args[n:]), dimensions, comp,
                             metadata=ctx.metadata)
    if n == 1:
        return [out]
    return [ctx.builder.get_tuple_element(out, i) for i in range(n)]


ad.primitive_jvps[reduce_p] = _reduce_jvp
batching.primitive_batchers[reduce_p] = _reduce_batch
register_lowering(reduce_p, _reduce_lower)
