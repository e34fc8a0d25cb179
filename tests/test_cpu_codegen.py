"""CPU code generation: every elementwise opcode per dtype, and the math approximations' ulps.

Each test batches many ops into one HLO module so LLVM compiles once per test.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")

from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.test_util import float32_ulp_error  # noqa: E402

N = 1003  # odd: leaves vector remainders

UNARY_FLOAT = ["abs", "negate", "sign", "exponential", "exponential-minus-one", "log",
               "log-plus-one", "logistic", "tanh", "sqrt", "rsqrt", "cbrt", "sine", "cosine",
               "tan", "floor", "ceil", "round-nearest-afz", "round-nearest-even", "erf"]
BINARY_FLOAT = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
                "power", "atan2"]
UNARY_INT = ["abs", "negate", "sign", "not", "popcnt", "clz"]
BINARY_INT = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
              "and", "or", "xor", "shift-left", "shift-right-logical",
              "shift-right-arithmetic"]
COMPARES = ["EQ", "NE", "LT", "LE", "GT", "GE"]


def _module(et: str, unary, binary, extra=()):
    lines = [f"x = {et}[{N}] parameter(0)", f"y = {et}[{N}] parameter(1)"]
    outs = []
    for k, op in enumerate(unary):
        lines.append(f"u{k} = {et}[{N}] {op}(x)")
        outs.append((f"u{k}", f"{et}[{N}]"))
    for k, op in enumerate(binary):
        lines.append(f"b{k} = {et}[{N}] {op}(x, y)")
        outs.append((f"b{k}", f"{et}[{N}]"))
    for k, d in enumerate(COMPARES):
        lines.append(f"c{k} = pred[{N}] compare(x, y), direction={d}")
        outs.append((f"c{k}", f"pred[{N}]"))
    lines.append(f"s0 = {et}[{N}] select(c2, x, y)")
    lines.append(f"s1 = {et}[{N}] clamp(y, x, y)")
    outs += [("s0", f"{et}[{N}]"), ("s1", f"{et}[{N}]")]
    for line, ty in extra:
        lines.append(line)
        outs.append((line.split()[0], ty))
    root = (f"ROOT out = ({', '.join(t for _, t in outs)}) "
            f"tuple({', '.join(n for n, _ in outs)})")
    body = "\n  ".join(lines + [root])
    return parse_module(f"HloModule ew_{et}\nENTRY main {{\n  {body}\n}}\n"), [o for o, _ in outs]


def elementwise_inputs(dtype, rng, n=N):
    """Operands x, y of n elements for the elementwise op table: random values with edge
    values (specials for floats, min/max/0 and zero divisors for ints) and equal pairs;
    tests/test_gpu_codegen.py uses them too."""
    if np.dtype(dtype).kind == "f":
        return _float_inputs(dtype, rng, n)
    return _int_inputs(dtype, rng, n)


def _float_inputs(dtype, rng, n=N):
    x = rng.normal(0, 3, n).astype(dtype)
    y = rng.normal(0, 3, n).astype(dtype)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.5, -2.5],
                       dtype=dtype)
    x[:10] = special
    y[:10] = special[::-1]
    y[20:30] = x[20:30]  # equal pairs for compares
    return x, y


def _int_inputs(dtype, rng, n=N):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    y = rng.integers(-5 if info.min < 0 else 0, 40, n).astype(dtype)
    x[:6] = [info.min, info.max, 0, 1, 7, info.min]
    y[:6] = [-1 if info.min < 0 else 1, 0, 0, 3, 0, 0]
    y[20:30] = x[20:30]
    return x, y


def _compare(got, ref, names, rtol, atol=0.0):
    for name, g, r in zip(names, got, ref):
        assert g.dtype == r.dtype, name
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=name)
        else:
            np.testing.assert_array_equal(g, r, err_msg=name)


@pytest.mark.parametrize("et,dtype,rtol", [("f32", np.float32, 2e-6), ("f64", np.float64, 1e-11),
                                            ("f16", np.float16, 2e-3)])
def test_float_elementwise(et, dtype, rtol):
    rng = np.random.default_rng(1)
    extra = [(f"cv = s32[{N}] convert(x)", f"s32[{N}]"), (f"fin = pred[{N}] is-finite(x)",
                                                            f"pred[{N}]")]
    module, names = _module(et, UNARY_FLOAT, BINARY_FLOAT, extra)
    x, y = _float_inputs(dtype, rng)
    if et == "f16":
        x = np.clip(x, -8, 8).astype(dtype)  # keep exp/power out of f16 overflow edges
    with np.errstate(all="ignore"):
        ref = evaluate_module(module, [x, y])
        got = CpuBackend().compile(module).execute([x, y])
    finite = np.isfinite(x)
    got[-2] = np.where(finite, got[-2], 0)   # float->int of inf/nan: XLA saturates
    ref[-2] = np.where(finite, ref[-2], 0)
    _compare(got, ref, names, rtol=rtol, atol=1e-30)


@pytest.mark.parametrize("et", ["s8", "s16", "s32", "s64", "u8", "u32", "u64"])
def test_int_elementwise(et):
    rng = np.random.default_rng(2)
    dtype = np.dtype({"s": "int", "u": "uint"}[et[0]] + et[1:])
    extra = [(f"cv = f32[{N}] convert(x)", f"f32[{N}]"), (f"pw = {et}[{N}] power(y, y)",
                                                            f"{et}[{N}]")]
    module, names = _module(et, UNARY_INT, BINARY_INT, extra)
    x, y = _int_inputs(dtype, rng)
    with np.errstate(all="ignore"):
        ref = evaluate_module(module, [x, y])
        got = CpuBackend().compile(module).execute([x, y])
    _compare(got, ref, names, rtol=1e-6)


def test_pred_ops_and_converts():
    text = f"""HloModule preds
