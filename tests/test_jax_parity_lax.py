"""lax-level operations that gave values different from JAX's (a differential campaign
against JAX 0.10.2 on CPU), eager and under jit.

JAX's values are hard-coded (JAX 0.10.2, XLA:CPU); where real JAX is importable the same
programs also run on it.
"""

import ml_dtypes
import numpy as np
import pytest

import minijax
from minijax import lax

try:
    import jax as real_jax
    from jax import lax as real_lax
except Exception:  # pragma: no cover - CI has no JAX
    real_jax = real_lax = None

needs_jax = pytest.mark.skipif(real_jax is None, reason="real JAX is not installed")

BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3fn
E5M2 = ml_dtypes.float8_e5m2


def _bits(x):
    x = np.asarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def _modes(fn):
    """fn eagerly and under jit."""
    return [fn, minijax.jit(fn)]


# --- reduce_precision -------------------------------------------------------------------------

_BF16_IN = np.array([1.5, -1.5, 2.5, 3.703125, 9984, -300, -292, 1.2e-38, np.nan, np.inf],
                    np.float32).astype(BF16)
_E4M3_IN = np.array([2**-9, 2**-7, 2**-6, 448, 240, 1.0, 3.25], np.float32).astype(E4M3)
_E5M2_IN = np.array([2**-16, 2**-15, 2**-14, 57344, -3.5], np.float32).astype(E5M2)

# (input, exponent_bits, mantissa_bits, JAX 0.10.2's result bits)
_RP_CASES = [
    # bfloat16 was rounded with float16's layout eagerly and left unchanged under jit.
    (_BF16_IN, 5, 2, [16320, 49088, 16416, 16480, 17952, 50080, 50080, 0, 32704, 32640]),
    # float8 is rounded in an IEEE-like format: e4m3fn's 448 overflows to NaN, its
    # denormals flush; e5m2 keeps its denormals when the exponent is not reduced.
    (_E4M3_IN, 4, 3, [0, 0, 8, 127, 119, 56, 69]),
    (_E4M3_IN, 5, 2, [1, 4, 8, 126, 120, 56, 68]),
    (_E5M2_IN, 5, 2, [1, 2, 4, 123, 195]),
    (_E5M2_IN, 4, 3, [0, 0, 0, 124, 195]),
    (_E5M2_IN, 5, 1, [0, 2, 4, 124, 196]),
]


@pytest.mark.parametrize("x,e,m,want", _RP_CASES)
def test_reduce_precision_narrow_floats(x, e, m, want):
    for f in _modes(lambda x: lax.reduce_precision(x, e, m)):
        out = np.asarray(f(x))
        assert out.dtype == x.dtype
        np.testing.assert_array_equal(_bits(out), np.array(want, _bits(x).dtype))


def test_reduce_precision_keeps_nan_without_mantissa():
    x = np.array([np.nan, -np.nan, 1.5, 3.0, 1e30, -1e-30, np.inf], np.float32)
    # JAX 0.10.2: NaN stays NaN also for mantissa_bits=0.
    want = {(4, 0): [np.nan, np.nan, 2.0, 2.0, np.inf, -0.0, np.inf],
            (1, 0): [np.nan, np.nan, np.inf, np.inf, np.inf, -0.0, np.inf]}
    for (e, m), w in want.items():
        for f in _modes(lambda x, e=e, m=m: lax.reduce_precision(x, e, m)):
            out = np.asarray(f(x))
            np.testing.assert_array_equal(out, np.array(w, np.float32))
            np.testing.assert_array_equal(np.signbit(out[2:]), np.signbit(np.array(w[2:])))


_ALL_F8 = [E4M3, E5M2, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz]


@needs_jax
@pytest.mark.parametrize("dtype", _ALL_F8 + [np.float16, BF16])
def test_reduce_precision_every_value_matches_jax(dtype):
    if np.dtype(dtype).itemsize == 1:
        x = np.arange(256, dtype=np.uint8).view(dtype)
    else:
        x = np.arange(0, 65536, 13, dtype=np.uint16).view(dtype)
    for e, m in [(1, 0), (2, 1), (3, 2), (4, 3), (5, 2), (5, 1), (8, 7), (5, 10)]:
        want = np.asarray(real_lax.reduce_precision(x, e, m))
        for f in _modes(lambda x, e=e, m=m: lax.reduce_precision(x, e, m)):
            out = np.asarray(f(x))
            nan = np.isnan(want.astype(np.float32))
            np.testing.assert_array_equal(np.isnan(out.astype(np.float32)), nan)
            np.testing.assert_array_equal(_bits(out)[~nan], _bits(want)[~nan], err_msg=f"{e},{m}")


# --- 16-bit float accumulation ----------------------------------------------------------------

_NARROW = [np.float16, BF16, E4M3, E5M2]


