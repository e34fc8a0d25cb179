"""Eager execution of single primitives (the EvalTrace path) and device placement.

Every primitive has a NumPy implementation registered here (`numpy_impls`). On host
backends eager calls run it and wrap the result in an Array of the dtype the primitive's
abstract evaluation gives (NumPy's own promotion never leaks into results). This is the
thin hot path: a cached eager binary op on small arrays costs a few microseconds. On other
backends (device memory) a primitive runs as a one-op program compiled by that backend and
cached per (primitive, avals, params, device) (eager_compiled.py); nothing goes through the
host unless asked.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes, eager_compiled, placement
from minijax.array import Array, NotAddressableError
from minijax.backends.base import Device
from minijax.core import ShapedArray

numpy_impls: dict = {}
#: Primitives whose NumPy implementation is a slow float64 emulation (erf_inv, lgamma, ...),
#: with the output size from which an eager bind on the CPU runs the primitive's compiled
#: kernel instead (cached per shape, as JAX compiles every eager op). Below that size the
#: NumPy reference costs less than a compile.
compiled_from_size: dict = {}
#: Called as post_check(primitive, out) after each eager primitive when set (the
#: jax_debug_nans / jax_debug_infs checks of minijax/float_checks.py).
post_check = None
#: Called as over_processes(primitive, args, params) for an eager primitive on Arrays
#: spread over several processes (set by minijax/devices.py: a partitioned program).
over_processes = None


def _to_numpy(x):
    """The host NumPy value of an eager argument on the fast path (an Array there has
    `_device is None`: its buffer is a host NumPy array)."""
    t = type(x)
    if t is Array:
        return x._buf
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


def wrap_output(value, aval: ShapedArray, device=None, committed=False) -> Array:
    """An Array holding host `value` converted to exactly `aval`'s dtype."""
    if type(value) is not np.ndarray or value.dtype != aval.dtype:
        value = np.asarray(value, dtype=aval.dtype)
    return Array(value, aval.weak_type, device, committed)


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
    """Run one primitive eagerly on concrete arguments, on the device its inputs live on.

    Fast path: every array argument is an uncommitted host NumPy buffer and the default
    backend keeps host buffers: run the NumPy implementation. Otherwise placement.py's
    rules choose the device (committed arguments win; mixing devices raises) and the
    primitive runs there: NumPy on a host device, a cached one-op program elsewhere."""
    impl = numpy_impls.get(primitive)
    if impl is None:
        raise NotImplementedError(f"primitive {primitive.name} has no eager implementation")
    if _DEFAULT and _DEFAULT[2]:  # placement's default state, filled on first use
        for x in args:
            if type(x) is Array and x._device is not None:
                return _apply_placed(primitive, impl, args, params)
        out_aval = _out_aval(primitive, tuple(map(_aval_of, args)), params)
        try:
            if primitive in compiled_from_size and _runs_compiled(primitive, out_aval,
                                                                  _DEFAULT[1]):
                return _apply_compiled(primitive, args, params, out_aval, _DEFAULT[0])
            with np.errstate(all="ignore"):
                out = impl(*map(_to_numpy, args), **params)
        except NotAddressableError:  # an argument's shards live in several processes
            if over_processes is None:
                raise
            return over_processes(primitive, args, params)
        if primitive.multiple_results:
            out = [wrap_output(o, a) for o, a in zip(out, out_aval, strict=True)]
        else:
            out = wrap_output(out, out_aval)
        if post_check is not None:
            post_check(primitive, out)
        return out
    return _apply_placed(primitive, impl, args, params)


#: placement's default-device state (one list, rebuilt in place when the options change):
#: [device, backend, host_memory]; empty until first used.
_DEFAULT = placement._default


def _argument_names(n: int) -> list[str]:
    return ["x", "y"][:n] if n <= 2 else [f"args[{i}]" for i in range(n)]


def target_device(args, what: str):
    """(device, committed) an operation on `args` runs on (JAX's placement rules)."""
    committed = None
    placed = []
    for i, x in enumerate(args):
        if isinstance(x, Array) and x._committed:
            placed.append((i, x))
            if committed is None:
                committed = x._device
            elif x._device != committed:
                names = _argument_names(len(args))
                raise placement.incompatible_devices_error(
                    what, [(names[j], a.aval, a._device) for j, a in placed])
    if committed is not None:
        return committed, True
    return placement.default_device(), False


def _apply_placed(primitive, impl, args, params):
    try:
        return _apply_on_device(primitive, impl, args, params)
    except NotAddressableError:  # an argument's shards live in several processes
        if over_processes is None:
            raise
        return over_processes(primitive, args, params)


