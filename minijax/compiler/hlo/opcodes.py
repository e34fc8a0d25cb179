"""Every HLO opcode minijax knows, once: text name, arity, family, shape rule and traits.

Shape inference (shape_inference.py picks the rule named here), the verifier, the evaluator
(tests check it implements every opcode), the passes (passes/opcodes.py derives its sets
from this table), codegen and the coverage tool (`python -m minijax.tools.opcode_coverage`)
all look opcodes up here. To add an opcode: add a row, then its shape rule (if it is a new
rule), its evaluator implementation, and, optionally, its lowering and codegen.

Columns:
- arity: the number of operands, or None when it varies (tuple, concatenate, sort, ...);
- family: what kind of operation it is ("elementwise", "data-movement", "reduction",
  "contraction", "indexing", "sorting", "control", "structural", "random", "collective",
  "linalg", "numerics", "custom");
- shape_rule: the name of its rule in shape_inference.SHAPE_RULES, or "explicit" when HLO
  text always spells the result shape and it cannot be derived from the operands;
- traits: "x" expensive per element (fusion never duplicates it), "t" transcendental (cost
  analysis), "s" side effects (never removed, merged or folded), "c" commutative.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Opcode:
    """One row of the opcode table."""

    name: str
    arity: int | None
    family: str
    shape_rule: str
    traits: str = ""

    @property
    def expensive(self) -> bool:
        return "x" in self.traits

    @property
    def transcendental(self) -> bool:
        return "t" in self.traits

    @property
    def side_effects(self) -> bool:
        return "s" in self.traits

    @property
    def commutative(self) -> bool:
        return "c" in self.traits


_E, _DM = "elementwise", "data-movement"
_ROWS = [
    # elementwise, unary
    ("abs", 1, _E, _E), ("negate", 1, _E, _E), ("sign", 1, _E, _E),
    ("exponential", 1, _E, _E, "xt"), ("exponential-minus-one", 1, _E, _E, "xt"),
    ("log", 1, _E, _E, "xt"), ("log-plus-one", 1, _E, _E, "xt"),
    ("logistic", 1, _E, _E, "xt"), ("tanh", 1, _E, _E, "xt"), ("sqrt", 1, _E, _E, "xt"),
    ("rsqrt", 1, _E, _E, "xt"), ("cbrt", 1, _E, _E, "xt"), ("sine", 1, _E, _E, "xt"),
    ("cosine", 1, _E, _E, "xt"), ("tan", 1, _E, _E, "xt"), ("erf", 1, _E, _E, "xt"),
    ("floor", 1, _E, _E), ("ceil", 1, _E, _E), ("round-nearest-afz", 1, _E, _E),
    ("round-nearest-even", 1, _E, _E), ("is-finite", 1, _E, _E), ("not", 1, _E, _E),
    ("popcnt", 1, _E, _E), ("count-leading-zeros", 1, _E, _E), ("copy", 1, _E, _E),
    ("real", 1, _E, _E), ("imag", 1, _E, _E), ("reduce-precision", 1, _E, _E),
    ("convert", 1, _E, "explicit"), ("bitcast-convert", 1, _E, "explicit"),
    ("stochastic-convert", 2, "numerics", "explicit"),
    # elementwise, binary and ternary
    ("add", 2, _E, _E, "c"), ("subtract", 2, _E, _E), ("multiply", 2, _E, _E, "c"),
    ("divide", 2, _E, _E, "x"), ("remainder", 2, _E, _E, "x"), ("power", 2, _E, _E, "xt"),
    ("maximum", 2, _E, _E, "c"), ("minimum", 2, _E, _E, "c"), ("atan2", 2, _E, _E, "xt"),
    ("and", 2, _E, _E, "c"), ("or", 2, _E, _E, "c"), ("xor", 2, _E, _E, "c"),
    ("shift-left", 2, _E, _E), ("shift-right-arithmetic", 2, _E, _E),
    ("shift-right-logical", 2, _E, _E), ("compare", 2, _E, _E), ("complex", 2, _E, _E),
    ("select", 3, _E, _E), ("clamp", 3, _E, _E),
    # data movement
    ("broadcast", 1, _DM, "explicit"), ("reshape", 1, _DM, "explicit"),
    ("bitcast", 1, _DM, "explicit"), ("transpose", 1, _DM, "shape-ops"),
    ("slice", 1, _DM, "shape-ops"), ("pad", 2, _DM, "shape-ops"),
    ("concatenate", None, _DM, "shape-ops"), ("reverse", 1, _DM, "shape-ops"),
    ("dynamic-slice", None, _DM, "shape-ops"), ("dynamic-update-slice", None, _DM, "shape-ops"),
    ("iota", 0, _DM, "explicit"),
    # reductions, contractions, indexing, sorting
    ("reduce", None, "reduction", "reduce", "x"),
    ("reduce-window", None, "reduction", "reduce", "x"),
    ("select-and-scatter", 3, "reduction", "control"),
    ("dot", 2, "contraction", "dot", "x"), ("convolution", 2, "contraction", "convolution", "x"),
    ("gather", 2, "indexing", "gather"), ("scatter", None, "indexing", "control"),
    ("sort", None, "sorting", "control", "x"), ("topk", 1, "sorting", "topk", "x"),
    # control flow and structure
    ("call", None, "control", "control"), ("fusion", None, "control", "control", "x"),
    ("while", 1, "control", "control"), ("conditional", None, "control", "control"),
    ("map", None, "control", _E),
    ("parameter", 0, "structural", "explicit"), ("constant", 0, "structural", "explicit"),
    ("tuple", None, "structural", "control"), ("get-tuple-element", 1, "structural", "control"),
    ("after-all", None, "structural", "control", "s"),
    ("add-dependency", 2, "structural", "first-operand"),
    ("optimization-barrier", 1, "structural", _E),
    # random numbers, collectives (compiler/evaluator/collectives.py), linalg, numerics,
    # custom calls
    ("rng", None, "random", "explicit", "s"), ("rng-bit-generator", 1, "random", "explicit", "s"),
    ("all-reduce", None, "collective", "operands", "s"),
    ("all-gather", None, "collective", "explicit", "s"),
    ("reduce-scatter", None, "collective", "explicit", "s"),
    ("all-to-all", None, "collective", "explicit", "s"),
    ("collective-permute", 1, "collective", "operands", "s"),
    ("replica-id", 0, "collective", "explicit"), ("partition-id", 0, "collective", "explicit"),
    # XLA's asynchronous pairs (scheduled modules; passes/async_to_sync.py makes them sync)
    ("all-reduce-start", None, "collective", "explicit", "s"),
    ("all-reduce-done", 1, "collective", "explicit", "s"),
    ("all-gather-start", None, "collective", "explicit", "s"),
    ("all-gather-done", 1, "collective", "explicit", "s"),
    ("collective-permute-start", 1, "collective", "explicit", "s"),
    ("collective-permute-done", 1, "collective", "explicit", "s"),
    ("copy-start", 1, "structural", "explicit"), ("copy-done", 1, "structural", "explicit"),
    ("async-start", None, "control", "explicit"), ("async-update", 1, "control", "explicit"),
    ("async-done", 1, "control", "explicit"),
    ("get-dimension-size", 1, "structural", "explicit"),
    ("cholesky", 1, "linalg", "operands", "x"),
    ("triangular-solve", 2, "linalg", "second-operand", "x"),
    ("fft", 1, "numerics", "fft", "x"),
    ("batch-norm-training", 3, "numerics", "batch-norm"),
    ("batch-norm-inference", 5, "numerics", "batch-norm"),
    ("batch-norm-grad", 5, "numerics", "batch-norm"),
    ("custom-call", None, "custom", "explicit", "s"),
]

#: name -> Opcode, for every opcode minijax implements.
OPCODES: dict[str, Opcode] = {row[0]: Opcode(*row) for row in _ROWS}

#: Other spellings accepted in HLO text, and the opcode each means.
ALIASES = {"clz": "count-leading-zeros"}

#: Opcodes of XLA that minijax parses but cannot run (host I/O, cross-host transfers, the
#: stateful rng); the passes still treat them as having side effects.
UNSUPPORTED = frozenset({"infeed", "outfeed", "send", "recv", "send-done", "recv-done",
                         "rng-get-and-update-state"})


def canonical(name: str) -> str:
    """The table's name for an opcode spelled `name` (aliases resolved)."""
    return ALIASES.get(name, name)


def lookup(name: str) -> Opcode | None:
    """The Opcode row for `name` (or an alias of it), None when minijax does not know it."""
    return OPCODES.get(ALIASES.get(name, name))


def select(family: str | None = None, arity: int | None = -1, shape_rule: str | None = None,
           trait: str | None = None) -> frozenset:
    """Names of the opcodes matching every given criterion (arity -1: any)."""
    return frozenset(
        op.name for op in OPCODES.values()
        if (family is None or op.family == family) and (arity == -1 or op.arity == arity)
        and (shape_rule is None or op.shape_rule == shape_rule)
        and (trait is None or trait in op.traits))
