"""Type annotations for minijax code, as ``jax.typing``: :data:`ArrayLike` (what functions
accept as an array) and :data:`DTypeLike` (what they accept as a dtype)."""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from minijax.array import Array

ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
DTypeLike = Union[str, type[Any], np.dtype]

__all__ = ["ArrayLike", "DTypeLike"]
