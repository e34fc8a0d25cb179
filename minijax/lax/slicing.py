"""Slicing primitives: slice, dynamic_slice, dynamic_update_slice, pad.

Each primitive's block holds its wrapper and all of its rules: abstract evaluation, NumPy
implementation (XLA semantics: dynamic start indices are clamped so the window fits, pad
accepts negative and interior padding), JVP, transpose, batching and HLO lowering.
The `*_in_dim` helpers are JAX's conveniences built on these primitives.
"""

from __future__ import annotations

import builtins

import numpy as np

from minijax import core, dtypes
from minijax.array import Array
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, Tracer, get_aval
from minijax.interpreters import ad, batching
from minijax.interpreters.batching import not_mapped
from minijax.lax import elementwise, elementwise_int
from minijax.lax.elementwise import sub
from minijax.lax.gather_scatter import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather_batch_rule,
    scatter_batch_rule,
    scatter_p,
)
from minijax.lax.reductions import reduce_sum
from minijax.lax.structural import (
    bdim_at_front,
    broadcast_in_dim,
    concatenate,
    concatenate_p,
    convert_element_type,
    expand_dims,
    full,
    moveaxis,
    reshape,
    squeeze,
)
from minijax.lax.utils import canonical_axis, is_scalar_literal, promote_scalars, standard_primitive

_pyslice = builtins.slice


def _zeros(aval):
    return core.zeros_like_aval(aval)


def _static_ints(name: str, what: str, values) -> tuple:
    try:
        return tuple(int(v) for v in values)
    except TypeError as e:
        raise TypeError(f"{name}: {what} must be a sequence of static integers, got "
                        f"{values!r}") from e

