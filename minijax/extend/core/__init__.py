"""``jax.extend.core``: primitives, jaxprs and abstract values, on minijax's core."""

from __future__ import annotations

from minijax import core as _core
from minijax.core import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    Primitive,
    ShapedArray,
    Tracer,
    Var,
    eval_jaxpr,
    get_aval,
)
from minijax.extend.core import primitives

__all__ = ["ClosedJaxpr", "Effect", "Jaxpr", "JaxprEqn", "Literal", "Primitive", "ShapedArray",
           "Tracer", "Var", "array_types", "eval_jaxpr", "find_top_trace", "get_aval",
           "get_opaque_trace_state", "jaxpr_as_fun", "mapped_aval", "primitives",
           "unmapped_aval"]

array_types = {_core.ShapedArray}


class Effect:
    """Base class of side effects that primitives declare (``jax.extend.core.Effect``);
    subclass it and compare instances by identity or type."""


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr):
    """A Python function that evaluates ``closed_jaxpr`` on its arguments (a list out)."""
    return lambda *args: eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)


def find_top_trace(xs):
    """The innermost trace among the tracers in ``xs`` (the current trace if none)."""
    traces = [x._trace for x in xs if isinstance(x, Tracer)]
    if not traces:
        return _core.current_trace()

    def depth(trace):
        n = 0
        while trace is not None:
            trace, n = trace.parent, n + 1
        return n

    return max(traces, key=depth)


def get_opaque_trace_state(convention=None):
    """An object identifying the current tracing context (compare with ``is``)."""
    del convention
    return _core.current_trace()


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
    """The aval of one element when ``aval`` is mapped over ``axis`` (of length ``size``)."""
    if axis is None:
        return aval
    if aval.shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} has size "
                         f"{aval.shape[axis]}, expected {size}.")
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray,
                  explicit_mesh_axis=None) -> ShapedArray:
    """The aval of ``size`` stacked elements of ``aval``, stacked along ``axis``."""
    del explicit_mesh_axis
    if axis is None:
        return aval
    return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])
