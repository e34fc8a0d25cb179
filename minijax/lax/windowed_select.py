"""select_and_gather_add and select_and_scatter_add: the derivative machinery of
reduce_window_max / reduce_window_min (JAX's primitives of the same names).

For each window, `select_prim` ("ge" for max, "le" for min) picks one operand location (the
first one on ties):
- select_and_gather_add(tangents, operand) reads `tangents` at the selected location of
  each window (the JVP of a max/min window reduction); it is linear in `tangents`.
- select_and_scatter_add(source, operand) adds each window's `source` value into the
  selected location (zeros elsewhere); it is the transpose of select_and_gather_add.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.compiler.hlo.ir import Shape
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.lax.conv_util import dilate, pad_crop, window_views
from minijax.lax.reductions import max_identity, min_identity
from minijax.lax.structural import bdim_at_front
from minijax.lax.utils import standard_primitive
from minijax.lax.window_util import hlo_window, window_batch_params, window_out_shape


def _selected_positions(operand, select_prim, p):
    """Flat indices (into the dilated, padded operand) of each window's selected element,
    and that padded array's shape."""
    identity = max_identity(operand.dtype) if select_prim == "ge" else min_identity(
        operand.dtype)
    x = pad_crop(dilate(operand, p["base_dilation"], 0, identity), p["padding"], 0, identity)
    ids = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    out = window_out_shape(operand.shape, p)
    best = np.full(out, identity, operand.dtype)
    best_id = np.full(out, -1, np.int64)
    if 0 in out:
        return best_id, x.shape
    views = window_views(x, p["window_dimensions"], p["window_strides"],
                         p["window_dilation"], out, 0)
    id_views = window_views(ids, p["window_dimensions"], p["window_strides"],
                            p["window_dilation"], out, 0)
    first = True
    for v, i in zip(views, id_views, strict=True):
        if first:
            best, best_id, first = v.copy(), i.copy(), False
            continue
        keep = best >= v if select_prim == "ge" else best <= v
        best = np.where(keep, best, v)
        best_id = np.where(keep, best_id, i)
    return best_id, x.shape


def _original_positions(padded_shape, shape, p):
    """For each padded position, the flat index of the operand element there (or -1)."""
    ids = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    placed = pad_crop(dilate(ids, p["base_dilation"], 0, -1), p["padding"], 0, -1)
    assert placed.shape == tuple(padded_shape)
    return placed.ravel()


def _check(name, a, b, p):
    if len(p["window_dimensions"]) != b.ndim:
        raise TypeError(f"{name}: window of rank {len(p['window_dimensions'])} does not match "
                        f"operand {b.str_short()}")
    if a.dtype != b.dtype and dtypes.kind(a.dtype) not in "fc":
        raise TypeError(f"{name}: operands {a.str_short()} and {b.str_short()} must be "
                        "floating")


# --------------------------------------------------------------------------- gather


def _sga_abstract_eval(tangents, operand, *, select_prim, **p):
    _check("select_and_gather_add", tangents, operand, p)
    if tangents.shape != operand.shape:
        raise TypeError(f"select_and_gather_add: tangents {tangents.str_short()} and operand "
                        f"{operand.str_short()} must have the same shape")
    return ShapedArray(window_out_shape(operand.shape, p), tangents.dtype)


def _sga_impl(tangents, operand, *, select_prim, **p):
    tangents, operand = np.asarray(tangents), np.asarray(operand)
    best_id, padded_shape = _selected_positions(operand, select_prim, p)
    source = _original_positions(padded_shape, operand.shape, p)
    flat_t = np.concatenate([tangents.ravel(), np.zeros(1, tangents.dtype)])
    picked = source[np.maximum(best_id, 0)] if best_id.size else best_id
    picked = np.where(picked < 0, tangents.size, picked)
    return flat_t[picked].reshape(best_id.shape)


select_and_gather_add_p = standard_primitive("select_and_gather_add", _sga_abstract_eval,
                                             _sga_impl)


def _sga_transpose(ct, tangents, operand, *, select_prim, **p):
    if type(ct) is ad.Zero:
        return [ad.Zero(tangents.aval), None]
    return [select_and_scatter_add_p.bind(ct, operand, select_prim=select_prim, **p), None]


def _sga_jvp(primals, tangents, *, select_prim, **p):
    (t, x), (tt, _) = primals, tangents
    out = select_and_gather_add_p.bind(t, x, select_prim=select_prim, **p)
    if type(tt) is ad.Zero:
        return out, ad.Zero.from_value(out)
    return out, select_and_gather_add_p.bind(tt, x, select_prim=select_prim, **p)


def _pair_batcher(prim):
    def rule(trace, vals, dims, *, select_prim, **p):
        a, b = (bdim_at_front(v, d, trace.axis_size) for v, d in zip(vals, dims, strict=True))
        return prim.bind(a, b, select_prim=select_prim, **window_batch_params(p, 0)), 0
    return rule