ENTRY main {{
  x = pred[{N}] parameter(0)
  y = pred[{N}] parameter(1)
  a = pred[{N}] and(x, y)
  o = pred[{N}] or(x, y)
  n = pred[{N}] not(x)
  xr = pred[{N}] xor(x, y)
  c = f32[{N}] convert(x)
  i = s32[{N}] convert(y)
  back = pred[{N}] convert(c)
  ROOT out = (pred[{N}], pred[{N}], pred[{N}], pred[{N}], f32[{N}], s32[{N}], pred[{N}])
    tuple(a, o, n, xr, c, i, back)
}}
"""
    module = parse_module(text)
    rng = np.random.default_rng(3)
    x, y = rng.random(N) < 0.5, rng.random(N) < 0.5
    ref = evaluate_module(module, [x, y])
    got = CpuBackend().compile(module).execute([x, y])
    _compare(got, ref, [str(k) for k in range(7)], rtol=0)


# ----------------------------------------------------------------------- ulp tests


def _all_float32(rng, n):
    x = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([x, rng.uniform(-10, 10, n // 4).astype(np.float32),
                           rng.uniform(-1e-3, 1e-3, n // 16).astype(np.float32),
                           np.array([0, -0.0, np.inf, -np.inf, np.nan, 1, -1], np.float32)])


def test_math_ulp_float32():
    import math
    rng = np.random.default_rng(4)
    x = _all_float32(rng, 1 << 18)
    x_trig = np.where(np.abs(x) < 1e20, x, np.float32(1.5))
    erf = np.vectorize(math.erf, otypes=[np.float64])
    cases = {
        "exponential": (np.exp, x, 1.0), "log": (np.log, x, 2.0),
        "log-plus-one": (np.log1p, x, 4.0), "exponential-minus-one": (np.expm1, x, 2.0),
        "tanh": (np.tanh, x, 2.45), "sine": (np.sin, x_trig, 1.0),
        "cosine": (np.cos, x_trig, 1.0), "tan": (np.tan, x_trig, 1.0),
        "cbrt": (np.cbrt, x, 1.0),
        "logistic": (lambda v: np.exp(-np.logaddexp(0, -v)), x, 2.5),
    }
    small = np.clip(x, -6, 6)
    lines = [f"p{k} = f32[{a.size}] parameter({k})" for k, (_, a, _) in enumerate(cases.values())]
    lines.append(f"pe = f32[{small.size}] parameter({len(cases)})")
    outs = []
    for k, op in enumerate(cases):
        lines.append(f"o{k} = f32[{x.size}] {op}(p{k})")
        outs.append(f"o{k}")
    lines.append(f"oe = f32[{small.size}] erf(pe)")
    outs.append("oe")
    types = ", ".join([f"f32[{x.size}]"] * len(cases) + [f"f32[{small.size}]"])
    text = ("HloModule ulps\nENTRY main {\n  " + "\n  ".join(lines)
            + f"\n  ROOT out = ({types}) tuple({', '.join(outs)})\n}}\n")
    module = parse_module(text)
    args = [a for _, a, _ in cases.values()] + [small]
    got = CpuBackend().compile(module).execute(args)
    with np.errstate(all="ignore"):
        for (op, (fn, a, bound)), g in zip(cases.items(), got):
            err = float32_ulp_error(g, fn(a.astype(np.float64)))
            worst = int(np.argmax(err))
            assert err[worst] <= bound, f"{op}({a[worst]!r}) = {g[worst]!r}: {err[worst]} ulp"
        err = float32_ulp_error(got[-1], erf(small.astype(np.float64)))
        assert err.max() <= 1.0


def test_math_binary_ulp_float32():
    rng = np.random.default_rng(5)
    n = 1 << 16
    x = np.abs(rng.uniform(0, 10, n)).astype(np.float32)
    y = rng.uniform(-30, 30, n).astype(np.float32)
    a = _all_float32(rng, n)[:n]
    b = _all_float32(rng, n)[:n]
    text = f"""HloModule bin
