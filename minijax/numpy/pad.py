"""jnp.pad: constant, edge, reflect, symmetric, wrap (and empty) modes.

The non-constant modes only rearrange existing elements; their source indices depend on
shapes alone, so they are computed statically and emitted as slices, reversals and one
concatenation per axis (no gathers).
"""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import get_aval
from minijax.numpy import util
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


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array (NumPy's numpy.pad for the supported modes)."""
    check_arraylike("pad", array)
    x = to_array(array)
    aval = get_aval(x)
    widths = _normalize_pad_width(pad_width, aval.ndim)
    if callable(mode):
        raise NotImplementedError("jnp.pad with a callable mode is not supported")
    if mode in ("constant", "empty"):
        values = kwargs.pop("constant_values", 0)
        _no_kwargs(mode, kwargs)
        return _pad_constant(x, widths, values)
    if mode in _INDEX_MODES:
        reflect_type = kwargs.pop("reflect_type", "even")
        _no_kwargs(mode, kwargs)
        if reflect_type != "even":
            raise NotImplementedError("jnp.pad: reflect_type='odd' is not supported")
        for axis, (lo, hi) in enumerate(widths):
            if lo == 0 and hi == 0:
                continue
            n = get_aval(x).shape[axis]
            if n == 0:
                raise ValueError(f"can't extend empty axis {axis} using modes other than "
                                 "'constant' or 'empty'")
            idx = np.pad(np.arange(n), (lo, hi), mode=mode)
            x = take_static(x, idx, axis)
        return x
    if mode in ("linear_ramp", "maximum", "mean", "median", "minimum"):
        raise NotImplementedError(f"jnp.pad: mode={mode!r} is not supported yet")
    raise ValueError(f"mode {mode!r} is not supported")


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
