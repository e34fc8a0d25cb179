"""jnp.pad: constant, edge, reflect, symmetric, wrap, empty, linear_ramp and the statistic
modes (maximum, minimum, mean, median).

edge, wrap and the even reflect/symmetric modes only rearrange existing elements; their
source indices depend on shapes alone, so they are computed statically and emitted as
slices, reversals and one concatenation per axis (no gathers). The odd reflections, the
ramps and the statistics are computed axis by axis from the array padded so far, as JAX
does (so corners come from the already padded axes).
"""

from __future__ import annotations

import builtins

import numpy as np

from minijax import lax
from minijax.core import get_aval
from minijax.numpy import reductions, statistics, ufuncs, util
from minijax.numpy.creation import linspace
from minijax.numpy.functional import apply_along_axis
from minijax.numpy.manipulation import concatenate, flip, repeat
from minijax.numpy.util import check_arraylike, to_array

_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")


def _pairs(value, ndim, name):
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError(f"`{name}` must be a scalar or a sequence of pairs")
    try:
        return np.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise ValueError(f"`{name}` of shape {arr.shape} cannot be broadcast to ({ndim}, 2) "
                         "(one (before, after) pair per axis)") from None


def _normalize_pad_width(pad_width, ndim):
    if util.is_array(pad_width):
        pad_width = util.concrete_or_none(pad_width)
        if pad_width is None:
            raise TypeError("jnp.pad: pad_width must be static (concrete) values")
    widths = _pairs(pad_width, ndim, "pad_width")
    if widths.dtype.kind not in "iu":
        if not np.all(np.equal(np.round(widths), widths)):
            raise TypeError("`pad_width` must be of integral type.")
        widths = widths.astype(np.int64)
    if np.any(widths < 0):
        raise ValueError("index can't contain negative values")
    return [(int(lo), int(hi)) for lo, hi in widths]


def take_static(x, indices, axis):
    """x gathered along `axis` at static `indices`, as slices, reversals and a concat."""
    shape = get_aval(x).shape
    indices = [int(i) for i in indices]
    if indices == list(range(shape[axis])):
        return x
    pieces = []
    i = 0
    while i < len(indices):
        j = i + 1
        step = indices[j] - indices[i] if j < len(indices) else 1
        if step not in (1, -1):
            step = 1
        while j < len(indices) and indices[j] - indices[j - 1] == step:
            j += 1
        run = indices[i:j]
        lo, hi = min(run), max(run) + 1
        start = [0] * len(shape)
        limit = list(shape)
        start[axis], limit[axis] = lo, hi
        piece = lax.slice(x, tuple(start), tuple(limit))
        if step == -1 and len(run) > 1:
            piece = lax.rev(piece, (axis,))
        pieces.append(piece)
        i = j
    if not pieces:
        limit = list(shape)
        limit[axis] = 0
        return lax.slice(x, (0,) * len(shape), tuple(limit))
    return pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, axis)


