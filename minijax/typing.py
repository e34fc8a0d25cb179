"""Type annotations for minijax code (as jax.typing): `ArrayLike` and `DTypeLike`.

    def f(x: ArrayLike, dtype: DTypeLike = None) -> minijax.Array: ...
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from minijax.array import Array

__all__ = ["ArrayLike", "DTypeLike"]


class SupportsDType(Protocol):
    """An object with a `.dtype` (a NumPy dtype)."""

    @property
    def dtype(self) -> np.dtype: ...


#: Anything minijax functions accept as an array: Arrays, NumPy arrays and scalars, and
#: Python scalars (not lists or tuples, as in JAX).
ArrayLike = Array | np.ndarray | np.bool_ | np.number | bool | int | float | complex

#: Anything accepted as a dtype: a name, a scalar type, a NumPy dtype, or an object with a
#: `.dtype`.
DTypeLike = str | type[Any] | np.dtype | SupportsDType
