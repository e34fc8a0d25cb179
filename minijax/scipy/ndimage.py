"""minijax.scipy.ndimage (JAX's ``jax.scipy.ndimage``): ``map_coordinates`` with order 0
(nearest) or 1 (linear) interpolation and JAX's boundary modes."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from minijax import numpy as jnp

__all__ = ["map_coordinates"]

_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _index_fixer(mode: str, size: int):
    """Map an integer index array onto [0, size) as ``mode`` reflects or wraps it."""
    if mode == "constant" or mode == "nearest":
        return lambda i: jnp.clip(i, 0, size - 1)
    if mode == "wrap":
        return lambda i: jnp.mod(i, size)
    if mode == "mirror":  # d c b | a b c d | c b a
        period = max(2 * size - 2, 1)

        def mirror(i):
            i = jnp.mod(i, period)
            return jnp.where(i >= size, period - i, i)
        return mirror

    period = 2 * size  # reflect: d c b a | a b c d | d c b a

    def reflect(i):
        i = jnp.mod(i, period)
        return jnp.where(i >= size, period - 1 - i, i)
    return reflect


def _round_half_away(x):
    return jnp.sign(x) * jnp.floor(jnp.abs(x) + 0.5)


def _nearest(coord):
    return [(_round_half_away(coord).astype(jnp.int32), 1.0)]


def _linear(coord):
    lower = jnp.floor(coord)
    upper_weight = coord - lower
    lower_i = lower.astype(jnp.int32)
    return [(lower_i, 1.0 - upper_weight), (lower_i + 1, upper_weight)]


def map_coordinates(input, coordinates: Sequence, order: int, mode: str = "constant",
                    cval=0.0):
    """Values of ``input`` at the (fractional) ``coordinates``, one array per dimension of
    ``input``, by nearest (``order=0``) or linear (``order=1``) interpolation; outside
    points follow ``mode`` (``constant`` fills with ``cval``)."""
    input = jnp.asarray(input)
    coordinates = [jnp.asarray(c) for c in coordinates]
    if len(coordinates) != input.ndim:
        raise ValueError("coordinates must be a sequence of length input.ndim, but "
                         f"{len(coordinates)} != {input.ndim}")
    if order not in (0, 1):
        raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires "
                                  f"order<=1, got order={order}")
    if mode not in _MODES:
        raise NotImplementedError(f"jax.scipy.ndimage.map_coordinates does not yet support "
                                  f"mode {mode}; use one of {_MODES}")
    coordinates = jnp.broadcast_arrays(*coordinates) if coordinates else coordinates
    cdtype = jnp.result_type(input, *coordinates, 1.0)
    interp = _nearest if order == 0 else _linear
    per_dim = []
    for coord, size in zip(coordinates, input.shape):
        fix = _index_fixer(mode, size)
        entries = []
        for index, weight in interp(coord.astype(cdtype)):
            valid = (index >= 0) & (index < size) if mode == "constant" else True
            entries.append((fix(index), valid, weight))
        per_dim.append(entries)
    out = None
    for combo in itertools.product(*per_dim):
        indices = tuple(e[0] for e in combo)
        weight = math.prod([e[2] for e in combo]) if combo else 1.0
        value = input[indices] if combo else input
        if mode == "constant":
            valid = True
            for e in combo:
                valid = valid & e[1]
            value = jnp.where(valid, value, jnp.asarray(cval, input.dtype))
        term = value * weight
        out = term if out is None else out + term
    if jnp.issubdtype(input.dtype, jnp.integer):
        return _round_half_away(out).astype(input.dtype)
    return out.astype(input.dtype)
