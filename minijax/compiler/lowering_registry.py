"""The table of lowering rules (primitive -> HLO), filled by minijax.lax.

A rule has the signature `rule(ctx, *operands, **params)` where `ctx` is a
`LoweringRuleContext` (compiler/lower.py) with `ctx.builder` (an HloBuilder),
`ctx.avals_in`, `ctx.avals_out` and `ctx.metadata`, and operands are HLO instructions.
It returns one instruction, or a list of instructions for primitives with multiple results.
This module is a leaf so that lax can register rules without importing the compiler.
"""

from __future__ import annotations

lowering_rules: dict = {}


def register_lowering(primitive, rule):
    """Register the HLO lowering rule of a primitive; usable as a decorator factory too."""
    lowering_rules[primitive] = rule
    return rule
