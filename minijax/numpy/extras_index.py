"""Index builders with jax.numpy's signatures: diag_indices, tril_indices, triu_indices
(and their _from forms), mask_indices, ix_, unravel_index, ravel_multi_index, the
index-expression objects mgrid, ogrid, r_, c_, s_ and index_exp, and the functional forms
of NumPy's in-place writers: put, put_along_axis and place (inplace=False, as in JAX)."""

from __future__ import annotations

import math
import operator

import numpy as np

from minijax import dtypes, lax
from minijax.errors import ConcretizationTypeError
from minijax.numpy import base as jnp
from minijax.numpy import util
from minijax.numpy.util import check_arraylike, to_array

__all__ = ["c_", "diag_indices", "diag_indices_from", "index_exp", "ix_", "mask_indices",
           "mgrid", "ogrid", "place", "put", "put_along_axis", "r_", "ravel_multi_index",
           "s_", "tril_indices", "tril_indices_from", "triu_indices", "triu_indices_from",
           "unravel_index"]

index_exp = np.index_exp
s_ = np.s_


def _index_array(values):
    return jnp.asarray(np.asarray(values, dtype=dtypes.default_int_dtype()))


def diag_indices(n, ndim=2):
    """Indices of the main diagonal of an n x ... x n array (ndim arrays of arange(n))."""
    n = util.concrete_int(n, "diag_indices: n")
    ndim = util.concrete_int(ndim, "diag_indices: ndim")
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (jnp.arange(n),) * ndim


def diag_indices_from(arr):
    """diag_indices for an array whose dimensions are all equal (ndim >= 2)."""
    shape = util.shape_of(arr)
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def tril_indices(n, k=0, m=None):
    """Row and column indices of the lower triangle of an (n, m) array."""
    n = util.concrete_int(n, "tril_indices: n")
    k = util.concrete_int(k, "tril_indices: k")
    m = n if m is None else util.concrete_int(m, "tril_indices: m")
    return tuple(_index_array(i) for i in np.tril_indices(n, k, m))


def triu_indices(n, k=0, m=None):
    """Row and column indices of the upper triangle of an (n, m) array."""
    n = util.concrete_int(n, "triu_indices: n")
    k = util.concrete_int(k, "triu_indices: k")
    m = n if m is None else util.concrete_int(m, "triu_indices: m")
    return tuple(_index_array(i) for i in np.triu_indices(n, k, m))


def _from_2d(name, arr):
    shape = util.shape_of(arr)
    if len(shape) != 2:
        raise ValueError(f"{name}: input array must be 2-d, got shape {shape}")
    return shape


