"""Sorting: sort (one or several operands, lexicographic on the first num_keys), sort_key_val
and top_k. Sort keys follow JAX: floats are canonicalized (-0.0 becomes 0.0, every NaN one
positive NaN) and then compared in total order, so -0.0 and 0.0 tie (a stable sort keeps
their input order) and NaNs go last, all equal. top_k compares in XLA's total order as
JAX's does: -0.0 below 0.0, a NaN with the sign bit set below everything (it comes last) and
a positive NaN above everything.

JVPs gather the tangents by the sorting permutation with `lax.gather` (one index per
element, the other axes as batching dimensions), so reverse mode is gather's transpose,
scatter-add. Sorts lower to an XLA sort with a comparator computation; top_k lowers to XLA's
topk instruction (k=, largest=true), as JAX does.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.compiler.hlo.ir import Shape
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.lax.gather_scatter import GatherDimensionNumbers, GatherScatterMode, gather
from minijax.lax.structural import bdim_at_front, broadcasted_iota, moveaxis, reshape
from minijax.lax.utils import canonical_axis, standard_primitive


def order_key(x, tie_zeros: bool = True) -> list[np.ndarray]:
    """uint64 arrays whose lexicographic order is JAX's sort order of x (two for complex:
    real part, then imaginary part); `tie_zeros=False` is XLA's plain total order (top_k):
    -0.0 below 0.0 and NaNs kept apart by their sign bit."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return order_key(x.real, tie_zeros) + order_key(x.imag, tie_zeros)
    if dtypes.kind(x.dtype) == "f":
        f = x.astype(np.float64)
        if tie_zeros:
            f = np.where(f == 0, 0.0, f)
        if tie_zeros:
            f = np.where(np.isnan(f), np.nan, f)  # one positive NaN
        else:  # total order: only the NaN's sign counts (float64 keeps it)
            f = np.where(np.isnan(f), np.copysign(np.nan, f), f)
        bits = f.view(np.uint64)
        sign = np.uint64(1 << 63)
        return [np.where(bits & sign, ~bits, bits | sign)]
    if x.dtype.kind == "i":
        return [x.astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63)]
    return [x.astype(np.uint64)]


def sort_permutation(keys, axis: int) -> np.ndarray:
    """The stable permutation that sorts `keys` (most significant first) along `axis`."""
    subkeys = [k for key in keys for k in order_key(key)]
    if not subkeys or subkeys[0].ndim == 0:
        return np.zeros(np.shape(keys[0]), np.int64)
    return np.lexsort(subkeys[::-1], axis=axis)


# --------------------------------------------------------------------------- sort


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort `operand` (an array, or a sequence of equally shaped arrays sorted together by
    their first `num_keys` arrays) along `dimension`."""
    if isinstance(operand, (list, tuple)):
        operands = tuple(operand)
        if not operands:
            raise ValueError("sort requires at least one operand")
        ndim = get_aval(operands[0]).ndim
        dim = canonical_axis(dimension, ndim, "sort") if ndim else dimension
        return tuple(sort_p.bind(*operands, dimension=dim, is_stable=bool(is_stable),
                                 num_keys=int(num_keys)))
    ndim = get_aval(operand).ndim
    dim = canonical_axis(dimension, ndim, "sort") if ndim else dimension
    if num_keys != 1:
        raise ValueError(f"sort: num_keys={num_keys} must be 1 for a single operand")
    return sort_p.bind(operand, dimension=dim, is_stable=bool(is_stable), num_keys=1)[0]


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sort `keys` along `dimension` and apply the same permutation to `values`."""
    k, v = sort((keys, values), dimension, is_stable, num_keys=1)
    return k, v


