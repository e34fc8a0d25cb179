"""Sorting, searching, set operations and counting: sort, argsort, lexsort, partition,
argpartition, searchsorted, digitize, unique (and unique_values/counts/inverse/all),
union1d, intersect1d, setdiff1d, setxor1d, isin, bincount, histogram, histogram_bin_edges.

Functions whose output size depends on values (unique, the set operations, bincount
without length=) compute eagerly on concrete inputs; under jit they need size= (or
length=) and otherwise raise a ConcretizationTypeError that names the function, the
user's line and the fix.
"""

from __future__ import annotations

import builtins
import operator
from typing import NamedTuple

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.errors import ConcretizationTypeError, concretization_message
from minijax.numpy import base as jnp
from minijax.numpy import util
from minijax.numpy.creation import _user_dtype
from minijax.numpy.unique_axis import unique_along_axis
from minijax.numpy.util import check_arraylike, to_array
from minijax.source_info import user_frame_info

__all__ = [
    "argpartition", "argsort", "bincount", "digitize", "histogram", "histogram2d",
    "histogram_bin_edges", "histogramdd",
    "in1d", "intersect1d", "isin", "lexsort", "partition", "searchsorted", "setdiff1d",
    "setxor1d", "sort", "sort_complex", "union1d", "unique", "unique_all", "unique_counts",
    "unique_inverse", "unique_values",
]


def _index_dtype():
    return dtypes.canonicalize_dtype(np.int64)


def _require_size(name, x, size, arg="size"):
    """Raise the jit error for value-dependent output sizes unless `size` was given."""
    if size is not None:
        return operator.index(size)
    where = user_frame_info(2)
    padding = " (and fill_value=... for the padding)" if arg == "size" else ""
    raise ConcretizationTypeError(concretization_message(
        f"jnp.{name} (called at {where.short()}) has an output size that depends on the "
        f"values of its input, so it needs a static `{arg}=` argument inside jit, vmap or "
        "grad", x,
        f"Pass {arg}=N{padding} so the output shape is static, e.g. jnp.{name}(x, {arg}=N); "
        f"or call jnp.{name} outside the transformed function."))


# --------------------------------------------------------------------------- sorting


def _axis_or_flat(a, axis):
    a = to_array(a)
    if axis is None:
        return lax.reshape(a, (get_aval(a).size,)), 0
    if get_aval(a).ndim == 0:
        return lax.reshape(a, (1,)), 0
    return a, util.canonicalize_axis(axis, get_aval(a).ndim)


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """Sorted copy along `axis` (flattened if None); NaNs sort last (first if descending)."""
    check_arraylike("sort", a)
    if order is not None:
        raise TypeError("The 'order' argument to sort is not supported.")
    a, axis = _axis_or_flat(a, axis)
    # descending: the ascending sort reversed, as JAX (equal elements come out last-first,
    # which decides where their gradients go).
    if dtypes.kind(get_aval(a).dtype) == "f":
        _, out = lax.sort((_sort_key(a), a), axis, is_stable=stable, num_keys=1)
    else:
        out = lax.sort(a, axis, is_stable=stable)
    return lax.rev(out, (axis,)) if descending else out


def _sort_key(a):
    """Sort keys with -0.0 and 0.0 equal, as in JAX (lax.sort itself orders -0.0 first)."""
    if dtypes.kind(get_aval(a).dtype) != "f":
        return a
    zero = util.full_like_scalar(0, a)
    return lax.select_n(lax.eq(a, zero), a, lax.broadcast_in_dim(zero, get_aval(a).shape, ()))


