"""gather and the scatter family (scatter, scatter-add, scatter-mul, scatter-min, scatter-max).

Dimension numbers are JAX's namedtuples (the index vector dimension is always the last
dimension of the indices). Out-of-bounds handling follows `GatherScatterMode`:

- CLIP: indices are clamped so the whole window is in bounds;
- FILL_OR_DROP: a gather window that is not fully in bounds is filled with `fill_value`;
  a scatter window that is not fully in bounds is dropped;
- PROMISE_IN_BOUNDS: XLA's native behaviour (gathers clamp, scatters drop).

`lax.gather` defaults to PROMISE_IN_BOUNDS and the scatters to FILL_OR_DROP, as in JAX.
Each primitive's rules (abstract eval, NumPy impl, batching, lowering; gather's JVP and
transpose) are registered below; the scatters' JVP/transpose rules are in
gather_scatter_ad.py. Batching adds batch dimensions through operand_batching_dims.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np

from minijax import core, dtypes
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.interpreters.batching import not_mapped
from minijax.lax.elementwise import neg
from minijax.lax.structural import bdim_at_front, moveaxis
from minijax.lax.utils import standard_primitive


class GatherDimensionNumbers(NamedTuple):
    """How operand, start_indices and output dimensions of a gather relate (as jax.lax)."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How operand, scatter_indices and updates dimensions of a scatter relate."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
    """How a gather or scatter handles out-of-bounds indices (see the module docstring)."""

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    def __repr__(self) -> str:
        return f"GatherScatterMode.{self.name}"

    @staticmethod
    def from_any(s):
        """Parse a mode: a GatherScatterMode, 'clip', 'fill'/'drop'/None, 'promise_in_bounds'."""
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f'Unknown gather mode "{s}"')


def _canonical_dnums(cls, dnums):
    if not isinstance(dnums, cls):
        raise TypeError(f"dimension_numbers must be a lax.{cls.__name__}, got "
                        f"{type(dnums).__name__}: {dnums!r}")
    return cls(*(tuple(int(d) for d in field) for field in dnums))


def _default_fill_value(dtype):
    dtype = np.dtype(dtype)
    if dtypes.kind(dtype) in "fc":
        return float("nan")
    if dtype.kind == "i":
        return int(np.iinfo(dtype).min)
    if dtype.kind == "u":
        return int(np.iinfo(dtype).max)
    return True


def _zeros(aval):
    return core.zeros_like_aval(aval)

# --------------------------------------------------------------------------- shape rules


def _fail(name, operand, indices, dnums, problem):
    raise TypeError(f"{name}: {problem} (operand {operand.str_short()}, indices "
                    f"{indices.str_short()}, {dnums})")


def _check_dims(name, operand, indices, dnums, what, dims, bound, need_sorted=True):
    if any(not 0 <= d < bound for d in dims):
        _fail(name, operand, indices, dnums, f"{what} {dims} must be in the range [0, {bound})")
    if len(set(dims)) != len(dims) or (need_sorted and list(dims) != sorted(dims)):
        _fail(name, operand, indices, dnums, f"{what} {dims} must be "
              f"{'sorted and ' if need_sorted else ''}without repeats")


