"""Type annotations for minijax code, as ``jax.typing``: :data:`ArrayLike` (what functions
accept as an array) and :data:`DTypeLike` (what they accept as a dtype)."""

from __future__ import annotations

from typing import Any

import numpy as np

from minijax.array import Array

ArrayLike = Array | np.ndarray | np.bool_ | np.number | bool | int | float | complex
DTypeLike = str | type[Any] | np.dtype

__all__ = ["ArrayLike", "DTypeLike"]
