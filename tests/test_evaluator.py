"""The HLO evaluator's elementwise opcodes against independent per-element references.

References are written here with Python integers, `math` and `decimal` element by element,
never with the evaluator's helpers. Structural opcodes: test_evaluator_structural.py.
"""

from __future__ import annotations

import decimal
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minijax.compiler.evaluator import evaluate_module
from minijax.compiler.hlo.ir import element_type_of
from minijax.compiler.hlo.parser import parse_module

SETTINGS = settings(max_examples=30, deadline=None)
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOAT_DTYPES = [np.float32, np.float64]


def type_str(dtype, shape) -> str:
    return f"{element_type_of(np.dtype(dtype))}[{','.join(map(str, shape))}]"


def run(expr: str, args, out_dtype, out_shape=None, comps: str = ""):
    """Evaluate `r = OUT expr` over parameters p0, p1, ... made from `args`."""
    args = [np.asarray(a) for a in args]
    out_shape = args[0].shape if out_shape is None else out_shape
    params = "\n".join(f"  p{i} = {type_str(a.dtype, a.shape)} parameter({i})"
                       for i, a in enumerate(args))
    out = type_str(out_dtype, out_shape)
    text = (f"HloModule t\n{comps}\nENTRY e {{\n{params}\n  r = {out} {expr}\n"
            f"  ROOT t = ({out}) tuple(r)\n}}\n")
    (result,) = evaluate_module(parse_module(text), args)
    assert result.dtype == np.dtype(out_dtype)
    assert result.shape == tuple(out_shape)
    return result


def int_edges(dtype):
    info = np.iinfo(dtype)
    return [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, info.min + 1, info.max - 1]


def int_arrays(dtype, shape):
    info = np.iinfo(dtype)
    return hnp.arrays(dtype, shape, elements=st.one_of(
        st.sampled_from(int_edges(dtype)), st.integers(int(info.min), int(info.max))))


FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, math.inf, -math.inf, math.nan,
               1e-30, 3.0, 100.0]


def float_arrays(dtype, shape):
    width = 32 if dtype == np.float32 else 64
    return hnp.arrays(dtype, shape, elements=st.one_of(
        st.sampled_from(FLOAT_EDGES), st.floats(-1e6, 1e6, width=width)))


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def wrap(v: int, dtype) -> int:
    info = np.iinfo(dtype)
    span = 1 << (8 * np.dtype(dtype).itemsize)
    return (v - int(info.min)) % span + int(info.min)


def elementwise(fn, *arrays, dtype):
    flat = [a.ravel().tolist() for a in np.broadcast_arrays(*arrays)]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    with np.errstate(over="ignore"):  # float64 results round to float32 infinities
        return np.array([fn(*vals) for vals in zip(*flat)], dtype=dtype).reshape(shape)


# ------------------------------------------------------------------- integer binary ops


def ref_int_binary(op, a, b, dtype):
    bits = 8 * np.dtype(dtype).itemsize
    info = np.iinfo(dtype)
    if op == "add":
        return wrap(a + b, dtype)
    if op == "subtract":
        return wrap(a - b, dtype)
    if op == "multiply":
        return wrap(a * b, dtype)
    if op in ("divide", "remainder"):
        if b == 0:
            return wrap(-1, dtype) if op == "divide" else a
        if a == info.min and b == -1:
            return int(info.min) if op == "divide" else 0
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        return wrap(q, dtype) if op == "divide" else a - q * b
    if op == "maximum":
        return max(a, b)
    if op == "minimum":
        return min(a, b)
    if op == "and":
        return wrap(a & b, dtype)
    if op == "or":
        return wrap(a | b, dtype)
    if op == "xor":
        return wrap(a ^ b, dtype)
    amount = b % (1 << bits)  # the shift amount is read as unsigned
    if op == "shift-left":
        return 0 if amount >= bits else wrap(a << amount, dtype)
    if op == "shift-right-logical":
        return 0 if amount >= bits else wrap((a % (1 << bits)) >> amount, dtype)
    if op == "shift-right-arithmetic":
        # The top bit is the sign, for unsigned types too (XLA:CPU and JAX: u8 254 >> 1 = 255).
        sa = a - (1 << bits) if a >= 1 << (bits - 1) else a
        return wrap((-1 if sa < 0 else 0) if amount >= bits else sa >> amount, dtype)
    if op == "power":
        # XLA:CPU: the exponent is read as signed; a non-negative one only through its low
        # 6 bits (checked against XLA:CPU on every integer type: s16 (-7)**32766 = -20783).
        sb = b - (1 << bits) if b >= 1 << (bits - 1) else b
        if sb < 0:
            ua = a % (1 << bits)
            return 1 if ua == 1 else (wrap(-1 if sb % 2 else 1, dtype)
                                      if ua == (1 << bits) - 1 else 0)
        return wrap(pow(a, sb & 63, 1 << bits), dtype)
    raise AssertionError(op)


