"""Opcode families that the passes reason about.

These sets are the passes' vocabulary: which ops are elementwise, which are expensive enough
that fusion must never compute them twice, which can live inside a loop fusion, and which
have side effects (so DCE, CSE and constant folding leave them alone).
"""

from __future__ import annotations

ELEMENTWISE_UNARY = frozenset({
    "abs", "ceil", "floor", "round-nearest-afz", "round-nearest-even", "sign", "negate", "not",
    "exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "sqrt", "rsqrt",
    "cbrt", "tanh", "sine", "cosine", "tan", "atan", "erf", "is-finite", "popcnt", "clz",
    "count-leading-zeros",
    "real", "imag", "convert", "bitcast-convert", "copy", "reduce-precision",
})

ELEMENTWISE_BINARY = frozenset({
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power",
    "atan2", "and", "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical",
    "compare", "complex",
})

ELEMENTWISE_TERNARY = frozenset({"select", "clamp"})

ELEMENTWISE = ELEMENTWISE_UNARY | ELEMENTWISE_BINARY | ELEMENTWISE_TERNARY

# Ops whose per-element cost is far above a load/store: fusion never duplicates them.
EXPENSIVE = frozenset({
    "exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "sqrt",
    "rsqrt", "cbrt", "tanh", "sine", "cosine", "tan", "atan", "atan2", "erf", "power",
    "divide", "remainder", "dot", "convolution", "reduce", "reduce-window", "sort", "fusion",
})

# Ops that only move or replicate data; each output element reads at most one input element.
DATA_MOVEMENT = frozenset({
    "broadcast", "reshape", "bitcast", "transpose", "slice", "pad", "concatenate", "reverse",
})

# Everything a loop fusion may contain (besides parameters and scalar constants).
LOOP_FUSIBLE = ELEMENTWISE | DATA_MOVEMENT | frozenset({"iota"})

# Ops with effects beyond their result: never removed, merged or folded.
SIDE_EFFECTING = frozenset({
    "rng", "rng-bit-generator", "rng-get-and-update-state", "custom-call", "infeed", "outfeed",
    "send", "recv", "send-done", "recv-done", "after-all", "all-reduce", "all-gather",
})

def has_side_effects(instr) -> bool:
    """True for a side-effecting op and for control flow / calls whose computations hold one
    (a while loop running minijax.debug.print stays even when its result is unused)."""
    if instr.opcode in SIDE_EFFECTING:
        return True
    return any(has_side_effects(i) for c in instr.called_computations()
               for i in c.instructions)


COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor"})


def is_elementwise(opcode: str) -> bool:
    return opcode in ELEMENTWISE