def _check_common(name, operand, indices, dnums, window_dims_out, out_rank, removed,
                  start_map, operand_batch, index_batch, names):
    """Checks shared by gather and scatter; `names` are the JAX field names used."""
    if not dtypes.is_integer(indices.dtype):
        _fail(name, operand, indices, dnums, "indices must have an integer dtype")
    if indices.ndim < 1:
        _fail(name, operand, indices, dnums, "indices must have rank >= 1 (the last "
              "dimension is the index vector)")
    _check_dims(name, operand, indices, dnums, names[0], window_dims_out, out_rank)
    _check_dims(name, operand, indices, dnums, names[1], removed, operand.ndim)
    _check_dims(name, operand, indices, dnums, "operand_batching_dims", operand_batch,
                operand.ndim)
    _check_dims(name, operand, indices, dnums, names[2], start_map, operand.ndim, False)
    _check_dims(name, operand, indices, dnums, names[3], index_batch, indices.ndim - 1, False)
    if set(removed) & set(operand_batch):
        _fail(name, operand, indices, dnums, f"{names[1]} and operand_batching_dims overlap")
    if set(start_map) & set(operand_batch):
        _fail(name, operand, indices, dnums, f"{names[2]} and operand_batching_dims overlap")
    if len(start_map) != indices.shape[-1]:
        _fail(name, operand, indices, dnums, f"{names[2]} has {len(start_map)} entries but "
              f"the index vector (last dimension of indices) has size {indices.shape[-1]}")
    if len(operand_batch) != len(index_batch):
        _fail(name, operand, indices, dnums, f"operand_batching_dims and {names[3]} must "
              "have the same length")
    for o, i in zip(operand_batch, index_batch, strict=True):
        if operand.shape[o] != indices.shape[i]:
            _fail(name, operand, indices, dnums, f"operand batching dimension {o} has size "
                  f"{operand.shape[o]} but indices batching dimension {i} has size "
                  f"{indices.shape[i]}")
    n_window = operand.ndim - len(removed) - len(operand_batch)
    if len(window_dims_out) != n_window:
        _fail(name, operand, indices, dnums, f"{names[0]} must have {n_window} entries (one "
              f"per operand dimension that is not in {names[1]} or operand_batching_dims)")
    return [d for d in range(operand.ndim) if d not in removed and d not in operand_batch]


def _gather_abstract_eval(operand, indices, *, dimension_numbers, slice_sizes,
                          unique_indices, indices_are_sorted, mode, fill_value):
    dn = dimension_numbers
    out_rank = len(dn.offset_dims) + max(indices.ndim - 1, 0)
    window = _check_common("gather", operand, indices, dn, dn.offset_dims, out_rank,
                           dn.collapsed_slice_dims, dn.start_index_map,
                           dn.operand_batching_dims, dn.start_indices_batching_dims,
                           ("offset_dims", "collapsed_slice_dims", "start_index_map",
                            "start_indices_batching_dims"))
    if len(slice_sizes) != operand.ndim:
        _fail("gather", operand, indices, dn, f"slice_sizes {slice_sizes} must have one entry "
              "per operand dimension")
    for s, d in zip(slice_sizes, operand.shape, strict=True):
        if not 0 <= s <= d:
            _fail("gather", operand, indices, dn, f"slice_sizes {slice_sizes} must be "
                  "non-negative and at most the operand shape")
    for d in dn.collapsed_slice_dims + dn.operand_batching_dims:
        if slice_sizes[d] > 1:
            _fail("gather", operand, indices, dn, f"slice_sizes[{d}] = {slice_sizes[d]} but "
                  "collapsed and batching dimensions must have slice size 1")
    offsets = iter(slice_sizes[d] for d in window)
    batch = iter(indices.shape[:-1])
    shape = tuple(next(offsets) if p in dn.offset_dims else next(batch)
                  for p in range(out_rank))
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _scatter_abstract_eval_for(name):
    def rule(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
             unique_indices, mode):
        dn = dimension_numbers
        if updates.dtype != operand.dtype:
            raise TypeError(f"{name}: updates {updates.str_short()} must have the same dtype "
                            f"as the operand {operand.str_short()}")
        window = _check_common(name, operand, indices, dn, dn.update_window_dims,
                               updates.ndim, dn.inserted_window_dims,
                               dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                               dn.scatter_indices_batching_dims,
                               ("update_window_dims", "inserted_window_dims",
                                "scatter_dims_to_operand_dims",
                                "scatter_indices_batching_dims"))
        scatter_shape = tuple(n for i, n in enumerate(updates.shape)
                              if i not in dn.update_window_dims)
        if scatter_shape != indices.shape[:-1]:
            raise TypeError(f"{name}: the scatter dimensions of updates {updates.str_short()} "
                            f"(those not in update_window_dims {dn.update_window_dims}) must "
                            f"match the batch dimensions of indices {indices.str_short()}")
        for w, d in zip(dn.update_window_dims, window, strict=True):
            if updates.shape[w] > operand.shape[d]:
                raise TypeError(f"{name}: update window dimension {w} of updates "
                                f"{updates.str_short()} is larger than operand dimension {d} "
                                f"of {operand.str_short()}")
        return ShapedArray(operand.shape, operand.dtype, operand.weak_type)
    return rule

