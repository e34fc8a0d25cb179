"""``jax.ref``: mutable array references (see :mod:`minijax.experimental.mutable_array`)."""

from minijax.experimental.mutable_array import (
    AbstractRef,
    Ref,
    addupdate,
    freeze,
    get,
    new_ref,
    set,
    swap,
)

__all__ = ["AbstractRef", "Ref", "addupdate", "freeze", "get", "new_ref", "set", "swap"]