def _ulps(got, want, dtype):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    info = ml_dtypes.finfo(dtype)
    scale = np.maximum(np.abs(want) * float(info.eps), float(info.smallest_normal))
    return np.max(np.abs(got - want) / scale, initial=0.0)


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_running_sums_of_16bit_floats_do_not_stall(dtype):
    x = np.ones(5000, dtype)
    # JAX 0.10.2: cumsum(ones(5000, bfloat16))[[255, 256, 1000, 2049, 4999]] is
    # [256, 256, 1000, 2048, 4992] (float16: [256, 257, 1001, 2050, 5000]); minijax's
    # running sum stalled at 256 (bfloat16) / 2048 (float16), and the eager bfloat16
    # reduce_sum at 256.
    want = {np.dtype(BF16): [256, 256, 1000, 2048, 4992],
            np.dtype(np.float16): [256, 257, 1001, 2050, 5000]}[np.dtype(dtype)]
    for f in _modes(lambda x: lax.cumsum(x)):
        out = np.asarray(f(x))
        assert out.dtype == dtype
        np.testing.assert_array_equal(out[[255, 256, 1000, 2049, 4999]].astype(np.float32), want)
    for f in _modes(lambda x: lax.cumsum(x, reverse=True)):
        np.testing.assert_array_equal(np.asarray(f(x))[0].astype(np.float32), want[-1])
    for f in _modes(lambda x: lax.reduce_sum(x, (0,))):
        np.testing.assert_array_equal(np.asarray(f(x)).astype(np.float32), want[-1])
    # JAX 0.10.2: cumlogsumexp(zeros(1000, bfloat16))[-1] = 6.90625 (log 1000 = 6.9078).
    z = np.zeros(1000, dtype)
    for f in _modes(lambda x: lax.cumlogsumexp(x)):
        assert abs(float(np.asarray(f(z))[-1]) - np.log(1000)) <= 0.02


# float8 reductions accumulate in float8 as JAX does (lax/float8_sum.py): not listed here.
@pytest.mark.parametrize("dtype,op", [
    (d, op) for d in _NARROW for op in ["cumsum", "cumprod", "cumlogsumexp", "reduce_sum",
                                        "reduce_prod"]
    if np.dtype(d).itemsize == 2 or op.startswith("cum")])
def test_narrow_float_accumulations_round_once(dtype, op):
    """Against a float64 reference: within half an ulp of the exact value plus one rounding
    of the float32 accumulator (JAX's own scan is within ~2 ulps, up to 36 for cumprod)."""
    rng = np.random.RandomState(0)
    x = (1 + rng.rand(3, 200) * (0.01 if "prod" in op else 1)).astype(dtype)
    fn = {"cumsum": lambda x: lax.cumsum(x, 1), "cumprod": lambda x: lax.cumprod(x, 1),
          "cumlogsumexp": lambda x: lax.cumlogsumexp(x, 1),
          "reduce_sum": lambda x: lax.reduce_sum(x, (1,)),
          "reduce_prod": lambda x: lax.reduce_prod(x, (1,))}[op]
    x64 = x.astype(np.float64)
    exact = {"cumsum": lambda: np.cumsum(x64, 1), "cumprod": lambda: np.cumprod(x64, 1),
             "cumlogsumexp": lambda: np.logaddexp.accumulate(x64, 1),
             "reduce_sum": lambda: x64.sum(1), "reduce_prod": lambda: x64.prod(1)}[op]()
    for f in _modes(fn):
        out = np.asarray(f(x))
        assert out.dtype == dtype
        assert _ulps(out, exact, dtype) <= 0.51


@needs_jax
@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_16bit_accumulations_near_jax(dtype):
    rng = np.random.RandomState(1)
    x = (rng.rand(2, 500) * 2).astype(dtype)
    for name in ["cumsum", "cumlogsumexp"]:
        want = np.asarray(getattr(real_lax, name)(x, 1))
        for f in _modes(lambda x, name=name: getattr(lax, name)(x, 1)):
            assert _ulps(np.asarray(f(x)), want, dtype) <= 2.5


# --- dot_general with mixed operand dtypes, pow with a Python int exponent --------------------

# (lhs dtype, rhs dtype, JAX 0.10.2's result dtype): XLA's higher-precision type, not
# NumPy promotion (int8 x uint8 is int8, uint32 x int32 is int32, bfloat16 x float16 bfloat16).
_DOT_MIXED = [(np.int32, np.float32, np.float32), (np.int8, np.int32, np.int32),
              (np.float16, np.float32, np.float32), (BF16, np.float32, np.float32),
              (np.int8, np.uint8, np.int8), (np.bool_, np.int32, np.int32),
              (np.float32, np.complex64, np.complex64), (np.uint32, np.int32, np.int32),
              (np.int32, np.float16, np.float16), (BF16, np.float16, BF16),
              (np.int8, np.uint16, np.uint16)]


