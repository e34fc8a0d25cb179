"""Staging: the JaxprTrace records operations into a jaxpr.

Two modes share one trace:

- full staging (`forward_known=False`, used by make_jaxpr and jit): every operation bound
  while the trace is current is recorded, including operations on constants;
- partial evaluation (`forward_known=True`, used by linearize): operations whose inputs are
  all *known* (not this trace's tracers) are forwarded to the parent trace and computed
  now; only operations touching *unknown* values are recorded. Known values that recorded
  operations read become the jaxpr's constants (the residuals of linearization).
"""

from __future__ import annotations

from minijax import core
from minijax.array import Array
from minijax.core import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    ShapedArray,
    Tracer,
    Var,
    get_aval,
    set_current_trace,
)
from minijax.source_info import user_frame_info

# Rules for higher-order primitives under partial evaluation (e.g. splitting a scan into a
# known and an unknown part): rule(trace, tracers_or_values, params) -> outputs.
partial_eval_rules: dict = {}


class JaxprTracer(Tracer):
    """A value recorded in a JaxprTrace: a jaxpr variable plus the arguments it depends on."""

    __slots__ = ("jaxpr_var", "deps", "_created_at")

    def __init__(self, trace: JaxprTrace, var: Var, deps: frozenset, created_at=None):
        self._trace = trace
        self.jaxpr_var = var
        self.deps = deps
        self._created_at = created_at

    @property
    def aval(self) -> ShapedArray:
        return self.jaxpr_var.aval

    def origin_description(self) -> str | None:
        trace = self._trace
        where = f" while tracing {trace.fun_name}" if trace.fun_name else ""
        where += f" for {trace.purpose}" if trace.purpose else ""
        if trace.fun_source is not None:
            where += f" (defined at {trace.fun_source.short()})"
        if self.deps:
            names = ", ".join(sorted(self.deps))
            return (f"The error occurred{where}. This value depends on the value of the "
                    f"argument(s) {names}, which are traced, not concrete.")
        return f"The error occurred{where}." if where else None


class JaxprTrace(core.Trace):
    """Records primitives into equations; see the module docstring for the two modes."""

    def __init__(self, parent=None, forward_known: bool = False, fun_name: str = "",
                 purpose: str = "", fun_source=None):
        super().__init__(parent if parent is not None else core.current_trace())
        self.forward_known = forward_known
        self.fun_name = fun_name
        self.purpose = purpose
        self.fun_source = fun_source
        self.eqns: list[JaxprEqn] = []
        self.invars: list[Var] = []
        self._consts: dict[int, tuple[Var, object]] = {}

    def __repr__(self) -> str:  # what users see in tracer reprs: the transformation
        return self.purpose or ("linearize" if self.forward_known else "jit")

    def new_arg(self, aval: ShapedArray, name: str | None = None) -> JaxprTracer:
        """A fresh input variable of the jaxpr being built."""
        var = Var(aval)
        self.invars.append(var)
        return JaxprTracer(self, var, frozenset([name]) if name else frozenset())

    def is_own(self, x) -> bool:
        return isinstance(x, JaxprTracer) and x._trace is self

    def to_var(self, x):
        """The jaxpr atom for a value: its variable, a Literal, or a hoisted constant."""
        if isinstance(x, JaxprTracer) and x._trace is self:
            return x.jaxpr_var
        if type(x) in (bool, int, float, complex):
            return Literal(x, get_aval(x))
        if type(x) is Array and x.aval.ndim == 0:
            val = x._value[()]
            if x.aval.weak_type and get_aval(val.item()) == x.aval:
                val = val.item()  # a Python scalar keeps the weak type when re-bound
            return Literal(val, x.aval)
        key = id(x)
        entry = self._consts.get(key)
        if entry is None:
            entry = (Var(get_aval(x)), x)
            self._consts[key] = entry
        return entry[0]

    def process_primitive(self, primitive, args, params):
        own = [a for a in args if isinstance(a, JaxprTracer) and a._trace is self]
        if self.forward_known and not own:
            with set_current_trace(self.parent):
                return primitive.bind(*args, **params)
        rule = partial_eval_rules.get(primitive) if self.forward_known else None
        if rule is not None:
            return rule(self, args, params)
        return self.stage(primitive, args, params)

    def stage(self, primitive, args, params):
        """Record one equation and return tracers for its outputs."""
        invars = [self.to_var(a) for a in args]
        avals = [v.aval for v in invars]
        if primitive.abstract_eval is None:
            raise NotImplementedError(f"primitive {primitive.name} has no abstract evaluation "
                                      "rule, so it cannot be traced")
        out = primitive.abstract_eval(*avals, **params)
        out_avals = out if primitive.multiple_results else [out]
        deps = frozenset().union(*(a.deps for a in args
                                   if isinstance(a, JaxprTracer) and a._trace is self))
        outvars = [Var(a) for a in out_avals]
        self.eqns.append(JaxprEqn(primitive, invars, outvars, params, user_frame_info(2)))
        tracers = [JaxprTracer(self, v, deps) for v in outvars]
        return tracers if primitive.multiple_results else tracers[0]

    def to_jaxpr(self, outputs) -> ClosedJaxpr:
        """Close the recording: outputs may be tracers of this trace or constants."""
        outvars = [self.to_var(x) for x in outputs]
        # A Literal output is not allowed by JAX's jaxpr grammar for the top level; keep it,
        # eval_jaxpr handles literals in outvars.
        constvars = [var for var, _ in self._consts.values()]
        consts = [value for _, value in self._consts.values()]
        jaxpr = Jaxpr(constvars, list(self.invars), outvars, list(self.eqns))
        return ClosedJaxpr(jaxpr, consts)


def trace_to_jaxpr(fun, in_avals, *, arg_names=None, fun_name="", purpose="",
                   fun_source=None) -> tuple[ClosedJaxpr, object]:
    """Stage `fun(*flat_args)` (flat list in, flat list out) into a ClosedJaxpr.

    Returns the closed jaxpr and the raw (flat) outputs of `fun`.
    """
    trace = JaxprTrace(core.current_trace(), forward_known=False, fun_name=fun_name,
                       purpose=purpose, fun_source=fun_source)
    names = arg_names or [None] * len(in_avals)
    tracers = [trace.new_arg(aval, name) for aval, name in zip(in_avals, names, strict=True)]
    with set_current_trace(trace):
        outs = fun(*tracers)
    return trace.to_jaxpr(outs), outs


def convert_constvars_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Turn constvars into leading invars (for higher-order primitives that take consts)."""
    return Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.outvars, jaxpr.eqns)
