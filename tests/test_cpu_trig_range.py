"""sin/cos/tan on the CPU backend over the whole float range (issue 14: jit(sin)(1e34) gave
186255: the float32 argument reduction lost every bit above |x| ~ 1e20).

float32 goes through a Payne-Hanek reduction (codegen/math_approx.py); float64 calls libm.
Reference: NumPy in float64 (correctly reduced) on a dense log-spaced sweep of both signs
up to the largest finite value, plus the float32 closest to a multiple of pi/2.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")

import minijax as jax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.test_util import float32_ulp_error  # noqa: E402

# The float32 nearest a multiple of pi/2 (2**-29.9 quarter turns from it), and its neighbour
# in the next binade; found by scanning every float32 mantissa and exponent.
HARD_F32 = [16367173 * 2.0 ** 72, 16367173 * 2.0 ** 73, 10741887 * 2.0 ** 11]


def _trig_module(et, n):
    return parse_module(f"""HloModule trig
ENTRY main {{
  x = {et}[{n}] parameter(0)
  s = {et}[{n}] sine(x)
  c = {et}[{n}] cosine(x)
  t = {et}[{n}] tan(x)
  ROOT r = ({et}[{n}], {et}[{n}], {et}[{n}]) tuple(s, c, t)
}}
""")


def test_float32_sweep_to_float_max_within_one_ulp():
    pos = np.geomspace(np.finfo(np.float32).smallest_subnormal, np.finfo(np.float32).max,
                       200_000).astype(np.float32)
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 0x7F800000, 50_000, dtype=np.uint32).view(np.float32)
    x = np.concatenate([pos, -pos, bits, -bits, np.array(HARD_F32, np.float32)])
    got = CpuBackend().compile(_trig_module("f32", x.size)).execute([x])
    x64 = x.astype(np.float64)
    for g, fn in zip(got, (np.sin, np.cos, np.tan)):
        err = float32_ulp_error(g, fn(x64))
        k = int(np.argmax(err))
        assert err[k] <= 1.0, f"{fn.__name__}({x[k]!r}) = {g[k]!r}, want {fn(x64[k])!r}"


def test_float32_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1e-30, 1e-45], np.float32)
    s, c, t = CpuBackend().compile(_trig_module("f32", x.size)).execute([x])
    np.testing.assert_array_equal(np.signbit(s[:2]), [False, True])
    np.testing.assert_array_equal(np.signbit(t[:2]), [False, True])
    assert np.isnan(s[2:5]).all() and np.isnan(c[2:5]).all() and np.isnan(t[2:5]).all()
    np.testing.assert_array_equal(c[:2], [1.0, 1.0])
    np.testing.assert_array_equal(s[5:], x[5:])
    np.testing.assert_array_equal(t[5:], x[5:])


def test_float64_sweep_to_float_max():
    # Log-spaced: a mantissa in [0.5, 1) times every power of two of the float64 range.
    rng = np.random.default_rng(1)
    exps = np.repeat(np.arange(-1073, 1025), 25)
    pos = np.ldexp(rng.uniform(0.5, 1.0, exps.size), exps)
    x = np.concatenate([pos, -pos])
    got = CpuBackend().compile(_trig_module("f64", x.size)).execute([x])
    for g, fn in zip(got, (np.sin, np.cos, np.tan)):
        np.testing.assert_allclose(g, fn(x), rtol=4e-16, atol=1e-300, err_msg=fn.__name__)


def test_issue_reproducer_large_argument_under_jit():
    # NumPy float64 sin/cos of float32(1e34) (XLA reduces exactly as well).
    np.testing.assert_allclose(float(jax.jit(jnp.sin)(jnp.float32(1e34))), -0.39340670,
                               rtol=1e-6)
    np.testing.assert_allclose(float(jax.jit(jnp.cos)(jnp.float32(1e34))), -0.91936455,
                               rtol=1e-6)
    x = jnp.array([1e34, -3e38, 7.729179e28], jnp.float32)
    np.testing.assert_allclose(np.asarray(jax.jit(jnp.sin)(x)),
                               np.sin(np.asarray(x).astype(np.float64)), rtol=1e-6)
