"""NumPy indexing in lax terms: `x[idx]`, take, take_along_axis, nonzero.

An index is first normalized (tuple, Ellipsis expanded, boolean masks turned into integer
arrays, static integers bounds-checked) into one entry per operand dimension plus `None`
entries. Basic indexing (static ints and slices) becomes lax.slice/rev/reshape; a traced
scalar index becomes lax.dynamic_slice; integer arrays become one lax.gather whose output
places the broadcast index dimensions where NumPy's advanced-indexing rules put them.
The same plan drives `.at[]` updates (minijax/numpy/at.py) through lax.scatter.
"""

from __future__ import annotations

import operator

import numpy as np

from minijax import dtypes, lax
from minijax.core import Tracer, get_aval
from minijax.errors import (
    ConcretizationTypeError,
    NonConcreteBooleanIndexError,
    concretization_message,
)
from minijax.numpy import util
from minijax.numpy.ufuncs import remainder
from minijax.numpy.util import to_array
from minijax.source_info import user_frame_info

_NONE = "none"
_SLICE = "slice"
_INT = "int"
_ADV = "adv"


def _index_dtype():
    return dtypes.default_int_dtype()


def _is_int_scalar(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _mask_error(mask):
    where = user_frame_info(2)
    return NonConcreteBooleanIndexError(
        f"Array boolean indices must be concrete; got {mask.short_repr()} at {where}.\n"
        "Boolean-mask indexing gives a result whose shape depends on the mask's values, "
        "which is not known under jit/vmap. Possible fixes:\n"
        "  - keep the shape: jnp.where(mask, x, fill_value) or x * mask;\n"
        "  - give the size: x[jnp.nonzero(mask, size=N, fill_value=...)];\n"
        "  - for reductions use the where= argument, e.g. jnp.sum(x, where=mask).")


def _expand_index(shape, idx):
    """Normalize `idx` into a list of (kind, value) entries covering every dimension."""
    if isinstance(idx, list):
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                        "allowed; use `arr[array(seq)]` instead of `arr[seq]`. See "
                        "https://github.com/jax-ml/jax/issues/4564 for more information.")
    if not isinstance(idx, tuple):
        idx = (idx,)
    entries = []
    for i in idx:
        if i is None:
            entries.append((_NONE, None))
        elif i is Ellipsis:
            entries.append(("ellipsis", None))
        elif isinstance(i, slice):
            entries.append((_SLICE, i))
        elif isinstance(i, (bool, np.bool_)):
            entries.append(("bool", to_array(np.asarray(bool(i)))))
        elif _is_int_scalar(i):
            entries.append((_INT, int(i)))
        elif isinstance(i, list):
            raise TypeError("Using a non-tuple sequence for multidimensional indexing is "
                            "not allowed; use `arr[array(seq)]` instead of `arr[seq]`.")
        elif util.is_arraylike(i) or hasattr(i, "__jax_array__"):
            arr = i if util.is_array(i) else to_array(np.asarray(i))
            kind = dtypes.kind(get_aval(arr).dtype)
            if kind == "b":
                entries.append(("bool", arr))
            elif kind in "iu":
                entries.append((_ADV, arr))
            else:
                raise TypeError(f"Indexer must have integer or boolean type, got indexer "
                                f"with type {get_aval(arr).dtype} at position "
                                f"{len(entries)}, indexer value {i!r}")
        else:
            raise TypeError(f"Indexer must be an int, slice, None, Ellipsis or an integer/"
                            f"boolean array, got {type(i).__name__}: {i!r}")
    # Boolean masks become integer arrays (they need concrete values).
    out = []
    for kind, val in entries:
        if kind != "bool":
            out.append((kind, val))
            continue
        concrete = util.concrete_or_none(val)
        if concrete is None:
            raise _mask_error(val)
        if concrete.ndim == 0:
            raise IndexError("0-d boolean indices are not supported in minijax; use "
                             "x[None] or jnp.where instead")
        out.append(("maskdims", concrete.shape))
        for coords in np.nonzero(concrete):
            out.append((_ADV, util.convert(coords, _index_dtype())))
    return _fill_ellipsis(shape, out)


