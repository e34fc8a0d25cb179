"""minijax.scipy.interpolate (JAX's ``jax.scipy.interpolate``): interpolation on a regular
(rectilinear) grid."""

from __future__ import annotations

import itertools

from minijax import numpy as jnp
from minijax.tree_util import register_pytree_node_class

__all__ = ["RegularGridInterpolator"]


@register_pytree_node_class
class RegularGridInterpolator:
    """Interpolate ``values`` given on the grid ``points`` (one increasing 1-d array per
    dimension) by ``"linear"`` or ``"nearest"``; points outside give ``fill_value`` (or, with
    ``fill_value=None``, are extrapolated). ``bounds_error=True`` is not supported (as JAX).
    """

    def __init__(self, points, values, method: str = "linear", bounds_error: bool = False,
                 fill_value=jnp.nan):
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        self.method = method
        self.bounds_error = bounds_error
        if self.bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT")
        values = jnp.asarray(values)
        if len(points) > values.ndim:
            raise ValueError(f"there are {len(points)} point arrays, but values has "
                             f"{values.ndim} dimensions")
        if not jnp.issubdtype(values.dtype, jnp.inexact):
            values = values.astype(jnp.result_type(values, 1.0))
        self.fill_value = fill_value
        self.grid = tuple(jnp.asarray(p) for p in points)
        self.values = values

    def __call__(self, xi, method: str | None = None):
        """The interpolant at ``xi`` (``(..., ndim)``)."""
        method = self.method if method is None else method
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        ndim = len(self.grid)
        xi = jnp.asarray(xi)
        if xi.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, "
                             f"but this RegularGridInterpolator has dimension {ndim}")
        lead = xi.shape[:-1]
        xi = xi.reshape(-1, ndim).astype(jnp.result_type(xi, self.values.dtype, 1.0))
        indices, norm_dists, out_of_bounds = [], [], jnp.zeros(xi.shape[0], bool)
        for x, grid in zip(xi.T, self.grid):
            i = jnp.clip(jnp.searchsorted(grid, x, side="right") - 1, 0, grid.shape[0] - 2)
            indices.append(i)
            norm_dists.append((x - grid[i]) / (grid[i + 1] - grid[i]))
            out_of_bounds = out_of_bounds | (x < grid[0]) | (x > grid[-1])
        if method == "linear":
            result = None
            for corner in itertools.product((0, 1), repeat=ndim):
                weight = 1.0
                idx = []
                for c, i, y in zip(corner, indices, norm_dists):
                    idx.append(i + c)
                    weight = weight * (y if c else 1 - y)
                vals = self.values[tuple(idx)]
                weight = weight.reshape(weight.shape + (1,) * (vals.ndim - 1))
                term = vals * weight
                result = term if result is None else result + term
        else:
            idx = tuple(jnp.where(y <= 0.5, i, i + 1) for i, y in zip(indices, norm_dists))
            result = self.values[idx]
        if self.fill_value is not None:
            oob = out_of_bounds.reshape(out_of_bounds.shape + (1,) * (result.ndim - 1))
            result = jnp.where(oob, jnp.asarray(self.fill_value, result.dtype), result)
        return result.reshape(lead + self.values.shape[ndim:])

    def tree_flatten(self):
        return (self.grid, self.values, self.fill_value), (self.method, self.bounds_error)

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.grid, obj.values, obj.fill_value = children
        obj.method, obj.bounds_error = aux
        return obj
