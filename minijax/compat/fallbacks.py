"""Top-level ``jax`` names for the import hook that minijax does not (yet) define itself.

``jax.X`` is ``minijax.X`` whenever minijax has it; these are used only otherwise.

- :func:`pmap` on one host: the mapped axis may be at most as long as the device count, as
  in JAX; the program runs as ``jit(vmap(f, axis_name=...))`` on the default device (the
  collectives over the axis name work through vmap).
- :func:`device_count`, :func:`local_device_count`, :func:`process_index` and
  :func:`process_count` for one process.
- :func:`named_scope` and :func:`ensure_compile_time_eval` as context managers: minijax
  records no name stack in op metadata, and its eager mode already evaluates eagerly.
"""

from __future__ import annotations

import contextlib
import functools

from minijax.api import vmap
from minijax.api_jit import jit
from minijax.devices import devices, local_devices
from minijax.tree_util import tree_flatten

__all__ = ["device_count", "ensure_compile_time_eval", "local_device_count", "named_scope",
           "pmap", "process_count", "process_index"]


def pmap(fun=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices_=None, backend=None, axis_size=None, donate_argnums=(), global_arg_shapes=None,
         **kwargs):
    """Map ``fun`` over a leading axis, one element per device (JAX's signature)."""
    if fun is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums)
    if static_broadcasted_argnums:
        raise NotImplementedError("pmap: static_broadcasted_argnums is not supported by "
                                  "minijax's single-host pmap; close over the value instead.")
    mapped = jit(vmap(fun, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name))

    @functools.wraps(fun)
    def run(*args):
        leaves = tree_flatten(args)[0]
        sizes = {x.shape[0] for x in leaves if getattr(x, "ndim", 0) > 0}
        n = len(devices())
        for size in sizes:
            if size > n:
                raise ValueError(f"compiling computation that requires {size} logical devices, "
                                 f"but only {n} XLA devices are available (num_replicas="
                                 f"{size})")
        return mapped(*args)

    return run


@contextlib.contextmanager
def named_scope(name: str):
    """Name the operations of the block (JAX prefixes their op names); a plain block here."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    yield


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Evaluate eagerly inside the block; minijax evaluates concrete values eagerly anyway."""
    yield


def device_count(backend=None) -> int:
    """The number of devices (of ``backend``, default the default backend's)."""
    return len(devices(backend) if backend is not None else devices())


def local_device_count(backend=None) -> int:
    """The number of devices this process drives (all of them: one process)."""
    return len(local_devices(backend=backend) if backend is not None else local_devices())


def process_index(backend=None) -> int:
    """This process's index: 0 (minijax runs one process per program here)."""
    return 0


def process_count(backend=None) -> int:
    """The number of processes: 1."""
    return 1
