"""Element-wise edge values match JAX 0.10.2 on the CPU, eagerly and under jit.

Regression tests for what tests/fuzz_jax_edge_values.py (a differential campaign against
real JAX) found. Expected values are JAX's, hard-coded so CI needs no JAX; where jax is
importable the same cases are also compared against it live. Every case runs eagerly (the
NumPy path), under jit on the CPU backend (generated code) and under jit on the interpreter
backend (the HLO evaluator, the reference for compiled kernels).

Not covered on purpose: XLA:CPU computes float32/float64 with denormals flushed to zero
(sqrt(1e-40) is 0 there, 1e-40 == 0 is True); minijax keeps IEEE subnormals everywhere.
"""

import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax as jax
import minijax.numpy as jnp
from minijax import lax
from minijax.test_util import enable_x64

BACKENDS = ("cpu", "interpreter")
F8 = ml_dtypes.float8_e4m3fn
E8M0 = ml_dtypes.float8_e8m0fnu
BF16 = ml_dtypes.bfloat16


def _run_all(fn, *args):
    """fn's result eagerly and under jit on each backend, as NumPy arrays."""
    out = {"eager": np.asarray(fn(*[jnp.asarray(a) for a in args]))}
    for backend in BACKENDS:
        out[backend] = np.asarray(jax.jit(fn, backend=backend)(*args))
    return out


def _assert_bits(got, want, what):
    want = np.asarray(want)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if got.dtype.kind == "c":  # part by part: nan+0j is not nan+nanj
        _assert_bits(got.real.copy(), want.real.copy(), f"{what} (real part)")
        _assert_bits(got.imag.copy(), want.imag.copy(), f"{what} (imaginary part)")
    elif got.dtype.kind in "fV":
        both_nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
        same = got.view(np.uint8).reshape(got.shape + (-1,)) == \
            want.view(np.uint8).reshape(want.shape + (-1,))
        ok = same.all(-1) | both_nan
        assert ok.all(), f"{what}: got {got[~ok]} want {want[~ok]}"
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