def _fill_ellipsis(shape, entries):
    n_ell = sum(1 for e in entries if e[0] == "ellipsis")
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for e in entries if e[0] in (_SLICE, _INT, _ADV))
    if used > len(shape):
        raise IndexError(f"Too many indices for array: {used} non-None/Ellipsis indices for "
                         f"dim {len(shape)}.")
    filled = []
    for e in entries:
        if e[0] == "ellipsis":
            filled.extend([(_SLICE, slice(None))] * (len(shape) - used))
        else:
            filled.append(e)
    if n_ell == 0:
        filled.extend([(_SLICE, slice(None))] * (len(shape) - used))
    out, dim, mask_shape = [], 0, None
    for kind, val in filled:
        if kind == "maskdims":
            mask_shape = val
            mask_start = dim
            continue
        if kind == _NONE:
            out.append((kind, val))
            continue
        if kind == _INT and shape[dim] == 0:
            raise IndexError(f"index {val} is out of bounds for axis {dim} with size 0")
        if kind == _INT and not -shape[dim] <= val < shape[dim]:
            # Out of bounds, as JAX: a gather/dynamic_slice index (reads clamp, updates drop,
            # mode= applies) instead of a static slice.
            kind, val = _ADV, util.convert(val, _index_dtype())
        if mask_shape is not None:
            if shape[dim] != mask_shape[dim - mask_start]:
                raise IndexError(f"boolean index did not match indexed array along axis "
                                 f"{dim}; size of axis is {shape[dim]} but size of "
                                 f"corresponding boolean axis is "
                                 f"{mask_shape[dim - mask_start]}")
            if dim - mask_start == len(mask_shape) - 1:
                mask_shape = None
        out.append((kind, val))
        dim += 1
    return out


def _slice_params(s: slice, n: int):
    """(start, step, count) of a slice on a dimension of size n."""
    start, stop, step = (None if v is None else operator.index(v)
                         for v in (s.start, s.stop, s.step))
    if step == 0:
        raise ValueError("slice step cannot be zero")
    start, stop, step = slice(start, stop, step).indices(n)
    return start, step, len(range(start, stop, step))


# --------------------------------------------------------------------------- basic indexing


def _basic(x, entries):
    """Static ints and slices via one lax.rev + lax.slice, then a reshape."""
    shape = get_aval(x).shape
    starts, limits, strides, rev_dims, out_shape = [], [], [], [], []
    dim = 0
    for kind, val in entries:
        if kind == _NONE:
            out_shape.append(1)
            continue
        n = shape[dim]
        if kind == _INT:
            i = val + n if val < 0 else val
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
        elif kind == _SLICE:
            start, step, count = _slice_params(val, n)
            if count == 0:
                starts.append(0)
                limits.append(0)
                strides.append(1)
            elif step > 0:
                starts.append(start)
                limits.append(start + step * (count - 1) + 1)
                strides.append(step)
            else:
                rev_dims.append(dim)
                first = n - 1 - start
                starts.append(first)
                limits.append(first + (-step) * (count - 1) + 1)
                strides.append(-step)
            out_shape.append(count)
        else:
            starts.append(0)
            limits.append(n)
            strides.append(1)
            out_shape.append(n)
        dim += 1
    if rev_dims:
        x = lax.rev(x, tuple(rev_dims))
    if (tuple(starts) != (0,) * len(shape) or tuple(limits) != shape
            or any(s != 1 for s in strides)):
        x = lax.slice(x, tuple(starts), tuple(limits),
                      None if all(s == 1 for s in strides) else tuple(strides))
    return lax.reshape(x, tuple(out_shape)) if tuple(out_shape) != get_aval(x).shape else x


def _normalize_index_array(idx, n):
    """Index array in the index dtype with negative entries wrapped (idx + n)."""
    aval = get_aval(idx)
    idx = util.convert(idx, _index_dtype()) if aval.dtype != _index_dtype() else idx
    if aval.dtype.kind == "u":
        return idx
    concrete = idx.to_concrete_value() if isinstance(idx, Tracer) else None
    if not isinstance(idx, Tracer) or concrete is not None:
        value = np.asarray(idx if concrete is None else concrete)
        if not np.any(value < 0):
            return idx
    shifted = lax.add(idx, util.full_like_scalar(n, idx))
    return lax.select_n(lax.lt(idx, util.full_like_scalar(0, idx)), idx, shifted)