def _pad_with_function(x, widths, func, kwargs):
    """NumPy's vector-function protocol, as JAX implements it: zero-pad, then along each
    axis in turn replace every 1-d slice by func(vector, (before, after), axis, kwargs),
    which must return the padded vector (JAX's functions cannot write in place)."""
    if get_aval(x).ndim == 0:
        raise ValueError("jnp.pad: a callable mode needs an array with at least one "
                         "dimension; got a 0-d array (reshape it to (1,) first).")
    x = _pad_constant(x, widths, 0)
    for axis, width in enumerate(widths):
        x = apply_along_axis(func, axis, x, tuple(width), axis, kwargs)
    return x


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array (NumPy's numpy.pad: its modes, or a function
    `mode(vector, iaxis_pad_width, iaxis, kwargs)` returning the padded vector)."""
    check_arraylike("pad", array)
    x = to_array(array)
    aval = get_aval(x)
    widths = _normalize_pad_width(pad_width, aval.ndim)
    if callable(mode):
        return _pad_with_function(x, widths, mode, kwargs)
    if mode in ("constant", "empty"):
        values = kwargs.pop("constant_values", 0)
        _no_kwargs(mode, kwargs)
        return _pad_constant(x, widths, values)
    if mode in _INDEX_MODES:
        reflect_type = kwargs.pop("reflect_type", "even")
        _no_kwargs(mode, kwargs)
        if reflect_type not in ("even", "odd"):
            raise ValueError(f"jnp.pad: reflect_type must be 'even' or 'odd', got "
                             f"{reflect_type!r}")
        for axis, (lo, hi) in enumerate(widths):
            if lo == 0 and hi == 0:
                continue
            n = get_aval(x).shape[axis]
            if n == 0:
                raise ValueError(f"can't extend empty axis {axis} using modes other than "
                                 "'constant' or 'empty'")
            if reflect_type == "odd" and mode in ("reflect", "symmetric"):
                x = _reflect_odd(x, axis, lo, hi, mode)
                continue
            idx = np.pad(np.arange(n), (lo, hi), mode=mode)
            x = take_static(x, idx, axis)
        return x
    if mode in ("linear_ramp",) + tuple(_STAT_FUNCS):
        for axis, (lo, hi) in enumerate(widths):
            if aval.shape[axis] == 0 and (lo or hi):
                raise ValueError(f"can't extend empty axis {axis} using modes other than "
                                 "'constant' or 'empty'")
    if mode == "linear_ramp":
        end_values = kwargs.pop("end_values", 0)
        _no_kwargs(mode, kwargs)
        return _pad_linear_ramp(x, widths, _pairs(end_values, aval.ndim, "end_values"))
    if mode in _STAT_FUNCS:
        stat_length = kwargs.pop("stat_length", None)
        _no_kwargs(mode, kwargs)
        if stat_length is not None:
            stat_length = _pairs(stat_length, aval.ndim, "stat_length")
        return _pad_stats(x, widths, stat_length, _STAT_FUNCS[mode])
    raise ValueError(f"mode {mode!r} is not supported")


def _reflect_odd(x, axis, lo, hi, mode):
    """One axis of reflect/symmetric padding with reflect_type='odd': each reflected block
    is 2 * edge - block, and a block longer than the axis reflects again from its end."""
    n = get_aval(x).shape[axis]
    offset = 1 if (mode == "reflect" and n > 1) else 0
    step = builtins.max(n - offset, 1)

    def one_side(x, width, before):
        edge = lax.slice_in_dim(x, 0, 1, axis=axis) if before else \
            lax.slice_in_dim(x, get_aval(x).shape[axis] - 1, None, axis=axis)
        while width > 0:
            cur = builtins.min(width, step)
            width -= cur
            size = get_aval(x).shape[axis]
            if before:
                block = lax.slice_in_dim(x, offset, offset + cur, axis=axis)
            else:
                stop = size if (mode == "symmetric" or n == 1) else size - 1
                block = lax.slice_in_dim(x, stop - cur, stop, axis=axis)
            block = ufuncs.subtract(ufuncs.multiply(2, edge), flip(block, axis))
            if n > 1:
                edge = lax.slice_in_dim(block, 0, 1, axis=axis) if before else \
                    lax.slice_in_dim(block, cur - 1, cur, axis=axis)
            x = concatenate([block, x] if before else [x, block], axis=axis)
        return x

    return one_side(one_side(x, lo, True), hi, False)


def _pad_linear_ramp(x, widths, end_values):
    """Ramps from end_values[axis] towards the edge values (edge excluded), per axis."""
    dtype = get_aval(x).dtype
    for axis, (lo, hi) in enumerate(widths):
        if lo == 0 and hi == 0:
            continue
        size = get_aval(x).shape[axis]
        first = lax.squeeze(lax.slice_in_dim(x, 0, 1, axis=axis), (axis,))
        last = lax.squeeze(lax.slice_in_dim(x, size - 1, size, axis=axis), (axis,))
        before = linspace(end_values[axis][0].item(), first, lo, endpoint=False, dtype=dtype,
                          axis=axis)
        after = linspace(end_values[axis][1].item(), last, hi, endpoint=False, dtype=dtype,
                         axis=axis)
        x = concatenate([before, x, flip(after, axis)], axis=axis)
    return x


_STAT_FUNCS = {"maximum": reductions.max, "minimum": reductions.min,
               "mean": reductions.mean, "median": statistics.median}


def _pad_stats(x, widths, stat_length, func):
    """Pad each axis with a statistic of (the first / last stat_length entries of) the
    array padded so far; integer statistics are rounded half to even."""
    aval = get_aval(x)
    for axis, (lo, hi) in enumerate(widths):
        size = get_aval(x).shape[axis]
        if stat_length is None:
            stat_lo = stat_hi = func(x, axis=axis, keepdims=True)
        else:
            len_lo, len_hi = (int(v) for v in stat_length[axis])
            if len_lo == 0 or len_hi == 0:
                raise ValueError("stat_length of 0 yields no value for padding")
            len_lo, len_hi = builtins.min(len_lo, size), builtins.min(len_hi, size)
            stat_lo = func(lax.slice_in_dim(x, 0, len_lo, axis=axis), axis=axis, keepdims=True)
            stat_hi = func(lax.slice_in_dim(x, size - len_hi, size, axis=axis), axis=axis,
                           keepdims=True)
        if aval.dtype.kind in "iu":
            stat_lo, stat_hi = ufuncs.round(stat_lo), ufuncs.round(stat_hi)
        stat_lo = util.convert(stat_lo, aval.dtype, aval.weak_type)
        stat_hi = util.convert(stat_hi, aval.dtype, aval.weak_type)
        x = concatenate([repeat(stat_lo, lo, axis=axis), x, repeat(stat_hi, hi, axis=axis)],
                        axis=axis)
    return x


def _no_kwargs(mode, kwargs):
    if kwargs:
        raise ValueError(f"unsupported keyword arguments for mode {mode!r}: "
                         f"{sorted(kwargs)}")


def _pad_constant(x, widths, values):
    aval = get_aval(x)
    if util.is_array(values):
        concrete = util.concrete_or_none(values)
        if concrete is None and get_aval(values).ndim == 0:
            value = util.convert(values, aval.dtype, aval.weak_type)
            return lax.pad(x, value, [(lo, hi, 0) for lo, hi in widths])
        values = concrete
    vals = _pairs(values, aval.ndim, "constant_values") if aval.ndim else np.zeros((0, 2))
    if aval.ndim == 0:
        return x
    if np.all(vals == vals.flat[0]):
        value = util.convert(vals.flat[0].item(), aval.dtype, aval.weak_type)
        return lax.pad(x, value, [(lo, hi, 0) for lo, hi in widths])
    for axis, (lo, hi) in enumerate(widths):
        for side, width in ((0, lo), (1, hi)):
            if width == 0:
                continue
            value = util.convert(vals[axis, side].item(), aval.dtype, aval.weak_type)
            config = [(0, 0, 0)] * aval.ndim
            config[axis] = (width, 0, 0) if side == 0 else (0, width, 0)
            x = lax.pad(x, value, config)
    return x
