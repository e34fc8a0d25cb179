"""The lax op table run three ways: eager, jit on the "interpreter" backend, jit on "cpu".

Elementwise ops are batched: one jitted function applies a whole group of ops to the same
inputs and returns every result, so one compile per (group, shape, dtype) covers many ops;
the jitted wrappers live at module level, so hypothesis examples that draw a shape already
seen hit the compile cache. Shapes include scalars, size 0, size 1, odd sizes that leave
vector remainders, and one above the CPU backend's threading threshold.

Comparisons: exact for integer and bool results; floats within a per-op number of ulps of
the eager result (with an absolute floor for results near zero), NaN and inf positions
equal. Structural ops, reductions, windows, sorting, contractions, gather/scatter and
control flow are in test_jit_op_table_structural.py.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax as jax
from minijax import lax
from minijax.backends.cpu import PARALLEL_THRESHOLD

BACKENDS = ("interpreter", "cpu")
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 3), (1, 33), (4, 3, 5)]
# Above the CPU backend's threading threshold (elements x work per element), odd columns.
BIG = (PARALLEL_THRESHOLD // 263 + 1, 263)
_JITS: dict = {}


def jitted(key, fn, backend):
    """One jit wrapper per (key, backend), kept across hypothesis examples."""
    wrapped = _JITS.get((key, backend))
    if wrapped is None:
        wrapped = _JITS[(key, backend)] = jax.jit(fn, backend=backend)
    return wrapped


# --------------------------------------------------------------------------- inputs

_FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.inf, -np.inf, np.nan, 2.0, 1e-3, 3.0]


def float_values(rng, shape, dtype, domain="any"):
    """Random floats over `domain` with edge values (0, -0, +-inf, nan, ...) mixed in."""
    dtype = np.dtype(dtype)
    if domain == "unit":
        # +-1 come in as edge values; the approach to +-1 is measured densely in
        # test_lowering_accuracy.py
        x = rng.uniform(-0.99, 0.99, shape)
    elif domain == "pos":
        x = rng.uniform(0.01, 10.0, shape)
    elif domain == "small":
        x = rng.uniform(-4.0, 4.0, shape)
    else:
        x = rng.standard_normal(shape) * 10.0 ** rng.integers(-2, 3, shape)
    x = np.asarray(x)
    flat = x.reshape(-1)
    if flat.size:
        picks = rng.random(flat.size) < 0.2
        flat[picks] = rng.choice(_FLOAT_EDGES, int(picks.sum()))
        if domain in ("any", "edges"):
            flat[0] = _FLOAT_EDGES[rng.integers(len(_FLOAT_EDGES))]
        if dtype != np.float32 and dtype.itemsize < 4:
            flat[flat.size // 2] = 1e5  # overflows to inf in 16-bit types
    return x.astype(dtype)


def int_values(rng, shape, dtype):
    """Random integers over the whole range of `dtype`, with 0, +-1, min, max mixed in."""
    info = np.iinfo(dtype)
    x = rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)
    flat = x.reshape(-1)
    if flat.size:
        edges = np.array([0, 1, info.max, info.min, 2, 7] + ([-1] if info.min < 0 else []))
        picks = rng.random(flat.size) < 0.3
        flat[picks] = rng.choice(edges, int(picks.sum())).astype(dtype)
        small = rng.random(flat.size) < 0.3
        flat[small] = rng.integers(0, 9, int(small.sum())).astype(dtype)
    return x


def bool_values(rng, shape):
    return rng.random(shape) < 0.5


# --------------------------------------------------------------------------- comparisons


def assert_matches(name, got, want, ulps=0, floor=None):
    """Exact for ints/bools; floats within `ulps` of want (spacing at max(|want|, floor))."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != eager {want.dtype}"
    assert got.shape == want.shape, f"{name}: shape {got.shape} != eager {want.shape}"
    if want.dtype.kind not in "fc" or ulps == 0:
        same = (got == want) | (_isnan(got) & _isnan(want))
        if not same.all():
            bad = np.argwhere(~same)[:5].tolist()
            raise AssertionError(f"{name}: differs at {bad}: got {got[~same][:5]}, "
                                 f"eager {want[~same][:5]}")
        return
    if want.dtype.kind == "c":
        assert_matches(name + ".real", got.real, want.real, ulps, floor)
        assert_matches(name + ".imag", got.imag, want.imag, ulps, floor)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    assert (nan_g == nan_w).all(), (
        f"{name}: NaN positions differ at {np.argwhere(nan_g != nan_w)[:5].tolist()}: "
        f"got {got[nan_g != nan_w][:5]}, eager {want[nan_g != nan_w][:5]}")
    inf = np.isinf(w) | np.isinf(g)
    assert (g[inf] == w[inf]).all(), f"{name}: infinities differ: {got[inf]} vs {want[inf]}"
    finite = ~(nan_w | inf)
    scale = np.abs(w[finite])
    if floor is not None:
        scale = np.maximum(scale, floor)
    spacing = np.spacing(scale.astype(want.dtype)).astype(np.float64)
    spacing = np.maximum(spacing, float(np.finfo(want.dtype).smallest_subnormal))
    err = np.abs(g[finite] - w[finite]) / spacing
    if err.size and err.max() > ulps:
        k = int(np.argmax(err))
        raise AssertionError(f"{name}: {err.max():.1f} ulp > {ulps}: got "
                             f"{got[finite][k]!r}, eager {want[finite][k]!r}")