# name -> (function of (lax, jnp) namespaces, arguments, JAX 0.10.2's result on the CPU)
CASES = {
    # bitcast_convert_type between an 8-bit float and wider types: bytes little-endian.
    "bitcast_u16_to_f8": (
        lambda L, N: lambda x: L.bitcast_convert_type(x, F8),
        (np.array([0x3C00, 0x7F80, 0x0001], np.uint16),),
        np.array([[0x00, 0x3C], [0x80, 0x7F], [0x01, 0x00]], np.uint8).view(F8)),
    "bitcast_f8_to_u16": (
        lambda L, N: lambda x: L.bitcast_convert_type(x, np.uint16),
        (np.array([[0x00, 0x3C], [0x80, 0x7F]], np.uint8).view(F8),),
        np.array([0x3C00, 0x7F80], np.uint16)),
    "bitcast_e8m0_to_f32": (
        lambda L, N: lambda x: L.bitcast_convert_type(x, np.float32),
        (np.array([[0x00, 0x00, 0x80, 0x3F], [0, 0, 0, 0x80]], np.uint8).view(E8M0),),
        np.array([1.0, -0.0], np.float32)),
    # 8-bit float -> 8-bit float conversions NumPy's ml_dtypes cannot cast directly.
    "convert_e4m3fnuz_to_e8m0": (
        lambda L, N: lambda x: L.convert_element_type(x, E8M0),
        (np.array([1.0, 0.5, 3.0, 240.0, 0.0, -2.0, np.nan],
                  np.float32).astype(ml_dtypes.float8_e4m3fnuz),),
        np.array([1.0, 0.5, 4.0, 256.0, np.nan, np.nan, np.nan], np.float32).astype(E8M0)),
    "convert_e8m0_to_e5m2fnuz": (
        lambda L, N: lambda x: L.convert_element_type(x, ml_dtypes.float8_e5m2fnuz),
        (np.array([1.0, 2.0 ** -20, 2.0 ** 20, 0.25, np.nan], np.float32).astype(E8M0),),
        np.array([1.0, 0.0, np.nan, 0.25, np.nan],
                 np.float32).astype(ml_dtypes.float8_e5m2fnuz)),
    # 8-bit floats compute in float32: trunc(0.5) = 0 is no float8_e8m0fnu value.
    "round_afz_e8m0": (
        lambda L, N: lambda x: L.round(x, L.RoundingMethod.AWAY_FROM_ZERO),
        (np.array([0.5, 1.0, 2.0, 0.25, 4.0], np.float32).astype(E8M0),),
        np.array([1.0, 1.0, 2.0, np.nan, 4.0], np.float32).astype(E8M0)),
    "round_even_e8m0": (
        lambda L, N: lambda x: L.round(x, L.RoundingMethod.TO_NEAREST_EVEN),
        (np.array([0.5, 1.0, 2.0, 0.25], np.float32).astype(E8M0),),
        np.array([np.nan, 1.0, 2.0, np.nan], np.float32).astype(E8M0)),
    "floor_e4m3fn": (
        lambda L, N: L.floor, (np.array([0.5, -0.5, 448.0, -1.75], np.float32).astype(F8),),
        np.array([0.0, -1.0, 448.0, -2.0], np.float32).astype(F8)),
    # lcm = |x1| * (|x2| // gcd) wraps where it overflows (JAX does not make it positive).
    "lcm_int8_overflow": (
        lambda L, N: N.lcm, (np.array([127, 100, 100, 0, -7], np.int8),
                             np.array([126, -100, 3, 5, 3], np.int8)),
        np.array([-126, 100, 44, 0, 21], np.int8)),
    "lcm_int64_overflow": (
        lambda L, N: N.lcm,
        (np.array([2 ** 62, 3], np.int64), np.array([-6, 2 ** 62 + 1], np.int64)),
        np.array([-(2 ** 62), -4611686018427387901], np.int64)),
    # sign of a complex number: each part divided by the real |x|; x itself where |x| is 0.
    "sign_complex64": (
        lambda L, N: L.sign,
        (np.array([complex(np.inf, 0), complex(-np.inf, 1), complex(1, np.inf), 0j,
                   complex(-0.0, -0.0), complex(2, -0.0), complex(-2, -0.0),
                   complex(3e38, 3e38), complex(np.nan, 0)], np.complex64),),
        np.array([complex(np.nan, 0), complex(np.nan, 0), complex(0, np.nan), 0j,
                  complex(-0.0, -0.0), complex(1, -0.0), complex(-1, -0.0), 0j,
                  complex(np.nan, np.nan)], np.complex64)),
    # float64 -> float8_e8m0fnu converts directly: below 2**-127 is NaN, not 2**-127.
    "convert_f64_to_e8m0": (
        lambda L, N: lambda x: L.convert_element_type(x, E8M0),
        (np.array([0.0, 1e-40, 5e-39, 2.0 ** -127, 1e-38, 0.75, 3.0, 1e38, 1e300, -1.0]),),
        np.array([np.nan, np.nan, np.nan, 2.0 ** -127, 2.0 ** -126, 1.0, 4.0, 2.0 ** 126,
                  np.nan, np.nan], np.float32).astype(E8M0)),
    # nextafter on 8-bit floats steps through the type's bit patterns (below the smallest
    # negative value of a "fnuz" type is its NaN pattern 0x80).
    "nextafter_e4m3fnuz": (
        lambda L, N: L.nextafter,
        (np.array([0.0, -2.0 ** -10, 2.0 ** -10, 1.0, 4.0, 240.0, np.nan],
                  np.float32).astype(ml_dtypes.float8_e4m3fnuz),
         np.array([-1.0, 0.0, -1.0, 2.0, 1.0, 1e9, 0.0],
                  np.float32).astype(ml_dtypes.float8_e4m3fnuz)),
        np.array([-2.0 ** -10, np.nan, 0.0, 1.125, 3.75, np.nan, np.nan],
                 np.float32).astype(ml_dtypes.float8_e4m3fnuz)),
    "nextafter_e5m2": (
        lambda L, N: L.nextafter,
        (np.array([0.0, -0.0, 4.0, 57344.0, -1.0], np.float32).astype(ml_dtypes.float8_e5m2),
         np.array([-1.0, 1.0, 8.0, np.inf, -2.0], np.float32).astype(ml_dtypes.float8_e5m2)),
        np.array([-2.0 ** -16, 2.0 ** -16, 5.0, np.inf, -1.25],
                 np.float32).astype(ml_dtypes.float8_e5m2)),
    # reduce_precision of float8_e8m0fnu rounds in float32 (float16 cannot hold 2**-127..2**127);
    # in a 5-bit exponent 2**-64 flushes to zero, which float8_e8m0fnu has only as NaN.
    "reduce_precision_e8m0_8_23": (
        lambda L, N: lambda x: L.reduce_precision(x, 8, 23),
        (np.array([2.0 ** -63, 65536.0, 2.0 ** 127, 2.0 ** -127, 0.5], np.float32).astype(E8M0),),
        np.array([2.0 ** -63, 65536.0, 2.0 ** 127, 2.0 ** -127, 0.5], np.float32).astype(E8M0)),
    "reduce_precision_e8m0_5_10": (
        lambda L, N: lambda x: L.reduce_precision(x, 5, 10),
        (np.array([2.0 ** -63, 65536.0, 1.0, 0.5], np.float32).astype(E8M0),),
        np.array([np.nan, np.nan, 1.0, 0.5], np.float32).astype(E8M0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_edge_values_match_jax(name):
    make, args, want = CASES[name]
    with enable_x64():
        for mode, got in _run_all(make(lax, jnp), *args).items():
            _assert_bits(got, want, f"{name} [{mode}]")


def test_cases_against_live_jax(live_jax):
    if live_jax is None:
        pytest.skip("jax is not installed")
    rjnp = pytest.importorskip("jax.numpy")
    for name, (make, args, want) in CASES.items():
        with live_jax.default_device(live_jax.devices("cpu")[0]):
            got = np.asarray(make(live_jax.lax, rjnp)(*args))
        _assert_bits(got, want, f"{name} [live jax]")


_CONVERT_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64",
                   "float16", "bfloat16", "float32", "float64", "complex64",
                   "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e8m0fnu"]
_EDGE_FLOATS = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, np.nan, np.inf, -np.inf, 127.5, 128.0,
                -128.5, -129.0, 255.5, 256.0, 65504.0, 65520.0, 2.0 ** 31, -2.0 ** 31,
                2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 1e30, 3.4e38, 1e300, 1e-30,
                6e-8, 16777217.0, 448.0, 464.0, 57344.0, 61440.0, 2.0 ** -127, 0.1]
_EDGE_INTS = [0, 1, -1, 127, -128, 255, 32767, -32768, 2 ** 31 - 1, -2 ** 31, 2 ** 24 + 1,
              2 ** 53 + 1, 2 ** 63 - 1, -2 ** 63, 2 ** 64 - 1]


def _np_dtype(name):
    return np.dtype(getattr(ml_dtypes, name, None) or name)


def _edge_array(name, picks):
    dt = _np_dtype(name)
    if dt == np.bool_:
        return np.array([p % 2 == 0 for p in picks])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = [v for v in _EDGE_INTS if info.min <= v <= info.max]
        return np.array([vals[p % len(vals)] for p in picks], dt)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array([_EDGE_FLOATS[p % len(_EDGE_FLOATS)] for p in picks]).astype(dt)


@pytest.fixture(scope="module")
def live_jax():
    """Real JAX with 64-bit types on for this module's tests (restored after them: other
    modules compare against JAX's default 32-bit types), or None where it is not installed."""
    try:
        import jax as real  # noqa: PLC0415 - live comparison only where JAX is installed
    except ImportError:
        yield None
        return
    before = real.config.jax_enable_x64
    real.config.update("jax_enable_x64", True)
    yield real
    real.config.update("jax_enable_x64", before)


@settings(max_examples=30, deadline=None)
@given(src=st.sampled_from(_CONVERT_DTYPES), dst=st.sampled_from(_CONVERT_DTYPES),
       picks=st.lists(st.integers(0, 10 ** 6), min_size=1, max_size=12))
def test_convert_edge_values_eager_jit_evaluator_and_jax_agree(live_jax, src, dst, picks):
    x = _edge_array(src, picks)
    new = _np_dtype(dst)
    with enable_x64():
        outs = _run_all(lambda v: lax.convert_element_type(v, new), x)
    for mode, got in outs.items():
        _assert_bits(got, outs["interpreter"], f"convert {src}->{dst} {x!r} [{mode}]")
    if live_jax is None:
        return
    with live_jax.default_device(live_jax.devices("cpu")[0]), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # JAX's ComplexWarning for complex -> real
        want = np.asarray(live_jax.lax.convert_element_type(x, new))
    # XLA:CPU flushes float32/float64 subnormals to zero; minijax keeps them.
    if not (np.asarray(x).dtype.kind in "fc" and np.any(_subnormal(np.asarray(x)))):
        _assert_bits(outs["eager"], want, f"convert {src}->{dst} {x!r} [live jax]")


def _subnormal(x):
    parts = (x.real, x.imag) if x.dtype.kind == "c" else (x,)
    tiny = np.finfo(np.float64 if x.dtype.itemsize >= 8 and x.dtype.kind == "f" or
                    x.dtype == np.complex128 else np.float32).tiny
    return np.logical_or.reduce([(p != 0) & (np.abs(p.astype(np.float64)) < tiny)
                                 for p in parts])