def _sort_abstract_eval(*avals, dimension, is_stable, num_keys):
    shapes = ", ".join(a.str_short() for a in avals)
    if not avals:
        raise ValueError("sort requires at least one operand")
    shape = avals[0].shape
    if any(a.shape != shape for a in avals):
        raise TypeError(f"sort: all operands must have the same shape, got {shapes}")
    if not 0 <= dimension < max(len(shape), 1) or not shape:
        raise ValueError(f"sort: dimension {dimension} is out of bounds for operands {shapes}")
    if not 1 <= num_keys <= len(avals):
        raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                         f"operands ({len(avals)})")
    return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in avals]


def _sort_impl(*operands, dimension, is_stable, num_keys):
    operands = [np.asarray(o) for o in operands]
    perm = sort_permutation(operands[:num_keys], dimension)
    return [np.take_along_axis(o, perm, axis=dimension) for o in operands]


sort_p = standard_primitive("sort", _sort_abstract_eval, _sort_impl, multiple_results=True)


def _take_along(t, idx, axis):
    """t[..., idx, ...] along `axis`: the gather behind the sort and top_k JVPs. `idx`
    (in bounds, distinct along `axis`) matches t's shape except on `axis`."""
    shape = get_aval(idx).shape
    if get_aval(t).shape[axis] == 0:
        return t  # idx is empty along axis too: nothing to gather (and no size-1 slice)
    ndim = len(shape)
    batch = tuple(d for d in range(ndim) if d != axis)
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                   start_index_map=(axis,), operand_batching_dims=batch,
                                   start_indices_batching_dims=batch)
    return gather(t, reshape(idx, shape + (1,)), dnums, (1,) * ndim, unique_indices=True,
                  mode=GatherScatterMode.PROMISE_IN_BOUNDS)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = get_aval(primals[0]).shape
    index_dtype = np.int32 if shape[dimension] < 2**31 - 1 else np.int64
    iota = broadcasted_iota(index_dtype, shape, dimension)
    outs = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                       num_keys=num_keys)
    perm = outs[-1]
    t_out = [t if type(t) is ad.Zero else _take_along(t, perm, dimension)
             for t in tangents]
    return outs[:-1], t_out


def _sort_batch(trace, vals, dims, *, dimension, is_stable, num_keys):
    ops = [bdim_at_front(v, d, trace.axis_size) for v, d in zip(vals, dims, strict=True)]
    outs = sort_p.bind(*ops, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


def _compare_total(cb, a, b, direction, dtype):
    """Comparison in JAX's sort order (floats: zeros and NaNs canonicalized, then
    TOTALORDER)."""
    if dtypes.kind(np.dtype(dtype)) == "f":
        nan = cb.constant(np.asarray(np.nan, dtype))
        zero = cb.constant(np.asarray(0, dtype))
        a = cb.select(cb.compare(a, a, "NE"), nan, cb.select(cb.compare(a, zero, "EQ"), zero, a))
        b = cb.select(cb.compare(b, b, "NE"), nan, cb.select(cb.compare(b, zero, "EQ"), zero, b))
        return cb.compare(a, b, direction, "TOTALORDER")
    return cb.compare(a, b, direction)


def sort_comparator(ctx, avals, num_keys, descending=False):
    """An HLO comparator: lexicographic `less than` on the first num_keys operands."""
    cb = ctx.new_computation("sort_comparator" if not descending else "sort_comparator_desc")
    params = []
    for i, a in enumerate(avals):
        et = ctx.element_type(a.dtype)
        params.append((cb.parameter(2 * i, Shape(et, ())), cb.parameter(2 * i + 1,
                                                                        Shape(et, ()))))
    # A complex key is two real keys, its real then its imaginary part (JAX's order).
    keys = []
    for i in range(num_keys):
        x, y = params[i]
        dtype = np.dtype(avals[i].dtype)
        if dtype.kind == "c":
            real = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
            shape = Shape(ctx.element_type(real), ())
            for part in ("real", "imag"):
                keys.append((cb.add_instruction(part, [x], shape=shape),
                             cb.add_instruction(part, [y], shape=shape), real))
        else:
            keys.append((x, y, dtype))
    result = None
    for x, y, dtype in reversed(keys):
        less = _compare_total(cb, x, y, "GT" if descending else "LT", dtype)
        if result is None:
            result = less
        else:
            result = cb.or_(less, cb.and_(_compare_total(cb, x, y, "EQ", dtype), result))
    cb.set_root(result)
    return cb.computation


def _sort_lower(ctx, *operands, dimension, is_stable, num_keys):
    b = ctx.builder
    comp = sort_comparator(ctx, ctx.avals_in, num_keys)
    out = b.sort(list(operands), dimension, comp, is_stable=is_stable, metadata=ctx.metadata)
    if len(operands) == 1:
        return [out]
    return [b.get_tuple_element(out, i) for i in range(len(operands))]


ad.primitive_jvps[sort_p] = _sort_jvp
batching.primitive_batchers[sort_p] = _sort_batch
register_lowering(sort_p, _sort_lower)

# --------------------------------------------------------------------------- top_k


def top_k(operand, k: int, *, axis: int = -1):
    """The `k` largest entries along `axis` (default the last; descending, in XLA's total
    order as JAX: a positive NaN is largest, a negative NaN smallest, -0.0 below 0.0) and
    their int32 indices; ties keep the lower index first."""
    ndim = get_aval(operand).ndim
    if axis in (-1, ndim - 1) or ndim == 0:
        return tuple(top_k_p.bind(operand, k=int(k)))
    axis = canonical_axis(axis, ndim, "top_k")
    values, indices = top_k_p.bind(moveaxis(operand, axis, -1), k=int(k))
    return moveaxis(values, -1, axis), moveaxis(indices, -1, axis)


def _top_k_abstract_eval(x, *, k):
    if x.ndim < 1:
        raise ValueError(f"top_k operand must have >= 1 dimension, got {x.str_short()}")
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    if k > x.shape[-1]:
        raise ValueError(f"k argument to top_k must be no larger than minor dimension; {k} vs "
                         f"{x.str_short()}")
    if x.dtype.kind == "c":
        raise TypeError(f"top_k does not accept complex operands, got {x.str_short()}")
    shape = x.shape[:-1] + (k,)
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.int32)]


