"""minijax.experimental: the parts of ``jax.experimental`` minijax has (``checkify``,
``io_callback``)."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax import tree_util
from minijax.core import Tracer
from minijax.experimental import checkify

__all__ = ["checkify", "io_callback"]


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False,
                **kwargs):
    """Call the Python ``callback`` on the arguments' values; its results (with the structure,
    shapes and dtypes of ``result_shape_dtypes``) come back as arrays.

    Eager calls only in minijax for now: with traced arguments (under jit, vmap, grad) it
    raises NotImplementedError; use ``minijax.debug.callback`` for effects without results.
    """
    del sharding, ordered
    leaves = tree_util.tree_leaves((args, kwargs))
    if any(isinstance(x, Tracer) for x in leaves):
        raise NotImplementedError("io_callback with traced arguments (under jit, vmap or grad) "
                                  "is not supported by minijax yet; call it outside the "
                                  "transformation, or use minijax.debug.callback.")
    np_args, np_kwargs = tree_util.tree_map(np.asarray, (args, kwargs))
    out = callback(*np_args, **np_kwargs)
    specs, treedef = tree_util.tree_flatten(result_shape_dtypes)
    values = treedef.flatten_up_to(out)
    results = []
    for spec, value in zip(specs, values):
        value = np.asarray(value, dtype=spec.dtype)
        if value.shape != tuple(spec.shape):
            raise ValueError(f"io_callback: the callback returned shape {value.shape} where "
                             f"result_shape_dtypes says {tuple(spec.shape)}.")
        results.append(jnp.asarray(value))
    return treedef.unflatten(results)
