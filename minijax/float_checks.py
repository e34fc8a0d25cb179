"""`jax_debug_nans` / `jax_debug_infs`: stop at the first operation producing a NaN / Inf.

    minijax.config.update("jax_debug_nans", True)

As in JAX:
- eagerly, every primitive's output is checked; a NaN raises FloatingPointError naming the
  primitive and the user's source line;
- a jitted function's outputs are checked after each call. When one holds a NaN, minijax
  warns, then re-runs the function's jaxpr op by op ("de-optimized") on a copy of the
  arguments taken before the call (so donated buffers do not matter), and raises
  FloatingPointError at the first equation whose result holds a NaN, naming its primitive,
  the jitted function and the source line that created it (inside a fused kernel, this is
  the line of the operation, not of the kernel).
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

from minijax import core, dispatch, tree_util
from minijax.array import Array
from minijax.config import config
from minijax.source_info import user_frame_info

__all__ = ["enabled", "checked_call", "check_eager"]

_state = threading.local()
_flags = {"nan": False, "inf": False}


def enabled() -> bool:
    """Whether jax_debug_nans or jax_debug_infs is on."""
    return _flags["nan"] or _flags["inf"]


def _bad_kind(value) -> str | None:
    """'nan' or 'inf' when `value` holds one that is being checked for, else None."""
    v = value._value if type(value) is Array else value
    if not isinstance(v, (np.ndarray, np.generic)) or v.dtype.kind not in "fc":
        return None
    if _flags["nan"] and np.isnan(v).any():
        return "nan"
    if _flags["inf"] and np.isinf(v).any():
        return "inf"
    return None


def check_eager(primitive, out) -> None:
    """dispatch's hook: raise if an eagerly computed primitive output holds a NaN/Inf."""
    if getattr(_state, "replaying", False):
        return
    for o in (out if primitive.multiple_results else [out]):
        kind = _bad_kind(o)
        if kind is not None:
            where = user_frame_info(2)
            raise FloatingPointError(f"invalid value ({kind}) encountered in {primitive.name} "
                                     f"at {where}")


def checked_call(name: str, entry, values: list):
    """Run a compiled jit entry on host values, then check its outputs (see module doc)."""
    copies = [np.array(v, copy=True) for v in values]
    out = entry.call(values)
    for leaf in tree_util.tree_leaves(out):
        kind = _bad_kind(leaf)
        if kind is not None:
            warnings.warn(f"Invalid {kind} value encountered in the output of a minijax.jit "
                          f"function ({name}). Calling the de-optimized version.",
                          RuntimeWarning, stacklevel=3)
            _replay(name, entry.lowered.jaxpr, copies, kind)
            raise FloatingPointError(
                f"invalid value ({kind}) encountered in the output of jit({name}); running "
                "its operations one by one did not produce it (the compiled kernels and "
                "the eager implementations differ there)")
    return out


def _replay(name: str, closed, args: list, kind: str) -> None:
    """Evaluate `closed` op by op; raise at the first equation whose output is bad."""
    jaxpr = closed.jaxpr
    env = {}

    def read(v):
        return v.val if type(v) is core.Literal else env[v]
    for var, value in zip(jaxpr.constvars, closed.consts, strict=True):
        env[var] = value
    for var, value in zip(jaxpr.invars, args, strict=True):
        env[var] = Array(np.asarray(value, var.aval.dtype), var.aval.weak_type)
    _state.replaying = True
    try:
        for eqn in jaxpr.eqns:
            outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
            for var, o in zip(eqn.outvars, outs, strict=True):
                env[var] = o
                found = _bad_kind(o)
                if found is not None:
                    raise FloatingPointError(
                        f"invalid value ({found}) encountered in {eqn.primitive.name} at "
                        f"{eqn.source_info} (in jit({name}), found by re-running it op by "
                        "op)")
    finally:
        _state.replaying = False


def _update(kind: str, value) -> None:
    _flags[kind] = bool(value)
    dispatch.post_check = check_eager if enabled() else None


config.on_change("jax_debug_nans", lambda v: _update("nan", v))
config.on_change("jax_debug_infs", lambda v: _update("inf", v))
_update("nan", config.jax_debug_nans)
_update("inf", config.jax_debug_infs)
