"""Shared helpers of minijax.numpy: argument checks, dtype promotion, broadcasting, axes.

Everything here is written in terms of minijax.lax; NumPy is only used on static data
(shapes, Python scalars, host constants).
"""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from minijax import dtypes, lax
from minijax.array import Array
from minijax.core import ShapedArray, Tracer, get_aval

AxisError = np.exceptions.AxisError


# --------------------------------------------------------------------------- argument kinds


def is_array(x) -> bool:
    """True for minijax Arrays and tracers."""
    return isinstance(x, (Array, Tracer))


def is_arraylike(x) -> bool:
    """Arrays, tracers, NumPy arrays/scalars and Python scalars (not lists)."""
    return (isinstance(x, (Array, Tracer, np.ndarray, np.generic))
            or dtypes.is_python_scalar(x) or hasattr(x, "__jax_array__"))


def check_arraylike(name: str, *args) -> None:
    """Raise JAX's TypeError for list/tuple (or other) arguments to jnp functions."""
    for pos, arg in enumerate(args):
        if not is_arraylike(arg):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got "
                            f"{type(arg)} at position {pos}.")


def to_array(x):
    """An Array or tracer for x; Python scalars become weakly typed 0-d Arrays."""
    if isinstance(x, (Array, Tracer)):
        return x
    if hasattr(x, "__jax_array__"):
        return to_array(x.__jax_array__())
    if dtypes.is_python_scalar(x):
        dtype = dtypes.python_scalar_dtype(x)
        return Array(_scalar_value(x, dtype), type(x) is not bool)
    value = np.asarray(x)
    if value.dtype == object:
        raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid minijax type")
    dtype = dtypes.canonicalize_dtype(value.dtype)
    return Array(np.array(value, dtype=dtype, copy=True), False)


def _scalar_value(x, dtype, wrap: bool = True) -> np.ndarray:
    """A Python scalar as a NumPy 0-d value of `dtype`.

    A Python int that does not fit a narrow integer dtype wraps around (as JAX's, where the
    int is first a weak int32/int64) unless `wrap` is False (jnp.array(300, jnp.uint8)
    raises); an int outside the weak integer range raises OverflowError either way."""
    dtype = np.dtype(dtype)
    if type(x) is int and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            weak = np.iinfo(dtypes.python_scalar_dtype(0))
            if not wrap or not weak.min <= x <= weak.max:
                raise OverflowError(f"Python integer {x} out of bounds for {dtype}")
            span = int(info.max) - int(info.min) + 1
            x = (x - int(info.min)) % span + int(info.min)
    if type(x) is complex and dtype.kind != "c":
        x = x.real
    if dtype.kind in "iu" and type(x) is float:
        # XLA's float -> int convert: truncate, saturate, NaN -> 0 (-1.0 -> uint8 is 0)
        if math.isnan(x):
            return np.zeros((), dtype)
        info = np.iinfo(dtype)
        v = builtins.min(builtins.max(x, float(info.min)), float(info.max))
        return np.asarray(builtins.min(builtins.max(math.trunc(v), int(info.min)),
                                       int(info.max)), dtype)
    if dtype.kind == "b" and type(x) is float:
        return np.asarray(x != 0.0)
    return np.asarray(x, dtype=dtype)


def ndim_of(x) -> int:
    return len(np.shape(x)) if not is_array(x) else x.ndim


def shape_of(x) -> tuple:
    if is_array(x):
        return x.shape
    if dtypes.is_python_scalar(x):
        return ()
    return np.shape(x)


def dtype_of(x) -> np.dtype:
    return dtypes.dtype_and_weak(x)[0]


def concrete_or_none(x):
    """The concrete NumPy value of x if it is known now (not an abstract tracer)."""
    if isinstance(x, Tracer):
        value = x.to_concrete_value()
        return None if value is None else np.asarray(value)
    if isinstance(x, Array):
        return x._value
    return np.asarray(x)


def concrete_int(x, what: str) -> int:
    """x as a Python int; a clear error if it is traced."""
    if isinstance(x, Tracer):
        return operator.index(x)
    try:
        return operator.index(x)
    except TypeError:
        if isinstance(x, (np.ndarray, Array)) and np.ndim(x) == 0:
            return int(np.asarray(x))
        raise TypeError(f"{what} must be an integer, got {x!r}") from None


