"""Host-side helpers of jax.numpy: printing (arrays print through NumPy's formatting, so
these are NumPy's print options and array_repr/array_str, as in JAX) and files (save and
savez are NumPy's; load returns an Array and restores bfloat16; fromfile is not provided,
as in JAX)."""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.numpy.creation import asarray

__all__ = ["ComplexWarning", "array_repr", "array_str", "fromfile", "get_printoptions",
           "load", "printoptions", "save", "savez", "set_printoptions"]

array_repr = np.array_repr
array_str = np.array_str
save = np.save
savez = np.savez
ComplexWarning = np.exceptions.ComplexWarning


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


def load(file, *args, **kwargs):
    """numpy.load, returning an Array for .npy files; bfloat16 arrays (which NumPy writes
    as 2-byte void data) come back as bfloat16. .npz archives load as NumPy's."""
    out = np.load(file, *args, **kwargs)
    if not isinstance(out, np.ndarray):
        return out
    if out.dtype == np.dtype("V2"):
        out = out.view(dtypes.bfloat16)
    try:
        return asarray(out)
    except TypeError:  # a dtype minijax arrays cannot hold (objects, strings)
        return out


def fromfile(*args, **kwargs):
    """Not provided, as in JAX: reading a file is a side effect (unsafe under jit)."""
    raise NotImplementedError(
        "jnp.fromfile() is not implemented because it may be non-pure and thus unsafe for "
        "use with JIT and other JAX transformations. Consider using "
        "jnp.asarray(np.fromfile(...)) instead, although care should be taken if "
        "np.fromfile is used within a jax transformations because of its potential "
        "side-effect of consuming the file object.")