# --------------------------------------------------------------------------- NumPy semantics


def _start_coords(shape, indices, start_map, operand_batch, index_batch):
    """The window start in every operand dimension: an int64 array (batch..., ndim)."""
    indices = np.asarray(indices).astype(np.int64)
    bshape = indices.shape[:-1]
    coords = np.zeros(bshape + (len(shape),), np.int64)
    for k, d in enumerate(start_map):
        coords[..., d] = indices[..., k]
    for o, i in zip(operand_batch, index_batch, strict=True):
        view = [1] * len(bshape)
        view[i] = bshape[i]
        coords[..., o] = np.arange(bshape[i]).reshape(view)
    return coords


def _window_indices(coords, window, wsizes):
    """Index arrays (one per operand dim) of shape batch + window sizes."""
    bshape = coords.shape[:-1]
    nb, nw = len(bshape), len(window)
    full_shape = bshape + tuple(wsizes)
    arrays = []
    for d in range(coords.shape[-1]):
        idx = coords[..., d].reshape(bshape + (1,) * nw)
        if d in window:
            j = window.index(d)
            view = [1] * (nb + nw)
            view[nb + j] = wsizes[j]
            idx = idx + np.arange(wsizes[j]).reshape(view)
        arrays.append(np.broadcast_to(idx, full_shape))
    return arrays, full_shape


