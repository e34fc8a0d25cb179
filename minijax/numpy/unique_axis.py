"""jnp.unique along an axis: the unique slices (rows after moving `axis` to the front),
eagerly and under jit (with size=), as JAX computes them.

The slices are sorted lexicographically (first element most significant, NaNs last, -0.0
equal to 0.0) with a stable multi-key sort, so each group's first entry is its first
occurrence; with equal_nan=True two slices whose NaNs sit at the same places are equal
(NumPy keeps such slices apart; JAX merges them). Padding up to size= repeats the
smallest slice (or fill_value), its first-occurrence index and a count of 0, as JAX does.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.numpy import base as jnp
from minijax.numpy import util


def _key(col):
    """Sort key with -0.0 and 0.0 equal (lax.sort alone orders -0.0 first)."""
    if dtypes.kind(get_aval(col).dtype) != "f":
        return col
    return jnp.where(col == 0, jnp.zeros_like(col), col)


def unique_along_axis(ar, axis, size, fill_value, return_index, return_inverse,
                      return_counts, equal_nan, idx_dt):
    """The outputs of jnp.unique(ar, axis=axis, ...) as a list (values first)."""
    aval = get_aval(ar)
    axis = util.canonicalize_axis(axis, aval.ndim)
    moved = jnp.moveaxis(ar, axis, 0)
    n = aval.shape[axis]
    rest = get_aval(moved).shape[1:]
    width = int(np.prod(rest, dtype=np.int64))
    rows = jnp.reshape(moved, (n, width))
    if n == 0:
        if size is None:
            size = 0
        vals = jnp.full((size, width), 0 if fill_value is None else fill_value, aval.dtype)
        perm = jnp.zeros((0,), idx_dt)
        starts = jnp.zeros((0,), bool)
        pos = jnp.zeros((size,), idx_dt)
        valid = jnp.zeros((size,), bool)
        first_index = jnp.zeros((), idx_dt)
    else:
        iota = util.iota(idx_dt, (n,))
        keys = tuple(_key(rows[:, j]) for j in range(width))
        perm = lax.sort(keys + (iota,), 0, is_stable=True, num_keys=len(keys))[-1] \
            if keys else iota
        s = jnp.take(rows, perm, axis=0)
        eq = s[1:] == s[:-1]
        if equal_nan and dtypes.kind(aval.dtype) in "fc":
            eq = eq | (jnp.isnan(s[1:]) & jnp.isnan(s[:-1]))
        starts = jnp.concatenate([jnp.ones((1,), bool), ~jnp.all(eq, axis=1)])
        if size is None:
            size = int(np.count_nonzero(np.asarray(starts)))
        (pos,) = jnp.nonzero(starts, size=size, fill_value=n)
        valid = pos < n
        safe = jnp.clip(pos, 0, n - 1)
        fill = s[0] if fill_value is None else jnp.full((width,), fill_value, aval.dtype)
        vals = jnp.where(valid[:, None], jnp.take(s, safe, axis=0), fill[None, :])
        first_index = perm[0]
    vals = jnp.moveaxis(jnp.reshape(vals, (size,) + rest), 0, axis)
    outs = [vals]
    if return_index:
        idx = jnp.take(perm, jnp.clip(pos, 0, n - 1)) if n else pos
        outs.append(jnp.where(valid, idx, first_index).astype(idx_dt))
    group = jnp.cumsum(starts.astype(idx_dt)) - 1
    if return_inverse:
        outs.append(jnp.zeros((n,), idx_dt).at[perm].set(group))
    if return_counts:
        outs.append(jnp.zeros((size,), idx_dt).at[group].add(1, mode="drop"))
    return outs
