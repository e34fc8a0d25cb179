"""The abstract array type: what JAX calls ``jax.Array`` and ``jax.numpy.ndarray``.

Concrete arrays (:class:`minijax.Array`) and tracers (values inside jit, grad, vmap) are both
instances of :class:`ArrayType`, so ``isinstance(x, jnp.ndarray)`` finds the array leaves of
a pytree inside transformed functions too, as in JAX. ``minijax.Array`` stays the concrete
class (minijax's internals use ``isinstance(x, Array)`` to mean a concrete value).
"""

import abc

from minijax.array import Array
from minijax.core import Tracer

__all__ = ["ArrayType"]


class ArrayType(abc.ABC):  # noqa: B024 - an abstract type with no abstract methods, as JAX's
    """The type of arrays: concrete ``minijax.Array`` values and tracers."""


ArrayType.register(Array)
ArrayType.register(Tracer)
