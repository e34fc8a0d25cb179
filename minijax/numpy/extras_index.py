"""Index builders with jax.numpy's signatures: diag_indices, tril_indices, triu_indices
(and their _from forms), mask_indices, ix_, and the index-expression objects mgrid, ogrid,
r_, c_, s_ and index_exp."""

from __future__ import annotations

import numpy as np

import minijax.numpy as jnp
from minijax import dtypes, lax
from minijax.numpy import util
from minijax.numpy.util import check_arraylike, to_array

__all__ = ["c_", "diag_indices", "diag_indices_from", "index_exp", "ix_", "mask_indices",
           "mgrid", "ogrid", "r_", "s_", "tril_indices", "tril_indices_from", "triu_indices",
           "triu_indices_from"]

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
