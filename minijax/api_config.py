"""JAX's configuration context managers and environment helpers (jax.enable_x64,
jax.debug_nans, ..., jax.default_device, jax.named_scope, jax.ensure_compile_time_eval,
jax.print_environment_info, jax.host_count, ...).

Each context manager sets the minijax config option of the same name for the block and
restores it after. Options minijax has no behaviour for raise NotImplementedError for any
value other than the one matching what minijax does, so nothing that would change results
is silently ignored.
"""

from __future__ import annotations

import contextlib
import platform
import sys

import numpy as np

from minijax import placement
from minijax.backends import get_backend
from minijax.backends.base import Device
from minijax.config import config
from minijax.devices import devices, process_count, process_index
from minijax.version import __version__


@contextlib.contextmanager
def _option(name: str, value):
    previous = config.read(name)
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, previous)


def enable_x64(new_val: bool = True):
    """Context manager: 64-bit default dtypes (jax_enable_x64) inside the block."""
    return _option("jax_enable_x64", new_val)


def debug_nans(new_val: bool = True):
    """Context manager: raise FloatingPointError at the first NaN produced in the block."""
    return _option("jax_debug_nans", new_val)


def debug_infs(new_val: bool = True):
    """Context manager: raise FloatingPointError at the first Inf produced in the block."""
    return _option("jax_debug_infs", new_val)


def log_compiles(new_val: bool = True):
    """Context manager: log each compilation in the block."""
    return _option("jax_log_compiles", new_val)


def explain_cache_misses(new_val: bool = True):
    """Context manager: log why each compilation in the block missed the cache."""
    return _option("jax_explain_cache_misses", new_val)


@contextlib.contextmanager
def _only(name: str, value, supported, what: str):
    if value not in supported:
        raise NotImplementedError(f"{name}({value!r}): minijax has no such mode; it always "
                                  f"{what}")
    yield


def default_matmul_precision(precision):
    """Context manager for the default precision of dots and convolutions. minijax computes
    them at full operand precision, which is the 'highest' / 'float32' setting; lower
    precisions raise NotImplementedError."""
    return _only("default_matmul_precision", precision,
                 (None, "highest", "float32", "HIGHEST", "F32"),
                 "computes matmuls at full operand precision ('highest')")


def numpy_dtype_promotion(promotion: str):
    """Context manager for jnp's dtype promotion; minijax implements 'standard' only."""
    return _only("numpy_dtype_promotion", promotion, ("standard",),
                 "uses JAX's 'standard' promotion")


def numpy_rank_promotion(promotion: str):
    """Context manager for implicit rank promotion; minijax implements 'allow' only."""
    return _only("numpy_rank_promotion", promotion, ("allow",),
                 "allows implicit rank promotion ('allow')")


def enable_checks(new_val: bool = True):
    """Context manager for JAX's internal consistency checks, which minijax does not have
    (False is accepted)."""
    return _only("enable_checks", bool(new_val), (False,),
                 "runs without JAX's extra internal checks")


def _transfer_guard(name: str):
    def guard(new_val: str):
        return _only(name, new_val, ("allow",),
                     "allows implicit transfers ('allow'); no transfer is logged or refused")
    guard.__name__ = name
    guard.__doc__ = (f"Context manager for JAX's {name}; minijax supports 'allow' only "
                     "(other levels raise NotImplementedError).")
    return guard


transfer_guard = _transfer_guard("transfer_guard")
transfer_guard_host_to_device = _transfer_guard("transfer_guard_host_to_device")
transfer_guard_device_to_device = _transfer_guard("transfer_guard_device_to_device")
transfer_guard_device_to_host = _transfer_guard("transfer_guard_device_to_host")


@contextlib.contextmanager
def default_device(device):
    """Context manager: new arrays and computations on uncommitted arrays go to `device`
    (a Device, a platform name such as 'cpu', or None for the usual default)."""
    if device is None:
        yield
        return
    if isinstance(device, str):
        device = get_backend(device).devices()[0]
    if not isinstance(device, Device):
        raise TypeError(f"default_device expects a Device, a platform name or None, got "
                        f"{device!r}")
    saved = list(placement._default_state())
    backend = placement.backend_of(device)
    placement._default[:] = [device, backend, backend.host_memory]
    try:
        yield
    finally:
        placement._default[:] = saved


@contextlib.contextmanager
def named_scope(name: str):
    """Name the operations of the block (JAX prefixes their op names with it); minijax
    records no name stack, so this only checks the name."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    yield


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Evaluate operations on concrete values eagerly inside the block. minijax's tracers
    already fold concrete values eagerly, so the block runs as is."""
    yield


def host_count(backend=None) -> int:
    """The number of processes (JAX's older name for process_count)."""
    return process_count(backend)


def host_id(backend=None) -> int:
    """This process's index (JAX's older name for process_index)."""
    return process_index(backend)


def process_indices(backend=None) -> list[int]:
    """The indices of every process, 0 .. process_count() - 1."""
    return list(range(process_count(backend)))


def host_ids(backend=None) -> list[int]:
    """The indices of every process (JAX's older name for process_indices)."""
    return process_indices(backend)


def print_environment_info(return_string: bool = False):
    """Print (or return) the versions and devices minijax runs with."""
    lines = [f"minijax:    {__version__}", f"numpy:      {np.__version__}",
             f"python:     {sys.version.replace(chr(10), ' ')}",
             f"device info: {len(devices())} {placement.default_device().platform} "
             f"device(s), process {process_index()} of {process_count()}",
             f"platform:   {platform.platform()}"]
    text = "\n".join(lines) + "\n"
    if return_string:
        return text
    print(text, end="")
    return None