# --------------------------------------------------------------------------- dtypes


def convert(x, dtype, weak_type: bool = False):
    """x (any array-like) converted to `dtype` with the given weak type flag."""
    dtype = np.dtype(dtype)
    if dtypes.is_python_scalar(x):
        return Array(_scalar_value(x, dtype), weak_type)
    x = to_array(x)
    aval = get_aval(x)
    if aval.dtype == dtype and aval.weak_type == weak_type:
        return x
    return lax.convert_element_type(x, dtype, weak_type=weak_type)


def astype(x, dtype):
    """A strongly typed conversion to a canonical `dtype` (jnp's `astype`)."""
    return convert(x, dtypes.canonicalize_dtype(dtype), False)


def check_python_int_operands(args):
    """A Python int operand is first a weak int32 (int64 with x64) whatever the other operand:
    JAX raises OverflowError for `uint32_array + 2**31` or `float16_array + 2**40`."""
    for a in args:
        if type(a) is int:
            weak = np.iinfo(dtypes.python_scalar_dtype(0))
            if not weak.min <= a <= weak.max:
                raise OverflowError(
                    f"Python integer {a} is out of bounds for the weak {weak.dtype} that a "
                    f"Python int operand becomes; pass an array of an explicit dtype instead "
                    f"(e.g. jnp.uint32({a}) or jnp.float32({a}))")


def promote_dtypes(*args):
    """Convert args to their common (JAX-promoted) dtype, keeping weak types."""
    check_python_int_operands(args)
    if len(args) == 1:
        return [to_array(args[0])]
    dtype, weak = dtypes.result_type_and_weak(*args)
    return [convert(a, dtype, weak) for a in args]


def promote_dtypes_inexact(*args):
    """Promote, then move integer/bool results to the default float dtype."""
    if _same_typed_arrays(args) and dtypes.kind(args[0].aval.dtype) in "fc":
        return list(args)
    check_python_int_operands(args)
    dtype, weak = dtypes.result_type_and_weak(*args)
    dtype = dtypes.canonicalize_dtype(dtypes.to_inexact(dtype))
    return [convert(a, dtype, weak) for a in args]


def promote_dtypes_numeric(*args):
    """Promote; bools become the default int type."""
    check_python_int_operands(args)
    dtype, weak = dtypes.result_type_and_weak(*args)
    if dtype == dtypes.bool_:
        dtype, weak = dtypes.default_int_dtype(), False
    return [convert(a, dtype, weak) for a in args]


def check_no_complex(name, *arrays):
    for a in arrays:
        if dtypes.is_complex(get_aval(a).dtype):
            raise TypeError(f"{name} does not support complex-valued inputs")


def check_integer_or_bool(name, *arrays):
    for a in arrays:
        if get_aval(a).dtype.kind not in "iub":
            raise TypeError(f"{name} only accepts integer or boolean arguments, got "
                            f"{get_aval(a).dtype}")


# --------------------------------------------------------------------------- shapes


