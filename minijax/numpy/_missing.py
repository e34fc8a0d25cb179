"""Helpful errors for common NumPy names that minijax.numpy does not provide.

`minijax.numpy.__getattr__` calls `missing_attribute(name)`: names listed here raise a
NotImplementedError (that is also an AttributeError, so `hasattr` stays False) naming an
alternative; other names raise a plain AttributeError.
"""

from __future__ import annotations

_IMMUTABLE = ("arrays are immutable in minijax (as in JAX); use the functional update "
              "x.at[index].set(values)")

ALTERNATIVES = {
    "copyto": _IMMUTABLE,
    "fromiter": ("not provided, as in JAX (it may be impure under jit): use "
                 "jnp.asarray(numpy.fromiter(...))"),
    "histogram2d": "use jnp.digitize per coordinate and jnp.bincount(..., length=)",
    "histogramdd": "use jnp.digitize per coordinate and jnp.bincount(..., length=)",
    "intp": "use jnp.int_ (int32, or int64 with jax_enable_x64) or a sized integer type",
    "place": _IMMUTABLE,
    "put": _IMMUTABLE,
    "put_along_axis": _IMMUTABLE + " (or scatter with lax.scatter)",
    "putmask": _IMMUTABLE + " or jnp.where(mask, values, x)",
    "ravel_multi_index": "compute the flat index with * and + from the array's strides",
    "resize": "use jnp.tile (or jnp.resize-like jnp.ravel + slicing) and jnp.reshape",
    "roots": ("needs jnp.linalg.eigvals (not in minijax yet): use numpy.roots on the host "
              "(outside jit)"),
    "rollaxis": "use jnp.moveaxis",
    "spacing": "use jnp.nextafter(x, jnp.inf) - x",
    "trim_zeros": "its size depends on values: slice eagerly, or use jnp.nonzero(size=)",
    "uintp": "use jnp.uint (uint32, or uint64 with jax_enable_x64) or a sized unsigned type",
    "unravel_index": "use // and % with the array's shape",
    "unstack": "use [x[i] for i in range(x.shape[0])]",
}


class NotImplementedAttributeError(NotImplementedError, AttributeError):
    """A NumPy name minijax.numpy lacks; the message names an alternative."""


def missing_attribute(name: str):
    """Raise the error for `minijax.numpy.<name>` (an unknown attribute)."""
    hint = ALTERNATIVES.get(name)
    if hint is not None:
        raise NotImplementedAttributeError(
            f"minijax.numpy.{name} is not implemented: {hint}.")
    raise AttributeError(f"module 'minijax.numpy' has no attribute '{name}'")
