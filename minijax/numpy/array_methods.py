"""Python operators and NumPy-style methods, installed on both minijax.Array and
minijax.core.Tracer (so traced code reads like NumPy code).

Binary operators follow jnp's promotion (weak types for Python scalars) and broadcasting,
and return NotImplemented for operand types minijax does not know.
"""

from __future__ import annotations

import sys

import numpy as np

from minijax.array import Array
from minijax.core import Tracer
from minijax.numpy import (
    at,
    creation,
    indexing,
    manipulation,
    products,
    reductions,
    sorting_searching,
    ufuncs,
    ufuncs_logic,
    util,
)
from minijax.numpy.creation import _user_dtype


def _array_namespace(self, api_version=None):
    """The array API namespace of minijax arrays: minijax.numpy (the package this module is
    part of, so it is loaded; looked up, not imported, as imports flow into the package)."""
    return sys.modules[__package__]


def _accepted(other) -> bool:
    return (isinstance(other, (Array, Tracer, np.ndarray, np.generic))
            or type(other) in (bool, int, float, complex) or hasattr(other, "__jax_array__"))


def _binop(fn, reflected=False):
    def op(self, other):
        if not _accepted(other):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)
    op.__name__ = fn.__name__
    return op


def _swap(fn):
    def swapped(a, b):
        return fn(b, a)
    return swapped


_BINARY = {
    "add": ufuncs.add, "sub": ufuncs.subtract, "mul": ufuncs.multiply,
    "truediv": ufuncs.true_divide, "floordiv": ufuncs.floor_divide, "mod": ufuncs.remainder,
    "divmod": ufuncs.divmod, "pow": ufuncs.power, "matmul": products.matmul,
    "and": ufuncs_logic.bitwise_and, "or": ufuncs_logic.bitwise_or,
    "xor": ufuncs_logic.bitwise_xor, "lshift": ufuncs_logic.left_shift,
    "rshift": ufuncs_logic.right_shift,
}
_COMPARE = {"eq": ufuncs_logic.equal, "ne": ufuncs_logic.not_equal, "lt": ufuncs_logic.less,
            "le": ufuncs_logic.less_equal, "gt": ufuncs_logic.greater,
            "ge": ufuncs_logic.greater_equal}


def _pow(self, other):
    if not _accepted(other):
        return NotImplemented
    return ufuncs.power(self, other)


def _rpow(self, other):
    if not _accepted(other):
        return NotImplemented
    return ufuncs.power(other, self)


# --------------------------------------------------------------------------- methods


def _reshape(self, *args, order="C", **kwargs):
    """a.reshape(shape) or a.reshape(*shape)."""
    if "shape" in kwargs:
        shape = kwargs.pop("shape")
    elif len(args) == 1 and not isinstance(args[0], (int, np.integer)):
        shape = args[0]
    else:
        shape = args
    if kwargs:
        raise TypeError(f"reshape() got unexpected keyword arguments {sorted(kwargs)}")
    return manipulation.reshape(self, shape, order=order)


def _transpose(self, *args):
    """a.transpose(), a.transpose(axes) or a.transpose(*axes)."""
    if not args or (len(args) == 1 and args[0] is None):
        axes = None
    elif len(args) == 1 and not isinstance(args[0], (int, np.integer)):
        axes = args[0]
    else:
        axes = args
    return manipulation.transpose(self, axes)


def _astype(self, dtype, copy=False, device=None):
    """Convert to `dtype` (canonicalized; 64-bit requests warn without x64)."""
    return util.convert(self, _user_dtype(dtype), False)


def _flatten(self, order="C"):
    return manipulation.ravel(self, order)


def _round(self, decimals=0, out=None):
    return ufuncs.round(self, decimals, out)


def _python_round(self, ndigits=None):
    if ndigits is None:
        if self.ndim:
            raise TypeError("type Array doesn't define __round__ method for non-scalars")
        return ufuncs.round(self, 0)
    return ufuncs.round(self, ndigits)


def _iter(self):
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))


def _nonzero(self, *, size=None, fill_value=None):
    return indexing.nonzero(self, size=size, fill_value=fill_value)


def _repeat(self, repeats, axis=None, *, total_repeat_length=None):
    return manipulation.repeat(self, repeats, axis, total_repeat_length=total_repeat_length)


def _clip(self, min=None, max=None):
    return ufuncs.clip(self, min, max)


def _item(self, *args):
    value = np.asarray(self)
    return value.item(*args)


def _getitem(self, idx):
    return indexing.rewriting_take(self, idx)


_METHODS = {
    "sum": reductions.sum, "prod": reductions.prod, "mean": reductions.mean,
    "max": reductions.max, "min": reductions.min, "argmax": reductions.argmax,
    "argmin": reductions.argmin, "std": reductions.std, "var": reductions.var,
    "all": reductions.all, "any": reductions.any, "ptp": reductions.ptp,
    "cumsum": reductions.cumsum, "cumprod": reductions.cumprod,
    "reshape": _reshape, "transpose": _transpose, "astype": _astype,
    "ravel": manipulation.ravel, "flatten": _flatten, "squeeze": manipulation.squeeze,
    "swapaxes": manipulation.swapaxes, "clip": _clip, "round": _round,
    "dot": products.dot, "conj": ufuncs.conjugate, "conjugate": ufuncs.conjugate,
    "nonzero": _nonzero, "take": indexing.take,
    "sort": sorting_searching.sort, "argsort": sorting_searching.argsort,
    "repeat": _repeat, "diagonal": creation.diagonal, "trace": reductions.trace,
    "__getitem__": _getitem, "__iter__": _iter, "__round__": _python_round,
    "__pow__": _pow, "__rpow__": _rpow,
    "__neg__": ufuncs.negative, "__pos__": ufuncs.positive, "__abs__": ufuncs.absolute,
    "__invert__": ufuncs_logic.bitwise_not, "__matmul__": _binop(products.matmul),
    "__rmatmul__": _binop(products.matmul, reflected=True),
}

_PROPERTIES = {
    "T": lambda self: manipulation.transpose(self),
    "mT": lambda self: manipulation.matrix_transpose(self),
    "real": lambda self: ufuncs.real(self),
    "imag": lambda self: ufuncs.imag(self),
    "at": lambda self: at._IndexUpdateHelper(self),
}


def _install(cls):
    for name, fn in _BINARY.items():
        if name in ("pow", "matmul"):
            continue
        setattr(cls, f"__{name}__", _binop(fn))
        setattr(cls, f"__r{name}__", _binop(fn, reflected=True))
    for name, fn in _COMPARE.items():
        setattr(cls, f"__{name}__", _binop(fn))
    for name, fn in _METHODS.items():
        if cls is Array and name == "__iter__":
            setattr(cls, name, _iter)
            continue
        if cls is Tracer and name == "__iter__":
            continue
        setattr(cls, name, fn)
    for name, getter in _PROPERTIES.items():
        setattr(cls, name, property(getter))
    if cls is Array:
        cls.__array_namespace__ = _array_namespace
    if cls is Tracer:
        cls.item = _item
        cls.itemsize = property(lambda self: self.aval.dtype.itemsize)
        cls.nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)


_install(Array)
_install(Tracer)
