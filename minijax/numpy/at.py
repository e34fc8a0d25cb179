"""Functional updates: `x.at[idx].set/add/subtract/multiply/divide/power/min/max/apply/get`.

Updates use lax.scatter* over the indexing plan of minijax/numpy/indexing.py. Out-of-bound
indices are dropped by default (mode="drop"); `get` clamps by default ("clip") or fills.
If several indices name the same element, all updates apply (set: one of them wins).
"""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import get_aval
from minijax.lax.vmap import vmap
from minijax.numpy import indexing, ufuncs, util
from minijax.numpy.creation import asarray, ones, ones_like, zeros
from minijax.numpy.ufuncs import divide, negative, power
from minijax.numpy.util import to_array


class _IndexUpdateHelper:
    """The object returned by `x.at`; index it to get an _IndexUpdateRef."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """`x.at[idx]`: call .set(y), .add(y), ... to get an updated copy of x."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None):
        """x[idx] with the given out-of-bound mode ("clip" default, or "fill")."""
        return indexing.rewriting_take(self.array, self.index, mode=mode,
                                       fill_value=fill_value,
                                       indices_are_sorted=indices_are_sorted,
                                       unique_indices=unique_indices)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] = values."""
        return scatter_update(self.array, self.index, values, "set", indices_are_sorted,
                              unique_indices, mode)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] += values (repeated indices accumulate)."""
        return scatter_update(self.array, self.index, values, "add", indices_are_sorted,
                              unique_indices, mode)

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False,
                 mode=None):
        """x[idx] -= values."""
        return self.add(negative(values), indices_are_sorted=indices_are_sorted,
                        unique_indices=unique_indices, mode=mode)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False,
                 mode=None):
        """x[idx] *= values."""
        return scatter_update(self.array, self.index, values, "mul", indices_are_sorted,
                              unique_indices, mode)

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] /= values."""
        x = to_array(self.array)
        denom = scatter_update(ones_like(x), self.index, values, "mul", indices_are_sorted,
                               unique_indices, mode)
        return util.convert(divide(x, denom), get_aval(x).dtype, get_aval(x).weak_type)

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] **= values."""
        x = to_array(self.array)
        exps = scatter_update(ones_like(x), self.index, values, "mul", indices_are_sorted,
                              unique_indices, mode)
        return util.convert(power(x, exps), get_aval(x).dtype, get_aval(x).weak_type)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] = minimum(x[idx], values)."""
        return scatter_update(self.array, self.index, values, "min", indices_are_sorted,
                              unique_indices, mode)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] = maximum(x[idx], values)."""
        return scatter_update(self.array, self.index, values, "max", indices_are_sorted,
                              unique_indices, mode)

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] = func(x[idx]), func applied to each element (as JAX traces it on a
        scalar) and once per occurrence of a repeated index, like XLA's scatter."""
        x = to_array(self.array)
        aval = get_aval(x)

        def elementwise(v):
            flat = lax.reshape(v, (int(np.prod(get_aval(v).shape, dtype=np.int64)),))
            out = util.convert(vmap(func)(flat), aval.dtype, aval.weak_type)
            return lax.reshape(out, get_aval(v).shape)

        entries = indexing._expand_index(aval.shape, self.index)
        if unique_indices or all(kind != indexing._ADV or get_aval(val).ndim == 0
                                 for kind, val in entries):
            current = self.get(mode="clip" if mode in (None, "drop", "fill") else mode)
            return self.set(elementwise(current), indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices, mode=mode)
        # An index array may name a position several times: func runs that many times there.
        counts = scatter_update(zeros(aval.shape, np.int32), self.index,
                                ones((), np.int32), "add", mode=mode)
        rounds = lax.reduce_max(counts, tuple(range(aval.ndim))) if aval.size else 0

        def body(i, y):
            return lax.select(lax.gt(counts, lax.broadcast(i, aval.shape)), elementwise(y), y)
        return lax.fori_loop(np.int32(0), rounds, body, x)


_SCATTERS = {"set": "scatter", "add": "scatter_add", "mul": "scatter_mul",
             "min": "scatter_min", "max": "scatter_max"}


def _combine(op, x, values):
    fn = {"set": lambda a, b: b, "add": ufuncs.add, "mul": ufuncs.multiply,
          "min": ufuncs.minimum, "max": ufuncs.maximum}[op]
    return fn(x, values)


def scatter_update(x, index, values, op, indices_are_sorted=False, unique_indices=False,
                   mode=None):
    """x with x[index] combined with `values` by op ("set", "add", "mul", "min", "max")."""
    if not isinstance(values, (list, tuple)):
        util.check_arraylike("scatter", values)
    x = to_array(x)
    x_aval = get_aval(x)
    if isinstance(values, (list, tuple)):
        values = asarray(values)
    values = util.convert(values, x_aval.dtype, x_aval.weak_type)
    entries = indexing._expand_index(x_aval.shape, index)
    plan = indexing._Plan(x_aval.shape, entries)
    vals = _fit_values(values, plan.full_shape)
    vals = lax.reshape(vals, plan.squeezed_shape)
    if 0 in plan.squeezed_shape or any(x_aval.shape[d] == 0 for d in plan.index_dims):
        return x
    if not plan.index_dims:
        out = util.broadcast_to(_combine(op, x, vals), x_aval.shape)
        return util.convert(out, x_aval.dtype, x_aval.weak_type)
    if mode in ("clip", "promise_in_bounds", "fill", "drop", None):
        mode = "drop" if mode in (None, "fill") else mode
    else:
        raise ValueError(f"Unsupported index update mode {mode!r}; expected one of "
                         "'drop', 'clip', 'promise_in_bounds', 'fill'")
    dnums = lax.ScatterDimensionNumbers(
        update_window_dims=plan.window_pos, inserted_window_dims=plan.index_dims,
        scatter_dims_to_operand_dims=plan.index_dims)
    scatter = getattr(lax, _SCATTERS[op])
    # Scalar and slice indices never repeat a position (JAX marks them unique, which makes
    # e.g. .at[i].mul(y) differentiable w.r.t. y).
    unique_indices = unique_indices or all(
        kind != indexing._ADV or get_aval(val).ndim == 0 for kind, val in entries)
    return scatter(x, plan.indices(), vals, dnums, indices_are_sorted=indices_are_sorted,
                   unique_indices=unique_indices, mode=indexing._mode(mode))


def _fit_values(values, shape):
    """Broadcast update values to the indexed shape (leading size-1 dims may be dropped)."""
    vshape = get_aval(values).shape
    while len(vshape) > len(shape) and vshape[0] == 1:
        vshape = vshape[1:]
    if vshape != get_aval(values).shape:
        values = lax.reshape(values, vshape)
    try:
        return util.broadcast_to(values, shape)
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: values of shape "
                         f"{get_aval(values).shape} cannot be assigned to an index of "
                         f"shape {shape}") from None