def broadcast_shapes(*shapes) -> tuple:
    """NumPy's broadcast of several shapes; ValueError naming them if incompatible."""
    shapes = [tuple(int(d) for d in s) for s in shapes]
    if not shapes:
        return ()
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        sizes = {s[i - ndim + len(s)] for s in shapes if i - ndim + len(s) >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_to(x, shape):
    """Broadcast an array to `shape` with NumPy's rules (lax.broadcast_in_dim)."""
    x = to_array(x)
    shape = tuple(int(d) for d in shape)
    aval = get_aval(x)
    if aval.shape == shape:
        return x
    nlead = len(shape) - aval.ndim
    if nlead < 0 or any(d not in (1, shape[nlead + i]) for i, d in enumerate(aval.shape)):
        raise ValueError(f"Incompatible shapes for broadcasting: {aval.shape} and requested "
                         f"shape {shape}")
    # Size-1 dimensions that expand are reshaped away first: XLA's broadcast maps operand
    # dimensions onto equal-sized output dimensions only.
    kept = [i for i, d in enumerate(aval.shape) if d == shape[nlead + i]]
    if len(kept) != aval.ndim:
        x = lax.reshape(x, tuple(aval.shape[i] for i in kept))
    return lax.broadcast_in_dim(x, shape, tuple(nlead + i for i in kept))


def broadcast_arrays_for_op(*arrays):
    """Broadcast arrays to their common shape; rank-0 operands stay scalars (lax accepts
    them next to arrays)."""
    shape = broadcast_shapes(*(get_aval(a).shape for a in arrays))
    return [a if get_aval(a).ndim == 0 else broadcast_to(a, shape) for a in arrays]


def _same_typed_arrays(args) -> bool:
    """Fast path: all arguments are Arrays/tracers with one shape, dtype and weak type."""
    first = getattr(args[0], "aval", None)
    if first is None or type(first) is not ShapedArray:
        return False
    for a in args[1:]:
        aval = getattr(a, "aval", None)
        if aval is None or not (aval.shape == first.shape and aval.dtype == first.dtype
                                and aval.weak_type == first.weak_type):
            return False
    return True


def _broadcast_operands(name, arrays):
    """broadcast_arrays_for_op for the operands of a jnp function (JAX's TypeError)."""
    try:
        return broadcast_arrays_for_op(*arrays)
    except ValueError:
        shapes = ", ".join(str(get_aval(a).shape) for a in arrays)
        raise TypeError(f"{name} got incompatible shapes for broadcasting: {shapes}.") from None


def promote_args(name, *args):
    """Check, promote dtypes and broadcast (the prelude of jnp binary functions)."""
    if _same_typed_arrays(args):
        return list(args)
    check_arraylike(name, *args)
    return _broadcast_operands(name, promote_dtypes(*args))


def promote_args_inexact(name, *args):
    if _same_typed_arrays(args) and dtypes.kind(args[0].aval.dtype) in "fc":
        return list(args)
    check_arraylike(name, *args)
    return _broadcast_operands(name, promote_dtypes_inexact(*args))


def promote_args_numeric(name, *args):
    if _same_typed_arrays(args) and args[0].aval.dtype != dtypes.bool_:
        return list(args)
    check_arraylike(name, *args)
    return _broadcast_operands(name, promote_dtypes_numeric(*args))


def full_like_scalar(value, like):
    """A 0-d Array holding `value` with the dtype and weak type of `like`."""
    aval = get_aval(like)
    return Array(_scalar_value(value, aval.dtype) if dtypes.is_python_scalar(value)
                 else np.asarray(value, dtype=aval.dtype), aval.weak_type)


def full(shape, value, dtype, weak_type=False):
    """An array of `shape` filled with the Python scalar `value`."""
    scalar = Array(np.asarray(value).astype(dtype) if not dtypes.is_python_scalar(value)
                   else _scalar_value(value, dtype), weak_type)
    return lax.broadcast_in_dim(scalar, tuple(shape), ())


# --------------------------------------------------------------------------- axes


def canonicalize_axis(axis, ndim: int) -> int:
    """A non-negative axis; numpy's AxisError if out of range."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise AxisError(axis, ndim)
    return axis % ndim if ndim else 0


def canonicalize_axes(axis, ndim: int) -> tuple:
    """axis None/int/tuple -> sorted tuple of distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonicalize_axis(a, ndim) for a in axis)
    else:
        axes = (canonicalize_axis(axis, ndim),)
    if len(set(axes)) != len(axes):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(axes))


def expand_dims_static(x, axes):
    """Insert size-1 dimensions at output positions `axes` (via reshape)."""
    shape = list(get_aval(x).shape)
    for a in sorted(axes):
        shape.insert(a, 1)
    return lax.reshape(x, tuple(shape))


def lax_fn(*names):
    """The first lax function among `names` (primitives may have alternative names)."""
    for name in names:
        fn = getattr(lax, name, None)
        if fn is not None:
            return fn
    raise NotImplementedError(f"minijax.lax.{names[0]} is not available yet")


def iota(dtype, shape, dimension=0):
    """broadcasted iota: values count along `dimension` of `shape`."""
    shape = tuple(shape)
    fn = getattr(lax, "broadcasted_iota", None)
    if fn is not None:
        return fn(dtype, shape, dimension)
    line = lax.iota(dtype, shape[dimension])
    return lax.broadcast_in_dim(line, shape, (dimension,))
