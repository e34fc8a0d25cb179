"""``jax.interpreters.batching`` under the import hook: minijax's batching module with JAX's
rule conventions for the tables libraries write to.

minijax's own table is ``minijax.interpreters.batching.primitive_batchers`` with rules
``rule(trace, vals, dims, **params)``. JAX's ``primitive_batchers[p] = rule`` takes
``rule(vals, dims, **params)`` and ``axis_primitive_batchers[p] = rule`` takes
``rule(axis_size, axis_name, trace_type, vals, dims, **params)``; the two proxies here adapt
such rules into minijax's table (as JAX's own compatibility proxies do).
"""

from __future__ import annotations

from minijax.interpreters import batching as _batching
from minijax.interpreters.batching import BatchTrace, BatchTracer, not_mapped

__all__ = ["BatchTrace", "BatchTracer", "axis_primitive_batchers", "not_mapped",
           "primitive_batchers"]


class _Proxy:
    def __init__(self, adapt):
        self._adapt = adapt
        self._rules: dict = {}

    def __setitem__(self, prim, rule):
        self._rules[prim] = rule
        _batching.primitive_batchers[prim] = self._adapt(prim, rule)

    def __getitem__(self, prim):
        return self._rules[prim]

    def __contains__(self, prim):
        return prim in self._rules

    def __delitem__(self, prim):
        del self._rules[prim]
        del _batching.primitive_batchers[prim]

    def get(self, prim, default=None):
        return self._rules.get(prim, default)


def _plain(prim, rule):
    def adapted(trace, vals, dims, **params):
        del trace
        return rule(vals, dims, **params)
    return adapted


def _with_axis(prim, rule):
    def adapted(trace, vals, dims, **params):
        return rule(trace.axis_size, trace.axis_name, None, vals, dims, **params)
    return adapted


primitive_batchers = _Proxy(_plain)
axis_primitive_batchers = _Proxy(_with_axis)