def _gather_impl(operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                 indices_are_sorted, mode, fill_value):
    operand, dn = np.asarray(operand), dimension_numbers
    window = [d for d in range(operand.ndim)
              if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    coords = _start_coords(operand.shape, indices, dn.start_index_map,
                           dn.operand_batching_dims, dn.start_indices_batching_dims)
    upper = np.asarray(operand.shape, np.int64) - np.asarray(slice_sizes, np.int64)
    in_bounds = np.all((coords >= 0) & (coords <= upper), axis=-1)
    coords = np.clip(coords, 0, upper)
    arrays, full_shape = _window_indices(coords, window, [slice_sizes[d] for d in window])
    if operand.size == 0 or 0 in full_shape:
        gathered = np.zeros(full_shape, operand.dtype)
    elif operand.ndim == 0:
        gathered = np.broadcast_to(operand, full_shape)
    else:
        gathered = operand[tuple(arrays)]
    bshape = coords.shape[:-1]
    if mode is GatherScatterMode.FILL_OR_DROP:
        mask = in_bounds.reshape(bshape + (1,) * len(window))
        gathered = np.where(mask, gathered, np.asarray(fill_value, operand.dtype))
    perm, batch_pos = [], iter(range(len(bshape)))
    for p in range(len(full_shape)):
        perm.append(len(bshape) + dn.offset_dims.index(p) if p in dn.offset_dims
                    else next(batch_pos))
    return np.transpose(gathered, perm)


def _scatter_impl_for(combine):
    def impl(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
             unique_indices, mode):
        operand, updates, dn = np.asarray(operand), np.asarray(updates), dimension_numbers
        window = [d for d in range(operand.ndim)
                  if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
        wsizes = [updates.shape[w] for w in dn.update_window_dims]
        extent = np.ones(operand.ndim, np.int64)
        extent[window] = wsizes
        coords = _start_coords(operand.shape, indices, dn.scatter_dims_to_operand_dims,
                               dn.operand_batching_dims, dn.scatter_indices_batching_dims)
        upper = np.asarray(operand.shape, np.int64) - extent
        if mode is GatherScatterMode.CLIP:
            coords = np.clip(coords, 0, upper)
        valid = np.all((coords >= 0) & (coords <= upper), axis=-1)
        scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
        ups = np.transpose(updates, scatter_dims + list(dn.update_window_dims))
        arrays, full_shape = _window_indices(coords, window, wsizes)
        mask = np.broadcast_to(valid.reshape(valid.shape + (1,) * len(window)), full_shape)
        out = operand.copy()
        target = out.reshape(1) if operand.ndim == 0 else out
        where = (tuple(a[mask] for a in arrays) if operand.ndim
                 else (np.zeros(int(mask.sum()), np.int64),))
        combine(target, where, ups[mask])
        return out
    return impl


def _replace(out, where, values):
    out[where] = values

# --------------------------------------------------------------------------- gather


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    """XLA's Gather with JAX's conventions (mode defaults to PROMISE_IN_BOUNDS; fill_value
    for FILL_OR_DROP defaults to NaN, the minimum signed / maximum unsigned integer, True)."""
    parsed = GatherScatterMode.from_any(
        GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
    dtype = get_aval(operand).dtype
    if parsed is GatherScatterMode.FILL_OR_DROP:
        fill_value = _default_fill_value(dtype) if fill_value is None else \
            np.asarray(fill_value, dtype).item()
    else:
        fill_value = None
    return gather_p.bind(
        operand, start_indices,
        dimension_numbers=_canonical_dnums(GatherDimensionNumbers, dimension_numbers),
        slice_sizes=tuple(int(s) for s in slice_sizes), unique_indices=bool(unique_indices),
        indices_are_sorted=bool(indices_are_sorted), mode=parsed, fill_value=fill_value)


gather_p = standard_primitive("gather", _gather_abstract_eval, _gather_impl)


def _gather_jvp(g, operand, indices, *, fill_value, mode, **params):
    fill = 0 if mode is GatherScatterMode.FILL_OR_DROP else None
    return gather_p.bind(g, indices, fill_value=fill, mode=mode, **params)


def _scatter_dnums_of(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims,
                                   dn.start_index_map, dn.operand_batching_dims,
                                   dn.start_indices_batching_dims)


def inverse_gather_dnums(dn: ScatterDimensionNumbers, updates_shape, operand_ndim):
    """The gather that reads back what a scatter writes, and its slice sizes."""
    gdn = GatherDimensionNumbers(dn.update_window_dims, dn.inserted_window_dims,
                                 dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                                 dn.scatter_indices_batching_dims)
    window = iter(updates_shape[w] for w in dn.update_window_dims)
    sizes = tuple(1 if d in dn.inserted_window_dims or d in dn.operand_batching_dims
                  else next(window) for d in range(operand_ndim))
    return gdn, sizes


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes,
                      unique_indices, indices_are_sorted, mode, fill_value):
    aval = operand.aval
    if type(ct) is ad.Zero:
        return [ad.Zero(aval), None]
    out = scatter_add_p.bind(_zeros(aval), indices, ct,
                             dimension_numbers=_scatter_dnums_of(dimension_numbers),
                             indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices, mode=mode)
    return [out, None]


def _shift(dims, k=1):
    return tuple(d + k for d in dims)


def gather_batch_rule(trace, vals, dims, *, dimension_numbers, slice_sizes, **params):
    """Batching rule of gather (also used by dynamic_slice with batched indices)."""
    (operand, indices), (od, idd) = vals, dims
    dn, size = dimension_numbers, trace.axis_size
    if idd is not_mapped:
        # The batch dimension becomes a new leading offset dimension.
        operand = moveaxis(operand, od, 0)
        new = GatherDimensionNumbers((0,) + _shift(dn.offset_dims),
                                     _shift(dn.collapsed_slice_dims),
                                     _shift(dn.start_index_map),
                                     _shift(dn.operand_batching_dims),
                                     dn.start_indices_batching_dims)
        sizes = (size,) + tuple(slice_sizes)
    elif od is not_mapped:
        # The batch dimension becomes a new leading index batch dimension.
        indices = moveaxis(indices, idd, 0)
        new = GatherDimensionNumbers(_shift(dn.offset_dims), dn.collapsed_slice_dims,
                                     dn.start_index_map, dn.operand_batching_dims,
                                     _shift(dn.start_indices_batching_dims))
        sizes = tuple(slice_sizes)
    else:
        operand = moveaxis(operand, od, 0)
        indices = moveaxis(indices, idd, 0)
        new = GatherDimensionNumbers(_shift(dn.offset_dims), _shift(dn.collapsed_slice_dims),
                                     _shift(dn.start_index_map),
                                     (0,) + _shift(dn.operand_batching_dims),
                                     (0,) + _shift(dn.start_indices_batching_dims))
        sizes = (1,) + tuple(slice_sizes)
    return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=sizes,
                         **params), 0


def _index_bounds(ctx, indices, idx_aval, upper):
    """Constants 0 and `upper` (one bound per index vector entry) broadcast like indices."""
    b = ctx.builder
    ivd = idx_aval.ndim - 1
    zero = b.broadcast(b.constant(np.zeros((), idx_aval.dtype)), idx_aval.shape, ())
    hi = b.broadcast(b.constant(np.asarray(upper, idx_aval.dtype)), idx_aval.shape, (ivd,))
    return zero, hi


def _clamp_indices(ctx, indices, idx_aval, upper):
    zero, hi = _index_bounds(ctx, indices, idx_aval, upper)
    return ctx.builder.clamp(zero, indices, hi, metadata=ctx.metadata)


def _gather_lower(ctx, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                  indices_are_sorted, mode, fill_value):
    b, dn, md = ctx.builder, dimension_numbers, ctx.metadata
    op_aval, idx_aval = ctx.avals_in
    upper = [op_aval.shape[d] - slice_sizes[d] for d in dn.start_index_map]
    if mode is GatherScatterMode.CLIP:
        indices = _clamp_indices(ctx, indices, idx_aval, upper)
    out = b.gather(operand, indices, dn.offset_dims, dn.collapsed_slice_dims,
                   dn.start_index_map, idx_aval.ndim - 1, slice_sizes, indices_are_sorted,
                   dn.operand_batching_dims, dn.start_indices_batching_dims, metadata=md)
    if mode is not GatherScatterMode.FILL_OR_DROP:
        return out
    zero, hi = _index_bounds(ctx, indices, idx_aval, upper)
    ok = b.and_(b.compare(indices, zero, "GE", metadata=md),
                b.compare(indices, hi, "LE", metadata=md), metadata=md)
    all_ok = b.reduce(ok, b.constant(np.asarray(True)), (idx_aval.ndim - 1,),
                      ctx.scalar_computation("and", "and", "pred"), metadata=md)
    out_shape = ctx.avals_out.shape
    batch_dims = [p for p in range(len(out_shape)) if p not in dn.offset_dims]
    mask = b.broadcast(all_ok, out_shape, batch_dims, metadata=md)
    fill = b.broadcast(b.constant(np.asarray(fill_value, op_aval.dtype)), out_shape, (),
                       metadata=md)
    return b.select(mask, out, fill, metadata=md)


ad.defjvp(gather_p, _gather_jvp, None)
ad.primitive_transposes[gather_p] = _gather_transpose
batching.primitive_batchers[gather_p] = gather_batch_rule
register_lowering(gather_p, _gather_lower)

# --------------------------------------------------------------------------- scatter family


def _scatter_wrapper(prim, doc):
    def wrapper(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
        return prim.bind(
            operand, scatter_indices, updates,
            dimension_numbers=_canonical_dnums(ScatterDimensionNumbers, dimension_numbers),
            indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
            mode=GatherScatterMode.from_any(mode))
    wrapper.__doc__ = doc
    wrapper.__name__ = prim.name.replace("-", "_")
    return wrapper


# combiner name -> (NumPy combine, HLO opcode, HLO opcode for pred)
_COMBINERS = {
    "scatter": (_replace, None, None),
    "scatter-add": (np.add.at, "add", "or"),
    "scatter-mul": (np.multiply.at, "multiply", "and"),
    "scatter-min": (np.minimum.at, "minimum", "and"),
    "scatter-max": (np.maximum.at, "maximum", "or"),
}


def _scatter_lower_for(name):
    opcode, pred_opcode = _COMBINERS[name][1:]

    def rule(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
             unique_indices, mode):
        b, dn = ctx.builder, dimension_numbers
        op_aval, idx_aval, upd_aval = ctx.avals_in
        et = ctx.element_type(op_aval.dtype)
        if mode is GatherScatterMode.CLIP:
            _, sizes = inverse_gather_dnums(dn, upd_aval.shape, op_aval.ndim)
            upper = [op_aval.shape[d] - sizes[d] for d in dn.scatter_dims_to_operand_dims]
            indices = _clamp_indices(ctx, indices, idx_aval, upper)
        if opcode is None:
            cb = ctx.new_computation("scatter_update")
            scalar = ctx.shape_of(ShapedArray((), op_aval.dtype))
            cb.parameter(0, scalar)
            cb.set_root(cb.parameter(1, scalar))
            comp = cb.computation
        else:
            op = pred_opcode if et == "pred" else opcode
            comp = ctx.scalar_computation(f"scatter_{op}", op, et)
        return b.scatter(operand, indices, updates, comp, dn.update_window_dims,
                         dn.inserted_window_dims, dn.scatter_dims_to_operand_dims,
                         idx_aval.ndim - 1, indices_are_sorted, unique_indices,
                         dn.operand_batching_dims, dn.scatter_indices_batching_dims,
                         metadata=ctx.metadata)
    return rule


def scatter_batch_rule(prim, trace, vals, dims, *, dimension_numbers, **params):
    """Batching rule of the scatters: every argument gets a leading batch dimension that
    becomes an operand/indices batching dimension."""
    size, dn = trace.axis_size, dimension_numbers
    operand, indices, updates = (bdim_at_front(v, d, size)
                                 for v, d in zip(vals, dims, strict=True))
    new = ScatterDimensionNumbers(_shift(dn.update_window_dims),
                                  _shift(dn.inserted_window_dims),
                                  _shift(dn.scatter_dims_to_operand_dims),
                                  (0,) + _shift(dn.operand_batching_dims),
                                  (0,) + _shift(dn.scatter_indices_batching_dims))
    return prim.bind(operand, indices, updates, dimension_numbers=new, **params), 0


def _make_scatter(name, doc):
    prim = standard_primitive(name, _scatter_abstract_eval_for(name),
                              _scatter_impl_for(_COMBINERS[name][0]))
    batching.primitive_batchers[prim] = (
        lambda trace, vals, dims, **params: scatter_batch_rule(prim, trace, vals, dims,
                                                               **params))
    register_lowering(prim, _scatter_lower_for(name))
    return prim, _scatter_wrapper(prim, doc)


scatter_p, scatter = _make_scatter(
    "scatter", "Scatter-update (XLA's Scatter; updates replace operand values). With "
    "repeated indices, which update wins is unspecified. mode defaults to FILL_OR_DROP.")
scatter_add_p, scatter_add = _make_scatter(
    "scatter-add", "Scatter-add: updates are added to the operand at the indices.")
scatter_mul_p, scatter_mul = _make_scatter(
    "scatter-mul", "Scatter-multiply: operand values are multiplied by the updates.")
scatter_min_p, scatter_min = _make_scatter(
    "scatter-min", "Scatter-min: the minimum of operand values and updates.")
scatter_max_p, scatter_max = _make_scatter(
    "scatter-max", "Scatter-max: the maximum of operand values and updates.")


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
    """Scatter-subtract: updates are subtracted from the operand at the indices."""
    return scatter_add(operand, scatter_indices, neg(updates), dimension_numbers,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       mode=mode)

# The scatters' JVP and transpose rules live in gather_scatter_ad.py, which imports this
# module (lax/__init__.py imports it to register them).
