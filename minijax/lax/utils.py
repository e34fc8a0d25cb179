"""Shared helpers for defining lax primitives: shape/dtype checks and scalar handling. They
bind no primitive, so every lax module can import them (the batching helpers that move
batch dimensions, moveaxis and bdim_at_front, live in structural.py)."""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.array import Array
from minijax.core import Primitive, ShapedArray, get_aval
from minijax.dispatch import register_impl


def standard_primitive(name: str, abstract_eval, numpy_impl, multiple_results=False):
    """A Primitive with its abstract evaluation and eager NumPy implementation registered."""
    prim = Primitive(name)
    prim.multiple_results = multiple_results
    prim.def_abstract_eval(abstract_eval)
    register_impl(prim, numpy_impl)
    return prim


def weak_scalar(value, dtype) -> Array:
    """A 0-d weakly typed Array of `dtype` (how Python scalars enter lax primitives)."""
    return Array(np.asarray(value, dtype=dtype), weak_type=True)


def is_scalar_literal(x) -> bool:
    return type(x) in (bool, int, float, complex)


def promote_scalars(name: str, *args, same_kind: bool = True):
    """Convert Python scalars among `args` to the dtype of the array arguments.

    lax does not promote arrays of different dtypes (that is jnp's job), but it accepts
    Python scalars next to arrays, as JAX's lax does.
    """
    array_dtypes = [get_aval(a).dtype for a in args if not is_scalar_literal(a)]
    if not array_dtypes:
        if same_kind and len({type(a) for a in args}) > 1:  # lax.add(1, 1.0): TypeError
            _dtype_mismatch(name, [dtypes.python_scalar_dtype(a) for a in args])
        dtype, _ = dtypes.result_type_and_weak(*args)
        return [weak_scalar(a, dtype) for a in args]
    dtype = array_dtypes[0]
    out = []
    for a in args:
        if is_scalar_literal(a):
            _check_scalar_fits(name, a, dtype)
            if same_kind and _SCALAR_KINDS[type(a)] != _SCALAR_KINDS.get(np.dtype(dtype).kind,
                                                                          "fc"):
                _dtype_mismatch(name, [dtype, dtypes.python_scalar_dtype(a)])
            out.append(weak_scalar(a, dtype))
        else:
            out.append(a)
    return out


# lax accepts a Python scalar next to an array of the same kind only (JAX's lax is stricter
# still: it also requires the scalar's default width).
_SCALAR_KINDS = {bool: "b", int: "iu", float: "fc", complex: "fc", "b": "b", "i": "iu",
                 "u": "iu", "f": "fc", "c": "fc"}


def _dtype_mismatch(name, dts):
    names = ", ".join(np.dtype(d).name for d in dts)
    raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {names}. "
                    f"(Tip: jnp.{name} is a similar function that does automatic type "
                    "promotion on inputs).")


def _check_scalar_fits(name, value, dtype):
    if type(value) is int and np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(f"{name}: Python int {value} is too large for {dtype} "
                                f"(range {info.min}..{info.max})")
    if type(value) in (float, complex) and np.dtype(dtype).kind in "iub":
        raise TypeError(f"{name}: cannot combine a Python {type(value).__name__} with an "
                        f"{dtype} array in lax (lax does not promote). Use jnp functions, or "
                        "convert with lax.convert_element_type.")


def shapes_text(avals) -> str:
    return ", ".join(a.str_short() for a in avals)


def same_shape_dtype_rule(name: str, *avals, allowed_kinds: str | None = None):
    """Abstract eval of n-ary elementwise ops: equal dtypes, and equal shapes except that
    rank-0 operands broadcast (as in JAX's lax); weakly typed if all operands are."""
    shaped = [a for a in avals if a.shape]
    shape = shaped[0].shape if shaped else ()
    first = avals[0]
    for a in shaped:
        if a.shape != shape:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            f"{shapes_text(avals)}. lax requires equal shapes (or scalars); "
                            f"use jnp.{name} for NumPy broadcasting, or lax.broadcast_in_dim.")
    for a in avals[1:]:
        if a.dtype != first.dtype:
            raise TypeError(f"{name} requires arguments of the same dtype, got "
                            f"{shapes_text(avals)}. Convert with lax.convert_element_type, or "
                            f"use jnp.{name}, which promotes dtypes.")
    if allowed_kinds is not None and dtypes.kind(first.dtype) not in allowed_kinds:
        kinds = {"f": "floating", "c": "complex", "i": "signed integer",
                 "u": "unsigned integer", "b": "boolean"}
        allowed = ", ".join(kinds[k] for k in allowed_kinds)
        raise TypeError(f"{name} does not accept dtype {first.dtype}; accepted: {allowed}")
    return ShapedArray(shape, first.dtype, all(a.weak_type for a in avals))


def canonical_axis(axis: int, ndim: int, name: str) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else 0


def broadcast_shapes(*shapes) -> tuple:
    """The shape that ``shapes`` broadcast to under NumPy's rules (``jax.lax``'s name);
    ValueError naming them when they are incompatible."""
    shapes = [tuple(int(d) for d in s) for s in shapes]
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim):
        sizes = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)