# --------------------------------------------------------------------------- slice


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001 (JAX's name)
    """Static slice `operand[start:limit:stride]` per dimension (XLA's Slice)."""
    start = _static_ints("slice", "start_indices", start_indices)
    limit = _static_ints("slice", "limit_indices", limit_indices)
    strides = None if strides is None else _static_ints("slice", "strides", strides)
    aval = get_aval(operand)
    if (start == (0,) * aval.ndim and limit == aval.shape
            and (strides is None or all(s == 1 for s in strides))):
        return operand
    return slice_p.bind(operand, start_indices=start, limit_indices=limit, strides=strides)


def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
    shape = x.shape
    if len(start_indices) != x.ndim or len(limit_indices) != x.ndim:
        raise TypeError(f"slice start_indices {start_indices} and limit_indices "
                        f"{limit_indices} must have one entry per dimension of the operand "
                        f"{x.str_short()}")
    if strides is not None and len(strides) != x.ndim:
        raise TypeError(f"slice strides {strides} must have one entry per dimension of the "
                        f"operand {x.str_short()}")
    strides = strides or (1,) * x.ndim
    for s, lim, st, d in zip(start_indices, limit_indices, strides, shape, strict=True):
        if s < 0:
            raise TypeError(f"slice start_indices must be greater than or equal to zero, got "
                            f"start_indices={start_indices} for operand {x.str_short()}")
        if lim > d:
            raise TypeError(f"slice limit_indices must be less than or equal to operand shape,"
                            f" got limit_indices={limit_indices} for operand {x.str_short()}")
        if lim < s:
            raise TypeError(f"slice limit_indices must be greater than or equal to "
                            f"start_indices, got start_indices={start_indices} and "
                            f"limit_indices={limit_indices}")
        if st <= 0:
            raise TypeError(f"slice strides must be positive, got {strides}")
    out = tuple((lim - s + st - 1) // st
                for s, lim, st in zip(start_indices, limit_indices, strides, strict=True))
    return ShapedArray(out, x.dtype, x.weak_type)


def _slice_impl(x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * len(start_indices)
    return np.asarray(x)[tuple(
        _pyslice(s, lim, st) for s, lim, st in zip(start_indices, limit_indices, strides))]


slice_p = standard_primitive("slice", _slice_abstract_eval, _slice_impl)


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    aval = x.aval
    if type(ct) is ad.Zero:
        return [ad.Zero(aval)]
    out_shape = get_aval(ct).shape
    if 0 in out_shape:
        return [_zeros(aval)]
    strides = strides or (1,) * aval.ndim
    config = []
    for s, st, n, d in zip(start_indices, strides, out_shape, aval.shape, strict=True):
        last = s + (n - 1) * st
        config.append((s, d - last - 1, st - 1))
    return [pad(ct, _zero_scalar(aval.dtype), config)]


def _zero_scalar(dtype):
    return Array(np.zeros((), dtype))


def _slice_batch(trace, vals, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = vals, dims
    size = get_aval(x).shape[d]
    start = start_indices[:d] + (0,) + start_indices[d:]
    limit = limit_indices[:d] + (size,) + limit_indices[d:]
    strides = None if strides is None else strides[:d] + (1,) + strides[d:]
    return slice_p.bind(x, start_indices=start, limit_indices=limit, strides=strides), d


def _slice_lower(ctx, x, *, start_indices, limit_indices, strides):
    return ctx.builder.slice(x, start_indices, limit_indices, strides, metadata=ctx.metadata)


ad.deflinear(slice_p, _slice_transpose)
batching.primitive_batchers[slice_p] = _slice_batch
register_lowering(slice_p, _slice_lower)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """Slice along one axis; None means the start/end, negative indices count from the end."""
    aval = get_aval(operand)
    axis = canonical_axis(int(axis), aval.ndim, "slice_in_dim")
    n = aval.shape[axis]
    start = 0 if start_index is None else int(start_index)
    limit = n if limit_index is None else int(limit_index)
    start = start + n if start < 0 else start
    limit = limit + n if limit < 0 else limit
    starts, limits, strides = [0] * aval.ndim, list(aval.shape), [1] * aval.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    """`operand` at static `index` along `axis` (negative counts from the end)."""
    aval = get_aval(operand)
    axis = canonical_axis(int(axis), aval.ndim, "index_in_dim")
    index, n = int(index), aval.shape[axis]
    if not -n <= index < n:
        raise IndexError(f"index_in_dim: index {index} is out of bounds for axis {axis} of "
                         f"size {n}")
    index = index + n if index < 0 else index
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    if keepdims:
        return out
    return squeeze(out, (axis,))

# --------------------------------------------------------------------------- dynamic indices


def _as_index_list(start_indices) -> list:
    """A list of scalar indices from a sequence or a 1-D array of indices."""
    if isinstance(start_indices, (list, tuple)):
        return list(start_indices)
    aval = get_aval(start_indices)
    if aval.ndim != 1:
        raise TypeError(f"start_indices must be a sequence of scalars or a 1-D array, got "
                        f"{aval.str_short()}")
    return [reshape(slice(start_indices, (i,), (i + 1,)), ()) for i in range(aval.shape[0])]


def _dynamic_indices(name: str, shape, start_indices, allow_negative=True) -> list:
    """Indices as scalar arrays of one integer dtype; negative indices wrap as in JAX (per
    dimension where `allow_negative`, a bool or one bool per dimension; elsewhere a static
    negative index is an error and a traced one is clamped like any out-of-bounds one)."""
    indices = _as_index_list(start_indices)
    if len(indices) != len(shape):
        raise TypeError(f"{name}: got {len(indices)} start indices for an operand of rank "
                        f"{len(shape)} (shape {tuple(shape)}); give one index per dimension")
    allow = [bool(allow_negative)] * len(shape) if isinstance(allow_negative, (bool, np.bool_)) \
        else [bool(a) for a in allow_negative]
    if len(allow) != len(shape):
        raise ValueError(f"{name}: allow_negative_indices has {len(allow)} entries for an "
                         f"operand of rank {len(shape)}")
    for i in indices:
        aval = get_aval(i)
        if aval.ndim != 0 or not (dtypes.is_integer(aval.dtype)):
            raise TypeError(f"{name}: start indices must be integer scalars, got "
                            f"{aval.str_short()}")
    array_dtypes = [get_aval(i).dtype for i in indices if not is_scalar_literal(i)]
    dtype = dtypes.result_type(*array_dtypes) if array_dtypes else np.dtype("int32")
    out = []
    for i, d, wrap in zip(indices, shape, allow, strict=True):
        if isinstance(i, Tracer):
            i = convert_element_type(i, dtype)
            out.append(_wrap_negative(i, d, dtype) if wrap else i)
        else:
            v = int(np.asarray(i))
            if v < 0 and not wrap:
                if isinstance(i, (int, np.integer)):   # as JAX: static indices are checked
                    raise ValueError(f"Index {v} is out of bounds for dimension {d} if "
                                     "allow_negative_indices=False")
            elif v < 0:
                v = v + d
            out.append(Array(np.asarray(v, dtype)))
    return out


def _wrap_negative(i, d, dtype):
    if np.dtype(dtype).kind == "u":
        return i
    zero, size = Array(np.asarray(0, dtype)), Array(np.asarray(d, dtype))
    return elementwise_int.select_n(elementwise_int.lt(i, zero), i, elementwise.add(i, size))


def _check_indices(name, operand, indices):
    if len(indices) != operand.ndim:
        raise TypeError(f"{name}: got {len(indices)} start indices for operand "
                        f"{operand.str_short()}; give one index per dimension")
    for i in indices:
        if i.ndim != 0 or not dtypes.is_integer(i.dtype):
            raise TypeError(f"{name}: start indices must be integer scalars, got "
                            f"{', '.join(a.str_short() for a in indices)}")
    if len({i.dtype for i in indices}) > 1:
        raise TypeError(f"{name}: start indices must have the same dtype, got "
                        f"{', '.join(a.str_short() for a in indices)}")


def _clamped_starts(indices, shape, sizes):
    return [int(np.clip(int(np.asarray(i)), 0, d - s))
            for i, d, s in zip(indices, shape, sizes, strict=True)]


def _index_vector(indices, dims, size):
    """Batched scalar indices as one (size, n) index array for gather/scatter."""
    dtype = get_aval(next(i for i, d in zip(indices, dims, strict=True)
                          if d is not not_mapped)).dtype
    cols = [reshape(bdim_at_front(convert_element_type(i, dtype), d, size), (size, 1))
            for i, d in zip(indices, dims, strict=True)]
    if not cols:
        return None
    return concatenate(cols, 1) if len(cols) > 1 else cols[0]

# --------------------------------------------------------------------------- dynamic_slice


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """Slice of static `slice_sizes` at dynamic `start_indices` (XLA's DynamicSlice: start
    indices are clamped so the slice lies inside the operand; negative ones wrap unless
    `allow_negative_indices` is False for that dimension)."""
    aval = get_aval(operand)
    sizes = _static_ints("dynamic_slice", "slice_sizes", slice_sizes)
    indices = _dynamic_indices("dynamic_slice", aval.shape, start_indices,
                               allow_negative_indices)
    return dynamic_slice_p.bind(operand, *indices, slice_sizes=sizes)


def _dynamic_slice_abstract_eval(x, *indices, slice_sizes):
    _check_indices("dynamic_slice", x, indices)
    if len(slice_sizes) != x.ndim:
        raise TypeError(f"dynamic_slice: slice_sizes {slice_sizes} must have one entry per "
                        f"dimension of the operand {x.str_short()}")
    for s, d in zip(slice_sizes, x.shape, strict=True):
        if not 0 <= s <= d:
            raise TypeError(f"dynamic_slice: slice_sizes {slice_sizes} must be non-negative "
                            f"and at most the operand shape, operand {x.str_short()}")
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _dynamic_slice_impl(x, *indices, slice_sizes):
    x = np.asarray(x)
    starts = _clamped_starts(indices, x.shape, slice_sizes)
    return x[tuple(_pyslice(s, s + n) for s, n in zip(starts, slice_sizes, strict=True))]


dynamic_slice_p = standard_primitive(
    "dynamic_slice", _dynamic_slice_abstract_eval, _dynamic_slice_impl)
ad.defjvp(dynamic_slice_p,
          lambda g, x, *indices, slice_sizes: dynamic_slice_p.bind(
              g, *indices, slice_sizes=slice_sizes))


def _dynamic_slice_transpose(ct, x, *indices, slice_sizes):
    aval = x.aval
    none = [None] * len(indices)
    if type(ct) is ad.Zero:
        return [ad.Zero(aval)] + none
    return [dynamic_update_slice_p.bind(_zeros(aval), ct, *indices)] + none


def _dynamic_slice_batch(trace, vals, dims, *, slice_sizes):
    x, *indices = vals
    xd, *idims = dims
    size = trace.axis_size
    if all(d is not_mapped for d in idims):
        dtype = get_aval(indices[0]).dtype if indices else np.dtype("int32")
        indices = list(indices)
        indices.insert(xd, _zero_scalar(dtype))
        sizes = slice_sizes[:xd] + (size,) + slice_sizes[xd:]
        return dynamic_slice_p.bind(x, *indices, slice_sizes=sizes), xd
    dims_all = tuple(range(len(slice_sizes)))
    dnums = GatherDimensionNumbers(offset_dims=dims_all, collapsed_slice_dims=(),
                                   start_index_map=dims_all)
    index = _index_vector(indices, idims, size)
    return gather_batch_rule(trace, [x, index], [xd, 0], dimension_numbers=dnums,
                             slice_sizes=slice_sizes, unique_indices=True,
                             indices_are_sorted=True,
                             mode=GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)


def _dynamic_slice_lower(ctx, x, *indices, slice_sizes):
    return ctx.builder.dynamic_slice(x, indices, slice_sizes, metadata=ctx.metadata)


ad.primitive_transposes[dynamic_slice_p] = _dynamic_slice_transpose
batching.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batch
register_lowering(dynamic_slice_p, _dynamic_slice_lower)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *,
                         allow_negative_indices=True):
    """dynamic_slice along one axis (full extent elsewhere)."""
    aval = get_aval(operand)
    axis = canonical_axis(int(axis), aval.ndim, "dynamic_slice_in_dim")
    starts = [0] * aval.ndim
    starts[axis] = start_index
    sizes = list(aval.shape)
    sizes[axis] = int(slice_size)
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *,
                         allow_negative_indices=True):
    """`operand` at dynamic `index` along `axis` (clamped like dynamic_slice)."""
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    if keepdims:
        return out
    return squeeze(out, (canonical_axis(int(axis), get_aval(operand).ndim, "index"),))

# --------------------------------------------------------------------------- dynamic_update_slice


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """`operand` with `update` written at dynamic `start_indices` (XLA's DynamicUpdateSlice:
    start indices are clamped so the update fits; negative ones wrap unless
    `allow_negative_indices` is False for that dimension)."""
    aval = get_aval(operand)
    indices = _dynamic_indices("dynamic_update_slice", aval.shape, start_indices,
                               allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *indices)


def _dus_abstract_eval(x, update, *indices):
    _check_indices("dynamic_update_slice", x, indices)
    if update.ndim != x.ndim:
        raise TypeError(f"dynamic_update_slice: update {update.str_short()} must have the same "
                        f"rank as the operand {x.str_short()}")
    if update.dtype != x.dtype:
        raise TypeError(f"dynamic_update_slice: update {update.str_short()} must have the same "
                        f"dtype as the operand {x.str_short()}")
    if any(u > d for u, d in zip(update.shape, x.shape, strict=True)):
        raise TypeError(f"dynamic_update_slice: update {update.str_short()} must not be larger "
                        f"than the operand {x.str_short()} in any dimension")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _dus_impl(x, update, *indices):
    x, update = np.asarray(x), np.asarray(update)
    starts = _clamped_starts(indices, x.shape, update.shape)
    out = x.copy()
    out[tuple(_pyslice(s, s + n) for s, n in zip(starts, update.shape, strict=True))] = update
    return out


dynamic_update_slice_p = standard_primitive(
    "dynamic_update_slice", _dus_abstract_eval, _dus_impl)


def _dus_jvp(primals, tangents):
    x, update, *indices = primals
    gx, gu = tangents[0], tangents[1]
    out = dynamic_update_slice_p.bind(x, update, *indices)
    if type(gx) is ad.Zero and type(gu) is ad.Zero:
        return out, ad.Zero.from_value(out)
    return out, dynamic_update_slice_p.bind(ad.instantiate_zeros(gx),
                                            ad.instantiate_zeros(gu), *indices)


def _dus_transpose(ct, x, update, *indices):
    none = [None] * len(indices)
    x_aval = x.aval if ad.is_undefined_primal(x) else get_aval(x)
    u_aval = update.aval if ad.is_undefined_primal(update) else get_aval(update)
    if type(ct) is ad.Zero:
        return [ad.Zero(x_aval), ad.Zero(u_aval)] + none
    ct_x = (dynamic_update_slice_p.bind(ct, _zeros(u_aval), *indices)
            if ad.is_undefined_primal(x) else None)
    ct_u = (dynamic_slice_p.bind(ct, *indices, slice_sizes=u_aval.shape)
            if ad.is_undefined_primal(update) else None)
    return [ct_x, ct_u] + none


def _dus_batch(trace, vals, dims):
    x, update, *indices = vals
    xd, ud, *idims = dims
    size = trace.axis_size
    x = bdim_at_front(x, xd, size)
    update = bdim_at_front(update, ud, size)
    if all(d is not_mapped for d in idims):
        dtype = get_aval(indices[0]).dtype if indices else np.dtype("int32")
        return dynamic_update_slice_p.bind(x, update, _zero_scalar(dtype), *indices), 0
    ndim = len(indices)
    dnums = ScatterDimensionNumbers(update_window_dims=tuple(range(ndim)),
                                    inserted_window_dims=(),
                                    scatter_dims_to_operand_dims=tuple(range(ndim)))
    index = _index_vector(indices, idims, size)
    return scatter_batch_rule(scatter_p, trace, [x, index, update], [0, 0, 0],
                              dimension_numbers=dnums, indices_are_sorted=True,
                              unique_indices=True, mode=GatherScatterMode.CLIP)


def _dus_lower(ctx, x, update, *indices):
    return ctx.builder.dynamic_update_slice(x, update, indices, metadata=ctx.metadata)


ad.primitive_jvps[dynamic_update_slice_p] = _dus_jvp
ad.primitive_transposes[dynamic_update_slice_p] = _dus_transpose
batching.primitive_batchers[dynamic_update_slice_p] = _dus_batch
register_lowering(dynamic_update_slice_p, _dus_lower)


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *,
                                allow_negative_indices=True):
    """dynamic_update_slice at `start_index` along `axis` (0 elsewhere)."""
    aval = get_aval(operand)
    axis = canonical_axis(int(axis), aval.ndim, "dynamic_update_slice_in_dim")
    starts = [0] * aval.ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis, *,
                                allow_negative_indices=True):
    """Write `update` at `index` along `axis`; `update` may lack that axis."""
    aval = get_aval(operand)
    axis = canonical_axis(int(axis), aval.ndim, "dynamic_update_index_in_dim")
    if get_aval(update).ndim == aval.ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)

