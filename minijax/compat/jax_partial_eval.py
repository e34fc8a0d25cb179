"""``jax.interpreters.partial_eval`` under the import hook: minijax's partial evaluation,
plus JAX's :class:`PartialVal` and :func:`trace_to_jaxpr_nounits` (flax's ``lazy_init``
evaluates what depends on known inputs and stages the rest with them)."""

from __future__ import annotations

from minijax import core
from minijax.interpreters.partial_eval import *  # noqa: F403 - this module stands for JAX's
from minijax.interpreters.partial_eval import JaxprTrace, JaxprTracer

__all__ = ["PartialVal", "trace_to_jaxpr_nounits"]


class PartialVal(tuple):
    """``(aval, None)`` for an unknown value, ``(None, const)`` for a known one."""

    def __new__(cls, xs):
        pv, const = xs
        return super().__new__(cls, (pv, const))

    @classmethod
    def known(cls, const) -> PartialVal:
        return cls((None, const))

    @classmethod
    def unknown(cls, aval) -> PartialVal:
        return cls((aval, None))

    def is_known(self) -> bool:
        return self[0] is None

    def get_known(self):
        return self[1] if self[0] is None else None

    def get_aval(self):
        return core.get_aval(self[1]) if self[0] is None else self[0]


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
    """Run ``fun`` (a WrappedFun) on known values and stage what depends on unknown ones.

    Returns ``(jaxpr, out_pvals, consts)``: the jaxpr computes the unknown outputs from the
    unknown inputs (its constvars are bound to ``consts``); known outputs come back as known
    PartialVals.
    """
    trace = JaxprTrace(core.current_trace(), forward_known=True, purpose="partial_eval")
    inputs = [pv.get_known() if pv.is_known() else trace.new_arg(pv[0]) for pv in pvals]
    with core.set_current_trace(trace):
        outs = fun.call_wrapped(*inputs)
    flags = [instantiate] * len(outs) if isinstance(instantiate, bool) else list(instantiate)
    out_pvals, unknown = [], []
    for out, inst in zip(outs, flags):
        if (isinstance(out, JaxprTracer) and out._trace is trace) or inst:
            out_pvals.append(PartialVal.unknown(core.get_aval(out)))
            unknown.append(out)
        else:
            out_pvals.append(PartialVal.known(out))
    closed = trace.to_jaxpr(unknown)
    return closed.jaxpr, out_pvals, closed.consts
