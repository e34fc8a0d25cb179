"""Eager == jit, bit for bit, over the whole elementwise op table and every dtype.

Eager mode runs each primitive's NumPy implementation (minijax/dispatch.py); jit lowers it
to HLO and runs it on the "interpreter" backend (the reference evaluator) and on "cpu"
(generated code). The three must agree exactly wherever the operation is exact (arithmetic,
comparisons, rounding, conversions, bit operations, integer division by 0 and by -1, shifts
out of range, float -> int saturation), and within a few ulps for the transcendental
functions. Inputs are fixed edge values (0, -0, +-1, +-inf, NaN, subnormals, the largest
finite values, values just outside an integer type's range, int extremes) for every dtype,
including 8- and 16-bit and unsigned integers; binary ops run over the full cross product.
test_jit_op_table.py checks random values; this file pins down the edges.
"""

import numpy as np
import pytest
import test_jit_op_table as op_table

import minijax as jax
from minijax import lax
from minijax.test_util import enable_x64

BACKENDS = ("interpreter", "cpu")
INT_DTYPES = ["int8", "int16", "int32", "uint8", "uint16", "uint32"]
INT64_DTYPES = ["int64", "uint64"]
FLOAT_DTYPES = ["float32", "float16"]


def float_edges(dtype):
    """Edge values of a float dtype, every one representable or rounding to inf."""
    fi = np.finfo(dtype)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, 7.0, -7.0,
            np.inf, -np.inf, np.nan, float(fi.max), -float(fi.max), float(fi.tiny),
            -float(fi.tiny), float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
            1e-3, 100.25, -100.75, 3e9, -3e9, 2.0**31, -(2.0**31), 2.0**32, 255.5, 256.0,
            -128.5, 65535.0, 1e30]
    with np.errstate(over="ignore"):
        return np.array(vals, dtype=np.float64).astype(dtype)