# --------------------------------------------------------------------------- pad


def pad(operand, padding_value, padding_config):
    """Pad with `padding_value`: per dimension (low, high, interior); low/high may be
    negative (cropping), interior is inserted between elements (XLA's Pad)."""
    config = tuple(_static_ints("pad", "padding_config entries", p) for p in padding_config)
    if any(len(p) != 3 for p in config):
        raise TypeError(f"pad: padding_config entries must be (low, high, interior) "
                        f"triples, got {padding_config!r}")
    operand, padding_value = promote_scalars("pad", operand, padding_value)
    return pad_p.bind(operand, padding_value, padding_config=config)


def _padded_size(n, lo, hi, interior):
    return lo + hi + n + max(n - 1, 0) * interior


def _pad_abstract_eval(x, pv, *, padding_config):
    if pv.ndim != 0:
        raise TypeError(f"pad: padding_value must be a scalar, got {pv.str_short()}")
    if pv.dtype != x.dtype:
        raise TypeError(f"pad: operand and padding_value must have the same dtype, got "
                        f"{x.str_short()} and {pv.str_short()}")
    if len(padding_config) != x.ndim:
        raise TypeError(f"pad: padding_config {padding_config} must have one (low, high, "
                        f"interior) entry per dimension of the operand {x.str_short()}")
    if any(i < 0 for _, _, i in padding_config):
        raise TypeError(f"pad: interior padding in padding_config must be non-negative, got "
                        f"{padding_config}")
    shape = tuple(_padded_size(n, *p) for n, p in zip(x.shape, padding_config, strict=True))
    if any(d < 0 for d in shape):
        raise TypeError(f"pad: dimension size after padding is negative: padding "
                        f"{x.str_short()} with {padding_config} gives shape {shape}")
    return ShapedArray(shape, x.dtype, x.weak_type and pv.weak_type)