INT_BINARY = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
              "and", "or", "xor", "shift-left", "shift-right-logical",
              "shift-right-arithmetic", "power"]


@pytest.mark.parametrize("op", INT_BINARY)
@SETTINGS
@given(data=st.data())
def test_integer_binary(op, data):
    dtype = data.draw(st.sampled_from(INT_DTYPES))
    shape = data.draw(shapes)
    a = data.draw(int_arrays(dtype, shape))
    if op == "power":
        info = np.iinfo(dtype)
        b = data.draw(hnp.arrays(dtype, shape, elements=st.one_of(
            st.integers(-3 if info.min < 0 else 0, 70),
            st.sampled_from([int(info.max), int(info.max) - 1, int(info.min)]))))
    else:
        b = data.draw(int_arrays(dtype, shape))
    got = run(f"{op}(p0, p1)", [a, b], dtype)
    want = elementwise(lambda x, y: ref_int_binary(op, x, y, dtype), a, b, dtype=dtype)
    np.testing.assert_array_equal(got, want)


def test_integer_division_edge_cases():
    a = np.array([7, -7, 7, -7, -128, -128, 5, 0], np.int8)
    b = np.array([2, 2, -2, -2, -1, 0, 0, 0], np.int8)
    np.testing.assert_array_equal(run("divide(p0, p1)", [a, b], np.int8),
                                  [3, -3, -3, 3, -128, -1, -1, -1])
    np.testing.assert_array_equal(run("remainder(p0, p1)", [a, b], np.int8),
                                  [1, -1, 1, -1, 0, -128, 5, 0])
    u = np.array([7, 0, 255], np.uint8)
    z = np.zeros(3, np.uint8)
    np.testing.assert_array_equal(run("divide(p0, p1)", [u, z], np.uint8), [255, 255, 255])
    np.testing.assert_array_equal(run("remainder(p0, p1)", [u, z], np.uint8), u)


# --------------------------------------------------------------------- float binary ops


def _nan_safe(fn):
    def apply(*xs):
        try:
            return fn(*xs)
        except (ValueError, ZeroDivisionError):
            return math.nan
        except OverflowError:
            return math.inf
    return apply


def ref_float_binary(op, a, b):
    if op == "add":
        return a + b
    if op == "subtract":
        return a - b
    if op == "multiply":
        return a * b if not (math.isinf(a) and b == 0 or math.isinf(b) and a == 0) else math.nan
    if op == "divide":
        if b == 0:
            return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * \
                math.copysign(1, b)
        return a / b
    if op in ("maximum", "minimum"):
        if math.isnan(a) or math.isnan(b):
            return math.nan
        return max(a, b) if op == "maximum" else min(a, b)
    if op == "remainder":
        return math.nan if math.isinf(a) or b == 0 or math.isnan(a) or math.isnan(b) \
            else math.fmod(a, b)
    if op == "atan2":
        return math.atan2(a, b)
    raise AssertionError(op)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum",
                                "minimum", "remainder", "atan2"])
@SETTINGS
@given(data=st.data())
def test_float_binary(op, data):
    dtype = data.draw(st.sampled_from(FLOAT_DTYPES))
    shape = data.draw(shapes)
    a, b = data.draw(float_arrays(dtype, shape)), data.draw(float_arrays(dtype, shape))
    got = run(f"{op}(p0, p1)", [a, b], dtype)
    want = elementwise(lambda x, y: ref_float_binary(op, x, y), a, b, dtype=dtype)
    if op in ("maximum", "minimum"):  # the sign of a zero result is not specified
        got, want = got + 0.0, want + 0.0
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-14)


