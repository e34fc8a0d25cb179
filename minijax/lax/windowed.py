"""Window reductions: reduce_window_sum, reduce_window_max, reduce_window_min and the generic
`lax.reduce_window(operand, init_value, computation, ...)`.

Window parameters (one entry per operand dimension): window_dimensions, window_strides,
padding ((low, high) pairs), base_dilation (holes between operand elements, filled with the
identity) and window_dilation (holes between window elements). reduce_window_sum is linear;
its transpose is another windowed sum over the cotangent, dilated by the strides. The max
and min JVPs gather the tangent at the selected location of each window
(select_and_gather_add, in windowed_select.py), as JAX does.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes, tree_util
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.lax import slicing
from minijax.lax.conv_util import (
    vjp_lhs_padding,
)
from minijax.lax.reduce_generic import (
    apply_scalar_jaxpr,
    lower_reducer,
    monoid_name,
    scalar_inits,
    trace_reducer,
)
from minijax.lax.reductions import max_identity, min_identity
from minijax.lax.structural import bdim_at_front, broadcast_in_dim
from minijax.lax.utils import standard_primitive
from minijax.lax.window_util import (
    check_window,
    hlo_window,
    window_batch_params,
    window_fold,
    window_out_shape,
    window_params,
)
from minijax.lax.windowed_select import select_and_gather_add_p


def _monoid_window(name, ufunc, identity_fn, kinds):
    def abstract_eval(x, **p):
        check_window(name, x, p)
        if dtypes.kind(x.dtype) not in kinds:
            raise TypeError(f"{name} does not accept dtype {x.dtype} ({x.str_short()})")
        return ShapedArray(window_out_shape(x.shape, p), x.dtype, x.weak_type)

    def impl(x, **p):
        x = np.asarray(x)
        identity = identity_fn(x.dtype)
        return window_fold([x], [identity], lambda a, v: [ufunc(a[0], v[0])], p)[0]
    prim = standard_primitive(name, abstract_eval, impl)

    def batch(trace, vals, dims, **p):
        (x,), (d,) = vals, dims
        return prim.bind(x, **window_batch_params(p, d)), d

    def lower(ctx, x, **p):
        b = ctx.builder
        dtype = ctx.avals_in[0].dtype
        et = ctx.element_type(dtype)
        opcode = {"add": "add", "maximum": "maximum", "minimum": "minimum"}[ufunc.__name__]
        if dtype == np.bool_ and opcode != "add":
            opcode = "or" if opcode == "maximum" else "and"
        comp = ctx.scalar_computation(f"{opcode}_{et}", opcode, et)
        init = b.constant(np.asarray(identity_fn(dtype), dtype))
        return b.reduce_window(x, init, hlo_window(p), comp, metadata=ctx.metadata)
    batching.primitive_batchers[prim] = batch
    register_lowering(prim, lower)
    return prim


reduce_window_sum_p = _monoid_window("reduce_window_sum", np.add, lambda d: np.zeros((), d),
                                     "iufc")
reduce_window_max_p = _monoid_window("reduce_window_max", np.maximum, max_identity, "iufb")
reduce_window_min_p = _monoid_window("reduce_window_min", np.minimum, min_identity, "iufb")


def _wrapper(prim):
    def fn(operand, window_dimensions, window_strides, padding, base_dilation=None,
           window_dilation=None):
        p = window_params(prim.name, get_aval(operand).shape, window_dimensions,
                          window_strides, padding, base_dilation, window_dilation)
        return prim.bind(operand, **p)
    fn.__name__ = prim.name
    fn.__doc__ = (f"{prim.name.replace('reduce_window_', '').capitalize()} over each window "
                  "(see lax.reduce_window for the parameters).")
    return fn


reduce_window_sum = _wrapper(reduce_window_sum_p)
reduce_window_max = _wrapper(reduce_window_max_p)
reduce_window_min = _wrapper(reduce_window_min_p)


def _reduce_window_sum_transpose(ct, x, **p):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    in_shape = x.aval.shape
    ct_shape = get_aval(ct).shape
    pads = vjp_lhs_padding(in_shape, p["window_dimensions"], p["window_strides"], ct_shape,
                           p["padding"], p["base_dilation"], p["window_dilation"])
    # Every input element receives the sum of the cotangents of the windows that read it:
    # a windowed sum over the cotangent dilated by the strides (its holes are zeros).
    out = reduce_window_sum_p.bind(
        ct, window_dimensions=p["window_dimensions"], window_strides=p["base_dilation"],
        padding=tuple(pads), base_dilation=p["window_strides"],
        window_dilation=p["window_dilation"])
    assert get_aval(out).shape == in_shape, (get_aval(out).shape, in_shape)
    return [out]


ad.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


def _chooser_jvp(prim, select_prim):
    def rule(primals, tangents, **p):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, **p)
        if type(t) is ad.Zero or dtypes.kind(get_aval(x).dtype) not in "fc":
            return ans, ad.Zero.from_value(ans)
        return ans, select_and_gather_add_p.bind(t, x, select_prim=select_prim, **p)
    return rule


ad.primitive_jvps[reduce_window_max_p] = _chooser_jvp(reduce_window_max_p, "ge")
ad.primitive_jvps[reduce_window_min_p] = _chooser_jvp(reduce_window_min_p, "le")

# --------------------------------------------------------------------------- generic


def reduce_window(operand, init_value, computation, window_dimensions, window_strides,
                  padding, base_dilation=None, window_dilation=None):
    """Reduce each window of `operand` (an array or a pytree of equally shaped arrays) with
    `computation`, starting from `init_value` (scalars, same structure)."""
    flat_ops, tree = tree_util.tree_flatten(operand)
    flat_inits, init_tree = tree_util.tree_flatten(init_value)
    if tree != init_tree:
        raise ValueError("reduce_window: operand and init_value must have the same "
                         f"structure, got {tree} and {init_tree}")
    flat_inits = scalar_inits(flat_ops, flat_inits)
    p = window_params("reduce_window", get_aval(flat_ops[0]).shape, window_dimensions,
                      window_strides, padding, base_dilation, window_dilation)
    if len(flat_ops) == 1 and get_aval(flat_ops[0]).dtype == get_aval(flat_inits[0]).dtype:
        prim = {"add": reduce_window_sum_p, "max": reduce_window_max_p,
                "min": reduce_window_min_p}.get(monoid_name(computation, flat_inits[0]))
        if prim is not None:
            return tree_util.tree_unflatten(tree, [prim.bind(flat_ops[0], **p)])
    closed = trace_reducer(computation, [get_aval(x) for x in flat_inits], "reduce_window",
                           tree)
    outs = reduce_window_p.bind(*flat_ops, *flat_inits, computation=closed, **p)
    return tree_util.tree_unflatten(tree, outs)


def _reduce_window_abstract_eval(*avals, computation, **p):
    n = len(avals) // 2
    ops, inits = avals[:n], avals[n:]
    for a in ops:
        check_window("reduce_window", a, p)
        if a.shape != ops[0].shape:
            raise TypeError("reduce_window: all operands must have the same shape, got "
                            + ", ".join(o.str_short() for o in ops))
    for a, i in zip(ops, inits, strict=True):
        if i.shape != () or i.dtype != a.dtype:
            raise TypeError("reduce_window: init values must be scalars of the operand "
                            f"dtypes, got operands {', '.join(o.str_short() for o in ops)} "
                            f"and init values {', '.join(v.str_short() for v in inits)}")
    out = window_out_shape(ops[0].shape, p)
    return [ShapedArray(out, a.dtype, False) for a in ops]


def _reduce_window_impl(*args, computation, **p):
    n = len(args) // 2
    xs = [np.asarray(a) for a in args[:n]]
    inits = [np.asarray(a) for a in args[n:]]

    def combine(accs, views):
        return [np.asarray(o) for o in apply_scalar_jaxpr(computation, accs + views)]
    return window_fold(xs, inits, combine, p)


reduce_window_p = standard_primitive("reduce_window", _reduce_window_abstract_eval,
                                     _reduce_window_impl, multiple_results=True)


def _window_decomposition(computation, n, p, *args):
    """The generic window reduction in lax operations (pad with the init values, one strided
    slice per window offset, the reducer applied elementwise): differentiable and
    transposable, so its JVP serves as the primitive's."""
    xs, inits = list(args[:n]), list(args[n:])
    shape = get_aval(xs[0]).shape
    out = window_out_shape(shape, p)
    accs = [broadcast_in_dim(i, out, ()) for i in inits]
    if 0 in out:
        return accs
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(p["padding"], p["base_dilation"],
                                                     strict=True)]
    padded = [slicing.pad(x, i, config) for x, i in zip(xs, inits, strict=True)]
    for offset in np.ndindex(*p["window_dimensions"]):
        starts = [o * d for o, d in zip(offset, p["window_dilation"], strict=True)]
        limits = [st + (m - 1) * s + 1 for st, m, s in zip(starts, out, p["window_strides"],
                                                            strict=True)]
        views = [slicing.slice(x, starts, limits, p["window_strides"]) for x in padded]
        accs = apply_scalar_jaxpr(computation, accs + views)
    return accs


