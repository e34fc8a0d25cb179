"""Partial evaluation of a closed jaxpr: split it into a known and an unknown part.

Given which inputs are unknown, `partial_eval_jaxpr` returns

- a *known* jaxpr: known inputs -> known outputs + residuals;
- an *unknown* jaxpr: residuals + unknown inputs -> unknown outputs;

so that running the known jaxpr now and the unknown one later computes the original
outputs. Higher-order primitives (cond, scan, ...) use it to split their bodies when
linearize stages their tangent part (see partial_eval.partial_eval_rules).

It is implemented by tracing: the jaxpr is evaluated under a forward-known JaxprTrace (the
unknown part) whose parent is a fully staging JaxprTrace (the known part). Known values
that the unknown part reads become its constants: those are the residuals.
"""

from __future__ import annotations

from minijax import core
from minijax.core import ClosedJaxpr, Jaxpr, Tracer, set_current_trace
from minijax.interpreters.partial_eval import JaxprTrace, JaxprTracer


def _as_list(flag, n: int) -> list[bool]:
    if isinstance(flag, bool):
        return [flag] * n
    flags = list(flag)
    if len(flags) != n:
        raise ValueError(f"expected {n} flags, got {len(flags)}")
    return flags


def partial_eval_jaxpr_fwd(closed: ClosedJaxpr, unknowns, instantiate=False,
                           forwardable=None):
    """Split `closed` by unknown inputs; residuals that are known inputs may be forwarded.

    Args:
      closed: the jaxpr to split (its constants must be concrete values, not tracers).
      unknowns: one bool per input.
      instantiate: a bool or one bool per output: force these outputs to be unknown.
      forwardable: one bool per *known* input: if a residual is exactly that input, do not
        output it from the known jaxpr, report it as forwarded instead.

    Returns (known, unknown, out_unknowns, res_spec, res_avals):
      known: ClosedJaxpr, known inputs -> known outputs + non-forwarded residuals;
      unknown: ClosedJaxpr, residuals (in res_spec order) + unknown inputs -> unknown outs;
      out_unknowns: one bool per output;
      res_spec: per residual, the index among the known inputs it forwards, or None when
        the known jaxpr outputs it (in order);
      res_avals: the residuals' avals.
    """
    unknowns = _as_list(unknowns, len(closed.in_avals))
    instantiate = _as_list(instantiate, len(closed.out_avals))
    n_known = unknowns.count(False)
    forwardable = [False] * n_known if forwardable is None else list(forwardable)
    known_trace = JaxprTrace(core.current_trace(), forward_known=False,
                             purpose="partial evaluation")
    unknown_trace = JaxprTrace(known_trace, forward_known=True, purpose="partial evaluation")
    args = [unknown_trace.new_arg(aval) if uk else known_trace.new_arg(aval)
            for aval, uk in zip(closed.in_avals, unknowns, strict=True)]
    with set_current_trace(unknown_trace):
        outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    out_unknowns = [unknown_trace.is_own(o) or inst
                    for o, inst in zip(outs, instantiate, strict=True)]
    known_outs = [o for o, uk in zip(outs, out_unknowns, strict=True) if not uk]
    unknown_outs = [o for o, uk in zip(outs, out_unknowns, strict=True) if uk]
    staged = unknown_trace.to_jaxpr(unknown_outs)
    # Split the unknown part's constants: residuals (values of the known part) become
    # inputs; concrete constants stay constants.
    res_vars, res_spec, res_avals, res_vals = [], [], [], []
    const_vars, const_vals = [], []
    known_invars = list(known_trace.invars)
    for var, value in zip(staged.jaxpr.constvars, staged.consts, strict=True):
        if isinstance(value, JaxprTracer) and value._trace is known_trace:
            res_vars.append(var)
            res_avals.append(var.aval)
            pos = known_invars.index(value.jaxpr_var) if value.jaxpr_var in known_invars else None
            if pos is not None and forwardable[pos]:
                res_spec.append(pos)
            else:
                res_spec.append(None)
                res_vals.append(value)
        elif isinstance(value, Tracer):
            raise AssertionError("partial_eval_jaxpr: a jaxpr constant is a tracer")
        else:
            const_vars.append(var)
            const_vals.append(value)
    unknown = ClosedJaxpr(Jaxpr(const_vars, res_vars + list(staged.jaxpr.invars),
                                staged.jaxpr.outvars, staged.jaxpr.eqns), const_vals)
    known = known_trace.to_jaxpr(known_outs + res_vals)
    _check_no_tracer_consts(known)
    return known, unknown, out_unknowns, res_spec, res_avals


def _check_no_tracer_consts(closed: ClosedJaxpr) -> None:
    for c in closed.consts:
        if isinstance(c, Tracer):
            raise AssertionError("partial_eval_jaxpr: the known jaxpr closes over a tracer")


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns, instantiate=False):
    """Split `closed` into known and unknown parts (see partial_eval_jaxpr_fwd).

    Returns (known_jaxpr, unknown_jaxpr, out_unknowns, num_residuals): the known jaxpr
    maps the known inputs to the known outputs followed by the residuals; the unknown
    jaxpr maps the residuals followed by the unknown inputs to the unknown outputs.
    """
    known, unknown, out_uk, _, res_avals = partial_eval_jaxpr_fwd(closed, unknowns,
                                                                 instantiate)
    return known, unknown, out_uk, len(res_avals)