ENTRY main {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  a = f32[{n}] parameter(2)
  b = f32[{n}] parameter(3)
  p = f32[{n}] power(x, y)
  t = f32[{n}] atan2(a, b)
  ROOT out = (f32[{n}], f32[{n}]) tuple(p, t)
}}
"""
    got = CpuBackend().compile(parse_module(text)).execute([x, y, a, b])
    with np.errstate(all="ignore"):
        assert float32_ulp_error(got[0], np.power(x.astype(np.float64), y)).max() <= 1.0
        assert float32_ulp_error(got[1], np.arctan2(a.astype(np.float64), b)).max() <= 1.0


def test_math_float64_relative_error():
    rng = np.random.default_rng(6)
    n = 20000
    x = rng.uniform(-50, 50, n)
    pos = np.abs(x) * 10.0 ** rng.uniform(-300, 300, n)
    l1p = np.abs(x) / 49 - 0.99
    text = f"""HloModule f64math
ENTRY main {{
  x = f64[{n}] parameter(0)
  p = f64[{n}] parameter(1)
  q = f64[{n}] parameter(2)
  e = f64[{n}] exponential(x)
  l = f64[{n}] log(p)
  lp = f64[{n}] log-plus-one(q)
  em = f64[{n}] exponential-minus-one(x)
  t = f64[{n}] tanh(x)
  s = f64[{n}] logistic(x)
  ROOT out = (f64[{n}], f64[{n}], f64[{n}], f64[{n}], f64[{n}], f64[{n}]) tuple(e, l, lp, em, t, s)
}}
"""
    got = CpuBackend().compile(parse_module(text)).execute([x, pos, l1p])
    refs = [np.exp(x), np.log(pos), np.log1p(l1p), np.expm1(x), np.tanh(x),
            1 / (1 + np.exp(-x))]
    for g, r in zip(got, refs):
        np.testing.assert_allclose(g, r, rtol=2e-15, atol=1e-300)