def sort_complex(a):
    """Sort a complex array by real part, then imaginary part, along the last axis (as JAX's
    lax.sort; the result is complex)."""
    check_arraylike("sort_complex", a)
    a = to_array(a)
    out = sort(a, axis=-1 if get_aval(a).ndim else None)
    return out.astype(dtypes.canonicalize_dtype(np.result_type(out.dtype, np.complex64)))


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """Indices that sort `a` along `axis`; equal elements keep their order (stable). The
    indices have the default integer dtype, or `dtype`."""
    if dtype is not None:
        return lax.convert_element_type(
            argsort(a, axis, kind=kind, order=order, stable=stable, descending=descending),
            _user_dtype(dtype))
    check_arraylike("argsort", a)
    if order is not None:
        raise TypeError("The 'order' argument to argsort is not supported.")
    a, axis = _axis_or_flat(a, axis)
    shape = get_aval(a).shape
    idx_dtype = _index_dtype()
    iota = util.iota(idx_dtype, shape, axis)
    if descending:
        # Sort the reversed array so ties come out in ascending index order once reversed.
        _, perm = lax.sort((_sort_key(lax.rev(a, (axis,))), iota), axis, is_stable=True,
                           num_keys=1)
        last = util.full(shape, builtins.max(shape[axis] - 1, 0), idx_dtype)
        return lax.sub(last, lax.rev(perm, (axis,)))
    _, perm = lax.sort((_sort_key(a), iota), axis, is_stable=stable, num_keys=1)
    return perm


def lexsort(keys, axis=-1):
    """Indices that sort by several keys; the LAST key is the primary one."""
    keys = [to_array(k) for k in keys]
    if not keys:
        raise TypeError("lexsort: need sequence of keys with len > 0")
    shapes = {get_aval(k).shape for k in keys}
    if len(shapes) != 1:
        raise ValueError(f"lexsort: all keys need to be the same shape, got {sorted(shapes)}")
    shape = get_aval(keys[0]).shape
    if not shape:
        raise TypeError("lexsort: keys must be at least 1-dimensional")
    axis = util.canonicalize_axis(axis, len(shape))
    iota = util.iota(_index_dtype(), shape, axis)
    outs = lax.sort(tuple(_sort_key(k) for k in keys[::-1]) + (iota,), axis, is_stable=True,
                    num_keys=len(keys))
    return outs[-1]


def partition(a, kth, axis=-1):
    """Rearranged copy with the kth element in sorted position, smaller ones before and
    larger ones after. As JAX: two lax.top_k calls, so the larger ones come out in
    descending order and NaNs with the sign bit set count as smallest."""
    a = to_array(a)
    axis = util.canonicalize_axis(axis, get_aval(a).ndim)
    n = get_aval(a).shape[axis]
    _check_kth("partition", kth, n)
    if np.ndim(kth) or dtypes.kind(get_aval(a).dtype) in "bc":
        return sort(a, axis=axis)
    k = operator.index(kth) % n
    arr = jnp.swapaxes(a, axis, -1)
    if dtypes.kind(arr.dtype) == "u":
        bottom = -lax.top_k(-(arr + 1), k + 1)[0] - 1
    else:
        bottom = -lax.top_k(-arr, k + 1)[0]
    top = lax.top_k(arr, n - k - 1)[0]
    return jnp.swapaxes(jnp.concatenate([bottom, top], axis=-1), -1, axis)


def argpartition(a, kth, axis=-1):
    """Indices that partition `a` around kth, as JAX's: the kth+1 smallest by lax.top_k,
    then the remaining indices in increasing order."""
    a = to_array(a)
    axis = util.canonicalize_axis(axis, get_aval(a).ndim)
    n = get_aval(a).shape[axis]
    _check_kth("argpartition", kth, n)
    if np.ndim(kth) or dtypes.kind(get_aval(a).dtype) in "bc":
        return argsort(a, axis=axis)
    k = operator.index(kth) % n
    arr = jnp.swapaxes(a, axis, -1)
    neg = -(arr + 1) if dtypes.kind(arr.dtype) == "u" else -arr
    bottom = lax.top_k(neg, k + 1)[1]
    # the rest: top_k of a 0/1 mask (ties come out in increasing index order)
    picked = jnp.any(bottom[..., :, None] == util.iota(bottom.dtype, (n,)), axis=-2)
    top = lax.top_k(jnp.where(picked, 0.0, 1.0), n - k - 1)[1]
    out = jnp.concatenate([bottom, top.astype(bottom.dtype)], axis=-1)
    return jnp.swapaxes(out, -1, axis)