def test_float_power_and_dtype_preserved():
    a = np.array([2.0, -8.0, 0.0, 4.0, np.nan], np.float32)
    b = np.array([10.0, 1 / 3, -1.0, 0.5, 0.0], np.float32)
    got = run("power(p0, p1)", [a, b], np.float32)
    want = np.array([1024.0, np.nan, np.inf, 2.0, 1.0], np.float32)
    np.testing.assert_allclose(got, want)
    h = np.array([1.5, 2.25], np.float16)
    assert run("multiply(p0, p1)", [h, h], np.float16).dtype == np.float16


# ---------------------------------------------------------------------- float unary ops


def round_afz(x):
    if math.isnan(x) or math.isinf(x):
        return x
    r = float(decimal.Decimal(x).to_integral_value(rounding=decimal.ROUND_HALF_UP))
    return math.copysign(r, x)


def round_even(x):
    if math.isnan(x) or math.isinf(x):
        return x
    return math.copysign(float(round(x)), x)


def logistic(x):
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


FLOAT_UNARY = {
    "negate": lambda x: -x,
    "abs": abs,
    "sign": lambda x: x if x == 0 or math.isnan(x) else math.copysign(1.0, x),
    "floor": lambda x: x if math.isinf(x) or math.isnan(x) else math.copysign(
        float(math.floor(x)), x),
    "ceil": lambda x: x if math.isinf(x) or math.isnan(x) else math.copysign(
        float(math.ceil(x)), x),
    "round-nearest-afz": round_afz,
    "round-nearest-even": round_even,
    "exponential": _nan_safe(math.exp),
    "exponential-minus-one": _nan_safe(math.expm1),
    "log": lambda x: -math.inf if x == 0 else _nan_safe(math.log)(x),
    "log-plus-one": lambda x: -math.inf if x == -1 else _nan_safe(math.log1p)(x),
    "sqrt": _nan_safe(math.sqrt),
    "rsqrt": lambda x: math.copysign(math.inf, x) if x == 0 else _nan_safe(
        lambda v: 1 / math.sqrt(v))(x),
    "cbrt": lambda x: x if x == 0 or math.isinf(x) or math.isnan(x) else math.copysign(
        abs(x) ** (1 / 3), x),
    "tanh": math.tanh,
    "logistic": lambda x: math.nan if math.isnan(x) else logistic(x),
    "sine": _nan_safe(math.sin),
    "cosine": _nan_safe(math.cos),
    "tan": _nan_safe(math.tan),
    "erf": math.erf,
}


@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
@SETTINGS
@given(data=st.data())
def test_float_unary(op, data):
    dtype = data.draw(st.sampled_from(FLOAT_DTYPES))
    x = data.draw(float_arrays(dtype, data.draw(shapes)))
    got = run(f"{op}(p0)", [x], dtype)
    want = elementwise(FLOAT_UNARY[op], x, dtype=dtype)
    rtol = 2e-7 if dtype == np.float32 else 1e-13
    if op == "cbrt":
        rtol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0 if op != "sine" else 1e-300)
    exact_sign = op in ("negate", "sign", "floor", "ceil", "round-nearest-afz",
                        "round-nearest-even")
    if exact_sign:  # signed zeros survive
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_round_afz_is_exact_near_half():
    x = np.array([0.49999997, -0.49999997, 0.5, -0.5, 1.5, 2.5, -2.5], np.float32)
    np.testing.assert_array_equal(run("round-nearest-afz(p0)", [x], np.float32),
                                  [0, -0, 1, -1, 2, 3, -3])
    np.testing.assert_array_equal(run("round-nearest-even(p0)", [x], np.float32),
                                  [0, -0, 0, -0, 2, 2, -2])