def tril_indices_from(arr, k=0):
    """tril_indices for the shape of a 2-D array."""
    n, m = _from_2d("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    """triu_indices for the shape of a 2-D array."""
    n, m = _from_2d("triu_indices_from", arr)
    return triu_indices(n, k, m)


def mask_indices(n, mask_func, k=0, *, size=None):
    """Indices where mask_func(ones((n, n)), k) is nonzero (size= for a static length)."""
    n = util.concrete_int(n, "mask_indices: n")
    return jnp.nonzero(mask_func(jnp.ones((n, n)), k), size=size)


def ix_(*args):
    """Open-mesh index arrays from 1-D integer sequences (each reshaped along its own axis)."""
    check_arraylike("ix_", *args)
    n = len(args)
    out = []
    for i, a in enumerate(args):
        a = to_array(a)
        if a.ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be one-dimensional, got an "
                             f"argument with shape {a.shape}")
        if a.dtype == np.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        shape = [1] * n
        shape[i] = a.shape[0]
        out.append(lax.reshape(a, tuple(shape)))
    return tuple(out)


def _grid_axis(s):
    if not isinstance(s, slice):
        raise TypeError(f"mgrid/ogrid take slices, got {s!r}")
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex) or isinstance(s.step, np.complexfloating):
        num = int(abs(step))
        return jnp.linspace(start, s.stop, num, endpoint=True)
    return jnp.arange(start, s.stop, step)


class _Grid:
    """mgrid (dense) and ogrid (sparse): index a grid with slices."""

    def __init__(self, sparse: bool, name: str):
        self.sparse = sparse
        self.__name__ = name

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_axis(key)
        vectors = [_grid_axis(s) for s in key]
        if not vectors:
            return [] if self.sparse else jnp.zeros((0,), dtypes.default_int_dtype())
        vectors = util.promote_dtypes(*vectors)
        grids = jnp.meshgrid(*vectors, indexing="ij", sparse=self.sparse)
        return list(grids) if self.sparse else jnp.stack(grids, 0)


mgrid = _Grid(False, "mgrid")
ogrid = _Grid(True, "ogrid")


class _AxisConcat:
    """r_ and c_: concatenation by index expression (slices become aranges/linspaces; a
    leading string 'axis[,ndmin[,trans1d]]' sets the concatenation axis)."""

    def __init__(self, axis, ndmin, trans1d):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        if key and isinstance(key[0], str):
            if key[0] in ("r", "c"):
                raise NotImplementedError("matrix output ('r'/'c' directives) is not "
                                          "supported")
            try:
                parts = [int(p) for p in key[0].split(",")]
            except ValueError:
                raise ValueError(f"could not understand directive {key[0]!r}") from None
            axis = parts[0]
            if len(parts) > 1:
                ndmin = parts[1]
            if len(parts) > 2:
                trans1d = parts[2]
            key = key[1:]
        items = []
        for item in key:
            arr = _grid_axis(item) if isinstance(item, slice) else to_array(item)
            if arr.ndim < ndmin:
                arr = _raise_ndim(arr, ndmin, trans1d)
            items.append(arr)
        if not items:
            return jnp.zeros((0,))
        return jnp.concatenate([jnp.atleast_1d(a) for a in items], axis=axis)


def _raise_ndim(arr, ndmin, trans1d):
    """NumPy's r_ rule: prepend 1s up to ndmin dimensions, then (trans1d != -1) move the
    array's own axes so that they start at position trans1d."""
    k = arr.ndim
    arr = lax.reshape(arr, (1,) * (ndmin - k) + arr.shape)
    if trans1d == -1:
        return arr
    k2 = ndmin - k
    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
    axes = list(range(ndmin))
    return jnp.transpose(arr, axes[:k1] + axes[k2:] + axes[k1:k2])


r_ = _AxisConcat(0, 1, -1)
c_ = _AxisConcat(-1, 2, 0)


# --------------------------------------------------------------------------- flat indices


def unravel_index(indices, shape):
    """The coordinates in an array of `shape` of flat (C-order) indices, as a tuple.
    As JAX (and unlike NumPy, which raises): indices in [-size, 0) count from the end and
    other out-of-range indices clamp to the first or last element."""
    check_arraylike("unravel_index", indices)
    idx = to_array(indices)
    try:
        shape = list(shape)
    except TypeError:
        shape = [shape]
    if any(np.ndim(d) != 0 for d in shape):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    coords = [None] * len(shape)
    for i in reversed(range(len(shape))):
        idx, coords[i] = jnp.divmod(idx, shape[i])
    # After peeling every axis, idx is 0 for in-range indices, -1 for [-size, 0).
    too_big = idx > 0
    too_small = idx < -1 if idx.dtype.kind != "u" else jnp.zeros_like(too_big)
    return tuple(jnp.where(too_big, d - 1, jnp.where(too_small, 0, c))
                 for d, c in zip(shape, coords, strict=True))


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C", *,
                      dtype=None):
    """Flat indices into an array of shape `dims` from a tuple of coordinate arrays.
    mode: 'raise' (needs concrete indices; ValueError when out of range), 'wrap', 'clip',
    or 'ignore' (no check)."""
    if len(multi_index) != len(dims):
        raise ValueError(f"len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
    try:
        dims = tuple(operator.index(d) for d in dims)
    except TypeError as e:
        raise TypeError("ravel_multi_index: dims must be concrete integers") from e
    check_arraylike("ravel_multi_index", *multi_index)
    coords = [to_array(i) for i in multi_index]
    if dtype is None:
        dtype = dtypes.result_type(int, *coords)
    else:
        dtype = dtypes.canonicalize_dtype(dtype)
    if dtype.kind not in "iu":
        raise ValueError(f"dtype={dtype} is not an integer type.")
    if math.prod(dims) - 1 > np.iinfo(dtype).max:
        raise ValueError(f"jnp.ravel_multi_index: dtype={dtype} not large enough to hold "
                         f"flattened index for dims={dims}. Use the dtype argument to pass "
                         "a suitable dtype.")
    for c in coords:
        if c.dtype.kind not in "iu":
            raise TypeError("only int indices permitted")
    if mode == "raise":
        values = [util.concrete_or_none(c) for c in coords]
        if any(v is None for v in values):
            raise ConcretizationTypeError(
                "ravel_multi_index with mode='raise' needs concrete indices (it checks "
                "their range). The error occurred because ravel_multi_index was "
                "jit-compiled with mode='raise'. Use mode='wrap' or mode='clip' instead.")
        if any(np.any((v < 0) | (v >= d)) for v, d in zip(values, dims, strict=True)):
            raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        coords = [jnp.clip(c, 0, d - 1) for c, d in zip(coords, dims, strict=True)]
    elif mode == "wrap":
        coords = [c % d for c, d in zip(coords, dims, strict=True)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or "
                         "'ignore'.")
    if order not in ("C", "F"):
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    axes = range(len(dims)) if order == "F" else range(len(dims) - 1, -1, -1)
    out, stride = jnp.zeros((), dtype), 1
    for a in axes:
        out = out + coords[a].astype(dtype) * stride
        stride *= dims[a]
    return out


# --------------------------------------------------------------------------- put & co


def _no_inplace(name, inplace):
    if inplace:
        raise ValueError(f"jax.numpy.{name} cannot modify arrays in-place, because JAX "
                         "arrays are immutable. Pass inplace=False to instead return an "
                         "updated array.")


def _tiled(v, n):
    """The 1-D array v repeated cyclically to length n (NumPy's rule for put/place)."""
    reps = -(-n // v.shape[0])
    return jnp.tile(v, reps)[:n] if reps > 1 else v[:n]


def put(a, ind, v, mode=None, *, inplace: bool = True):
    """A copy of `a` with its flat elements at `ind` set to `v` (repeated as needed).
    inplace must be False (arrays are immutable). mode 'clip' (the default) clamps
    out-of-range indices, 'wrap' wraps them."""
    _no_inplace("put", inplace)
    check_arraylike("put", a, ind, v)
    arr, ind, v = to_array(a), jnp.ravel(to_array(ind)), jnp.ravel(to_array(v))
    if not arr.size or not ind.size or not v.size:
        return arr
    v = _tiled(v, ind.size)
    if mode is None or mode == "clip":
        scatter_mode = "clip"
    elif mode == "wrap":
        ind, scatter_mode = ind % arr.size, None
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    return jnp.ravel(arr).at[ind].set(v, mode=scatter_mode).reshape(arr.shape)


def put_along_axis(arr, indices, values, axis, inplace: bool = True, *, mode=None):
    """A copy of `arr` with `values` written at `indices` along `axis` (the inverse of
    take_along_axis; axis=None works on the flattened array). inplace must be False."""
    _no_inplace("put_along_axis", inplace)
    check_arraylike("put_along_axis", arr, indices, values)
    arr, indices, values = to_array(arr), to_array(indices), to_array(values)
    shape = arr.shape
    if axis is None:
        arr, axis = jnp.ravel(arr), 0
    if arr.ndim != indices.ndim:
        raise ValueError("put_along_axis arguments 'arr' and 'indices' must have same ndim. "
                         f"Got arr.ndim={arr.ndim} and indices.ndim={indices.ndim}.")
    try:
        values = jnp.broadcast_to(values, indices.shape)
    except ValueError as e:
        raise ValueError("put_along_axis argument 'values' must be broadcastable to "
                         f"'indices'. Got values.shape={values.shape} and "
                         f"indices.shape={indices.shape}.") from e
    axis = util.canonicalize_axis(axis, arr.ndim)
    full = tuple(indices.shape[d] if d == axis or indices.shape[d] != 1 else arr.shape[d]
                 for d in range(arr.ndim))
    idx = tuple(jnp.broadcast_to(indices, full) if d == axis else
                util.iota(indices.dtype if indices.dtype.kind in "iu" else np.int32, full, d)
                for d in range(arr.ndim))
    out = arr.at[idx].set(jnp.broadcast_to(values, full), mode=mode)
    return out.reshape(shape)


def place(arr, mask, vals, *, inplace: bool = True):
    """A copy of `arr` whose elements where `mask` is True take the values of `vals` in
    order (repeated cyclically). inplace must be False."""
    _no_inplace("place", inplace)
    check_arraylike("place", arr, mask, vals)
    data, mask, vals = to_array(arr), to_array(mask), jnp.ravel(to_array(vals))
    if data.size != mask.size:
        raise ValueError("place: arr and mask must be the same size")
    if not vals.size:
        raise ValueError("Cannot place values from an empty array")
    if not data.size:
        return data
    flat_mask = jnp.ravel(mask).astype(bool)
    # The k-th True element takes vals[k % len(vals)].
    rank = jnp.cumsum(flat_mask.astype(np.int32)) - 1
    taken = jnp.take(vals, rank % vals.size).astype(data.dtype)
    return jnp.where(flat_mask, taken, jnp.ravel(data)).reshape(data.shape)
