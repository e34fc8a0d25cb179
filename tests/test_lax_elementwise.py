"""lax elementwise primitives: values against independent references (NumPy in float64,
Python integer arithmetic with XLA's rules, the `math` module) and result dtypes. Edge
semantics, weak types and error messages are in test_lax_elementwise_semantics.py, the
special functions' accuracy in test_lax_special_math.py and lowering through the HLO
evaluator in test_lax_elementwise_lowering.py.

One op table (OPS) drives the value tests here and the gradient/vmap tests in
test_lax_elementwise_grads.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minijax import lax

F = (np.float16, np.float32, np.float64)
F3264 = (np.float32, np.float64)
C = (np.complex64, np.complex128)
SI = (np.int8, np.int16, np.int32, np.int64)
UI = (np.uint8, np.uint16, np.uint32, np.uint64)
I = SI + UI


pytestmark = pytest.mark.usefixtures("x64")  # conftest's fixture, for every test here


# --------------------------------------------------------------------------- domains

_EDGE_FLOAT = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]


def _int_values(rng, shape, dtype):
    info = np.iinfo(dtype)
    vals = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    edges = np.array([0, 1, info.max, info.min, info.max - 1] + ([-1] if info.min else []),
                     dtype=dtype)
    return _sprinkle(rng, vals, edges)


def _sprinkle(rng, vals, edges, p=0.3):
    vals = np.array(vals)
    if vals.size and len(edges):
        mask = rng.random(vals.shape) < p
        vals[mask] = rng.choice(edges, size=int(mask.sum()))
    return vals


def _float_domain(sampler, edges):
    def make(rng, shape, dtype):
        dtype = np.dtype(dtype)
        if dtype.kind == "c":
            re = sampler(rng, shape)
            im = sampler(rng, shape)
            return (re + 1j * im).astype(dtype)
        return _sprinkle(rng, sampler(rng, shape), edges).astype(dtype)
    return make


DOMAINS = {
    "any": _float_domain(lambda r, s: r.standard_normal(s) * 3, _EDGE_FLOAT),
    "small": _float_domain(lambda r, s: r.standard_normal(s), _EDGE_FLOAT),
    "pos": _float_domain(lambda r, s: r.uniform(0.05, 10, s), [0.0, 1.0, np.inf, np.nan]),
    "unit": _float_domain(lambda r, s: r.uniform(-1, 1, s), [-1.0, 1.0, 0.0, -0.0, np.nan]),
    "open_unit": _float_domain(lambda r, s: r.uniform(-0.95, 0.95, s), [0.0, -0.0]),
    "ge1_open": _float_domain(lambda r, s: r.uniform(1.2, 5, s), []),
    "ge1": _float_domain(lambda r, s: 1 + np.abs(r.standard_normal(s)) * 3, [1.0, np.inf]),
    "halves": _float_domain(lambda r, s: np.round(r.standard_normal(s) * 6) / 2,
                            [0.5, -0.5, 1.5, -2.5, 0.49999997, 0.0, -0.0, np.inf, np.nan]),
    "gamma": _float_domain(lambda r, s: r.uniform(-6, 25, s),
                           [0.5, 1.0, 2.0, 3.0, 0.0, -1.0, -2.0, np.inf, np.nan]),
    "gamma_smooth": _float_domain(
        lambda r, s: np.where(r.random(s) < 0.3, -r.uniform(0.1, 0.9, s) - r.integers(0, 4, s),
                              r.uniform(0.1, 25, s)), [0.5, 1.0, 2.0, np.inf, np.nan]),
    "int": _int_values,
}


def _shift_amounts(rng, shape, dtype):
    bits = np.dtype(dtype).itemsize * 8
    lo = -2 if np.dtype(dtype).kind == "i" else 0
    return rng.integers(lo, bits + 3, size=shape).astype(dtype)


DOMAINS["shift"] = _shift_amounts

# --------------------------------------------------------------------------- references


def _wrap(v: int, dtype) -> int:
    info = np.iinfo(dtype)
    span = info.max - info.min + 1
    return (v - info.min) % span + info.min


def _py_int(fn):
    """A reference applying fn to Python ints element by element, wrapped to the dtype."""
    def ref(*args):
        arrs = np.broadcast_arrays(*[np.asarray(a) for a in args])
        dtype = arrs[0].dtype
        out = np.empty(arrs[0].shape, dtype)
        for idx in np.ndindex(out.shape):
            out[idx] = _wrap(fn(*(int(a[idx]) for a in arrs), dtype), dtype)
        return out
    return ref


def _xla_div(a, b, dtype):
    if b == 0:
        return -1
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _xla_rem(a, b, dtype):
    if b == 0:
        return a
    return a - b * _xla_div(a, b, dtype)


def _bits(dtype):
    return np.dtype(dtype).itemsize * 8


def _shl(a, s, dtype):
    s %= 1 << _bits(dtype)
    return 0 if s >= _bits(dtype) else a << s


def _shr_logical(a, s, dtype):
    s %= 1 << _bits(dtype)
    u = a % (1 << _bits(dtype))
    return 0 if s >= _bits(dtype) else u >> s


def _shr_arith(a, s, dtype):
    # The top bit is the sign for unsigned types too (JAX: uint8 254 >> 1 is 255).
    bits = _bits(dtype)
    s %= 1 << bits
    a = a - (1 << bits) if a >= 1 << (bits - 1) else a
    return (-1 if a < 0 else 0) if s >= bits else a >> s


def _popcount(a, dtype):
    return bin(a % (1 << _bits(dtype))).count("1")


def _clz(a, dtype):
    return _bits(dtype) - (a % (1 << _bits(dtype))).bit_length()


def _wide(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    if x.dtype.kind == "f":
        return x.astype(np.float64)
    return x


def _f64(fn):
    """Reference computed in float64/complex128."""
    def ref(*args):
        with np.errstate(all="ignore"):
            return fn(*[_wide(a) for a in args])
    return ref


def _math(fn, pole=np.nan):
    def scalar(v):
        try:
            return fn(v)
        except ValueError:
            return pole
        except OverflowError:
            return np.inf
    vec = np.vectorize(scalar, otypes=[np.float64])

    def ref(x):
        x = np.asarray(x, np.float64)
        return vec(x) if x.size else x.copy()
    return ref


def _digamma_ref_scalar(v):
    # Reflection, then the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 30 and the
    # asymptotic expansion there (Python floats, term by term).
    if math.isnan(v) or v == -math.inf or (v <= 0 and v == math.floor(v)):
        return math.nan
    if v == math.inf:
        return math.inf
    if v < 0.5:
        return _digamma_ref_scalar(1 - v) - math.pi / math.tan(math.pi * v)
    acc = 0.0
    while v < 30:
        acc -= 1 / v
        v += 1
    z2 = 1 / (v * v)
    return acc + math.log(v) - 0.5 / v - z2 * (1 / 12 - z2 * (1 / 120 - z2 * (1 / 252 - z2 / 240)))


def _erfinv_ref_scalar(y):
    if math.isnan(y) or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    lo, hi = 0.0, 30.0
    tail = abs(y) >= 0.5
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        too_small = math.erfc(mid) > 1 - abs(y) if tail else math.erf(mid) < abs(y)
        lo, hi = (mid, hi) if too_small else (lo, mid)
    return math.copysign(0.5 * (lo + hi), y)


def _round_afz(x):
    def scalar(v):
        if not math.isfinite(v):
            return v
        return math.copysign(float(Decimal(v).quantize(Decimal(1), ROUND_HALF_UP)), v)
    x = np.asarray(x, np.float64)
    return np.vectorize(scalar, otypes=[np.float64])(x) if x.size else x.copy()


def _logistic_ref(x):
    with np.errstate(all="ignore"):
        return 1 / (1 + np.exp(-_wide(x)))


def _sign_ref(x):
    x = _wide(x)
    if x.dtype.kind == "c":
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag))
    return np.sign(x)


def _nextafter_ref(x, y):
    if x.dtype == np.float64:
        return np.vectorize(math.nextafter, otypes=[np.float64])(x, y) if x.size else x
    return np.nextafter(x, y)


# --------------------------------------------------------------------------- the op table


@dataclass
class Op:
    name: str
    fn: object
    ref: object
    dtypes: tuple
    domain: tuple = ("any",)
    out: object = None  # dtype -> result dtype
    rtol: float = 1.0   # multiplier of the per-dtype tolerance
    grad: bool = True   # differentiable (checked in the grads file)
    grad_domain: tuple | None = None
    order: int = 2
    kw: dict = field(default_factory=dict)

    @property
    def nargs(self):
        return len(self.domain)


def _bool_out(dtype):
    return np.dtype(np.bool_)


def _real_out(dtype):
    return np.dtype({np.dtype(np.complex64): np.float32,
                     np.dtype(np.complex128): np.float64}.get(np.dtype(dtype), dtype))


def _complex_out(dtype):
    return np.dtype(np.complex128 if np.dtype(dtype) in (np.float64, np.complex128)
                    else np.complex64)


FC = F + C
OPS = [
    Op("add", lax.add, _py_int(lambda a, b, d: a + b), I, ("int", "int"), grad=False),
    Op("add_f", lax.add, _f64(np.add), FC, ("any", "any")),
    Op("sub", lax.sub, _py_int(lambda a, b, d: a - b), I, ("int", "int"), grad=False),
    Op("sub_f", lax.sub, _f64(np.subtract), FC, ("any", "any")),
    Op("mul", lax.mul, _py_int(lambda a, b, d: a * b), I, ("int", "int"), grad=False),
    Op("mul_f", lax.mul, _f64(np.multiply), FC, ("any", "any")),
    Op("div", lax.div, _py_int(_xla_div), I, ("int", "int"), grad=False),
    Op("div_f", lax.div, _f64(np.true_divide), FC, ("any", "any"), grad_domain=("any", "pos")),
    Op("rem", lax.rem, _py_int(_xla_rem), I, ("int", "int"), grad=False),
    Op("rem_f", lax.rem, _f64(np.fmod), F, ("any", "any"), grad_domain=("any", "pos")),
    Op("pow", lax.pow, _f64(np.power), F3264 + C, ("pos", "small")),
    Op("integer_pow3", lambda x: lax.integer_pow(x, 3), _f64(lambda x: x ** 3), F3264 + C,
       ("small",)),
    Op("integer_pow_neg2", lambda x: lax.integer_pow(x, -2), _f64(lambda x: x ** -2.0),
       F3264, ("pos",)),
    Op("integer_pow_int", lambda x: lax.integer_pow(x, 5), _py_int(lambda a, d: a ** 5), I,
       ("int",), grad=False),
    Op("square", lax.square, _f64(np.square), FC, ("any",)),
    Op("square_int", lax.square, _py_int(lambda a, d: a * a), I, ("int",), grad=False),
    Op("reciprocal", lax.reciprocal, _f64(lambda x: 1 / x), F3264 + C, ("pos",)),
    Op("max", lax.max, _f64(np.maximum), F, ("any", "any")),
    Op("min", lax.min, _f64(np.minimum), F, ("any", "any")),
    Op("max_int", lax.max, _py_int(lambda a, b, d: a if a > b else b), I, ("int", "int"),
       grad=False),
    Op("min_int", lax.min, _py_int(lambda a, b, d: a if a < b else b), I, ("int", "int"),
       grad=False),
    Op("neg", lax.neg, _f64(np.negative), FC, ("any",)),
    Op("neg_int", lax.neg, _py_int(lambda a, d: -a), I, ("int",), grad=False),
    Op("sign", lax.sign, _sign_ref, FC, ("any",), grad=False),
    Op("sign_int", lax.sign, _py_int(lambda a, d: (a > 0) - (a < 0)), SI, ("int",),
       grad=False),
    Op("abs", lax.abs, _f64(np.abs), FC, ("any",), out=_real_out, grad_domain=("pos",)),
    Op("abs_int", lax.abs, _py_int(lambda a, d: abs(a)), SI, ("int",), grad=False),
    Op("floor", lax.floor, _f64(np.floor), F, ("halves",), grad=False),
    Op("ceil", lax.ceil, _f64(np.ceil), F, ("halves",), grad=False),
    Op("round_afz", lax.round, _round_afz, F, ("halves",), grad=False),
    Op("round_even", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
       _f64(np.rint), F, ("halves",), grad=False),
    Op("is_finite", lax.is_finite, _f64(np.isfinite), F, ("any",), out=_bool_out, grad=False),
    Op("exp", lax.exp, _f64(np.exp), FC, ("small",)),
    Op("exp2", lax.exp2, _f64(np.exp2), FC, ("small",)),
    Op("log", lax.log, _f64(np.log), FC, ("pos",)),
    Op("log1p", lax.log1p, _f64(np.log1p), FC, ("pos",)),
    Op("expm1", lax.expm1, _f64(np.expm1), FC, ("small",)),
    Op("tanh", lax.tanh, _f64(np.tanh), FC, ("small",)),
    Op("logistic", lax.logistic, _logistic_ref, FC, ("any",), rtol=4),
    Op("sin", lax.sin, _f64(np.sin), FC, ("small",)),
    Op("cos", lax.cos, _f64(np.cos), FC, ("small",)),
    Op("tan", lax.tan, _f64(np.tan), FC, ("small",), grad_domain=("open_unit",)),
    Op("asin", lax.asin, _f64(np.arcsin), FC, ("unit",), grad_domain=("open_unit",)),
    Op("acos", lax.acos, _f64(np.arccos), FC, ("unit",), grad_domain=("open_unit",)),
    Op("atan", lax.atan, _f64(np.arctan), FC, ("any",)),
    Op("atan2", lax.atan2, _f64(np.arctan2), F, ("any", "any"), grad_domain=("pos", "pos")),
    Op("sinh", lax.sinh, _f64(np.sinh), FC, ("small",)),
    Op("cosh", lax.cosh, _f64(np.cosh), FC, ("small",)),
    Op("asinh", lax.asinh, _f64(np.arcsinh), FC, ("any",)),
    Op("acosh", lax.acosh, _f64(np.arccosh), FC, ("ge1",), grad_domain=("ge1_open",)),
    Op("atanh", lax.atanh, _f64(np.arctanh), FC, ("unit",), grad_domain=("open_unit",)),
    Op("sqrt", lax.sqrt, _f64(np.sqrt), FC, ("pos",)),
    Op("rsqrt", lax.rsqrt, _f64(lambda x: 1 / np.sqrt(x)), FC, ("pos",)),
    Op("cbrt", lax.cbrt, _f64(np.cbrt), F, ("any",), grad_domain=("pos",)),
    Op("erf", lax.erf, _math(math.erf), F, ("any",), rtol=2),
    Op("erfc", lax.erfc, _math(math.erfc), F, ("any",), rtol=4),
    Op("erf_inv", lax.erf_inv, _math(_erfinv_ref_scalar), F, ("unit",), rtol=4,
       grad_domain=("open_unit",)),
    Op("lgamma", lax.lgamma, _math(math.lgamma, pole=np.inf), F, ("gamma",), rtol=8,
       grad_domain=("gamma_smooth",)),
    Op("digamma", lax.digamma, _math(_digamma_ref_scalar), F, ("gamma_smooth",), rtol=8,
       grad_domain=("gamma_smooth",), order=1),
    Op("nextafter", lax.nextafter, _nextafter_ref, F3264, ("any", "any"), grad=False),
    Op("eq", lax.eq, _f64(np.equal), F + C, ("halves", "halves"), out=_bool_out, grad=False),
    Op("ne", lax.ne, _f64(np.not_equal), F + C, ("halves", "halves"), out=_bool_out,
       grad=False),
    Op("lt", lax.lt, _f64(np.less), F, ("halves", "halves"), out=_bool_out, grad=False),
    Op("le", lax.le, _f64(np.less_equal), F, ("halves", "halves"), out=_bool_out, grad=False),
    Op("gt", lax.gt, _f64(np.greater), F, ("halves", "halves"), out=_bool_out, grad=False),
    Op("ge", lax.ge, _f64(np.greater_equal), F, ("halves", "halves"), out=_bool_out,
       grad=False),
    Op("lt_int", lax.lt, _py_int(lambda a, b, d: a < b), I, ("int", "int"), out=_bool_out,
       grad=False),
    Op("eq_int", lax.eq, _py_int(lambda a, b, d: a == b), I, ("int", "int"), out=_bool_out,
       grad=False),
    Op("and", lax.bitwise_and, _py_int(lambda a, b, d: a & b), I, ("int", "int"), grad=False),
    Op("or", lax.bitwise_or, _py_int(lambda a, b, d: a | b), I, ("int", "int"), grad=False),
    Op("xor", lax.bitwise_xor, _py_int(lambda a, b, d: a ^ b), I, ("int", "int"), grad=False),
    Op("not", lax.bitwise_not, _py_int(lambda a, d: ~a), I, ("int",), grad=False),
    Op("shift_left", lax.shift_left, _py_int(_shl), I, ("int", "shift"), grad=False),
    Op("shift_right_logical", lax.shift_right_logical, _py_int(_shr_logical), I,
       ("int", "shift"), grad=False),
    Op("shift_right_arithmetic", lax.shift_right_arithmetic, _py_int(_shr_arith), I,
       ("int", "shift"), grad=False),
    Op("population_count", lax.population_count, _py_int(_popcount), I, ("int",), grad=False),
    Op("clz", lax.clz, _py_int(_clz), I, ("int",), grad=False),
    Op("clamp", lambda x: lax.clamp(-1.0, x, 1.0),
       _f64(lambda x: np.minimum(np.maximum(x, -1), 1)), F, ("any",),
       grad_domain=("any",)),
    Op("real", lax.real, _f64(np.real), C, ("any",), out=_real_out),
    Op("imag", lax.imag, _f64(np.imag), C, ("any",), out=_real_out),
    Op("conj", lax.conj, _f64(np.conj), F3264 + C, ("any",), out=_complex_out),
    Op("complex", lax.complex, _f64(lambda a, b: _complex_ref(a, b)), F3264, ("any", "any"),
       out=_complex_out),
    Op("reduce_precision_bf16", lambda x: lax.reduce_precision(x, 8, 7),
       lambda x: _bf16_ref(x), (np.float32,), ("any",)),
]
OPS_BY_NAME = {op.name: op for op in OPS}


def _complex_ref(a, b):
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape, np.complex128)
    out.real, out.imag = a, b
    return out


def _bf16_ref(x):
    # Round to nearest even on the top 16 bits, computed with Python ints.
    x = np.asarray(x, np.float32)
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        v = float(x[idx])
        if math.isnan(v):
            out[idx] = v
            continue
        bits = int(np.float32(v).view(np.uint32))
        low, high = bits & 0xFFFF, bits >> 16
        if low > 0x8000 or (low == 0x8000 and high & 1):
            high += 1
        out[idx] = np.uint32(high << 16).view(np.float32)
    return out


def tolerance(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return 0.0
    return {2: 2e-3, 4: 2e-6, 8: 1e-13, 16: 1e-13}[dtype.itemsize if dtype.kind == "f"
                                                   else dtype.itemsize // 2]


def make_args(op, rng, shape, dtype, scalar_arg=None, domains=None):
    args = []
    for i, dom in enumerate(domains or op.domain):
        s = () if i == scalar_arg else shape
        args.append(DOMAINS[dom](rng, s, dtype))
    return args


def assert_close(got, want, dtype, rtol_mult=1.0, err_msg=""):
    got = np.asarray(got)
    tol = tolerance(dtype) * rtol_mult
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, np.asarray(want).astype(got.dtype), err_msg=err_msg)
        return
    want = np.asarray(want).astype(got.dtype).astype(_wide(got).dtype)
    np.testing.assert_allclose(_wide(got), want, rtol=tol, atol=tol, err_msg=err_msg)


# --------------------------------------------------------------------------- value tests


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_values_match_reference(op, data):
    dtype = np.dtype(data.draw(st.sampled_from(op.dtypes), label="dtype"))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
                      label="shape")
    scalar_arg = data.draw(st.sampled_from([None] + list(range(op.nargs))), label="scalar") \
        if op.nargs > 1 else None
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    args = make_args(op, rng, shape, dtype, scalar_arg)
    got = op.fn(*args)
    want = op.ref(*args)
    expected_dtype = op.out(dtype) if op.out else dtype
    assert np.asarray(got).dtype == expected_dtype
    assert np.shape(got) == shape
    assert_close(got, want, expected_dtype if np.dtype(expected_dtype).kind != "b" else dtype,
                 op.rtol, err_msg=f"{op.name} {dtype} args={args}")
