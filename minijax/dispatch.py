"""Eager execution of single primitives (the EvalTrace path) and device placement.

Every primitive has a NumPy implementation registered here (`numpy_impls`); eager calls
run it and wrap the result in an Array of the dtype the primitive's abstract evaluation
gives (NumPy's own promotion never leaks into results). This is the thin hot path: a cached
eager binary op on small arrays costs a few microseconds.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.array import Array
from minijax.core import ShapedArray

numpy_impls: dict = {}
#: Called as post_check(primitive, out) after each eager primitive when set (the
#: jax_debug_nans / jax_debug_infs checks of minijax/float_checks.py).
post_check = None


def _to_numpy(x):
    t = type(x)
    if t is Array:
        return x._value
    if t is np.ndarray:
        return x
    if t in (bool, int, float, complex):
        return x
    if isinstance(x, Array):
        return x._value
    if isinstance(x, np.generic):
        return np.asarray(x)
    raise TypeError(f"{t.__name__} is not a valid minijax array argument")


def _aval_of(x) -> ShapedArray:
    t = type(x)
    if t is Array:
        return x.aval
    if t is np.ndarray or isinstance(x, np.generic):
        return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype))
    if t in (bool, int, float, complex):
        return ShapedArray((), dtypes.python_scalar_dtype(x), t is not bool)
    return x.aval


def wrap_output(value, aval: ShapedArray) -> Array:
    """An Array holding `value` converted to exactly `aval`'s dtype."""
    if type(value) is not np.ndarray or value.dtype != aval.dtype:
        value = np.asarray(value, dtype=aval.dtype)
    return Array(value, aval.weak_type)


_out_aval_cache: dict = {}


def _out_aval(primitive, avals, params):
    """abstract_eval, memoized on (primitive, input avals, params) when params hash."""
    try:
        key = (primitive, avals, tuple(params.items()))
        out = _out_aval_cache.get(key)
    except TypeError:
        return primitive.abstract_eval(*avals, **params)
    if out is None:
        out = primitive.abstract_eval(*avals, **params)
        if len(_out_aval_cache) > 4096:
            _out_aval_cache.clear()
        _out_aval_cache[key] = out
    return out


def apply_primitive(primitive, *args, **params):
    """Run one primitive eagerly on concrete arguments."""
    impl = numpy_impls.get(primitive)
    if impl is None:
        raise NotImplementedError(f"primitive {primitive.name} has no eager implementation")
    out_aval = _out_aval(primitive, tuple(map(_aval_of, args)), params)
    with np.errstate(all="ignore"):
        out = impl(*map(_to_numpy, args), **params)
    if primitive.multiple_results:
        out = [wrap_output(o, a) for o, a in zip(out, out_aval, strict=True)]
    else:
        out = wrap_output(out, out_aval)
    if post_check is not None:
        post_check(primitive, out)
    return out


def register_impl(primitive, numpy_fn):
    """Give `primitive` a NumPy implementation and make eager binds use it."""
    numpy_impls[primitive] = numpy_fn

    def impl(*args, **params):
        return apply_primitive(primitive, *args, **params)
    primitive.def_impl(impl)
    return numpy_fn


# --------------------------------------------------------------------------- devices


def default_device():
    """The device eager arrays live on (the default backend's first device)."""
    from minijax.backends import get_backend
    return get_backend().devices()[0]


def device_put(x, device=None) -> Array:
    """Place a value on a device as an Array (host backends share NumPy buffers)."""
    if isinstance(x, Array):
        return x
    if dtypes.is_python_scalar(x):
        dtype = dtypes.python_scalar_dtype(x)
        return Array(np.asarray(x, dtype=dtype), type(x) is not bool)
    value = np.asarray(x)
    dtype = dtypes.canonicalize_dtype(value.dtype)
    return Array(np.array(value, dtype=dtype, order="C", copy=True), False, device)