class _Plan:
    """How x[idx] maps to a gather/scatter over `x`'s shape (see module docstring)."""

    def __init__(self, shape, entries, keep_full_slices_as_windows=True):
        self.shape = shape
        adv_pos = [k for k, (kind, _) in enumerate(entries) if kind in (_ADV, _INT)]
        arrays, adv_dims, dims_of = [], [], {}
        dim = 0
        for k, (kind, val) in enumerate(entries):
            if kind == _NONE:
                continue
            dims_of[k] = dim
            if kind in (_ADV, _INT):
                arr = util.convert(val, _index_dtype()) if kind == _INT else val
                arrays.append(_normalize_index_array(arr, shape[dim]))
                adv_dims.append(dim)
            dim += 1
        self.b_shape = util.broadcast_shapes(*(get_aval(a).shape for a in arrays)) \
            if arrays else ()
        contiguous = (not adv_pos) or adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1))
        # Axes of the result without None entries (R'), and of the full result (R).
        axes, full_shape = [], []
        block_done = False
        for k, (kind, val) in enumerate(entries):
            if kind == _NONE:
                full_shape.append(1)
                continue
            if kind in (_ADV, _INT):
                if not block_done:
                    insert_at = len(axes) if contiguous else 0
                    for j in range(len(self.b_shape)):
                        axes.insert(insert_at + j, ("B", j))
                    fs_at = len(full_shape) if contiguous else 0
                    full_shape[fs_at:fs_at] = list(self.b_shape)
                    block_done = True
                continue
            start, step, count = _slice_params(val, shape[dims_of[k]])
            full = start == 0 and step == 1 and count == shape[dims_of[k]]
            axes.append(("W" if full and keep_full_slices_as_windows else "S",
                         (dims_of[k], start, step, count)))
            full_shape.append(count)
        self.full_shape = tuple(full_shape)
        self.axes = axes
        self.squeezed_shape = tuple(self.b_shape[a[1]] if a[0] == "B" else a[1][3]
                                    for a in axes)
        self.window_pos = tuple(i for i, a in enumerate(axes) if a[0] == "W")
        self.window_dims = tuple(a[1][0] for a in axes if a[0] == "W")
        scatter_axes = [a for a in axes if a[0] != "W"]
        self.scatter_shape = tuple(self.b_shape[a[1]] if a[0] == "B" else a[1][3]
                                   for a in scatter_axes)
        b_positions = tuple(i for i, a in enumerate(scatter_axes) if a[0] == "B")
        coords = {}
        for d, arr in zip(adv_dims, arrays):
            arr = util.broadcast_to(arr, self.b_shape)
            coords[d] = lax.broadcast_in_dim(arr, self.scatter_shape, b_positions)
        for i, a in enumerate(scatter_axes):
            if a[0] == "S":
                d, start, step, _ = a[1]
                line = util.iota(_index_dtype(), self.scatter_shape, i)
                if step != 1:
                    line = lax.mul(line, util.full_like_scalar(step, line))
                if start:
                    line = lax.add(line, util.full_like_scalar(start, line))
                coords[d] = line
        self.index_dims = tuple(sorted(coords))
        self.coords = [coords[d] for d in self.index_dims]

    def indices(self):
        """The (scatter_shape + (k,)) index array."""
        parts = [lax.reshape(c, self.scatter_shape + (1,)) for c in self.coords]
        if len(parts) == 1:
            return parts[0]
        return lax.concatenate(parts, len(self.scatter_shape))

    def slice_sizes(self):
        return tuple(1 if d in self.index_dims else n for d, n in enumerate(self.shape))


def _mode(mode):
    cls = getattr(lax, "GatherScatterMode", None)
    if cls is not None and hasattr(cls, "from_any"):
        return cls.from_any(mode)
    return mode


def gather_plan(x, plan, mode, fill_value, indices_are_sorted, unique_indices):
    """lax.gather for a plan; returns an array of plan.full_shape."""
    x_shape = get_aval(x).shape
    empty_source = any(x_shape[d] == 0 for d in plan.index_dims)
    if empty_source or 0 in plan.full_shape:
        # Nothing to read (XLA's gather needs slice sizes within the operand).
        fill = 0 if fill_value is None else fill_value
        return util.full(plan.full_shape, fill, get_aval(x).dtype, get_aval(x).weak_type)
    if not plan.index_dims:
        out = x
    else:
        dnums = lax.GatherDimensionNumbers(
            offset_dims=plan.window_pos, collapsed_slice_dims=plan.index_dims,
            start_index_map=plan.index_dims)
        kwargs = {"indices_are_sorted": indices_are_sorted, "unique_indices": unique_indices,
                  "mode": _mode(mode)}
        if fill_value is not None:
            kwargs["fill_value"] = fill_value
        out = lax.gather(x, plan.indices(), dnums, plan.slice_sizes(), **kwargs)
    return lax.reshape(out, plan.full_shape) if get_aval(out).shape != plan.full_shape \
        else out