def _select_computation(ctx, select_prim, et):
    direction = "GE" if select_prim == "ge" else "LE"
    return ctx.scalar_computation(f"select_{direction}_{et}", f"compare-{direction}", et)


def _sga_lower(ctx, tangents, operand, *, select_prim, **p):
    # A variadic reduce-window over (operand, tangent) pairs keeping the selected pair.
    b = ctx.builder
    vdtype, tdtype = ctx.avals_in[1].dtype, ctx.avals_in[0].dtype
    vt, tt = ctx.element_type(vdtype), ctx.element_type(tdtype)
    cb = ctx.new_computation(f"select_gather_{select_prim}_{vt}")
    a, ta = cb.parameter(0, Shape(vt, ())), cb.parameter(1, Shape(tt, ()))
    c, tc = cb.parameter(2, Shape(vt, ())), cb.parameter(3, Shape(tt, ()))
    keep = cb.compare(a, c, "GE" if select_prim == "ge" else "LE")
    cb.set_root(cb.tuple([cb.select(keep, a, c), cb.select(keep, ta, tc)]))
    comp = cb.computation
    identity = max_identity(vdtype) if select_prim == "ge" else min_identity(vdtype)
    out = b.reduce_window([operand, tangents], [b.constant(np.asarray(identity, vdtype)),
                                                b.constant(np.zeros((), tdtype))],
                          hlo_window(p), comp, metadata=ctx.metadata)
    return b.get_tuple_element(out, 1)


ad.primitive_jvps[select_and_gather_add_p] = _sga_jvp
ad.primitive_transposes[select_and_gather_add_p] = _sga_transpose
batching.primitive_batchers[select_and_gather_add_p] = _pair_batcher(select_and_gather_add_p)
register_lowering(select_and_gather_add_p, _sga_lower)

# --------------------------------------------------------------------------- scatter


def _ssa_abstract_eval(source, operand, *, select_prim, **p):
    _check("select_and_scatter_add", source, operand, p)
    expected = window_out_shape(operand.shape, p)
    if source.shape != expected:
        raise TypeError(f"select_and_scatter_add: source {source.str_short()} must have the "
                        f"window output shape {expected} of operand {operand.str_short()}")
    return ShapedArray(operand.shape, source.dtype)


def _ssa_impl(source, operand, *, select_prim, **p):
    source, operand = np.asarray(source), np.asarray(operand)
    best_id, padded_shape = _selected_positions(operand, select_prim, p)
    positions = _original_positions(padded_shape, operand.shape, p)
    out = np.zeros(operand.size + 1, source.dtype)
    if best_id.size:
        target = positions[best_id.ravel()]
        target = np.where(target < 0, operand.size, target)
        np.add.at(out, target, source.ravel())
    return out[:-1].reshape(operand.shape)


select_and_scatter_add_p = standard_primitive("select_and_scatter_add", _ssa_abstract_eval,
                                              _ssa_impl)


def _ssa_transpose(ct, source, operand, *, select_prim, **p):
    if type(ct) is ad.Zero:
        return [ad.Zero(source.aval), None]
    return [select_and_gather_add_p.bind(ct, operand, select_prim=select_prim, **p), None]


def _ssa_jvp(primals, tangents, *, select_prim, **p):
    (s, x), (ts, _) = primals, tangents
    out = select_and_scatter_add_p.bind(s, x, select_prim=select_prim, **p)
    if type(ts) is ad.Zero:
        return out, ad.Zero.from_value(out)
    return out, select_and_scatter_add_p.bind(ts, x, select_prim=select_prim, **p)


def _ssa_lower(ctx, source, operand, *, select_prim, **p):
    if any(d != 1 for d in p["base_dilation"] + p["window_dilation"]):
        raise NotImplementedError("select_and_scatter_add: lowering with base or window "
                                  "dilation is not supported (XLA's select-and-scatter has no "
                                  "dilation)")
    b = ctx.builder
    vt = ctx.element_type(ctx.avals_in[1].dtype)
    st = ctx.element_type(ctx.avals_in[0].dtype)
    select = _select_computation(ctx, select_prim, vt)
    scatter = ctx.scalar_computation(f"add_{st}", "add", st)
    init = b.constant(np.zeros((), ctx.avals_in[0].dtype))
    return b.select_and_scatter(operand, source, init, hlo_window(p), select, scatter,
                                metadata=ctx.metadata)


ad.primitive_jvps[select_and_scatter_add_p] = _ssa_jvp
ad.primitive_transposes[select_and_scatter_add_p] = _ssa_transpose
batching.primitive_batchers[select_and_scatter_add_p] = _pair_batcher(select_and_scatter_add_p)
register_lowering(select_and_scatter_add_p, _ssa_lower)

_ = get_aval