def _isnan(a):
    return np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, bool)


def run_three_ways(key, fn, args, names, tolerances):
    """fn(*args) eagerly and jitted on both backends; compare each output with eager."""
    want = [np.asarray(w) for w in fn(*args)]
    assert len(want) == len(names)
    for backend in BACKENDS:
        got = jitted(key, fn, backend)(*args)
        assert len(got) == len(want)
        for name, g, w in zip(names, got, want, strict=True):
            ulps, floor = tolerances.get(name, (0, None))
            assert_matches(f"{name} [{backend}]", g, w, ulps, floor)


# --------------------------------------------------------------------------- op groups

# name -> (function, input domain, ulps, floor). Ulps are against the eager NumPy result
# (float64 special functions rounded once); the HLO expansions in lax/elementwise_lowering.py
# and special_lowering.py are within ~4 ulp of the float64 truth (erfc, erf_inv ~6), as
# measured densely in test_lowering_accuracy.py; lgamma and digamma carry an absolute floor
# for the negative edge values, whose reflection formula cancels near the functions' zeros.
FLOAT_UNARY = {
    "abs": (lax.abs, "any", 0, None), "neg": (lax.neg, "any", 0, None),
    "sign": (lax.sign, "any", 0, None), "floor": (lax.floor, "any", 0, None),
    "ceil": (lax.ceil, "any", 0, None),
    "round_away": (lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO), "any", 0, None),
    "round_even": (lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), "any", 0,
                   None),
    "square": (lax.square, "any", 1, None), "reciprocal": (lax.reciprocal, "any", 1, None),
    "is_finite": (lax.is_finite, "any", 0, None),
    "ipow3": (lambda x: lax.integer_pow(x, 3), "any", 2, None),
    "ipow_m2": (lambda x: lax.integer_pow(x, -2), "any", 3, None),
    "ipow0": (lambda x: lax.integer_pow(x, 0), "any", 0, None),
    "reduce_precision": (lambda x: lax.reduce_precision(x, 5, 10), "any", 0, None),
    "exp": (lax.exp, "small", 4, None), "exp2": (lax.exp2, "small", 4, None),
    "expm1": (lax.expm1, "small", 4, None), "log": (lax.log, "any", 4, None),
    "log1p": (lax.log1p, "any", 4, None), "sqrt": (lax.sqrt, "any", 1, None),
    "rsqrt": (lax.rsqrt, "any", 2, None), "cbrt": (lax.cbrt, "any", 4, None),
    "sin": (lax.sin, "small", 4, 1.0), "cos": (lax.cos, "small", 4, 1.0),
    "tan": (lax.tan, "small", 8, 1.0), "tanh": (lax.tanh, "small", 4, None),
    "sinh": (lax.sinh, "small", 4, None), "cosh": (lax.cosh, "small", 4, None),
    "asin": (lax.asin, "unit", 4, None), "acos": (lax.acos, "unit", 4, None),
    "atan": (lax.atan, "any", 2, None), "asinh": (lax.asinh, "any", 4, None),
    "acosh": (lax.acosh, "pos", 4, None), "atanh": (lax.atanh, "unit", 4, None),
    "logistic": (lax.logistic, "small", 4, None), "erf": (lax.erf, "small", 4, None),
    "erfc": (lax.erfc, "small", 6, None), "erf_inv": (lax.erf_inv, "unit", 6, None),
    "lgamma": (lax.lgamma, "pos", 4, 1.0), "digamma": (lax.digamma, "pos", 4, 1.0),
}
_UNARY_GROUPS = {
    "unary_exact": ["abs", "neg", "sign", "floor", "ceil", "round_away", "round_even",
                    "is_finite", "ipow0", "reduce_precision"],
    "unary_arith": ["square", "reciprocal", "ipow3", "ipow_m2", "sqrt", "rsqrt", "cbrt",
                    "log", "log1p", "atan", "asinh"],
    "unary_small": ["exp", "exp2", "expm1", "sin", "cos", "tan", "tanh", "sinh", "cosh",
                    "logistic", "erf", "erfc"],
    "unary_unit": ["asin", "acos", "atanh", "erf_inv"],
    "unary_pos": ["acosh", "lgamma", "digamma"],
}


