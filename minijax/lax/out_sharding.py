"""The `out_sharding=` keyword of jax.numpy, jax.random and jax.lax functions.

JAX uses it to give the result a sharding (explicit sharding mode). minijax accepts None,
a single-device sharding (the result is placed on that device, as JAX does) and
shardings or PartitionSpecs that replicate (every dimension unsharded, on one device);
anything that would split the result over several devices is an error that says how to
get the same result with device_put.
"""

from __future__ import annotations

import functools
import inspect

from minijax import dispatch
from minijax.core import Tracer
from minijax.sharding import PartitionSpec, Sharding

__all__ = ["accepts_out_sharding", "apply_out_sharding", "check_out_sharding"]


def check_out_sharding(name: str, out_sharding):
    """Validate `out_sharding` for operation `name`; the device to place the result on, or
    None to leave it where the operation put it."""
    if out_sharding is None:
        return None
    if isinstance(out_sharding, PartitionSpec):
        if all(p is None for p in out_sharding):
            return None
        raise NotImplementedError(
            f"{name}: out_sharding={out_sharding} shards the result, which minijax does not "
            "do here; compute the result and place it with "
            "minijax.device_put(x, NamedSharding(mesh, spec)) or use "
            "lax.with_sharding_constraint under jit.")
    if isinstance(out_sharding, Sharding):
        devices = out_sharding.device_set
        if len(devices) == 1:
            return next(iter(devices))
        raise NotImplementedError(
            f"{name}: out_sharding={out_sharding!r} spans {len(devices)} devices; minijax "
            "accepts None or a single-device sharding here. Compute the result and place it "
            "with minijax.device_put(x, sharding) instead.")
    raise TypeError(f"{name}: out_sharding must be None, a Sharding or a PartitionSpec, got "
                    f"{out_sharding!r}")


def apply_out_sharding(name: str, x, out_sharding):
    """`x` placed as `out_sharding` asks (see check_out_sharding); tracers are returned
    unchanged (under jit a single-device program has a single placement)."""
    device = check_out_sharding(name, out_sharding)
    if device is None or isinstance(x, Tracer):
        return x
    return dispatch.device_put(x, device)


def accepts_out_sharding(fn, name: str | None = None):
    """`fn` with a keyword-only `out_sharding=None` argument applied to its result."""
    name = name or fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, out_sharding=None, **kwargs):
        out = fn(*args, **kwargs)
        if out_sharding is None:
            return out
        return apply_out_sharding(name, out, out_sharding)

    try:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        extra = inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None)
        pos = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
        wrapper.__signature__ = sig.replace(parameters=params[:pos] + [extra] + params[pos:])
    except (TypeError, ValueError):
        pass
    return wrapper
