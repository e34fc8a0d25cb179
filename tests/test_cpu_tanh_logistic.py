"""float32 tanh and logistic on the CPU backend against float64 NumPy.

math_approx computes each with one polynomial (tanh: of expm1, logistic: of exp) and one
division. Checked here: a dense sweep of float32 bit patterns (both signs, every pattern
around tanh's worst input, into the subnormal results of logistic), special values bit for
bit (signed zeros, subnormals, infinities, NaN), the shipped polynomial coefficients
themselves, and jitted arrays of any size (vector remainders, the multithreaded path).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")

from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import minijax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.compiler.codegen import math_approx  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.test_util import float32_ulp_error

# Max errors measured over all 2**32 float32 inputs: tanh 2.419 ulp (at 0.0077671753),
# logistic 2.402 ulp.
BOUNDS = {"tanh": 2.45, "logistic": 2.5}


def _logistic64(v):
    return np.exp(-np.logaddexp(0.0, -v))


REFS = {"tanh": np.tanh, "logistic": _logistic64}




def _run(op, x):
    text = (f"HloModule {op}\nENTRY main {{\n  p = f32[{x.size}] parameter(0)\n"
            f"  ROOT o = f32[{x.size}] {op}(p)\n}}\n")
    return CpuBackend().compile(parse_module(text)).execute([x])[0]


def _bits(lo: float, hi: float, stride: int) -> np.ndarray:
    """Every stride-th float32 in [lo, hi] (0 <= lo < hi), with both signs."""
    start = int(np.float32(lo).view(np.uint32))
    stop = int(np.float32(hi).view(np.uint32))
    pos = np.arange(start, stop + 1, stride, dtype=np.uint32).view(np.float32)
    return np.concatenate([pos, -pos])


def _assert_within(op, x, got):
    with np.errstate(all="ignore"):
        err = float32_ulp_error(got, REFS[op](x.astype(np.float64)))
    if err.size == 0:
        return
    k = int(np.argmax(err))
    assert err[k] <= BOUNDS[op], f"{op}({x[k]!r}) = {got[k]!r}: {err[k]:.3f} ulp"


@pytest.mark.parametrize("op, top", [("tanh", 12.0), ("logistic", 110.0)])
def test_dense_sweep(op, top):
    """Every 1021st float32 below `top` (past where the result saturates), both signs, plus
    every float32 within 2**12 patterns of tanh's worst input and within 64 of the points
    where the exp reduction's k steps (odd multiples of ln2/4 for tanh, of ln2/2 for
    logistic)."""
    worst = np.float32(0.0077671753).view(np.uint32)
    near = np.arange(int(worst) - 4096, int(worst) + 4096, dtype=np.uint32).view(np.float32)
    steps = np.float32(np.arange(1, 640, 2) * math.log(2) / 4).view(np.uint32)
    around = (steps[:, None].astype(np.int64) + np.arange(-64, 64)).astype(np.uint32)
    x = np.concatenate([_bits(0.0, top, 1021), near, -near, around.ravel().view(np.float32)])
    _assert_within(op, x, _run(op, x))


def test_random_bit_patterns():
    """Random float32 bit patterns over the whole range, huge magnitudes included."""
    rng = np.random.default_rng(11)
    x = rng.integers(0, 2 ** 32, 1 << 18, dtype=np.uint64).astype(np.uint32).view(np.float32)
    for op in REFS:
        _assert_within(op, x, _run(op, x))


def test_special_values_bitwise():
    fmax = np.finfo(np.float32).max
    tiny = np.arange(1, 1 << 23, 4099, dtype=np.uint32).view(np.float32)  # subnormals
    x = np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 9.0, 10.0,
                                  1e30, fmax, -9.5, -1e30, -fmax, 1.1754944e-38, 2.0 ** -12,
                                  -(2.0 ** -12)], np.float32), tiny, -tiny])
    x64 = x.astype(np.float64)
    t = _run("tanh", x)
    want = np.tanh(x64).astype(np.float32)
    # Equal bit patterns: tanh(-0) is -0, tiny inputs come back unchanged, +-1 from ~9 on.
    finite = ~np.isnan(x)
    np.testing.assert_array_equal(t[finite].view(np.uint32), want[finite].view(np.uint32))
    assert np.isnan(t[~finite]).all()
    s = _run("logistic", x)
    want = _logistic64(x64).astype(np.float32)
    np.testing.assert_array_equal(s[finite], want[finite])
    assert np.isnan(s[~finite]).all()
    assert not np.signbit(s[finite]).any()


def test_logistic_subnormal_results():
    """e**x reaches the subnormals from x = -87.3 on and rounds to 0 below about -103.97."""
    x = np.concatenate([np.linspace(-110, -80, 20011, dtype=np.float32),
                        np.array([-103.97, -103.972, -104.0, -104.5, -200.0], np.float32)])
    got = _run("logistic", x)
    _assert_within("logistic", x, got)
    want = _logistic64(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got == 0, want == 0)


def test_polynomial_coefficients():
    """The shipped coefficients (as float32) against float64 NumPy on their intervals."""
    poly = np.polynomial.polynomial.polyval
    r = np.linspace(-math.log(2) / 2, math.log(2) / 2, 100001)
    exp_c = np.float32(math_approx.EXP_F32_COEFFS).astype(np.float64)
    assert np.max(np.abs(poly(r, exp_c) / np.exp(r) - 1)) < 2.0 ** -27
    r = r[r != 0]
    expm1_c = np.float32(math_approx.EXPM1_F32_COEFFS).astype(np.float64)
    assert np.max(np.abs((r + r * r * poly(r, expm1_c)) / np.expm1(r) - 1)) < 2.0 ** -27


_SIZES = st.one_of(st.just(0), st.just(1), st.integers(2, 70).map(lambda n: 2 * n + 1),
                   st.integers(1, 5000))


@settings(max_examples=10, deadline=None)
@given(rows=st.integers(1, 3), cols=_SIZES, scale=st.sampled_from([0.5, 3.0, 60.0]),
       seed=st.integers(0, 10 ** 6))
@example(rows=3, cols=(1 << 20) // 3 + 5, scale=3.0, seed=0)  # over the threading threshold
def test_jit_any_shape(rows, cols, scale, seed):
    x = (np.random.default_rng(seed).standard_normal((rows, cols)) * scale).astype(np.float32)
    if x.size:
        x.flat[:: max(1, x.size // 7)] = np.float32(-0.0)
    for op, fn in (("tanh", jnp.tanh), ("logistic", minijax.nn.sigmoid)):
        got = np.asarray(minijax.jit(fn)(x))
        assert got.shape == x.shape and got.dtype == np.float32
        _assert_within(op, x.ravel(), got.ravel())
    assert np.array_equal(np.signbit(np.asarray(minijax.jit(jnp.tanh)(x))), np.signbit(x))