def _group_fn(fns):
    def fn(x):
        return [f(x) for f in fns]
    return fn


_UNARY_FNS = {g: _group_fn([FLOAT_UNARY[n][0] for n in names])
              for g, names in _UNARY_GROUPS.items()}
_DOMAIN = {"unary_exact": "any", "unary_arith": "any", "unary_small": "small",
           "unary_unit": "unit", "unary_pos": "pos"}


@settings(max_examples=10, deadline=None)
@given(group=st.sampled_from(sorted(_UNARY_GROUPS)), shape=st.sampled_from(SHAPES[:6]),
       seed=st.integers(0, 2**31))
def test_float_unary_ops(group, shape, seed):
    rng = np.random.default_rng(seed)
    names = _UNARY_GROUPS[group]
    x = float_values(rng, shape, np.float32, _DOMAIN[group])
    tols = {n: FLOAT_UNARY[n][2:] for n in names}
    run_three_ways(group, _UNARY_FNS[group], (x,), names, tols)


FLOAT_BINARY = {
    "add": (lax.add, 0), "sub": (lax.sub, 0), "mul": (lax.mul, 0), "div": (lax.div, 0),
    "rem": (lax.rem, 0), "max": (lax.max, 0), "min": (lax.min, 0),
    "pow": (lax.pow, 8), "atan2": (lax.atan2, 4), "nextafter": (lax.nextafter, 0),
    "eq": (lax.eq, 0), "ne": (lax.ne, 0), "lt": (lax.lt, 0), "le": (lax.le, 0),
    "gt": (lax.gt, 0), "ge": (lax.ge, 0),
}
_FLOAT_BINARY_LOW = ["add", "sub", "mul", "div", "max", "min", "eq", "lt", "ge"]


def _binary_fn(names, table):
    def fn(x, y):
        return [table[n][0](x, y) for n in names]
    return fn


@settings(max_examples=12, deadline=None)
@given(dtype=st.sampled_from(["float32", "float16"]),
       shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**31))
