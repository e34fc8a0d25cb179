"""``jax._src.checkify``: minijax's checkify under JAX's internal module name, with the two
typing names flax.nnx takes from it (``Out``, ``JaxException``: the base class of the error
categories that ``checkify(errors=...)`` selects)."""

from typing import TypeVar

from minijax.experimental.checkify import *  # noqa: F403
from minijax.experimental.checkify import ErrorCategory
from minijax.experimental.checkify import __all__ as _checkify_all

JaxException = ErrorCategory
Out = TypeVar("Out")

__all__ = [*_checkify_all, "JaxException", "Out"]