def _is_scalar_bool(i) -> bool:
    if isinstance(i, (bool, np.bool_)):
        return True
    return (util.is_arraylike(i) and not isinstance(i, (list, tuple))
            and np.ndim(i) == 0 and dtypes.kind(np.result_type(getattr(i, "dtype", i))) == "b")


def _scalar_bool_indices(ndim, idx):
    """0-d boolean indices as NumPy/JAX: True adds an axis of length 1 (like None), False
    one of length 0. Returns the index with them replaced by None, and the output axes to
    empty (those of the False ones)."""
    items = idx if isinstance(idx, tuple) else (idx,)
    if not any(_is_scalar_bool(i) for i in items):
        return idx, []
    new, empty, out_dim = [], [], 0
    used = sum(1 for i in items if i is not None and i is not Ellipsis
               and not _is_scalar_bool(i))
    for i in items:
        if _is_scalar_bool(i):
            concrete = i if isinstance(i, (bool, np.bool_)) else util.concrete_or_none(i)
            if concrete is None:
                raise _mask_error(i)
            if not bool(concrete):
                empty.append(out_dim)
            new.append(None)
            out_dim += 1
        elif i is None or isinstance(i, slice):
            new.append(i)
            out_dim += 1
        elif i is Ellipsis:
            new.append(i)
            out_dim += ndim - used
        elif _is_int_scalar(i):
            new.append(i)
        else:
            if empty:
                raise NotImplementedError("a False 0-d boolean index combined with array "
                                          "indices is not supported in minijax")
            new.append(i)
            out_dim += 1
    return tuple(new), empty


def rewriting_take(x, idx, *, mode=None, fill_value=None, indices_are_sorted=False,
                   unique_indices=False):
    """x[idx] (the implementation of Array.__getitem__ and .at[idx].get())."""
    x = to_array(x)
    idx, empty_axes = _scalar_bool_indices(get_aval(x).ndim, idx)
    if empty_axes:
        out = rewriting_take(x, idx, mode=mode, fill_value=fill_value,
                             indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices)
        for axis in empty_axes:
            out = lax.slice_in_dim(out, 0, 0, axis=axis)
        return out
    shape = get_aval(x).shape
    entries = _expand_index(shape, idx)
    kinds = {k for k, _ in entries}
    if _ADV not in kinds:
        return _basic(x, entries)
    if mode is None and fill_value is None and all(
            get_aval(v).ndim == 0 for k, v in entries if k == _ADV):
        return _dynamic_scalar_index(x, entries)
    # Pre-slice the slice dimensions so that only full windows and index dims remain.
    pre = [(_SLICE, slice(None)) if k in (_ADV, _INT) else (k, v) for k, v in entries]
    pre = [(k, v) for k, v in pre if k != _NONE]
    y = _basic(x, pre)
    rest = [(k, v) if k in (_ADV, _INT, _NONE) else (_SLICE, slice(None)) for k, v in entries]
    plan = _Plan(get_aval(y).shape, rest)
    if fill_value is not None and mode is None:
        mode = "fill"
    # JAX's default: reads clamp (XLA's gather) and the transpose drops out-of-bound indices.
    return gather_plan(y, plan, mode or "promise_in_bounds", fill_value, indices_are_sorted,
                       unique_indices)


def _dynamic_scalar_index(x, entries):
    """Traced scalar indices (and static ones next to them): lax.dynamic_slice."""
    sliced_entries = [(_SLICE, slice(None)) if k in (_ADV, _INT) else (k, v)
                      for k, v in entries if k != _NONE]
    y = _basic(x, sliced_entries)
    shape = get_aval(y).shape
    starts, sizes, keep = [], [], []
    dim = 0
    for kind, val in entries:
        if kind == _NONE:
            continue
        if kind in (_ADV, _INT):
            # lax.dynamic_slice wraps negative starts and clamps out-of-range ones.
            starts.append(util.convert(val, _index_dtype()))
            sizes.append(1)
        else:
            starts.append(util.convert(0, _index_dtype()))
            sizes.append(shape[dim])
            keep.append(shape[dim])
        dim += 1
    out = lax.dynamic_slice(y, starts, tuple(sizes))
    out_shape, pos = [], 0
    for kind, _ in entries:
        if kind == _NONE:
            out_shape.append(1)
        elif kind == _SLICE:
            out_shape.append(keep[pos])
            pos += 1
    return lax.reshape(out, tuple(out_shape))