def _reduce_window_jvp(primals, tangents, *, computation, **p):
    n = len(primals) // 2
    outs = reduce_window_p.bind(*primals, computation=computation, **p)

    def fun(*args):
        return _window_decomposition(computation, n, p, *args)
    _, t_out = ad.jvp_flat(fun, list(primals), list(tangents))
    return outs, t_out


def _reduce_window_batch(trace, vals, dims, *, computation, **p):
    n = len(vals) // 2
    if any(d is not batching.not_mapped for d in dims[n:]):
        raise NotImplementedError("reduce_window: batching over init_value is not supported; "
                                  "map only the operands")
    ops = [bdim_at_front(v, d, trace.axis_size) for v, d in zip(vals[:n], dims[:n],
                                                                strict=True)]
    outs = reduce_window_p.bind(*ops, *vals[n:], computation=computation,
                                **window_batch_params(p, 0))
    return outs, [0] * n


def _reduce_window_lower(ctx, *args, computation, **p):
    n = len(args) // 2
    comp = lower_reducer(ctx, computation, "window_reducer")
    out = ctx.builder.reduce_window(list(args[:n]), list(args[n:]), hlo_window(p), comp,
                                    metadata=ctx.metadata)
    if n == 1:
        return [out]
    return [ctx.builder.get_tuple_element(out, i) for i in range(n)]


ad.primitive_jvps[reduce_window_p] = _reduce_window_jvp
batching.primitive_batchers[reduce_window_p] = _reduce_window_batch
register_lowering(reduce_window_p, _reduce_window_lower)
