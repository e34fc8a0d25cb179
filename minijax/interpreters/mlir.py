"""Lowering rules for user-defined primitives (JAX's ``jax.interpreters.mlir`` surface).

minijax lowers jaxprs to HLO (compiler/lower.py) with rules
``rule(ctx, *operands, **params)`` from compiler/lowering_registry.py. Libraries define a
new primitive's lowering the portable way, ``register_lowering(p, lower_fun(f))``: ``f`` is
traced on the operands' avals and its jaxpr inlined where ``p`` is used, so ``f`` may use
any minijax operation. A rule written against JAX's MLIR builders cannot run on minijax's
compiler; :func:`register_lowering` then falls back to lowering the primitive's Python
implementation (``p.impl``, traced the same way) and raises a clear error if it has none.
"""

from __future__ import annotations

from minijax.compiler import lowering_registry
from minijax.interpreters.partial_eval import trace_to_jaxpr

__all__ = ["LoweringRuleContext", "lower_fun", "register_lowering"]


class LoweringRuleContext:
    """Type name JAX's rules annotate their ``ctx`` with (minijax passes compiler/lower.py's
    context, which has ``avals_in``, ``avals_out`` and ``builder``)."""


def lower_fun(fun, multiple_results: bool = True):
    """A lowering rule that inlines ``fun(*operands, **params)`` (traced on the avals)."""

    def rule(ctx, *operands, **params):
        closed, _ = trace_to_jaxpr(lambda *xs: _as_list(fun(*xs, **params), multiple_results),
                                   list(ctx.avals_in), fun_name=getattr(fun, "__name__", ""))
        outs = ctx.lower_jaxpr(closed, operands)
        return outs if multiple_results else outs[0]

    rule.minijax_lowering = True
    return rule


def _as_list(out, multiple_results):
    return list(out) if multiple_results else [out]


def register_lowering(prim, rule, platform: str | None = None, **kwargs):
    """Give ``prim`` a lowering rule; ``platform`` is accepted and ignored (one rule serves
    every minijax backend)."""
    del platform, kwargs
    if not getattr(rule, "minijax_lowering", False):
        rule = _impl_rule(prim)
    lowering_registry.register_lowering(prim, rule)
    return rule


def _impl_rule(prim):
    def rule(ctx, *operands, **params):
        if prim.impl is None:
            raise NotImplementedError(
                f"primitive '{prim.name}' has a lowering rule written for JAX's MLIR builders, "
                "which minijax's compiler cannot run, and no def_impl to lower instead. "
                "Register mlir.lower_fun(f) as its lowering.")
        return lower_fun(prim.impl, prim.multiple_results)(ctx, *operands, **params)
    return rule