def _check_kth(name, kth, n):
    for k in np.atleast_1d(kth):
        if not -n <= int(k) < n:
            raise ValueError(f"{name}: kth(={int(k)}) out of bounds ({n})")


# --------------------------------------------------------------------------- searching


def _total_lt(x, y):
    """x < y in sort order (NaNs after every number; complex numbers lexicographically on
    the real then the imaginary part, each ordered so, as JAX's searchsorted)."""
    kind = dtypes.kind(get_aval(x).dtype)
    if kind == "c":
        xr, yr = lax.real(x), lax.real(y)
        same_real = (xr == yr) | (jnp.isnan(xr) & jnp.isnan(yr))
        return _total_lt(xr, yr) | (same_real & _total_lt(lax.imag(x), lax.imag(y)))
    if kind != "f":
        return x < y
    return (x < y) | (jnp.isnan(y) & ~jnp.isnan(x))


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Insertion indices of v into the sorted 1-D array a (side 'left' or 'right').

    method 'scan' is a vectorized binary search (log2(n) gathers); 'compare_all' compares
    every pair (fast for short a)."""
    check_arraylike("searchsorted", a, v)
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"searchsorted: unknown method {method!r}")
    a, v = util.promote_dtypes(a, v)
    if get_aval(a).ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-D, got shape {get_aval(a).shape}")
    if sorter is not None:
        a = jnp.take(a, sorter)
    n = get_aval(a).shape[0]
    out_dtype = np.int32
    if n == 0:
        return jnp.zeros(get_aval(v).shape, out_dtype)
    if method == "compare_all":
        if side == "left":
            hits = _total_lt(a, v[..., None])
        else:
            hits = ~_total_lt(v[..., None], a)
        return jnp.sum(hits, axis=-1, dtype=out_dtype)
    lo = jnp.zeros(get_aval(v).shape, out_dtype)
    hi = jnp.full(get_aval(v).shape, n, out_dtype)
    for _ in range(int(np.ceil(np.log2(n + 1)))):
        mid = (lo + hi) // 2
        am = jnp.take(a, jnp.clip(mid, 0, n - 1))
        go_right = _total_lt(am, v) if side == "left" else ~_total_lt(v, am)
        go_right = go_right & (mid < hi)
        lo = jnp.where(go_right, mid + 1, lo)
        hi = jnp.where(go_right, hi, mid)
    return lo


def digitize(x, bins, right=False, *, method=None):
    """Indices of the bins each x falls in (bins increasing or decreasing)."""
    check_arraylike("digitize", x, bins)
    x, bins = util.promote_dtypes(x, bins)
    if get_aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be 1-D, got shape {get_aval(bins).shape}")
    n = get_aval(bins).shape[0]
    if n == 0:
        return jnp.zeros(get_aval(x).shape, np.int32)
    side = "left" if right else "right"
    kw = {} if method is None else {"method": method}
    inc = searchsorted(bins, x, side=side, **kw)
    dec = n - searchsorted(bins[::-1], x, side=side, **kw)
    return jnp.where(bins[-1] >= bins[0], inc, dec)


# --------------------------------------------------------------------------- unique & sets


def _concrete(x):
    return util.concrete_or_none(x)


def _pad(values, size, fill):
    values = np.asarray(values)
    if size is None:
        return values
    if len(values) >= size:
        return values[:size]
    pad = np.full((size - len(values),) + values.shape[1:], fill, dtype=values.dtype)
    return np.concatenate([values, pad])


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, size=None, fill_value=None, sorted=True):
    """Sorted unique elements (NumPy's unique). Under jit pass size= (and fill_value=,
    default: the smallest unique value) for a static output shape. With axis=, the unique
    slices along that axis (NaNs at the same places compare equal when equal_nan)."""
    check_arraylike("unique", ar)
    ar = to_array(ar)
    value = _concrete(ar)
    if size is not None and fill_value is None and get_aval(ar).size == 0 and size:
        raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                         "fill_value must be specified")
    if axis is not None:
        if value is None:
            size = _require_size("unique", ar, size)
        outs = unique_along_axis(ar, axis, size, fill_value, return_index, return_inverse,
                                 return_counts, equal_nan, _index_dtype())
        return outs[0] if len(outs) == 1 else tuple(outs)
    if value is not None:
        if value.dtype.kind == "V":
            # bfloat16 / 8-bit floats: NumPy's sort misplaces their NaNs; float32 holds them
            value = value.astype(np.float32)
        res = np.unique(value, return_index=return_index, return_inverse=return_inverse,
                        return_counts=return_counts, axis=axis, equal_nan=equal_nan)
        res = res if isinstance(res, tuple) else (res,)
        vals = res[0]
        fill = (vals[:1].reshape(-1)[0] if vals.size else 0) if fill_value is None \
            else fill_value
        outs = [_pad(vals, size, fill).astype(get_aval(ar).dtype)]
        k = 1
        idx_dt = _index_dtype()
        if return_index:
            # JAX pads the indices with the first unique value's index
            outs.append(_pad(res[k], size, res[k][0] if res[k].size else 0).astype(idx_dt))
            k += 1
        if return_inverse:
            outs.append(np.asarray(res[k]).astype(idx_dt))
            k += 1
        if return_counts:
            outs.append(_pad(res[k], size, 0).astype(idx_dt))
        outs = [util.convert(o, o.dtype) if o.dtype != np.int64 or idx_dt == np.int64
                else util.convert(o.astype(idx_dt), idx_dt) for o in outs]
        return outs[0] if len(outs) == 1 else tuple(outs)
    size = _require_size("unique", ar, size)
    return _unique_traced(ar, size, fill_value, return_index, return_inverse, return_counts,
                          equal_nan)


def _unique_traced(ar, size, fill_value, return_index, return_inverse, return_counts,
                   equal_nan=True):
    flat = jnp.ravel(ar)
    n = get_aval(flat).size
    idx_dt = _index_dtype()
    perm = argsort(flat)
    s = jnp.take(flat, perm)
    if n == 0:
        starts = jnp.zeros((0,), bool)
    else:
        prev = jnp.concatenate([s[:1], s[:-1]])
        same = (s == prev)
        if equal_nan and dtypes.kind(s.dtype) in "fc":
            same = same | (jnp.isnan(s) & jnp.isnan(prev))
        starts = jnp.concatenate([jnp.ones((1,), bool), ~same[1:]]) if n else same
    (pos,) = jnp.nonzero(starts, size=size, fill_value=n)
    valid = pos < n
    first = s[0] if n else jnp.zeros((), s.dtype)
    fill = first if fill_value is None else jnp.asarray(fill_value, s.dtype)
    vals = jnp.where(valid, jnp.take(s, jnp.clip(pos, 0, builtins.max(n - 1, 0))), fill)
    outs = [vals]
    if return_index:
        first = perm[0] if n else jnp.zeros((), idx_dt)
        outs.append(jnp.where(valid, jnp.take(perm, jnp.clip(pos, 0, builtins.max(n - 1, 0))),
                              first).astype(idx_dt))
    if return_inverse:
        group = jnp.cumsum(starts.astype(idx_dt)) - 1
        inverse = jnp.zeros((n,), idx_dt).at[perm].set(group)
        outs.append(inverse.reshape(get_aval(ar).shape) if get_aval(ar).ndim > 1 else inverse)
    if return_counts:
        group = jnp.cumsum(starts.astype(idx_dt)) - 1
        outs.append(jnp.zeros((size,), idx_dt).at[group].add(1, mode="drop"))
    return outs[0] if len(outs) == 1 else tuple(outs)


class _UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class _UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class _UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


# The array API's unique_* keep NaNs distinct (equal_nan=False), as JAX's do.


def unique_values(x, /, *, size=None, fill_value=None):
    """Array API: the sorted unique values (each NaN is its own value)."""
    return unique(x, size=size, fill_value=fill_value, equal_nan=False)


def unique_counts(x, /, *, size=None, fill_value=None):
    """Array API: a named tuple (values, counts)."""
    vals, counts = unique(x, return_counts=True, size=size, fill_value=fill_value,
                          equal_nan=False)
    return _UniqueCountsResult(vals, counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
    """Array API: a named tuple (values, inverse_indices), inverse shaped like x."""
    vals, inv = unique(x, return_inverse=True, size=size, fill_value=fill_value,
                       equal_nan=False)
    return _UniqueInverseResult(vals, jnp.reshape(inv, jnp.shape(x)))


def unique_all(x, /, *, size=None, fill_value=None):
    """Array API: a named tuple (values, indices, inverse_indices, counts)."""
    vals, idx, inv, cnt = unique(x, return_index=True, return_inverse=True,
                                 return_counts=True, size=size, fill_value=fill_value,
                                 equal_nan=False)
    return _UniqueAllResult(vals, idx, jnp.reshape(inv, jnp.shape(x)), cnt)


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Elementwise membership of `element` in `test_elements` (compares every pair)."""
    check_arraylike("isin", element, test_elements)
    element, test = util.promote_dtypes(element, test_elements)
    test = jnp.ravel(test)
    found = jnp.any(element[..., None] == test, axis=-1) if get_aval(test).size else \
        jnp.zeros(get_aval(element).shape, bool)
    return ~found if invert else found