def _pad_impl(x, pv, *, padding_config):
    x = np.asarray(x)
    shape = tuple(_padded_size(n, *p) for n, p in zip(x.shape, padding_config, strict=True))
    out = np.full(shape, np.asarray(pv), dtype=x.dtype)
    src, dst = [], []
    for n, size, (lo, _, interior) in zip(x.shape, shape, padding_config, strict=True):
        step = interior + 1
        # Element i lands at lo + i * step; keep those inside [0, size).
        first = max(0, -(lo // step)) if lo < 0 else 0
        last = min(n, (size - 1 - lo) // step + 1) if size > 0 else 0
        if last <= first:
            return out
        src.append(_pyslice(first, last))
        dst.append(_pyslice(lo + first * step, lo + (last - 1) * step + 1, step))
    out[tuple(dst)] = x[tuple(src)]
    return out


pad_p = standard_primitive("pad", _pad_abstract_eval, _pad_impl)


def _pad_transpose(ct, x, pv, *, padding_config):
    x_aval = x.aval if ad.is_undefined_primal(x) else get_aval(x)
    pv_aval = pv.aval if ad.is_undefined_primal(pv) else get_aval(pv)
    if type(ct) is ad.Zero:
        return [ad.Zero(x_aval) if ad.is_undefined_primal(x) else None,
                ad.Zero(pv_aval) if ad.is_undefined_primal(pv) else None]
    unpad = [(-lo, -hi, 0) for lo, hi, _ in padding_config]
    unpadded = pad_p.bind(ct, _zero_scalar(x_aval.dtype), padding_config=tuple(unpad))
    ct_x = slice(unpadded, (0,) * x_aval.ndim, get_aval(unpadded).shape,
                 tuple(i + 1 for _, _, i in padding_config))
    ct_pv = None
    if ad.is_undefined_primal(pv):
        axes = tuple(range(x_aval.ndim))
        ct_pv = sub(reduce_sum(ct, axes), reduce_sum(ct_x, axes))
    return [ct_x if ad.is_undefined_primal(x) else None, ct_pv]


def _pad_batch(trace, vals, dims, *, padding_config):
    (x, pv), (xd, pd) = vals, dims
    size = trace.axis_size
    if pd is not_mapped:
        config = padding_config[:xd] + ((0, 0, 0),) + padding_config[xd:]
        return pad_p.bind(x, pv, padding_config=config), xd
    x = bdim_at_front(x, xd, size)
    pv = moveaxis(pv, pd, 0)
    config = ((0, 0, 0),) + padding_config
    aval = get_aval(x)
    mask = pad_p.bind(full(aval.shape, True, np.bool_), _bool_scalar(False),
                      padding_config=config)
    padded = pad_p.bind(x, _zero_scalar(aval.dtype), padding_config=config)
    out_shape = get_aval(padded).shape
    return elementwise_int.select_n(mask, broadcast_in_dim(pv, out_shape, (0,)), padded), 0


def _bool_scalar(v):
    return Array(np.asarray(v, np.bool_))


def _pad_lower(ctx, x, pv, *, padding_config):
    return ctx.builder.pad(x, pv, padding_config, metadata=ctx.metadata)


ad.deflinear(pad_p, _pad_transpose)
batching.primitive_batchers[pad_p] = _pad_batch
register_lowering(pad_p, _pad_lower)


# concatenate's transpose slices the cotangent (concatenate is in structural.py).


def _concatenate_transpose(ct, *xs, dimension):
    avals = [x.aval if ad.is_undefined_primal(x) else get_aval(x) for x in xs]
    if type(ct) is ad.Zero:
        return [ad.Zero(a) if ad.is_undefined_primal(x) else None
                for a, x in zip(avals, xs, strict=True)]
    out, start = [], 0
    for a, x in zip(avals, xs, strict=True):
        n = a.shape[dimension]
        out.append(slice_in_dim(ct, start, start + n, 1, dimension)
                   if ad.is_undefined_primal(x) else None)
        start += n
    return out


ad.deflinear(concatenate_p, _concatenate_transpose)