def test_float_binary_ops(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    names = list(FLOAT_BINARY) if dtype == "float32" else _FLOAT_BINARY_LOW
    x, y = float_values(rng, shape, dt), float_values(rng, shape, dt)
    if x.size:
        y.reshape(-1)[: x.size // 3] = x.reshape(-1)[: x.size // 3]  # ties for comparisons
    tols = {n: (FLOAT_BINARY[n][1], None) for n in names}
    run_three_ways(("binary", dtype), _binary_fn(names, FLOAT_BINARY), (x, y), names, tols)


INT_UNARY = {
    "abs": lax.abs, "neg": lax.neg, "sign": lax.sign, "not": lax.bitwise_not,
    "popcnt": lax.population_count, "clz": lax.clz, "square": lax.square,
    "ipow3": lambda x: lax.integer_pow(x, 3),
    "to_f32": lambda x: lax.convert_element_type(x, np.float32),
    "to_i8": lambda x: lax.convert_element_type(x, np.int8),
    "to_u32": lambda x: lax.convert_element_type(x, np.uint32),
    "to_bool": lambda x: lax.convert_element_type(x, np.bool_),
}
INT_BINARY = {
    "add": (lax.add, 0), "sub": (lax.sub, 0), "mul": (lax.mul, 0), "div": (lax.div, 0),
    "rem": (lax.rem, 0), "max": (lax.max, 0), "min": (lax.min, 0),
    "and": (lax.bitwise_and, 0), "or": (lax.bitwise_or, 0), "xor": (lax.bitwise_xor, 0),
    "shl": (lax.shift_left, 0), "shra": (lax.shift_right_arithmetic, 0),
    "shrl": (lax.shift_right_logical, 0), "eq": (lax.eq, 0), "ne": (lax.ne, 0),
    "lt": (lax.lt, 0), "le": (lax.le, 0), "gt": (lax.gt, 0), "ge": (lax.ge, 0),
}
_INT_UNARY_FN = _group_fn(list(INT_UNARY.values()))


@settings(max_examples=8, deadline=None)
@given(dtype=st.sampled_from(["int8", "int32", "uint8", "uint32"]),
       shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**31))
def test_integer_ops(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    x, y = int_values(rng, shape, np.dtype(dtype)), int_values(rng, shape, np.dtype(dtype))
    if x.size:  # shift amounts in and out of range, divisions by 0 and by -1
        y.reshape(-1)[::4] = rng.integers(0, 40, y.reshape(-1)[::4].size).astype(dtype)
    run_three_ways(("int_unary", dtype), _INT_UNARY_FN, (x,), list(INT_UNARY), {})
    names = list(INT_BINARY)
    run_three_ways(("int_binary", dtype), _binary_fn(names, INT_BINARY), (x, y), names, {})


def _bool_fn(p, q, a, b):
    return [lax.bitwise_and(p, q), lax.bitwise_or(p, q), lax.bitwise_xor(p, q),
            lax.bitwise_not(p), lax.eq(p, q), lax.ne(p, q), lax.lt(p, q),
            lax.select(p, a, b), lax.select_n(q, a, b),
            lax.select_n(lax.convert_element_type(p, np.int32) + lax.convert_element_type(
                q, np.int32), a, b, lax.neg(a)),
            lax.clamp(lax.min(a, b), a, lax.max(a, b)), lax.clamp(np.float32(-1), a,
                                                                 np.float32(1)),
            lax.convert_element_type(p, np.float32), lax.convert_element_type(a, np.bool_)]


_BOOL_NAMES = ["and", "or", "xor", "not", "eq", "ne", "lt", "select", "select_n",
               "select_n3", "clamp", "clamp_scalar", "bool_to_f32", "f32_to_bool"]


@settings(max_examples=10, deadline=None)
@given(shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**31))
def test_bool_select_clamp(shape, seed):
    rng = np.random.default_rng(seed)
    p, q = bool_values(rng, shape), bool_values(rng, shape)
    a, b = float_values(rng, shape, np.float32), float_values(rng, shape, np.float32)
    run_three_ways("bool", _bool_fn, (p, q, a, b), _BOOL_NAMES, {})


_CONVERSIONS = {
    "f32_to_i32": lambda x: lax.convert_element_type(x, np.int32),
    "f32_to_u8": lambda x: lax.convert_element_type(x, np.uint8),
    "f32_to_f16": lambda x: lax.convert_element_type(x, np.float16),
    "f16_to_f32": lambda x: lax.convert_element_type(
        lax.convert_element_type(x, np.float16), np.float32),
    "bitcast_i32": lambda x: lax.bitcast_convert_type(x, np.int32),
    "bitcast_u16x2": lambda x: lax.bitcast_convert_type(x, np.uint16),
    "bitcast_roundtrip": lambda x: lax.bitcast_convert_type(
        lax.bitcast_convert_type(x, np.uint32), np.float32),
}


@settings(max_examples=10, deadline=None)
@given(shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**31))
def test_conversions(shape, seed):
    rng = np.random.default_rng(seed)
    x = float_values(rng, shape, np.float32)
    finite = np.where(np.isfinite(x) & (np.abs(x) < 2e9), x, np.float32(7.5))
    # float -> int of NaN/inf/out-of-range values is implementation-defined in XLA: only
    # finite in-range values go through the integer conversions.
    fns = list(_CONVERSIONS.values())

    def fn(x, xf):
        return [f(xf if i < 2 else x) for i, f in enumerate(fns)]
    names = list(_CONVERSIONS)
    run_three_ways("conversions", fn, (x, np.clip(finite, -1e3, 1e3)), names, {})