def in1d(ar1, ar2, assume_unique=False, invert=False, *, method="auto"):
    """Deprecated in NumPy: use jnp.isin(ar1.ravel(), ar2)."""
    return isin(jnp.ravel(ar1), ar2, assume_unique, invert, method=method)


def _masked_unique(values, mask, size, fill_value):
    """unique(values[mask]) padded to a static size (the set operations under jit)."""
    n = get_aval(values).shape[0]
    order = lexsort((values, ~mask))
    s, m = jnp.take(values, order), jnp.take(mask, order)
    prev = jnp.concatenate([s[:1], s[:-1]])
    same = s == prev
    if dtypes.kind(s.dtype) in "fc":
        same = same | (jnp.isnan(s) & jnp.isnan(prev))
    starts = m & jnp.concatenate([jnp.ones((1,), bool), ~same[1:]])
    (pos,) = jnp.nonzero(starts, size=size, fill_value=n)
    ok = pos < n
    fill = jnp.where(m[0], s[0], jnp.zeros((), s.dtype)) if fill_value is None else \
        jnp.asarray(fill_value, s.dtype)
    return jnp.where(ok, jnp.take(s, jnp.clip(pos, 0, n - 1)), fill)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """Sorted unique values in either array."""
    check_arraylike("union1d", ar1, ar2)
    ar1, ar2 = util.promote_dtypes(ar1, ar2)
    both = jnp.concatenate([jnp.ravel(ar1), jnp.ravel(ar2)])
    return unique(both, size=size, fill_value=fill_value)