def int_edges(dtype):
    """Edge values of an integer dtype: extremes, 0, +-1, and shift amounts around the width."""
    info = np.iinfo(dtype)
    bits = info.bits
    vals = [0, 1, 2, 3, 7, bits - 1, bits, bits + 1, 2 * bits, info.max, info.max - 1,
            info.min, info.min + 1, info.max // 2, 100]
    if info.min < 0:
        vals += [-1, -2, -7, info.min // 2, -100]
    return np.array(sorted(set(int(v) for v in vals)), dtype=dtype)


def cross(values):
    """All pairs (x, y) of `values`."""
    x, y = np.meshgrid(values, values, indexing="ij")
    return x.reshape(-1), y.reshape(-1)


def _convert(dtype):
    return lambda x: lax.convert_element_type(x, np.dtype(dtype))


def _bitcast(dtype):
    return lambda x: lax.bitcast_convert_type(x, np.dtype(dtype))


# name -> (function, ulps). Zero ulps means bitwise equality.
FLOAT_UNARY = {
    "neg": (lax.neg, 0), "abs": (lax.abs, 0), "sign": (lax.sign, 0),
    "floor": (lax.floor, 0), "ceil": (lax.ceil, 0),
    "round_away": (lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO), 0),
    "round_even": (lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), 0),
    "is_finite": (lax.is_finite, 0), "square": (lax.square, 0),
    "reciprocal": (lax.reciprocal, 0), "sqrt": (lax.sqrt, 0),
    "ipow0": (lambda x: lax.integer_pow(x, 0), 0), "ipow1": (lambda x: lax.integer_pow(x, 1), 0),
    "ipow2": (lambda x: lax.integer_pow(x, 2), 0), "ipow3": (lambda x: lax.integer_pow(x, 3), 1),
    "ipow_m1": (lambda x: lax.integer_pow(x, -1), 0),
    "ipow_m2": (lambda x: lax.integer_pow(x, -2), 2),
    "reduce_precision": (lambda x: lax.reduce_precision(x, 5, 10), 0),
    "to_bool": (_convert("bool"), 0),
    **{f"to_{d}": (_convert(d), 0) for d in INT_DTYPES + FLOAT_DTYPES},
    "rsqrt": (lax.rsqrt, 2), "cbrt": (lax.cbrt, 2), "exp": (lax.exp, 2),
    "exp2": (lax.exp2, 2), "expm1": (lax.expm1, 2), "log": (lax.log, 2),
    "log1p": (lax.log1p, 2), "tanh": (lax.tanh, 2), "logistic": (lax.logistic, 2),
    "atan": (lax.atan, 2), "asinh": (lax.asinh, 3), "acosh": (lax.acosh, 3),
    "atanh": (lax.atanh, 3), "asin": (lax.asin, 3), "acos": (lax.acos, 3),
    "sinh": (lax.sinh, 3), "cosh": (lax.cosh, 3), "erf": (lax.erf, 3), "erfc": (lax.erfc, 6),
    "erf_inv": (lax.erf_inv, 6),
}
# Trigonometric functions of small arguments (large ones need a long range reduction and
# are measured in test_lowering_accuracy.py).
TRIG = {"sin": (lax.sin, 3), "cos": (lax.cos, 3), "tan": (lax.tan, 6)}
FLOAT_BINARY = {
    "add": (lax.add, 0), "sub": (lax.sub, 0), "mul": (lax.mul, 0), "div": (lax.div, 0),
    "rem": (lax.rem, 0), "max": (lax.max, 0), "min": (lax.min, 0),
    "nextafter": (lax.nextafter, 0), "eq": (lax.eq, 0), "ne": (lax.ne, 0),
    "lt": (lax.lt, 0), "le": (lax.le, 0), "gt": (lax.gt, 0), "ge": (lax.ge, 0),
    "select": (lambda x, y: lax.select(lax.lt(x, y), x, y), 0),
    "clamp": (lambda x, y: lax.clamp(lax.min(x, y), x, lax.max(x, y)), 0),
    "pow": (lax.pow, 4), "atan2": (lax.atan2, 2),
}
INT_UNARY = {
    "neg": (lax.neg, 0), "abs": (lax.abs, 0), "sign": (lax.sign, 0),
    "not": (lax.bitwise_not, 0), "popcnt": (lax.population_count, 0), "clz": (lax.clz, 0),
    "square": (lax.square, 0), "ipow0": (lambda x: lax.integer_pow(x, 0), 0),
    "ipow3": (lambda x: lax.integer_pow(x, 3), 0),
    "ipow7": (lambda x: lax.integer_pow(x, 7), 0),
    "to_bool": (_convert("bool"), 0),
    **{f"to_{d}": (_convert(d), 0) for d in INT_DTYPES + FLOAT_DTYPES},
}
INT_BINARY = {
    **op_table.INT_BINARY,
    "select": (lambda x, y: lax.select(lax.lt(x, y), x, y), 0),
    "clamp": (lambda x, y: lax.clamp(lax.min(x, y), x, lax.max(x, y)), 0),
}
BOOL_UNARY = {"not": (lax.bitwise_not, 0), **{f"to_{d}": (_convert(d), 0)
                                             for d in INT_DTYPES + FLOAT_DTYPES}}
BOOL_BINARY = {"and": (lax.bitwise_and, 0), "or": (lax.bitwise_or, 0),
               "xor": (lax.bitwise_xor, 0), "eq": (lax.eq, 0), "ne": (lax.ne, 0),
               "lt": (lax.lt, 0), "ge": (lax.ge, 0), "max": (lax.max, 0), "min": (lax.min, 0),
               "select": (lambda x, y: lax.select(x, y, x), 0)}


def _bitcasts(dtype):
    """Same-width bitcasts of `dtype` (to every other type of its size)."""
    size = np.dtype(dtype).itemsize
    names = [d for d in INT_DTYPES + FLOAT_DTYPES if np.dtype(d).itemsize == size and d != dtype]
    return {f"bitcast_{d}": (_bitcast(d), 0) for d in names}


# --------------------------------------------------------------------------- comparison


def mismatches(got, want, ulps):
    """Mask of the elements where `got` is not `want` bit for bit (NaNs equal whatever
    their payload), or not within `ulps` of it when ulps > 0."""
    if want.dtype.kind == "c":
        return (mismatches(got.real, want.real, ulps)
                | mismatches(got.imag, want.imag, ulps))
    if want.dtype.kind != "f":
        return got != want
    nan = np.isnan(got) & np.isnan(want)
    if ulps == 0:
        bits = np.dtype(f"u{want.dtype.itemsize}")
        return (got.view(bits) != want.view(bits)) & ~nan
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        spacing = np.spacing(np.abs(want)).astype(np.float64)
        close = np.abs(g - w) <= ulps * spacing
    return ~(nan | (g == w) | close)