@SETTINGS
@given(data=st.data())
def test_is_finite(data):
    x = data.draw(float_arrays(np.float32, data.draw(shapes)))
    got = run("is-finite(p0)", [x], np.bool_)
    np.testing.assert_array_equal(got, elementwise(math.isfinite, x, dtype=bool))


# --------------------------------------------------------------------- integer unary ops


def ref_int_unary(op, x, dtype):
    bits = 8 * np.dtype(dtype).itemsize
    u = x % (1 << bits)
    if op == "negate":
        return wrap(-x, dtype)
    if op == "abs":
        return wrap(abs(x), dtype)
    if op == "sign":
        return (x > 0) - (x < 0)
    if op == "not":
        return wrap(~x, dtype)
    if op == "popcnt":
        return bin(u).count("1")
    if op == "clz":
        return bits - u.bit_length()
    raise AssertionError(op)


@pytest.mark.parametrize("op", ["negate", "abs", "sign", "not", "popcnt", "clz"])
@SETTINGS
@given(data=st.data())
def test_integer_unary(op, data):
    dtype = data.draw(st.sampled_from(INT_DTYPES))
    x = data.draw(int_arrays(dtype, data.draw(shapes)))
    got = run(f"{op}(p0)", [x], dtype)
    want = elementwise(lambda v: ref_int_unary(op, v, dtype), x, dtype=dtype)
    np.testing.assert_array_equal(got, want)


def test_pred_logic():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    np.testing.assert_array_equal(run("and(p0, p1)", [a, b], np.bool_), a & b)
    np.testing.assert_array_equal(run("or(p0, p1)", [a, b], np.bool_), a | b)
    np.testing.assert_array_equal(run("xor(p0, p1)", [a, b], np.bool_), a ^ b)
    np.testing.assert_array_equal(run("not(p0)", [a], np.bool_), ~a)


# ------------------------------------------------------------------------------ compare


def total_key(x):
    if math.isnan(x):
        return (2,) if math.copysign(1, x) > 0 else (-2,)
    return (0, x, math.copysign(1, x))


OPS = {"EQ": lambda a, b: a == b, "NE": lambda a, b: a != b, "LT": lambda a, b: a < b,
       "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b, "GE": lambda a, b: a >= b}


@pytest.mark.parametrize("direction", sorted(OPS))
@pytest.mark.parametrize("ctype", ["FLOAT", "TOTALORDER"])
@SETTINGS
@given(data=st.data())
def test_compare_float(direction, ctype, data):
    shape = data.draw(shapes)
    a = data.draw(float_arrays(np.float32, shape))
    b = data.draw(float_arrays(np.float32, shape))
    if data.draw(st.booleans()):
        a = np.where(np.isnan(a), -a, a)  # negative NaNs too
    got = run(f"compare(p0, p1), direction={direction}, type={ctype}", [a, b], np.bool_)
    if ctype == "TOTALORDER":
        ref = lambda x, y: OPS[direction](total_key(x), total_key(y))  # noqa: E731
    else:
        ref = OPS[direction]
    np.testing.assert_array_equal(got, elementwise(ref, a, b, dtype=bool))


@pytest.mark.parametrize("direction", sorted(OPS))
@SETTINGS
@given(data=st.data())
def test_compare_int(direction, data):
    dtype = data.draw(st.sampled_from(INT_DTYPES))
    shape = data.draw(shapes)
    a, b = data.draw(int_arrays(dtype, shape)), data.draw(int_arrays(dtype, shape))
    got = run(f"compare(p0, p1), direction={direction}", [a, b], np.bool_)
    np.testing.assert_array_equal(got, elementwise(OPS[direction], a, b, dtype=bool))


# ----------------------------------------------------------- select, clamp, conversions


def test_select_and_clamp():
    p = np.array([True, False, True])
    a = np.array([1.0, 2.0, np.nan], np.float32)
    b = np.array([-1.0, -2.0, -3.0], np.float32)
    np.testing.assert_array_equal(run("select(p0, p1, p2)", [p, a, b], np.float32),
                                  [1.0, -2.0, np.nan])
    lo, hi = np.float32(-1.5), np.float32(1.5)
    x = np.array([-3.0, 0.25, 3.0, np.nan, -0.0], np.float32)
    got = run("clamp(p0, p1, p2)", [lo, x, hi], np.float32, out_shape=x.shape)
    np.testing.assert_array_equal(got, [-1.5, 0.25, 1.5, np.nan, 0.0])


def saturate(x, dtype):
    info = np.iinfo(dtype)
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return int(info.max) if x > 0 else int(info.min)
    return min(max(int(x), int(info.min)), int(info.max))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32])
