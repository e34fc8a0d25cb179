"""Printing helpers of jax.numpy: arrays print through NumPy's formatting, so these are
NumPy's print options and array_repr/array_str (as in JAX)."""

from __future__ import annotations

import numpy as np

__all__ = ["array_repr", "array_str", "get_printoptions", "printoptions", "set_printoptions"]

array_repr = np.array_repr
array_str = np.array_str


def printoptions(*args, **kwargs):
    """numpy.printoptions: a context manager setting print options, which minijax arrays'
    repr and str follow."""
    return np.printoptions(*args, **kwargs)


def get_printoptions():
    """numpy.get_printoptions: the current print options (a dict)."""
    return np.get_printoptions()


def set_printoptions(*args, **kwargs):
    """numpy.set_printoptions: set the print options minijax arrays' repr and str follow."""
    return np.set_printoptions(*args, **kwargs)