def _top_k_impl(x, *, k):
    x = np.asarray(x)
    (key,) = order_key(x, tie_zeros=False)
    perm = np.argsort(~key, axis=-1, kind="stable")[..., :k]
    return [np.take_along_axis(x, perm, axis=-1), perm.astype(np.int32)]


top_k_p = standard_primitive("top_k", _top_k_abstract_eval, _top_k_impl,
                             multiple_results=True)


def _top_k_jvp(primals, tangents, *, k):
    (x,), (t,) = primals, tangents
    values, indices = top_k_p.bind(x, k=k)
    if type(t) is ad.Zero or not dtypes.is_inexact(get_aval(x).dtype):
        return [values, indices], [ad.Zero.from_value(values), ad.Zero.from_value(indices)]
    ndim = get_aval(x).ndim
    t_out = _take_along(t, indices, ndim - 1)
    return [values, indices], [t_out, ad.Zero.from_value(indices)]


def _top_k_batch(trace, vals, dims, *, k):
    (x,), (d,) = vals, dims
    if d == get_aval(x).ndim - 1:
        x, d = bdim_at_front(x, d, trace.axis_size), 0
    return top_k_p.bind(x, k=k), [d, d]


def _top_k_lower(ctx, x, *, k):
    # XLA's topk instruction, as JAX emits it (the evaluator partitions instead of sorting).
    b = ctx.builder
    aval = ctx.avals_in[0]
    dims = aval.shape[:-1] + (k,)
    shape = Shape.tuple([Shape(x.shape.element_type, dims), Shape("s32", dims)])
    out = b.add_instruction("topk", [x], {"k": k, "largest": True}, shape=shape,
                            metadata=ctx.metadata)
    return [b.get_tuple_element(out, i) for i in range(2)]


ad.primitive_jvps[top_k_p] = _top_k_jvp
batching.primitive_batchers[top_k_p] = _top_k_batch
register_lowering(top_k_p, _top_k_lower)
