"""Comparisons (eq, ne, lt, le, gt, ge), bitwise ops (and, or, xor, not), shifts,
population_count, clz, select_n/select, clamp and bitcast_convert_type.

Each block: the public wrapper, the primitive with abstract eval and NumPy impl (XLA
semantics), the JVP (zero for comparisons and integer ops), the transpose for select_n
(linear in its cases), the batching rule and the HLO lowering.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.compiler.evaluator.elementwise import bitcast_convert as xla_bitcast_convert
from minijax.compiler.evaluator.elementwise import count_leading_zeros as xla_count_leading_zeros
from minijax.compiler.evaluator.elementwise import maximum as xla_maximum
from minijax.compiler.evaluator.elementwise import minimum as xla_minimum
from minijax.compiler.evaluator.elementwise import popcnt as xla_popcnt
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.interpreters.batching import not_mapped
from minijax.lax.elementwise import _brcast, _ct_for, _unary, _zeros, elementwise_batcher, out_aval
from minijax.lax.structural import bdim_at_front, broadcast_in_dim
from minijax.lax.utils import (
    promote_scalars,
    same_shape_dtype_rule,
    shapes_text,
    standard_primitive,
)

_ORDERED = "biuf"
_BITS = "biu"

# --------------------------------------------------------------------------- comparisons


def _comparison_type(dtype) -> str:
    kind = dtypes.kind(np.dtype(dtype))
    return {"f": "FLOAT", "c": "FLOAT", "i": "SIGNED"}.get(kind, "UNSIGNED")


def _comparison(name, numpy_fn, direction, kinds):
    def rule(x, y):
        aval = same_shape_dtype_rule(name, x, y, allowed_kinds=kinds)
        return aval.update(dtype=np.bool_)  # weak if all operands are (as JAX)

    def lower(ctx, x, y):
        x, y = ctx.broadcast_scalars([x, y])
        return ctx.builder.compare(x, y, direction, _comparison_type(ctx.avals_in[0].dtype),
                                   metadata=ctx.metadata)
    prim = standard_primitive(name, rule, numpy_fn)
    batching.primitive_batchers[prim] = elementwise_batcher(prim)
    register_lowering(prim, lower)
    ad.defjvp_zero(prim)
    return prim


eq_p = _comparison("eq", np.equal, "EQ", _ORDERED + "c")
ne_p = _comparison("ne", np.not_equal, "NE", _ORDERED + "c")
lt_p = _comparison("lt", np.less, "LT", _ORDERED)
le_p = _comparison("le", np.less_equal, "LE", _ORDERED)
gt_p = _comparison("gt", np.greater, "GT", _ORDERED)
ge_p = _comparison("ge", np.greater_equal, "GE", _ORDERED)


def eq(x, y):
    """Elementwise x == y (bool result)."""
    return eq_p.bind(*promote_scalars("eq", x, y))


def ne(x, y):
    """Elementwise x != y (bool result; True where either is NaN)."""
    return ne_p.bind(*promote_scalars("ne", x, y))


def lt(x, y):
    """Elementwise x < y (bool result)."""
    return lt_p.bind(*promote_scalars("lt", x, y))


def le(x, y):
    """Elementwise x <= y (bool result)."""
    return le_p.bind(*promote_scalars("le", x, y))


def gt(x, y):
    """Elementwise x > y (bool result)."""
    return gt_p.bind(*promote_scalars("gt", x, y))


def ge(x, y):
    """Elementwise x >= y (bool result)."""
    return ge_p.bind(*promote_scalars("ge", x, y))


# --------------------------------------------------------------------------- bitwise


def _bitwise_binary(name, numpy_fn, opcode):
    prim = standard_primitive(
        name, lambda x, y: same_shape_dtype_rule(name, x, y, allowed_kinds=_BITS), numpy_fn)
    batching.primitive_batchers[prim] = elementwise_batcher(prim)

    def lower(ctx, x, y):
        x, y = ctx.broadcast_scalars([x, y])
        return ctx.builder.binary(opcode, x, y, metadata=ctx.metadata)
    register_lowering(prim, lower)
    ad.defjvp_zero(prim)
    return prim


and_p = _bitwise_binary("and", np.bitwise_and, "and")
or_p = _bitwise_binary("or", np.bitwise_or, "or")
xor_p = _bitwise_binary("xor", np.bitwise_xor, "xor")
not_p = _unary("not", np.invert, None, kinds=_BITS,
               lowering=lambda ctx, x: ctx.builder.unary("not", x, metadata=ctx.metadata))
ad.defjvp_zero(not_p)


def bitwise_and(x, y):
    """Elementwise bitwise AND (logical AND for bool)."""
    return and_p.bind(*promote_scalars("and", x, y))


def bitwise_or(x, y):
    """Elementwise bitwise OR (logical OR for bool)."""
    return or_p.bind(*promote_scalars("or", x, y))


def bitwise_xor(x, y):
    """Elementwise bitwise XOR (logical XOR for bool)."""
    return xor_p.bind(*promote_scalars("xor", x, y))


def bitwise_not(x):
    """Elementwise bitwise NOT (logical NOT for bool)."""
    return not_p.bind(x)


# --------------------------------------------------------------------------- shifts


def _unsigned(x):
    x = np.asarray(x, order="C")
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _shift_impl(kind):
    def impl(x, amount):
        x, amount = np.broadcast_arrays(np.asarray(x), np.asarray(amount))
        bits = x.dtype.itemsize * 8
        # XLA reads the amount as unsigned: negative amounts count as too large.
        too_far = _unsigned(amount) >= bits
        safe = np.where(too_far, 0, _unsigned(amount)).astype(x.dtype)
        if kind == "left":
            return np.where(too_far, np.zeros_like(x), np.left_shift(x, safe))
        if kind == "logical":
            u = _unsigned(x)
            out = np.right_shift(u, safe.astype(u.dtype)).view(x.dtype)
            return np.where(too_far, np.zeros_like(x), out)
        # Sign fill from the top bit, for unsigned types too (as XLA and JAX do).
        sx = np.asarray(x, order="C").view(np.dtype(f"i{x.dtype.itemsize}"))
        fill = np.where(sx < 0, np.array(-1, sx.dtype), np.zeros_like(sx))
        return np.where(too_far, fill, np.right_shift(sx, safe.astype(sx.dtype))).view(x.dtype)
    return impl


shift_left_p = _bitwise_binary("shift_left", _shift_impl("left"), "shift-left")
shift_right_logical_p = _bitwise_binary("shift_right_logical", _shift_impl("logical"),
                                        "shift-right-logical")
shift_right_arithmetic_p = _bitwise_binary("shift_right_arithmetic",
                                           _shift_impl("arithmetic"), "shift-right-arithmetic")


def _int_only(name, prim):
    rule = prim.abstract_eval

    def checked(x, y):
        if x.dtype.kind not in "iu":
            raise TypeError(f"{name} requires integer arguments, got {shapes_text([x, y])}")
        return rule(x, y)
    prim.def_abstract_eval(checked)


for _name, _prim in (("shift_left", shift_left_p), ("shift_right_logical",
                                                     shift_right_logical_p),
                     ("shift_right_arithmetic", shift_right_arithmetic_p)):
    _int_only(_name, _prim)


def shift_left(x, y):
    """x << y; shifts by >= the bit width (or negative amounts) give 0, as in XLA."""
    return shift_left_p.bind(*promote_scalars("shift_left", x, y))


def shift_right_logical(x, y):
    """Logical x >> y (zero fill); shifts by >= the bit width give 0."""
    return shift_right_logical_p.bind(*promote_scalars("shift_right_logical", x, y))


def shift_right_arithmetic(x, y):
    """Arithmetic x >> y (sign fill: the top bit, also for unsigned types, as in XLA); shifts
    by >= the bit width give 0 or all ones."""
    return shift_right_arithmetic_p.bind(*promote_scalars("shift_right_arithmetic", x, y))


# --------------------------------------------------------------------------- popcount / clz


population_count_p = _unary(
    "population_count", xla_popcnt, None, kinds="iu",
    lowering=lambda ctx, x: ctx.builder.unary("popcnt", x, metadata=ctx.metadata))
clz_p = _unary(
    "clz", xla_count_leading_zeros, None, kinds="iu",
    lowering=lambda ctx, x: ctx.builder.unary("count-leading-zeros", x,
                                              metadata=ctx.metadata))
ad.defjvp_zero(population_count_p)
ad.defjvp_zero(clz_p)


def population_count(x):
    """Number of set bits in each element (of the two's-complement pattern)."""
    return population_count_p.bind(x)


def clz(x):
    """Number of leading zero bits in each element."""
    return clz_p.bind(x)


# --------------------------------------------------------------------------- select_n


def select_n(which, *cases):
    """cases[which] elementwise; `which` is bool (at most two cases) or int32, a scalar or
    of the cases' shape. Out-of-range indices clamp to the first/last case."""
    if not cases:
        raise ValueError("select_n must have at least one case")
    cases = promote_scalars("select_n", *cases)
    if len(cases) == 1:
        select_n_p.abstract_eval(get_aval(which), get_aval(cases[0]))
        return cases[0]
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """on_true where pred else on_false (JAX's lax.select)."""
    return select_n(pred, on_false, on_true)


def _select_n_abstract_eval(which, *cases):
    if which.dtype not in (np.bool_, np.int32):
        raise TypeError(f"select_n which must be boolean or int32, got {which.str_short()}")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError(f"select_n with a boolean which takes at most two cases, got "
                        f"{len(cases)}")
    first = cases[0]
    for c in cases[1:]:
        if c.shape != first.shape or c.dtype != first.dtype:
            raise TypeError(f"select_n cases must have the same shapes and dtypes, got "
                            f"{shapes_text(cases)}")
    if which.shape not in ((), first.shape):
        raise TypeError(f"select_n which must be scalar or have the same shape as cases, got "
                        f"which {which.str_short()} and cases {first.str_short()}")
    return ShapedArray(first.shape, first.dtype, all(c.weak_type for c in cases))


def _select_n_impl(which, *cases):
    which = np.asarray(which)
    if which.dtype == np.bool_:
        which = which.astype(np.int32)
    idx = np.clip(which, 0, len(cases) - 1)
    out = np.asarray(cases[0])
    for i, c in enumerate(cases[1:], start=1):
        out = np.where(idx == i, c, out)
    return out


def _select_n_lower(ctx, which, *cases):
    b, md = ctx.builder, ctx.metadata
    shape = out_aval(ctx).shape
    which_aval = ctx.avals_in[0]
    if which_aval.shape != shape:
        which = b.broadcast(which, shape, (), metadata=md)

    def tree(offset, cs):
        if len(cs) == 1:
            return cs[0]
        if which_aval.dtype == np.bool_:
            return b.select(which, cs[1], cs[0], metadata=md)
        mid = len(cs) // 2
        bound = b.constant(np.asarray(offset + mid, np.int32), metadata=md)
        if shape:
            bound = b.broadcast(bound, shape, (), metadata=md)
        pred = b.compare(which, bound, "LT", "SIGNED", metadata=md)
        return b.select(pred, tree(offset, cs[:mid]), tree(offset + mid, cs[mid:]),
                        metadata=md)
    return tree(0, list(cases))


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    t_cases = tangents[1:]
    if all(type(t) is ad.Zero for t in t_cases):
        return out, ad.Zero.from_value(out)
    t_cases = [ad.instantiate_zeros(t) for t in t_cases]
    return out, select_n_p.bind(which, *t_cases)


def _select_n_transpose(ct, which, *cases):
    if ad.is_undefined_primal(which):
        raise ValueError("select_n: transpose with respect to the selector (not linear)")
    out = [None]
    if type(ct) is ad.Zero:
        return out + [None] * len(cases)
    zeros = _zeros(ct)
    for i, case in enumerate(cases):
        if ad.is_undefined_primal(case):
            branches = [zeros] * len(cases)
            branches[i] = ct
            out.append(_ct_for(select_n_p.bind(which, *branches), case))
        else:
            out.append(None)
    return out


def _full_batched(x, d, size, full_shape):
    """x with the batch dim first and the full (unbatched) shape behind it."""
    x = bdim_at_front(x, d, size)
    if get_aval(x).shape[1:] != tuple(full_shape):
        x = broadcast_in_dim(x, (size,) + tuple(full_shape), (0,))
    return x


def _unbatched_shape(x, d):
    shape = get_aval(x).shape
    return shape if d is not_mapped else shape[:d] + shape[d + 1:]


def _select_n_batch(trace, vals, dims):
    size = trace.axis_size
    which, *cases = vals
    wd, *cds = dims
    shape = _unbatched_shape(cases[0], cds[0])
    cases = [_full_batched(c, d, size, shape) for c, d in zip(cases, cds)]
    if not (wd is not_mapped and get_aval(which).ndim == 0):
        which = _full_batched(which, wd, size, shape)
    return select_n_p.bind(which, *cases), 0


select_n_p = standard_primitive("select_n", _select_n_abstract_eval, _select_n_impl)
ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose
batching.primitive_batchers[select_n_p] = _select_n_batch
register_lowering(select_n_p, _select_n_lower)

# --------------------------------------------------------------------------- clamp


def clamp(min, x, max):  # noqa: A002 - JAX's argument names
    """min(max(x, min), max) elementwise; min and max are scalars or of x's shape."""
    min, x, max = promote_scalars("clamp", min, x, max)
    return clamp_p.bind(min, x, max)


def _clamp_abstract_eval(lo, x, hi):
    for bound in (lo, hi):
        if bound.shape not in ((), x.shape):
            raise TypeError(f"clamp requires min and max to be scalars or of the operand's "
                            f"shape, got {shapes_text([lo, x, hi])}")
    aval = same_shape_dtype_rule("clamp", lo, x, hi, allowed_kinds=_ORDERED)
    return aval.update(shape=x.shape)


def _clamp_impl(lo, x, hi):
    return xla_minimum(xla_maximum(x, lo), hi)


def _clamp_lower(ctx, lo, x, hi):
    return ctx.builder.clamp(lo, x, hi, metadata=ctx.metadata)


def _clamp_batch(trace, vals, dims):
    size = trace.axis_size
    (lo, x, hi), (dlo, dx, dhi) = vals, dims
    shape = _unbatched_shape(x, dx)
    x = _full_batched(x, dx, size, shape)
    bounds = []
    for b, d in ((lo, dlo), (hi, dhi)):
        if not (d is not_mapped and get_aval(b).ndim == 0):
            b = _full_batched(b, d, size, shape)
        bounds.append(b)
    return clamp_p.bind(bounds[0], x, bounds[1]), 0


def _clamp_jvp(primals, tangents):
    lo, x, hi = primals
    out = clamp_p.bind(lo, x, hi)
    t_out = ad.Zero.from_value(out)
    z = _zeros(out)
    conds = (lambda: bitwise_and(gt(lo, x), lt(lo, hi)),
             lambda: bitwise_and(gt(x, lo), lt(x, hi)),
             lambda: lt(hi, x))
    for t, cond in zip(tangents, conds):
        if type(t) is not ad.Zero:
            t_out = ad.add_tangents(t_out, select(_brcast(cond(), out), _brcast(t, out), z))
    return out, t_out


clamp_p = standard_primitive("clamp", _clamp_abstract_eval, _clamp_impl)
ad.primitive_jvps[clamp_p] = _clamp_jvp
batching.primitive_batchers[clamp_p] = _clamp_batch
register_lowering(clamp_p, _clamp_lower)

# --------------------------------------------------------------------------- bitcast_convert_type


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits of each element as `new_dtype`. A narrower type adds a trailing
    dimension of size old_bits / new_bits; a wider type consumes the trailing dimension."""
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


def _bitcast_abstract_eval(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    if np.bool_ in (x.dtype, new_dtype):
        raise TypeError(f"bitcast_convert_type does not support bool, got "
                        f"{x.str_short()} -> {new_dtype}")
    old, new = x.dtype.itemsize, new_dtype.itemsize
    if old == new:
        shape = x.shape
    elif new < old:
        shape = x.shape + (old // new,)
    else:
        if not x.shape or x.shape[-1] != new // old:
            raise TypeError(f"bitcast_convert_type: converting {x.str_short()} to the wider "
                            f"{new_dtype} requires a trailing dimension of size {new // old}")
        shape = x.shape[:-1]
    return ShapedArray(shape, new_dtype, False)


def _bitcast_impl(x, *, new_dtype):
    if dtypes.is_python_scalar(x):  # a weak scalar has the canonical width (float32, ...)
        x = np.asarray(x, dtypes.python_scalar_dtype(x))
    return xla_bitcast_convert(np.asarray(x), new_dtype)


def _bitcast_batch(trace, vals, dims, *, new_dtype):
    (x,), (d,) = vals, dims
    aval = get_aval(x)
    if np.dtype(new_dtype).itemsize > aval.dtype.itemsize and d == aval.ndim - 1:
        x, d = bdim_at_front(x, d, trace.axis_size), 0
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


def _bitcast_lower(ctx, x, *, new_dtype):
    out = out_aval(ctx)
    return ctx.builder.add_instruction(
        "bitcast-convert", [x], shape=ctx.shape_of(out),
        metadata=ctx.metadata)


bitcast_convert_type_p = standard_primitive("bitcast_convert_type", _bitcast_abstract_eval,
                                            _bitcast_impl)
ad.defjvp_zero(bitcast_convert_type_p)
batching.primitive_batchers[bitcast_convert_type_p] = _bitcast_batch
register_lowering(bitcast_convert_type_p, _bitcast_lower)