# --------------------------------------------------------------------------- functions


def _default_fill(dtype):
    dtype = np.dtype(dtype)
    if dtypes.kind(dtype) in "fc":
        return np.nan
    if dtype.kind == "i":
        return int(np.iinfo(dtype).min)
    if dtype.kind == "u":
        return int(np.iinfo(dtype).max)
    return True


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
    """Elements of `a` at `indices` along `axis` (the flattened array if None).

    mode (as JAX's): "fill" (default; out-of-bound indices give fill_value, NaN for
    floats; negative indices wrap once), "clip" (indices clamp into range, negative ones to
    0) or "wrap" (indices modulo the axis size).
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    util.check_arraylike("take", a, indices)
    a = to_array(a)
    if axis is None:
        a = lax.reshape(a, (get_aval(a).size,))
        axis = 0
    ndim = get_aval(a).ndim
    ax = util.canonicalize_axis(axis, ndim)
    indices = to_array(indices)
    if get_aval(indices).dtype.kind not in "iu":
        raise TypeError(f"take: indices must be integers, got {get_aval(indices).dtype}")
    n = get_aval(a).shape[ax]
    mode = "fill" if mode is None else mode
    if mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
    if mode == "wrap":
        indices = remainder(indices, n) if n else indices
        mode = "promise_in_bounds"
    elif mode == "clip":
        # JAX's clip mode does not wrap negative indices: clamp before the index plan
        # would; the gather's transpose then accumulates at the clamped positions, as JAX's.
        if n:
            indices = lax.clamp(util.convert(0, get_aval(indices).dtype), indices,
                                util.convert(n - 1, get_aval(indices).dtype))
        mode = "promise_in_bounds"
    elif mode != "fill":
        raise ValueError(f"Invalid mode '{mode}' for np.take")
    if mode == "fill" and fill_value is None:
        fill_value = _default_fill(get_aval(a).dtype)
    idx = (slice(None),) * ax + (indices,)
    return rewriting_take(a, idx, mode=mode, fill_value=fill_value if mode == "fill" else None,
                          unique_indices=unique_indices, indices_are_sorted=indices_are_sorted)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    """arr gathered at `indices` along `axis`; other axes broadcast (numpy semantics)."""
    util.check_arraylike("take_along_axis", arr, indices)
    arr, indices = to_array(arr), to_array(indices)
    if axis is None:
        arr = lax.reshape(arr, (get_aval(arr).size,))
        indices = lax.reshape(indices, (get_aval(indices).size,))
        axis = 0
    a_shape, i_shape = get_aval(arr).shape, get_aval(indices).shape
    if len(a_shape) != len(i_shape):
        raise ValueError("indices and arr must have the same number of dimensions; "
                         f"{len(i_shape)} vs. {len(a_shape)}")
    ax = util.canonicalize_axis(axis, len(a_shape))
    other = util.broadcast_shapes(a_shape[:ax] + (1,) + a_shape[ax + 1:],
                                  i_shape[:ax] + (1,) + i_shape[ax + 1:])
    out_shape = other[:ax] + (i_shape[ax],) + other[ax + 1:]
    arr = util.broadcast_to(arr, other[:ax] + (a_shape[ax],) + other[ax + 1:])
    if 0 in get_aval(arr).shape:
        # no element to gather (a gather of size-1 slices cannot read an empty operand):
        # JAX gives zeros, whatever the mode
        return lax.full(out_shape, 0, get_aval(arr).dtype)
    # As JAX: negative indices wrap except in mode "promise_in_bounds".
    if mode != "promise_in_bounds":
        indices = _normalize_index_array(indices, a_shape[ax])
    idx = util.broadcast_to(indices, out_shape)
    coords = []
    for d in range(len(a_shape)):
        coords.append(idx if d == ax else util.iota(_index_dtype(), out_shape, d))
    stacked = lax.concatenate([lax.reshape(c, out_shape + (1,)) for c in coords],
                              len(out_shape)) if len(coords) > 1 else \
        lax.reshape(idx, out_shape + (1,))
    dims = tuple(range(len(a_shape)))
    dnums = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=dims,
                                       start_index_map=dims)
    mode = "fill" if mode is None else mode
    kwargs = {"mode": _mode(mode)}
    if mode == "fill":
        kwargs["fill_value"] = _default_fill(get_aval(arr).dtype) if fill_value is None \
            else fill_value
    return lax.gather(arr, stacked, dnums, (1,) * len(a_shape), **kwargs)


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements, one array per dimension.

    Under jit pass `size=` (and optionally fill_value=) so the result shape is static.
    """
    util.check_arraylike("nonzero", a)
    a = to_array(a)
    aval = get_aval(a)
    if aval.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "jnp.atleast_1d(scalar).nonzero() instead.")
    concrete = util.concrete_or_none(a)
    idx_dt = _index_dtype()
    if aval.size == 0 and size is not None:
        # JAX gives zeros here whatever fill_value says
        size = util.concrete_int(size, "nonzero: size")
        return tuple(util.full((size,), 0, idx_dt) for _ in aval.shape)
    if concrete is not None:
        found = np.nonzero(concrete)
        if size is None:
            return tuple(util.convert(f.astype(idx_dt), idx_dt) for f in found)
        fills = np.broadcast_to(np.asarray(0 if fill_value is None else fill_value),
                                (aval.ndim,))
        out = []
        for d, f in enumerate(found):
            f = f[:size]
            padded = np.concatenate([f, np.full(size - len(f), fills[d])]).astype(idx_dt)
            out.append(util.convert(padded, idx_dt))
        return tuple(out)
    if size is None:
        raise ConcretizationTypeError(concretization_message(
            "The size argument of jnp.nonzero must be statically specified to use "
            "jnp.nonzero within JAX transformations", a,
            "Pass size=N (and fill_value=...) so that the output shape is static."))
    return _nonzero_traced(a, util.concrete_int(size, "nonzero: size"), fill_value)


