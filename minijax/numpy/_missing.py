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
    "intp": "use jnp.int_ (int32, or int64 with jax_enable_x64) or a sized integer type",
    "putmask": _IMMUTABLE + " or jnp.where(mask, values, x)",
    "uintp": "use jnp.uint (uint32, or uint64 with jax_enable_x64) or a sized unsigned type",
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
