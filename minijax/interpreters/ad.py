"""Automatic differentiation: forward mode (JVP), linearize, and transposition.

- `jvp`: a JVPTrace pairs each value with a tangent. Each primitive's JVP rule (table
  `primitive_jvps`) computes the output primal and tangent with the parent trace current.
  Tangents may be the symbolic `Zero`, so unused inputs cost nothing.
- `linearize`: runs the JVP with a partial-evaluation trace (JaxprTrace with
  `forward_known=True`) as parent and unknown tangent inputs. Primal work (known) is done
  now; tangent work (unknown, and linear by construction of the JVP rules) is staged into
  a linear jaxpr whose constants are the residuals.
- `backward_pass`: transposes a linear jaxpr equation by equation in reverse, using the
  table `primitive_transposes`; an argument of a transpose rule is either a known value
  or an `UndefinedPrimal` standing for a linear input.
"""

from __future__ import annotations

from minijax import core
from minijax.core import Literal, ShapedArray, Tracer, get_aval, set_current_trace
from minijax.interpreters.partial_eval import JaxprTrace

primitive_jvps: dict = {}
primitive_transposes: dict = {}
linear_primitives: set = set()  # registered with deflinear: linear in every operand


class Zero:
    """A symbolic zero tangent or cotangent of a given abstract value."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"

    @staticmethod
    def from_value(x) -> Zero:
        return Zero(tangent_aval(get_aval(x)))


class UndefinedPrimal:
    """Stands for a linear input in a transpose rule; only its aval is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x) -> bool:
    return type(x) is UndefinedPrimal


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Tangents of integer/bool values are float0 in JAX; minijax uses symbolic zeros."""
    return aval.update(weak_type=False) if aval.weak_type else aval


def instantiate_zeros(t):
    """Replace a symbolic Zero by a concrete zeros array."""
    if type(t) is Zero:
        return core.zeros_like_aval(t.aval)
    return t


def add_tangents(x, y):
    """x + y where either may be a symbolic Zero."""
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    return core.add_any(x, y)


# --------------------------------------------------------------------------- JVP trace


class JVPTracer(Tracer):
    """A primal value paired with its tangent inside a JVPTrace."""

    __slots__ = ("primal", "tangent")

    def __init__(self, trace: JVPTrace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        return get_aval(self.primal)

    def to_concrete_value(self):
        primal = self.primal
        if isinstance(primal, Tracer):
            return primal.to_concrete_value()
        return primal

    def origin_description(self):
        primal = self.primal
        if isinstance(primal, Tracer):
            return primal.origin_description()
        return None


class JVPTrace(core.Trace):
    """Forward-mode differentiation of every primitive bound while it is current."""

    def __init__(self, parent):
        super().__init__(parent)

    def __repr__(self) -> str:
        return "jvp"

    def to_primal_tangent(self, x):
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        return x, Zero.from_value(x)

    def process_primitive(self, primitive, args, params):
        primals, tangents = [], []
        for x in args:
            p, t = self.to_primal_tangent(x)
            primals.append(p)
            tangents.append(t)
        if all(type(t) is Zero for t in tangents):
            with set_current_trace(self.parent):
                return primitive.bind(*primals, **params)
        rule = primitive_jvps.get(primitive)
        if rule is None:
            raise NotImplementedError(
                f"Differentiation rule for '{primitive.name}' not implemented (forward mode, "
                "jvp). The primitive is not differentiable in minijax yet.")
        with set_current_trace(self.parent):
            primal_out, tangent_out = rule(primals, tangents, **params)
        if primitive.multiple_results:
            return [self._wrap(p, t) for p, t in zip(primal_out, tangent_out, strict=True)]
        return self._wrap(primal_out, tangent_out)

    def _wrap(self, primal, tangent):
        if type(tangent) is Zero:
            return primal
        return JVPTracer(self, primal, tangent)


def jvp_flat(fun, primals, tangents):
    """Forward mode on flat lists: returns (primal_outs, tangent_outs) with Zero allowed."""
    trace = JVPTrace(core.current_trace())
    in_tracers = [JVPTracer(trace, p, t) if type(t) is not Zero else p
                  for p, t in zip(primals, tangents, strict=True)]
    with set_current_trace(trace):
        outs = fun(*in_tracers)
    primal_outs, tangent_outs = [], []
    for out in outs:
        if isinstance(out, JVPTracer) and out._trace is trace:
            primal_outs.append(out.primal)
            tangent_outs.append(out.tangent)
        else:
            primal_outs.append(out)
            tangent_outs.append(Zero.from_value(out))
    return primal_outs, tangent_outs


# --------------------------------------------------------------------------- linearize


class LinearFunction:
    """The linear part of a function at a point: a linear jaxpr plus its residuals."""

    def __init__(self, closed_jaxpr, in_avals, out_avals, out_zero):
        self.closed_jaxpr = closed_jaxpr
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.out_zero = out_zero  # which outputs have a structurally zero tangent

    def jvp(self, tangents):
        outs = core.eval_jaxpr(self.closed_jaxpr.jaxpr, self.closed_jaxpr.consts, *tangents)
        return outs

    def transpose(self, cotangents):
        return backward_pass(self.closed_jaxpr.jaxpr, self.closed_jaxpr.consts, cotangents)


def linearize_flat(fun, primals) -> tuple[list, LinearFunction]:
    """Evaluate `fun` at `primals` and stage its linearization (flat lists in and out)."""
    pe_trace = JaxprTrace(core.current_trace(), forward_known=True, purpose="linearize")
    # Input tangents keep the primal's weak type (as JAX's): the transpose of a weak->strong
    # promotion then gives a weak cotangent, so gradients w.r.t. Python floats stay weak.
    in_avals = [get_aval(p) for p in primals]
    tangent_tracers = [pe_trace.new_arg(aval) for aval in in_avals]
    with set_current_trace(pe_trace):
        primal_outs, tangent_outs = jvp_flat(fun, primals, tangent_tracers)
    out_zero = [type(t) is Zero for t in tangent_outs]
    out_avals = [tangent_aval(get_aval(p)) for p in primal_outs]
    staged_outs = []
    for t, aval in zip(tangent_outs, out_avals, strict=True):
        if type(t) is Zero:
            with set_current_trace(pe_trace.parent):
                t = core.zeros_like_aval(aval)
        staged_outs.append(t)
    closed = pe_trace.to_jaxpr(staged_outs)
    return primal_outs, LinearFunction(closed, in_avals, out_avals, out_zero)


# --------------------------------------------------------------------------- transpose


def backward_pass(jaxpr, consts, cotangents) -> list:
    """Transpose a linear jaxpr: map output cotangents to input cotangents (Zero allowed)."""
    known = {}
    for v, c in zip(jaxpr.constvars, consts, strict=True):
        known[v] = c
    linear = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        if any(type(v) is not Literal and v in linear for v in eqn.invars):
            linear.update(eqn.outvars)
        else:
            # Non-linear equations (on residuals only) are evaluated forward.
            vals = [v.val if type(v) is Literal else known[v] for v in eqn.invars]
            outs = eqn.primitive.bind(*vals, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
            known.update(zip(eqn.outvars, outs, strict=True))

    ct_env: dict = {}

    def add_ct(v, ct):
        if type(v) is Literal or v not in linear or type(ct) is Zero:
            return
        ct_env[v] = add_tangents(ct_env[v], ct) if v in ct_env else ct

    for v, ct in zip(jaxpr.outvars, cotangents, strict=True):
        add_ct(v, ct)

    for eqn in reversed(jaxpr.eqns):
        if not any(v in linear for v in eqn.outvars):
            continue
        cts_out = [ct_env.pop(v, None) for v in eqn.outvars]
        cts_out = [Zero(v.aval) if ct is None else ct
                   for v, ct in zip(eqn.outvars, cts_out, strict=True)]
        if all(type(ct) is Zero for ct in cts_out):
            continue
        args = []
        all_linear = eqn.primitive in linear_primitives
        for v in eqn.invars:
            if all_linear or (type(v) is not Literal and v in linear):
                # A deflinear primitive's rule treats every operand as linear, also a
                # constant one (e.g. add_any(t, 0.0) after a zero was instantiated); the
                # cotangent of a constant is dropped by add_ct.
                args.append(UndefinedPrimal(v.aval))
            elif type(v) is Literal:
                args.append(v.val)
            else:
                args.append(known[v])
        rule = primitive_transposes.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for '{eqn.primitive.name}'"
                f" not implemented (at {eqn.source_info}).")
        ct_arg = cts_out if eqn.primitive.multiple_results else cts_out[0]
        cts_in = rule(ct_arg, *args, **eqn.params)
        for v, ct in zip(eqn.invars, cts_in, strict=True):
            if ct is not None:
                add_ct(v, ct)
    return [ct_env.get(v, Zero(v.aval)) for v in jaxpr.invars]


# --------------------------------------------------------------------------- rule helpers


def defjvp(primitive, *jvp_fns):
    """Register a JVP from per-argument rules `fn(tangent, *primals, **params) -> tangent`.

    A None entry means the output does not depend (differentiably) on that argument.
    """
    def rule(primals, tangents, **params):
        primal_out = primitive.bind(*primals, **params)
        tangent_out = Zero.from_value(primal_out)
        for fn, t in zip(jvp_fns, tangents, strict=False):
            if fn is None or type(t) is Zero:
                continue
            tangent_out = add_tangents(tangent_out, fn(t, *primals, **params))
        return primal_out, tangent_out
    primitive_jvps[primitive] = rule
    return rule


def defjvp2(primitive, *jvp_fns):
    """Like defjvp, but each rule also receives the primal output: fn(t, ans, *primals)."""
    def rule(primals, tangents, **params):
        primal_out = primitive.bind(*primals, **params)
        tangent_out = Zero.from_value(primal_out)
        for fn, t in zip(jvp_fns, tangents, strict=False):
            if fn is None or type(t) is Zero:
                continue
            tangent_out = add_tangents(tangent_out, fn(t, primal_out, *primals, **params))
        return primal_out, tangent_out
    primitive_jvps[primitive] = rule
    return rule


def deflinear(primitive, transpose_rule):
    """A primitive linear in all its inputs: JVP applies it to tangents; register transpose.

    `transpose_rule(ct, *args, **params) -> list of cotangents (None for non-linear args)`.
    """
    def rule(primals, tangents, **params):
        primal_out = primitive.bind(*primals, **params)
        tangents = [instantiate_zeros(t) for t in tangents]
        return primal_out, primitive.bind(*tangents, **params)
    primitive_jvps[primitive] = rule
    primitive_transposes[primitive] = transpose_rule
    linear_primitives.add(primitive)


def defjvp_zero(primitive):
    """The primitive's outputs are piecewise constant (comparisons, floor, integer ops)."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [Zero.from_value(o) for o in out]
        return out, Zero.from_value(out)
    primitive_jvps[primitive] = rule