def _complex_fn(x, y):
    z = lax.complex(x, y)
    return [z, lax.real(z), lax.imag(z), lax.conj(z), lax.abs(z), lax.mul(z, z),
            lax.add(z, lax.conj(z)), lax.neg(z), lax.div(z, lax.complex(y, x))]


@settings(max_examples=6, deadline=None)
@given(shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**31))
def test_complex_ops(shape, seed):
    rng = np.random.default_rng(seed)
    x, y = (float_values(rng, shape, np.float32, "small") for _ in range(2))
    names = ["complex", "real", "imag", "conj", "abs", "mul", "add_conj", "neg", "div"]
    tols = {"abs": (2, None), "mul": (2, 1e-6), "div": (8, 1e-6)}
    run_three_ways("complex", _complex_fn, (x, y), names, tols)


def _big_chain(x, y):
    t = lax.tanh(lax.add(lax.mul(x, y), np.float32(0.5)))
    return [t, lax.max(x, y), lax.select(lax.gt(x, y), lax.exp(lax.neg(lax.abs(x))), y),
            lax.reduce_sum(t, (0,)), lax.reduce_max(lax.mul(x, x), (1,))]


def test_elementwise_above_threading_threshold():
    rng = np.random.default_rng(0)
    x, y = (float_values(rng, BIG, np.float32, "small") for _ in range(2))
    want = _big_chain(x, y)
    for backend in BACKENDS:
        got = jitted("big", _big_chain, backend)(x, y)
        for k, (g, w) in enumerate(zip(got[:3], want[:3], strict=True)):
            assert_matches(f"big{k} [{backend}]", g, w, 4)
        np.testing.assert_allclose(np.asarray(got[3]), np.asarray(want[3]), rtol=1e-5,
                                   atol=1e-4)
        np.testing.assert_allclose(np.asarray(got[4]), np.asarray(want[4]), rtol=0)
    a = int_values(rng, BIG, np.dtype(np.int32))
    b = int_values(rng, BIG, np.dtype(np.int32))
    names = list(INT_BINARY)
    run_three_ways(("int_binary", "int32"), _binary_fn(names, INT_BINARY), (a, b), names, {})




def test_64_bit_types(x64):
    rng = np.random.default_rng(1)
    for shape in [(), (7,)]:
        x, y = (float_values(rng, shape, np.float64) for _ in range(2))
        names = list(FLOAT_BINARY)
        tols = {n: (FLOAT_BINARY[n][1], None) for n in names}
        run_three_ways(("binary", "f64"), _binary_fn(names, FLOAT_BINARY), (x, y), names,
                       tols)
        a, b = (int_values(rng, shape, np.dtype(np.int64)) for _ in range(2))
        names = list(INT_BINARY)
        run_three_ways(("int_binary", "i64"), _binary_fn(names, INT_BINARY), (a, b), names,
                       {})
        u = float_values(rng, shape, np.float64, "small")
        names = ["exp", "log", "sin", "tanh", "erf", "log1p"]
        run_three_ways(("unary64", names[0]), _group_fn([FLOAT_UNARY[n][0] for n in names]),
                       (u,), names, dict.fromkeys(names, (4, 1e-300)))