def _nonzero_traced(a, size, fill_value):
    aval = get_aval(a)
    idx_dt = _index_dtype()
    n = aval.size
    flat = lax.reshape(a, (n,))
    mask = flat if aval.dtype.kind == "b" else lax.ne(flat, util.full_like_scalar(0, flat))
    counts = lax.cumsum(util.convert(mask, idx_dt), axis=0)
    target = lax.sub(counts, util.full_like_scalar(1, counts))
    target = lax.select_n(mask, util.full((n,), size, idx_dt), target)
    positions = util.iota(idx_dt, (n,))
    found = util.full((size,), 0, idx_dt)
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                        scatter_dims_to_operand_dims=(0,))
    found = lax.scatter(found, lax.reshape(target, (n, 1)), positions, dnums,
                        mode=_mode("drop"))
    total = lax.reduce_sum(util.convert(mask, idx_dt), (0,)) if n else \
        util.convert(0, idx_dt)
    valid = lax.lt(util.iota(idx_dt, (size,)), lax.broadcast_in_dim(total, (size,), ()))
    fills = np.broadcast_to(np.asarray(0 if fill_value is None else fill_value),
                            (aval.ndim,))
    out = []
    stride = n
    for d, dim in enumerate(aval.shape):
        stride //= max(dim, 1)
        coord = lax.div(found, util.full((size,), max(stride, 1), idx_dt))
        coord = lax.rem(coord, util.full((size,), max(dim, 1), idx_dt))
        out.append(lax.select_n(valid, util.full((size,), int(fills[d]), idx_dt), coord))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of the flattened array."""
    a = to_array(a)
    return nonzero(lax.reshape(a, (get_aval(a).size,)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """Coordinates of the nonzero elements, one row per element."""
    a = to_array(a)
    if get_aval(a).ndim == 0:
        a = lax.reshape(a, (1,))
        out = nonzero(a, size=size, fill_value=fill_value)
        return lax.reshape(out[0], (get_aval(out[0]).shape[0], 0))
    cols = nonzero(a, size=size, fill_value=fill_value)
    k = get_aval(cols[0]).shape[0]
    return lax.concatenate([lax.reshape(c, (k, 1)) for c in cols], 1)
