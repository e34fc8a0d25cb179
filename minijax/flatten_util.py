"""``jax.flatten_util``: :func:`ravel_pytree` turns a pytree of arrays into one flat vector."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.tree_util import tree_flatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Ravel every leaf and concatenate them into a 1-d array; also return the inverse.

    The flat array's dtype is the leaves' promoted dtype (float32 for no leaves); ``unravel``
    splits a vector of that length and dtype back into the leaves' shapes and dtypes.
    """
    leaves, treedef = tree_flatten(pytree)
    leaves = [jnp.asarray(x) for x in leaves]
    shapes = [tuple(x.shape) for x in leaves]
    dtypes = [x.dtype for x in leaves]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    total = sum(sizes)
    if not leaves:
        flat_dtype = jnp.zeros(0).dtype
        flat = jnp.zeros(0, flat_dtype)
    else:
        flat_dtype = jnp.result_type(*dtypes)
        flat = jnp.concatenate([jnp.ravel(lax.convert_element_type(x, flat_dtype))
                                for x in leaves])
    offsets = np.cumsum([0] + sizes)

    def unravel(arr):
        if np.shape(arr) != (total,):
            raise ValueError("The unravel function expected an array of shape "
                             f"{(total,)}, got shape {np.shape(arr)}")
        arr_dtype = jnp.result_type(arr)
        if arr_dtype != flat_dtype:
            raise TypeError(f"unravel function given array of dtype {arr_dtype}, "
                            f"but expected dtype {flat_dtype}")
        parts = [jnp.reshape(arr[int(offsets[i]):int(offsets[i + 1])], shapes[i])
                 for i in range(len(shapes))]
        return treedef.unflatten([lax.convert_element_type(p, d)
                                  for p, d in zip(parts, dtypes)])

    return flat, unravel