def _apply_on_device(primitive, impl, args, params):
    device, committed = target_device(args, primitive.name)
    avals = tuple(map(_aval_of, args))
    out_aval = _out_aval(primitive, avals, params)
    backend = placement.backend_of(device)
    if backend.host_memory:
        if primitive in compiled_from_size and _runs_compiled(primitive, out_aval, backend):
            return _apply_compiled(primitive, args, params, out_aval, device, committed)
        host = [placement.to_host(x._buf) if isinstance(x, Array) else _to_numpy(x)
                for x in args]
        with np.errstate(all="ignore"):
            out = impl(*host, **params)
        dev = device if (committed or device != placement.default_device()) else None
        if primitive.multiple_results:
            result = [wrap_output(o, a, dev, committed)
                      for o, a in zip(out, out_aval, strict=True)]
        else:
            result = wrap_output(out, out_aval, dev, committed)
        if post_check is not None:
            post_check(primitive, result)
        return result
    bufs = [place_buffer(x, device) for x in args]
    executable = eager_compiled.executable(primitive, avals, params, device)
    outs = executable.execute(bufs)
    out_avals = out_aval if primitive.multiple_results else [out_aval]
    arrays = [Array(o, a.weak_type, device, committed)
              for o, a in zip(outs, out_avals, strict=True)]
    result = arrays if primitive.multiple_results else arrays[0]
    if post_check is not None:
        post_check(primitive, result)
    return result


def _runs_compiled(primitive, out_aval, backend) -> bool:
    threshold = compiled_from_size.get(primitive)
    if threshold is None or backend.platform != "cpu":
        return False
    sizes = [a.size for a in out_aval] if primitive.multiple_results else [out_aval.size]
    return max(sizes) >= threshold


def _apply_compiled(primitive, args, params, out_aval, device, committed=False):
    """An eager bind of a `compiled_from_size` primitive through its cached one-op program
    on a host-memory `device`; the results are host Arrays as on the NumPy path."""
    executable = eager_compiled.executable(primitive, tuple(map(_aval_of, args)), params,
                                           device)
    outs = executable.execute([place_buffer(x, device) for x in args])
    out_avals = out_aval if primitive.multiple_results else [out_aval]
    dev = device if (committed or device != placement.default_device()) else None
    result = [wrap_output(placement.to_host(o), a, dev, committed)
              for o, a in zip(outs, out_avals, strict=True)]
    result = result if primitive.multiple_results else result[0]
    if post_check is not None:
        post_check(primitive, result)
    return result


def compile_when_large(primitive, min_size: int = 2048):
    """Run eager binds of `primitive` with at least `min_size` output elements as its
    compiled kernel on the CPU (for primitives whose NumPy implementation is slow)."""
    compiled_from_size[primitive] = min_size


def place_buffer(x, device):
    """The buffer of argument x (Array, NumPy value or Python scalar) on `device`."""
    if isinstance(x, Array):
        return placement.transfer(x._buf, x._device, device)
    value = np.asarray(_to_numpy(x), dtype=_aval_of(x).dtype)
    return placement.transfer(np.array(value, order="C"), None, device)


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
    return placement.default_device()


def device_put(x, device=None) -> Array:
    """Place a value on a device as an Array (JAX's jax.device_put for one leaf).

    With no device: an Array stays where it is (uncommitted stays uncommitted); host values
    go to the default device, uncommitted. With a device: the result is committed to it
    (a copy when the array lives elsewhere)."""
    if device is not None and not isinstance(device, Device):
        raise ValueError("`minijax.device_put` only accepts `None` or a `Device` "
                         f"(from minijax.devices()); received invalid value: {device!r}")
    if isinstance(x, Array):
        if device is None:
            return x
        if x._device == device or (x._device is None and device == placement.host_device()):
            if x._committed:
                return x
            return Array(x._buf, x.weak_type, device, True)
        return Array(placement.transfer(x._buf, x._device, device), x.weak_type, device,
                     True)
    if dtypes.is_python_scalar(x):
        value = np.asarray(x, dtype=dtypes.python_scalar_dtype(x))
        weak = type(x) is not bool
    else:
        value = np.asarray(x)
        value = np.array(value, dtype=dtypes.canonicalize_dtype(value.dtype), order="C",
                         copy=True)
        weak = False
    if device is None:
        if placement.default_is_host():
            return Array(value, weak)
        device = placement.default_device()
        return Array(placement.transfer(value, None, device), weak, device, False)
    return Array(placement.transfer(value, None, device), weak, device, True)