def assert_same(name, got, want, ulps, args=()):
    """Bitwise equality, or within `ulps`; the message names the inputs that differ."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != eager {want.dtype}"
    assert got.shape == want.shape, f"{name}: shape {got.shape} != eager {want.shape}"
    bad = mismatches(got, want, ulps).reshape(-1)
    if bad.any():
        k = np.argwhere(bad)[:6, 0]
        at = [tuple(np.asarray(a).reshape(-1)[i].item() for a in args) for i in k]
        raise AssertionError(f"{name}: jit {got.reshape(-1)[k]} != eager {want.reshape(-1)[k]} "
                             f"at inputs {at} ({int(bad.sum())} of {bad.size} differ)")


_JITS: dict = {}


def check_table(key, table, args):
    """Every op of `table` on `args`, eagerly and under jit on each backend."""
    names = list(table)
    fns = [table[n][0] for n in names]

    def all_ops(*xs):
        return [f(*xs) for f in fns]
    want = [np.asarray(f(*args)) for f in fns]
    failures = []
    for backend in BACKENDS:
        jitted = _JITS.get((key, backend))
        if jitted is None:
            jitted = _JITS[(key, backend)] = jax.jit(all_ops, backend=backend)
        got = jitted(*args)
        for name, g, w in zip(names, got, want, strict=True):
            try:
                assert_same(f"{key} {name} [{backend}]", g, w, table[name][1], args)
            except AssertionError as e:
                failures.append(str(e))
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_unary_edges(dtype):
    x = float_edges(dtype)
    table = {**FLOAT_UNARY, **_bitcasts(dtype)}
    check_table(("f_unary", dtype), table, (x,))
    small = x[np.isfinite(x) & (np.abs(x.astype(np.float64)) < 1e3)]
    check_table(("trig", dtype), TRIG, (small,))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_binary_edges(dtype):
    x, y = cross(float_edges(dtype))
    check_table(("f_binary", dtype), FLOAT_BINARY, (x, y))


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_unary_edges(dtype):
    x = int_edges(dtype)
    check_table(("i_unary", dtype), {**INT_UNARY, **_bitcasts(dtype)}, (x,))


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_binary_edges(dtype):
    x, y = cross(int_edges(dtype))
    check_table(("i_binary", dtype), INT_BINARY, (x, y))


def test_bool_edges():
    x, y = cross(np.array([False, True]))
    check_table(("b_unary",), BOOL_UNARY, (x,))
    check_table(("b_binary",), BOOL_BINARY, (x, y))


def test_64_bit_edges():
    with enable_x64():
        x = float_edges("float64")
        wide = {"to_int64": (_convert("int64"), 0), "to_uint64": (_convert("uint64"), 0),
                "to_float64": (_convert("float64"), 0), **_bitcasts("float64"),
                "bitcast_i64": (_bitcast("int64"), 0), "bitcast_u64": (_bitcast("uint64"), 0)}
        check_table(("f64_unary",), {**FLOAT_UNARY, **wide}, (x,))
        check_table(("f64_binary",), FLOAT_BINARY, cross(x))
        for d in INT64_DTYPES:
            v = int_edges(d)
            to64 = {"to_float64": (_convert("float64"), 0), "to_int64": (_convert("int64"), 0),
                    "to_uint64": (_convert("uint64"), 0)}
            check_table(("i64_unary", d), {**INT_UNARY, **to64}, (v,))
            check_table(("i64_binary", d), INT_BINARY, cross(v))
        f32 = float_edges("float32")
        check_table(("f32_to_64",), {"to_int64": (_convert("int64"), 0),
                                     "to_uint64": (_convert("uint64"), 0),
                                     "to_float64": (_convert("float64"), 0)}, (f32,))


def test_float_to_int_saturates_like_jax():
    """JAX: [inf, 3e9, -inf, nan] -> int32 gives [MAX, MAX, MIN, 0], eagerly and under jit."""
    x = np.array([np.inf, 3e9, -np.inf, np.nan, -3e9, 2.0**31, -(2.0**31)], np.float32)
    i32 = np.iinfo(np.int32)
    want = [i32.max, i32.max, i32.min, 0, i32.min, i32.max, i32.min]
    f = _convert("int32")
    np.testing.assert_array_equal(np.asarray(f(x)), want)
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(x)), want)
    # uint8 saturates at both ends (JAX: [255, 0, 255, 0, 0, 255])
    u = np.array([np.inf, -np.inf, 300.0, -1.5, np.nan, 255.9], np.float32)
    want_u = [255, 0, 255, 0, 0, 255]
    g = _convert("uint8")
    np.testing.assert_array_equal(np.asarray(g(u)), want_u)
    np.testing.assert_array_equal(np.asarray(jax.jit(g)(u)), want_u)


COMPLEX_UNARY = {
    "neg": (lax.neg, 0), "real": (lax.real, 0), "imag": (lax.imag, 0), "conj": (lax.conj, 0),
    "square": (lax.square, 0), "ipow2": (lambda x: lax.integer_pow(x, 2), 0),
    "abs": (lax.abs, 2), "sign": (lax.sign, 2), "exp": (lax.exp, 4), "log": (lax.log, 4),
    "sqrt": (lax.sqrt, 4), "is_finite": (lambda x: lax.is_finite(lax.real(x)), 0),
}
COMPLEX_BINARY = {"add": (lax.add, 0), "sub": (lax.sub, 0), "mul": (lax.mul, 0),
                  "eq": (lax.eq, 0), "ne": (lax.ne, 0)}


def test_complex64_edges():
    parts = np.array([0.0, -0.0, 1.0, -2.5, 3e9, np.inf, -np.inf, np.nan], np.float32)
    re, im = cross(parts)
    z = np.zeros(re.shape, np.complex64)
    z.real, z.imag = re, im  # keep -0.0, inf and NaN parts exactly
    check_table(("c_unary",), COMPLEX_UNARY, (z,))
    check_table(("c_binary",), COMPLEX_BINARY, cross(z[::3]))


def _structural_float_table():
    return {
        "reduce_max": (lambda x: lax.reduce_max(x, (1,)), 0),
        "reduce_min": (lambda x: lax.reduce_min(x, (1,)), 0),
        "argmax": (lambda x: lax.argmax(x, 1, np.int32), 0),
        "argmin": (lambda x: lax.argmin(x, 1, np.int32), 0),
        "sort": (lambda x: lax.sort(x, dimension=1), 0),
        "cummax": (lambda x: lax.cummax(x, axis=1), 0),
        "cummin": (lambda x: lax.cummin(x, axis=1), 0),
        "cumsum": (lambda x: lax.cumsum(x, axis=1), 0),
        "top_k": (lambda x: lax.top_k(x, 2)[0], 0),
        "reduce_max_all": (lambda x: lax.reduce_max(x, (0, 1)), 0),
    }


def _structural_int_table():
    return {
        "reduce_sum": (lambda x: lax.reduce_sum(x, (1,)), 0),
        "reduce_prod": (lambda x: lax.reduce_prod(x, (1,)), 0),
        "reduce_max": (lambda x: lax.reduce_max(x, (1,)), 0),
        "argmin": (lambda x: lax.argmin(x, 1, np.int32), 0),
        "sort": (lambda x: lax.sort(x, dimension=1), 0),
        "cumsum": (lambda x: lax.cumsum(x, axis=1), 0),
        "cumprod": (lambda x: lax.cumprod(x, axis=1), 0),
        "dot": (lambda x: lax.dot(x, lax.transpose(x, (1, 0))), 0),
    }


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_structural_float_edges(dtype):
    """Reductions, arg-reductions, sorts and scans over rows of edge values (NaN, +-0, inf)."""
    v = float_edges(dtype)
    rng = np.random.default_rng(0)
    rows = np.stack([rng.permutation(v)[:8] for _ in range(12)]
                    + [np.array([0.0, -0.0, 0.0, -0.0, 1, 1, -1, -1], dtype),
                       np.array([-0.0, 0.0, np.nan, 0.0, np.nan, -1, 2, 2], dtype)])
    check_table(("s_float", dtype), _structural_float_table(), (rows.astype(dtype),))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32"])
def test_structural_int_edges(dtype):
    """Integer reductions, scans and dots wrap on overflow identically eager and jitted."""
    v = int_edges(dtype)
    rng = np.random.default_rng(1)
    rows = np.stack([rng.choice(v, 6) for _ in range(6)]).astype(dtype)
    check_table(("s_int", dtype), _structural_int_table(), (rows,))
