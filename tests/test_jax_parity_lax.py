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