@pytest.mark.parametrize("da,db,want", _DOT_MIXED)
def test_dot_general_mixed_dtypes(da, db, want):
    a = np.arange(6).reshape(2, 3) - 2
    lhs, rhs = a.astype(da), a.T.astype(db)
    dims = (((1,), (0,)), ((), ()))
    expected = (lhs.astype(np.int64) @ rhs.astype(np.int64)).astype(want)
    for f in _modes(lambda x, y: lax.dot_general(x, y, dims)):
        out = np.asarray(f(lhs, rhs))
        assert out.dtype == want
        np.testing.assert_array_equal(out, expected)
    out = np.asarray(lax.dot_general(lhs, rhs, dims, preferred_element_type=np.float32))
    assert out.dtype == np.float32  # JAX 0.10.2: float32
    if real_lax is not None:
        assert np.asarray(real_lax.dot_general(lhs, rhs, dims)).dtype == want


def test_dot_general_mixed_dtypes_grad():
    x = np.array([1.0, 2.0, 3.0], np.float16)
    w = np.array([0.5, -1.0, 2.0], np.float32)
    g = minijax.grad(lambda x, w: lax.dot_general(x, w, (((0,), (0,)), ((), ()))),
                     argnums=(0, 1))(x, w)
    assert g[0].dtype == np.float16 and g[1].dtype == np.float32
    np.testing.assert_array_equal(np.asarray(g[0]), w.astype(np.float16))
    np.testing.assert_array_equal(np.asarray(g[1]), x.astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.complex64])
def test_pow_python_int_exponent(dtype):
    x = np.array([0.0, 1.5, -2.0, 3.0], dtype)
    # JAX 0.10.2: lax.pow(x, 2) takes 2 as an integer exponent (minijax raised TypeError).
    for f in _modes(lambda x: lax.pow(x, 2)):
        out = np.asarray(f(x))
        assert out.dtype == dtype
        np.testing.assert_allclose(out.astype(np.complex128), [0.0, 2.25, 4.0, 9.0],
                                   rtol=1e-6)
    for f in _modes(lambda x: lax.pow(x, -1)):
        np.testing.assert_allclose(np.asarray(f(x[1:])).astype(np.complex128),
                                   [1 / 1.5, -0.5, 1 / 3], rtol=1e-2)


# --- special functions at the edges of their domains ------------------------------------------

_NAN, _INF = np.nan, np.inf

# (function, arguments, JAX 0.10.2's values); minijax gave NaN, the truncated-order polygamma
# or the opposite pole value.
_SPECIAL_EDGES = [
    (lambda m, x: lax.polygamma(m, x),
     ([0.5, 1e-20, _NAN, 10.0, 10.0, _INF, 1.0, 2.0], [1.0, 3.0, 1.0, 0.0, -1.0, 0.0, 0.0, 0.0]),
     [_NAN, _NAN, _NAN, _NAN, _NAN, _NAN, _INF, _NAN]),
    (lambda x, q: lax.zeta(x, q),
     ([0.0, 0.0, 3.0, 10.0, 1.0, 1.0, _INF, 2.0], [0.0, -1.0, 0.0, -1.0, 0.0, -1.0, 0.0, 1.0]),
     [_INF, _INF, _NAN, _INF, _INF, _INF, _NAN, np.pi ** 2 / 6]),
    (lambda a, x: lax.igamma(a, x),
     ([0.0, 0.0, 0.0, 0.0], [1.0, _INF, 0.0, 0.5]), [1.0, 1.0, _NAN, _NAN]),
    (lambda a, x: lax.igammac(a, x),
     ([0.0, 0.0, 0.0, 0.0], [0.5, 1.0, _INF, 0.0]), [0.0, 0.0, 0.0, _NAN]),
    (lambda a, b, x: lax.betainc(a, b, x),
     ([0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5, _INF, _INF, 0.0, _INF],
      [0.5, 0.5, _INF, 0.0, 0.0, _INF, 0.5, 0.5, 0.0, 0.0, _INF],
      [0.0, 0.3, 0.3, 0.3, 1.0, 0.3, 0.0, 0.3, 1.0, 0.3, 0.3]),
     [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, _NAN, _NAN]),
]


@pytest.mark.parametrize("case", range(len(_SPECIAL_EDGES)))
def test_special_function_domain_edges(case):
    fn, args, want = _SPECIAL_EDGES[case]
    args = [np.array(a, np.float32) for a in args]
    for f in _modes(fn):
        np.testing.assert_allclose(np.asarray(f(*args)), np.array(want, np.float32), rtol=1e-6)
    if real_lax is not None:
        name = {0: "polygamma", 1: "zeta", 2: "igamma", 3: "igammac", 4: "betainc"}[case]
        np.testing.assert_allclose(np.asarray(getattr(real_lax, name)(*args)),
                                   np.array(want, np.float32), rtol=1e-6)