def _set_op(name, ar1, ar2, size, fill_value, np_fn, mask_fn):
    check_arraylike(name, ar1, ar2)
    ar1, ar2 = util.promote_dtypes(ar1, ar2)
    c1, c2 = _concrete(ar1), _concrete(ar2)
    if c1 is not None and c2 is not None:
        out = np_fn(c1, c2)
        fill = (out[0] if out.size else 0) if fill_value is None else fill_value
        return util.convert(_pad(out, size, fill).astype(get_aval(ar1).dtype),
                            get_aval(ar1).dtype)
    size = _require_size(name, ar1 if c1 is None else ar2, size)
    a1, a2 = jnp.ravel(ar1), jnp.ravel(ar2)
    values, mask = mask_fn(a1, a2)
    if get_aval(values).size == 0:
        fill = 0 if fill_value is None else fill_value
        return jnp.full((size,), fill, get_aval(values).dtype)
    return _masked_unique(values, mask, size, fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """Sorted unique values present in both arrays (return_indices eagerly only)."""
    if return_indices:
        check_arraylike("intersect1d", ar1, ar2)
        c1, c2 = _concrete(to_array(ar1)), _concrete(to_array(ar2))
        if c1 is None or c2 is None:
            raise NotImplementedError("intersect1d(return_indices=True) needs concrete "
                                      "inputs in minijax")
        vals, i1, i2 = np.intersect1d(c1, c2, assume_unique, return_indices=True)
        idx_dt = _index_dtype()
        return (jnp.asarray(vals, util.promote_dtypes(ar1, ar2)[0].dtype),
                jnp.asarray(i1.astype(idx_dt)), jnp.asarray(i2.astype(idx_dt)))
    return _set_op("intersect1d", ar1, ar2, size, fill_value,
                   lambda x, y: np.intersect1d(x, y),
                   lambda x, y: (x, isin(x, y)))


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """Sorted unique values of ar1 that are not in ar2."""
    return _set_op("setdiff1d", ar1, ar2, size, fill_value,
                   lambda x, y: np.setdiff1d(x, y),
                   lambda x, y: (x, ~isin(x, y)))


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """Sorted unique values in exactly one of the arrays."""
    return _set_op("setxor1d", ar1, ar2, size, fill_value,
                   lambda x, y: np.setxor1d(x, y),
                   lambda x, y: (jnp.concatenate([x, y]),
                                 jnp.concatenate([~isin(x, y), ~isin(y, x)])))


# --------------------------------------------------------------------------- counting


def bincount(x, weights=None, minlength=0, *, length=None):
    """Counts (or summed weights) of each non-negative integer in x. Under jit pass
    length=; negative values count as 0 and values >= length are dropped, as in JAX."""
    check_arraylike("bincount", x)
    x = to_array(x)
    if get_aval(x).dtype.kind not in "iub":
        raise TypeError(f"bincount: x must be an integer array, got dtype {get_aval(x).dtype}")
    if get_aval(x).ndim != 1:
        raise ValueError(f"bincount: x must be 1-D, got shape {get_aval(x).shape}")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("bincount: minlength must be non-negative")
    if length is None:
        value = _concrete(x)
        if value is None:
            _require_size("bincount", x, None, arg="length")
        length = builtins.max(int(value.max()) + 1 if value.size else 0, minlength)
    length = operator.index(length)
    if weights is None:
        w = jnp.ones(get_aval(x).shape, np.int32)
    else:
        (w,) = util.promote_dtypes(weights)
        w = jnp.broadcast_to(w, get_aval(x).shape)
    idx = jnp.clip(x.astype(np.int32) if get_aval(x).dtype.kind == "b" else x, 0)
    return jnp.zeros((length,), w.dtype).at[idx].add(w, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """Edges of the histogram bins: `bins` equal bins over range (default: data min..max)."""
    (a,) = util.promote_dtypes_inexact(a)
    if isinstance(bins, (int, np.integer)):
        if bins < 1:
            raise ValueError("histogram: `bins` must be positive, when an integer")
        if range is None:
            lo, hi = (jnp.min(a), jnp.max(a)) if a.size else (jnp.asarray(0.0, a.dtype),
                                                              jnp.asarray(1.0, a.dtype))
        else:
            lo, hi = (jnp.asarray(r, a.dtype) for r in range)
        same = lo == hi
        lo = jnp.where(same, lo - 0.5, lo)
        hi = jnp.where(same, hi + 0.5, hi)
        return jnp.linspace(lo, hi, int(bins) + 1, dtype=a.dtype)
    (edges,) = util.promote_dtypes_inexact(bins)
    if edges.ndim != 1:
        raise ValueError("histogram: bins must be an int or a 1-D array of edges")
    return edges


def histogram(a, bins=10, range=None, weights=None, density=None):
    """Counts of `a` in bins (NumPy's histogram: last bin closed); returns (hist, edges).
    With density=True the result integrates to 1."""
    check_arraylike("histogram", a)
    edges = histogram_bin_edges(a, bins, range)
    (a,) = util.promote_dtypes_inexact(a)
    a = jnp.ravel(a)
    nb = edges.shape[0] - 1
    idx = searchsorted(edges, a, side="right") - 1
    idx = jnp.where(a == edges[-1], nb - 1, idx)
    valid = (idx >= 0) & (idx < nb) & ~jnp.isnan(a)
    if weights is not None:
        a, weights = util.promote_dtypes(a, weights)
        w = jnp.ravel(weights)
    else:
        w = jnp.ones_like(a)
    w = jnp.where(valid, w, 0)
    counts = jnp.zeros((nb,), w.dtype).at[jnp.where(valid, idx, 0)].add(w)
    if density:
        widths = jnp.diff(edges)
        counts = counts / (jnp.sum(counts) * widths)
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """Multidimensional histogram of the N points sample[N, D]: (hist, [edges per dim]).
    bins is an int, a sequence of ints, or per-dimension edges; values outside the edges
    (and nan) are not counted; the last bin of each dimension is closed."""
    check_arraylike("histogramdd", sample)
    if weights is None:
        (sample,) = util.promote_dtypes_inexact(sample)
    else:
        check_arraylike("histogramdd", weights)
        if np.shape(weights) != np.shape(sample)[:1]:
            raise ValueError("should have one weight for each sample.")
        sample, weights = util.promote_dtypes_inexact(sample, weights)
    n, d = np.shape(sample)
    if range is not None and (len(range) != d or builtins.any(
            r is not None and np.shape(r)[0] != 2 for r in range)):
        raise ValueError(f"For sample.shape={(n, d)}, range must be a sequence of {d} pairs "
                         f"or Nones; got range={range}")
    try:
        per_dim = list(bins)
    except TypeError:
        per_dim = [bins] * d
    else:
        if len(per_dim) != d:
            raise ValueError("should be a bin for each dimension.")
    edges, flat, valid, shape = [], 0, jnp.ones((n,), bool), []
    for i in builtins.range(d):
        col = sample[:, i]
        e = histogram_bin_edges(col, per_dim[i], None if range is None else range[i])
        nb = e.shape[0] - 1
        idx = searchsorted(e, col, side="right") - 1
        idx = jnp.where(col == e[-1], nb - 1, idx)
        valid = valid & (idx >= 0) & (idx < nb)
        flat = flat * nb + jnp.clip(idx, 0, nb - 1)
        edges.append(e)
        shape.append(nb)
    w = jnp.ones((n,), dtypes.default_int_dtype()) if weights is None else weights
    w = jnp.where(valid, w, jnp.zeros_like(w))
    size = builtins.max(int(np.prod(shape)), 1)
    hist = jnp.zeros((size,), w.dtype).at[flat].add(w).reshape(tuple(shape))
    if density:
        hist = hist.astype(sample.dtype)
        hist = hist / jnp.sum(hist)
        for i, e in enumerate(edges):
            width_shape = [1] * d
            width_shape[i] = shape[i]
            hist = hist / jnp.diff(e).reshape(width_shape)
    return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """Two-dimensional histogram of points (x[i], y[i]): (hist, x_edges, y_edges). bins is
    an int, a pair of ints or edge arrays, or one edge array used for both."""
    check_arraylike("histogram2d", x, y)
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb not in (1, 2):
        bins = [jnp.asarray(bins)] * 2
    sample = jnp.stack([to_array(x), to_array(y)], axis=1)
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]