@SETTINGS
@given(data=st.data())
def test_convert_float_to_int_saturates(dtype, data):
    x = data.draw(hnp.arrays(np.float32, data.draw(shapes), elements=st.one_of(
        st.sampled_from(FLOAT_EDGES + [3e9, -3e9, 1e19, 255.9, -0.9, 2**31]),
        st.floats(-1e10, 1e10, width=32))))
    got = run("convert(p0)", [x], dtype)
    np.testing.assert_array_equal(got, elementwise(lambda v: saturate(v, dtype), x,
                                                   dtype=dtype))


def test_convert_misc():
    x = np.array([300, -1, 128], np.int32)
    np.testing.assert_array_equal(run("convert(p0)", [x], np.uint8), [44, 255, 128])
    np.testing.assert_array_equal(run("convert(p0)", [x], np.int8), [44, -1, -128])
    f = np.array([0.0, -0.0, np.nan, 0.1], np.float32)
    np.testing.assert_array_equal(run("convert(p0)", [f], np.bool_), [False, False, True, True])
    big = np.array([16777217], np.int32)
    assert run("convert(p0)", [big], np.float32)[0] == np.float32(16777216)
    d = np.array([1.0000001], np.float64)
    assert run("convert(p0)", [d], np.float32).dtype == np.float32


def test_bitcast_convert():
    x = np.array([1.0, -0.0, np.inf], np.float32)
    got = run("bitcast-convert(p0)", [x], np.int32)
    want = [struct.unpack("<i", struct.pack("<f", v))[0] for v in x.tolist()]
    np.testing.assert_array_equal(got, want)
    wide = run("bitcast-convert(p0)", [x], np.uint8, out_shape=(3, 4))
    np.testing.assert_array_equal(wide.ravel(), list(struct.pack("<3f", *x.tolist())))
    back = run("bitcast-convert(p0)", [wide], np.float32, out_shape=(3,))
    np.testing.assert_array_equal(back, x)


def bf16_reference(x: float) -> float:
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    if math.isnan(x):
        return x
    lower, upper = bits & 0xFFFF, bits >> 16
    if lower > 0x8000 or (lower == 0x8000 and upper & 1):
        upper += 1
    return struct.unpack("<f", struct.pack("<I", (upper << 16) & 0xFFFFFFFF))[0]


@SETTINGS
@given(data=st.data())
def test_reduce_precision_bf16(data):
    x = data.draw(float_arrays(np.float32, data.draw(shapes)))
    got = run("reduce-precision(p0), exponent_bits=8, mantissa_bits=7", [x], np.float32)
    np.testing.assert_array_equal(got, elementwise(bf16_reference, x, dtype=np.float32))


def test_reduce_precision_exponent_range():
    x = np.array([1e5, -1e5, 1e-6, 1.0, 65504.0, np.nan], np.float32)
    got = run("reduce-precision(p0), exponent_bits=5, mantissa_bits=10", [x], np.float32)
    np.testing.assert_array_equal(got, [np.inf, -np.inf, 0.0, 1.0, 65504.0, np.nan])


def test_complex_real_imag():
    re = np.array([1.0, np.inf, -0.0], np.float32)
    im = np.array([2.0, 0.0, -3.0], np.float32)
    z = run("complex(p0, p1)", [re, im], np.complex64)
    np.testing.assert_array_equal(z.real, re)
    np.testing.assert_array_equal(z.imag, im)
    np.testing.assert_array_equal(run("real(p0)", [z], np.float32), re)
    np.testing.assert_array_equal(run("imag(p0)", [z], np.float32), im)
    np.testing.assert_allclose(run("abs(p0)", [z], np.float32), [math.sqrt(5), np.inf, 3.0])
