"""Random small array programs for differential testing (tests/test_differential.py).

A program is a list of steps over numbered values: values 0..n_inputs-1 are the inputs and
step k defines value n_inputs + k by applying one op of the table below to earlier values.
The same program runs on any NumPy-like namespace (`numpy`, `minijax.numpy`,
`jax.numpy`): every op is written once against the functions those three share, with a
NumPy-only variant where NumPy spells it differently. Shapes never change along a program
(reductions keep their dims and broadcast back), so any value can feed any op.

Float ops are chosen to stay in range: a composition of a few of them cannot overflow
float32, so a float64 NumPy run of the same program is a reference for values and for
finite differences. Integer programs run the integer ops over the full range of the
dtype (wrapping, division by zero, shifts past the width), where JAX's semantics decide.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import strategies as st


@dataclasses.dataclass(frozen=True)
class Op:
    """One op: `fn(m, *values, **params)` on namespace m; `np_fn` overrides it for NumPy."""
    name: str
    arity: int
    fn: object
    np_fn: object = None
    axis: bool = False          # takes an `axis` parameter (drawn per step)
    continuous: bool = True     # continuous (kinks allowed): value and gradient checks apply
    exact: bool = True          # bitwise equal across eager / jit / interpreter
    identity: bool = True       # defined over an empty axis (max-based ops are not)

    def apply(self, m, args, params):
        fn = self.np_fn if (m is np and self.np_fn is not None) else self.fn
        return fn(m, *args, **params)


def _softmax(m, x, axis):
    e = m.exp(x - m.max(x, axis=axis, keepdims=True))
    return e / m.sum(e, axis=axis, keepdims=True)


def _logsumexp(m, x, axis):
    hi = m.max(x, axis=axis, keepdims=True)
    return m.log(m.sum(m.exp(x - hi), axis=axis, keepdims=True)) + hi


FLOAT_OPS = [
    Op("neg", 1, lambda m, x: -x),
    Op("abs", 1, lambda m, x: m.abs(x)),
    Op("sin", 1, lambda m, x: m.sin(x), exact=False),
    Op("cos", 1, lambda m, x: m.cos(x), exact=False),
    Op("tanh", 1, lambda m, x: m.tanh(x), exact=False),
    Op("exp_neg_sq", 1, lambda m, x: m.exp(-x * x), exact=False),
    Op("log1p_abs", 1, lambda m, x: m.log1p(m.abs(x)), exact=False),
    Op("sqrt_abs", 1, lambda m, x: m.sqrt(m.abs(x) + 0.25), exact=False),
    Op("arctan", 1, lambda m, x: m.arctan(x), exact=False),
    Op("logistic", 1, lambda m, x: 1 / (1 + m.exp(-m.clip(x, -30, 30))), exact=False),
    Op("half", 1, lambda m, x: x * 0.5),
    Op("floor", 1, lambda m, x: m.floor(x), continuous=False),
    Op("round", 1, lambda m, x: m.round(x), continuous=False),
    Op("sign", 1, lambda m, x: m.sign(x), continuous=False),
    Op("clip", 1, lambda m, x: m.clip(x, -1.0, 1.5)),
    Op("relu", 1, lambda m, x: m.maximum(x, 0.0)),
    Op("square_clip", 1, lambda m, x: m.clip(x, -3, 3) ** 2),
    Op("add_int_scalar", 1, lambda m, x: x + 2),
    Op("rsub_scalar", 1, lambda m, x: 1.5 - x),
    Op("add", 2, lambda m, x, y: x + y),
    Op("sub", 2, lambda m, x, y: x - y),
    Op("mul", 2, lambda m, x, y: x * y),
    Op("safe_div", 2, lambda m, x, y: x / (1 + y * y), exact=False),
    Op("maximum", 2, lambda m, x, y: m.maximum(x, y)),
    Op("minimum", 2, lambda m, x, y: m.minimum(x, y)),
    Op("arctan2", 2, lambda m, x, y: m.arctan2(x, y + 3.0), exact=False),
    Op("hypot", 2, lambda m, x, y: m.hypot(x, y) + 0.5, exact=False),
    Op("where_gt", 2, lambda m, x, y: m.where(x > y, x, y * 2), continuous=False),
    Op("mod", 2, lambda m, x, y: m.remainder(x, m.abs(y) + 1.0), continuous=False),
    Op("sum", 1, lambda m, x, axis: m.sum(x, axis=axis, keepdims=True) * 0.25, axis=True,
       exact=False),
    Op("mean", 1, lambda m, x, axis: m.mean(x, axis=axis, keepdims=True), axis=True,
       exact=False),
    Op("max", 1, lambda m, x, axis: m.max(x, axis=axis, keepdims=True) + 0 * x, axis=True,
       identity=False),
    Op("min", 1, lambda m, x, axis: m.min(x, axis=axis, keepdims=True) + 0 * x, axis=True,
       identity=False),
    Op("var", 1, lambda m, x, axis: m.var(x, axis=axis, keepdims=True) + 0 * x, axis=True,
       exact=False),
    Op("softmax", 1, _softmax, axis=True, identity=False, exact=False),
    Op("logsumexp", 1, lambda m, x, axis: _logsumexp(m, x, axis) + 0 * x, axis=True,
       identity=False, exact=False),
    Op("cumsum", 1, lambda m, x, axis: m.cumsum(x, axis=axis) * 0.25, axis=True, exact=False),
    Op("sort", 1, lambda m, x, axis: m.sort(x, axis=axis), axis=True),
    Op("sort_desc", 1, lambda m, x, axis: m.flip(m.sort(x, axis=axis), axis=axis),
       axis=True),
    Op("flip", 1, lambda m, x, axis: m.flip(x, axis=axis), axis=True),
    Op("roll", 1, lambda m, x, axis: m.roll(x, 1, axis=axis), axis=True),
]

INT_OPS = [
    Op("neg", 1, lambda m, x: -x),
    Op("abs", 1, lambda m, x: m.abs(x)),
    Op("not", 1, lambda m, x: ~x),
    Op("add", 2, lambda m, x, y: x + y),
    Op("sub", 2, lambda m, x, y: x - y),
    Op("mul", 2, lambda m, x, y: x * y),
    Op("maximum", 2, lambda m, x, y: m.maximum(x, y)),
    Op("minimum", 2, lambda m, x, y: m.minimum(x, y)),
    Op("and", 2, lambda m, x, y: x & y),
    Op("or", 2, lambda m, x, y: x | y),
    Op("xor", 2, lambda m, x, y: x ^ y),
    Op("where_lt", 2, lambda m, x, y: m.where(x < y, x, y)),
    Op("floor_divide", 2, lambda m, x, y: m.floor_divide(x, y)),
    Op("remainder", 2, lambda m, x, y: m.remainder(x, y)),
    Op("add_scalar", 1, lambda m, x: x + 3),
    Op("sum", 1, lambda m, x, axis: m.sum(x, axis=axis, keepdims=True, dtype=x.dtype),
       axis=True),
    Op("max", 1, lambda m, x, axis: m.max(x, axis=axis, keepdims=True) + 0 * x, axis=True,
       identity=False),
    Op("cumsum", 1, lambda m, x, axis: m.cumsum(x, axis=axis, dtype=x.dtype), axis=True),
    Op("sort", 1, lambda m, x, axis: m.sort(x, axis=axis), axis=True),
    Op("flip", 1, lambda m, x, axis: m.flip(x, axis=axis), axis=True),
]

#: Integer ops whose results JAX defines differently from NumPy (division by zero): only
#: compared across minijax's three paths and with JAX, never with NumPy.
NUMPY_DIFFERS = {"floor_divide", "remainder"}


@dataclasses.dataclass
class Program:
    """Steps `(op, operand indices, params)` over `n_inputs` inputs of one shape/dtype."""
    kind: str                   # "float" or "int"
    shape: tuple
    dtype: str
    n_inputs: int
    steps: list
    outputs: tuple

    def __call__(self, m, *inputs):
        values = list(inputs)
        for op, operands, params in self.steps:
            values.append(op.apply(m, [values[i] for i in operands], params))
        return tuple(values[i] for i in self.outputs)

    def ops(self):
        return {op.name for op, _, _ in self.steps}

    def continuous(self):
        return all(op.continuous for op, _, _ in self.steps)

    def exact(self):
        return all(op.exact for op, _, _ in self.steps)

    def __repr__(self):
        lines = [f"Program({self.kind}, shape={self.shape}, dtype={self.dtype}, "
                 f"inputs={self.n_inputs})"]
        for k, (op, operands, params) in enumerate(self.steps):
            lines.append(f"  v{self.n_inputs + k} = {op.name}"
                         f"({', '.join(f'v{i}' for i in operands)}{', ' if params else ''}"
                         f"{', '.join(f'{a}={b}' for a, b in params.items())})")
        lines.append(f"  return {', '.join(f'v{i}' for i in self.outputs)}")
        return "\n".join(lines)


SHAPES = [(), (1,), (5,), (3, 4), (2, 3, 2), (0,), (2, 0), (1, 7)]
FLOAT_DTYPES = ["float32"]
INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32"]


@st.composite
def programs(draw, kind="float", max_steps=5, shapes=SHAPES, dtypes=None):
    """A random program of 1..max_steps ops over 1..3 inputs."""
    table = FLOAT_OPS if kind == "float" else INT_OPS
    dtypes = dtypes or (FLOAT_DTYPES if kind == "float" else INT_DTYPES)
    shape = draw(st.sampled_from(shapes))
    dtype = draw(st.sampled_from(dtypes))
    n_inputs = draw(st.integers(1, 3))
    steps = []
    for k in range(draw(st.integers(1, max_steps))):
        n_values = n_inputs + k
        op = draw(st.sampled_from(table))
        if op.axis and not shape:
            op = table[0]
        # Prefer the newest value so programs are chains more often than forests.
        operands = [draw(st.one_of(st.just(n_values - 1), st.integers(0, n_values - 1)))
                    for _ in range(op.arity)]
        params = {"axis": draw(st.integers(-len(shape), len(shape) - 1))} if op.axis else {}
        if op.axis and not op.identity and shape[params["axis"]] == 0:
            op, params = table[0], {}
        steps.append((op, operands, params))
    last = n_inputs + len(steps) - 1
    extra = draw(st.integers(0, last))
    outputs = (last,) if extra == last else (last, extra)
    return Program(kind, shape, dtype, n_inputs, steps, outputs)


_FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 1e-40, np.inf, -np.inf, np.nan]


def mixed_values(rng, shape, edges=None, tie_rate=0.2, edge_rate=0.3, scale=2.0):
    """float64 normal values times `scale`, with ties (copies of the first value) at
    `tie_rate` and, when `edges` lists some, those values mixed in at `edge_rate`."""
    x = np.asarray(rng.standard_normal(shape) * scale)
    flat = x.reshape(-1)
    if flat.size:
        ties = rng.random(flat.size) < tie_rate
        flat[ties] = flat[0]
        if edges:
            picks = rng.random(flat.size) < edge_rate
            flat[picks] = rng.choice(edges, int(picks.sum()))
    return x


def float_inputs(rng, program, edges=False):
    """Float inputs; ties (repeated values) are likely; `edges` mixes in 0, -0, inf, nan,
    subnormals."""
    return [mixed_values(rng, program.shape, _FLOAT_EDGES if edges else None)
            .astype(program.dtype) for _ in range(program.n_inputs)]


def int_inputs(rng, program):
    """Integers over the dtype's whole range with 0, +-1, min and max mixed in."""
    info = np.iinfo(program.dtype)
    out = []
    for _ in range(program.n_inputs):
        x = np.asarray(rng.integers(info.min, int(info.max) + 1, program.shape,
                                   dtype=program.dtype))
        flat = x.reshape(-1)
        if flat.size:
            edges = np.array([0, 1, 2, info.max, info.min] + ([-1] if info.min < 0 else []))
            picks = rng.random(flat.size) < 0.4
            flat[picks] = rng.choice(edges, int(picks.sum())).astype(program.dtype)
        out.append(x)
    return out
