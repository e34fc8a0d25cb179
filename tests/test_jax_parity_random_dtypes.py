"""minijax.random's bfloat16, float16 and float64 draws against JAX 0.10.2's (CPU, threefry,
PRNGKey(0)), bit for bit: the 16-bit samplers compute log/log1p/exp/erf_inv as XLA does (in
float32, rounded back after each operation) and fold (floats - 1) + minval as XLA's
simplifier does; float64 uses XLA's exp, log1p and erf_inv (minijax/random/xla_f64.py).

The recorded values (bit patterns) run without JAX; live comparisons skip when jax is absent.
"""

import ml_dtypes
import numpy as np
import pytest

import minijax
import minijax.random as random
from minijax.random import xla_f64

try:
    import jax
    import jax.random as jrandom
except ImportError:  # CI has no JAX: the recorded values below still run
    jax = None

needs_jax = pytest.mark.skipif(jax is None, reason="JAX is not importable")

SAMPLERS = {
    "uniform": lambda r, k, d, n: r.uniform(k, (n,), d),
    "normal": lambda r, k, d, n: r.normal(k, (n,), d),
    "exponential": lambda r, k, d, n: r.exponential(k, (n,), d),
    "gumbel": lambda r, k, d, n: r.gumbel(k, (n,), d),
    "logistic": lambda r, k, d, n: r.logistic(k, (n,), d),
    "laplace": lambda r, k, d, n: r.laplace(k, (n,), d),
    "pareto": lambda r, k, d, n: r.pareto(k, 3.0, (n,), d),
    "truncated_normal": lambda r, k, d, n: r.truncated_normal(k, -1.5, 2.0, (n,), d),
    "cauchy": lambda r, k, d, n: r.cauchy(k, (n,), d),
}
DTYPES = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16, "float64": np.float64}
BITS = {"bfloat16": np.uint16, "float16": np.uint16, "float64": np.uint64}

# Bit patterns of SAMPLERS[name](jax.random, jax.random.PRNGKey(0), dtype, 4), JAX 0.10.2.
EXPECTED = {
    ("uniform", "bfloat16"): [0x3f26, 0x3f12, 0x3e20, 0x3e50],
    ("normal", "bfloat16"): [0x3ec6, 0x3e3b, 0xbf80, 0xbf53],
    ("exponential", "bfloat16"): [0x3f86, 0x3f58, 0x3e2e, 0x3e69],
    ("gumbel", "bfloat16"): [0x3f56, 0x3f13, 0xbf1f, 0xbeef],
    ("logistic", "bfloat16"): [0x3f1d, 0x3e90, 0xbfd8, 0xbfaf],
    ("laplace", "bfloat16"): [0xbeb7, 0xbe20, 0x3f93, 0x3f64],
    ("pareto", "bfloat16"): [0x3fb6, 0x3faa, 0x3f87, 0x3f8a],
    ("uniform", "float16"): [0x34f8, 0x32d0, 0x2b00, 0x3940],
    ("normal", "float16"): [0xb7e6, 0xba5d, 0xbe65, 0x3672],
    ("exponential", "float16"): [0x35f3, 0x33a9, 0x2b33, 0x3c45],
    ("gumbel", "float16"): [0xb0ff, 0xb6fb, 0xbc44, 0x3aeb],
    ("logistic", "float16"): [0xba60, 0xbd3b, 0xc1b3, 0x392c],
    ("laplace", "float16"): [0x379c, 0x3ad2, 0x406b, 0xb602],
    ("pareto", "float16"): [0x3c87, 0x3c55, 0x3c13, 0x3db5],
    ("uniform", "float64"): [
        0x3fdac80056666e90, 0x3fcbaf91c7e6ed88, 0x3feee3e9d53441c8, 0x3fe2624ef17c9d1a],
    ("normal", "float64"): [
        0xbfca5909049a141d, 0xbfe91ccd1e1b7b4a, 0x3ffd0eb0e61cf797, 0x3fc80b45ca1069ab],
    ("exponential", "float64"): [
        0x3fe158a45952b5d7, 0x3fcf3252427a18a6, 0x400ae4a080aa735f, 0x3feb57febcb573aa],
    ("gumbel", "float64"): [
        0x3fc1a6e485559698, 0xbfdb4377e0f6ef1f, 0x400ac0979318431a, 0x3fe2e25bfef34d71],
    ("logistic", "float64"): [
        0xbfd51024bb660ba8, 0xbff49922e02309e3, 0x400a9c5839093b99, 0x3fd33716a533c4c4],
    ("laplace", "float64"): [
        0x3fc6c9cee02e06eb, 0x3fead09751ea5fff, 0xc005590fc0ebe4e7, 0xbfc4a6eef6ece6f1],
    ("pareto", "float64"): [
        0x3ff32b3021fdeee3, 0x3ff15aa76da67e31, 0x4008883ddd4cc8dc, 0x3ff545c843bfb216],
    ("truncated_normal", "bfloat16"): [0x3ece, 0x3e5e, 0xbf50, 0xbf2c],
    ("truncated_normal", "float16"): [0xb62e, 0xb922, 0xbcc4, 0x36c7],
    ("truncated_normal", "float64"): [
        0xbfc0ccd4799f3225, 0xbfe43861c37b1c2b, 0x3ff9ab4028c2fb3a, 0x3fcd1423fc942958],
    ("cauchy", "bfloat16"): [0x3f05, 0x3e73, 0xbfe2, 0xbfa6],
    ("cauchy", "float16"): [0xb963, 0xbd09, 0xc5a5, 0x384a],
    ("cauchy", "float64"): [
        0xbfd0c373fa3bd15d, 0xbff3ce37a06a3a9c, 0x402248f97c8bd239, 0x3fce848a6e1dc4fd],
}


@pytest.fixture
def x64():
    minijax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        minijax.config.update("jax_enable_x64", False)


def _draw(lib, name, dtype, n, seed=0, jit=False):
    fn = SAMPLERS[name]
    if jit:
        jit_fn = (minijax.jit if lib is random else jax.jit)(
            lambda k: fn(lib, k, DTYPES[dtype], n))
        return np.asarray(jit_fn(lib.PRNGKey(seed)))
    return np.asarray(fn(lib, lib.PRNGKey(seed), DTYPES[dtype], n))


@pytest.mark.parametrize("name,dtype", sorted(EXPECTED))
def test_recorded_jax_bits(name, dtype, request):
    if dtype == "float64":
        request.getfixturevalue("x64")
    got = _draw(random, name, dtype, 4)
    assert got.dtype == np.dtype(DTYPES[dtype])
    np.testing.assert_array_equal(got.view(BITS[dtype]),
                                  np.asarray(EXPECTED[name, dtype], BITS[dtype]), err_msg=name)


# sum(i * bits[i - 1]) mod 2**64 over SAMPLERS[name](jax.random, PRNGKey(1), dtype, 2000)'s bit
# patterns, JAX 0.10.2: 2000 draws reach the rare roundings that 4 draws miss.
CHECKSUMS = {
    ("uniform", "bfloat16"): 0x770a1fc80,
    ("uniform", "float16"): 0x674f43d3c,
    ("uniform", "float64"): 0xc866edfe82dfd69c,
    ("normal", "bfloat16"): 0xef374e78f,
    ("normal", "float16"): 0xe6bb7cdf9,
    ("normal", "float64"): 0xa48d240cf941548b,
    ("exponential", "bfloat16"): 0x779dcb4df,
    ("exponential", "float16"): 0x6bf919aea,
    ("exponential", "float64"): 0xe6f899e537a6e04a,
    ("gumbel", "bfloat16"): 0xd306ee589,
    ("gumbel", "float16"): 0xc54c59c74,
    ("gumbel", "float64"): 0x701a02e4f30a2519,
    ("logistic", "bfloat16"): 0xee5d5cf2f,
    ("logistic", "float16"): 0xec45179f3,
    ("logistic", "float64"): 0x3635f4da4fd115d7,
    ("laplace", "bfloat16"): 0xf59c3a5fb,
    ("laplace", "float16"): 0xe3490353d,
    ("laplace", "float64"): 0xc66030a8dbf13c60,
    ("pareto", "bfloat16"): 0x7994915b4,
    ("pareto", "float16"): 0x75c9de2c2,
    ("pareto", "float64"): 0x759f4cc520181fe6,
    ("truncated_normal", "bfloat16"): 0xea6f36ea7,
    ("truncated_normal", "float16"): 0xe045c2be5,
    ("truncated_normal", "float64"): 0x1922f7ce24ce7c21,
    ("cauchy", "bfloat16"): 0xf00ee5acc,
    ("cauchy", "float16"): 0xed856b155,
    ("cauchy", "float64"): 0xd0b64b80d28b8dad,
}


def _checksum(values, dtype):
    bits = np.asarray(values).view(BITS[dtype]).astype(np.uint64)
    return int((bits * np.arange(1, bits.size + 1, dtype=np.uint64)).sum(dtype=np.uint64))


@pytest.mark.parametrize("name,dtype", sorted(CHECKSUMS))
def test_recorded_jax_checksums(name, dtype, request):
    if dtype == "float64":
        request.getfixturevalue("x64")
    assert hex(_checksum(_draw(random, name, dtype, 2000, seed=1), dtype)) == \
        hex(CHECKSUMS[name, dtype])


def test_table_covers_samplers_and_dtypes():
    assert set(EXPECTED) == set(CHECKSUMS) == {(n, d) for n in SAMPLERS for d in DTYPES}


@needs_jax
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_live_16bit_eager_and_jit(name, dtype):
    want = _draw(jrandom, name, dtype, 3000, seed=2024)
    np.testing.assert_array_equal(_draw(random, name, dtype, 3000, seed=2024).view(np.uint16),
                                  want.view(np.uint16))
    np.testing.assert_array_equal(_draw(random, name, dtype, 500, seed=7, jit=True)
                                  .view(np.uint16),
                                  _draw(jrandom, name, dtype, 500, seed=7, jit=True)
                                  .view(np.uint16))


@needs_jax
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_live_float64_eager(name, x64):
    jax.config.update("jax_enable_x64", True)
    try:
        want = _draw(jrandom, name, "float64", 3000, seed=2024)
    finally:
        jax.config.update("jax_enable_x64", False)
    np.testing.assert_array_equal(_draw(random, name, "float64", 3000, seed=2024), want)


# --------------------------------------------------------------------------- xla_f64

F64_INPUTS = np.asarray([-0.999999999, -0.5, 1e-300, 0.3, 0.9999999, 1 - 2.0**-52])
EXP_INPUTS = np.asarray([-745.0, -708.5, -1.5, 0.1, 3.7, 700.0])
# jax.lax.<fn>(inputs) in float64, JAX 0.10.2 CPU, as bit patterns
F64_EXPECTED = {
    "erf_inv": [
        0xc01147af7e10db16, 0xbfde861fbb24c008, 0x1a2fdf36bf69ba0, 0x3fd1700774485ed3,
        0x400e21eb90139ebd, 0x40173856d153f081],
    "log1p": [
        0xc034b927f3a57808, 0xbfe62e42fefa39ef, 0x1a56e1fc2f8f359, 0x3fd0ca937be1b9dc,
        0x3fe62e42e422474a, 0x3fe62e42fefa39ee],
    "exp": [
        0x0, 0x0, 0x3fcc8f87724b5c1d, 0x3ff1aec7b35a00d4, 0x4044394144eeec81,
        0x7f0d945df4f8ec8e],
}


@pytest.mark.parametrize("fn", sorted(F64_EXPECTED))
def test_xla_f64_recorded_bits(fn):
    x = EXP_INPUTS if fn == "exp" else F64_INPUTS
    got = np.asarray(getattr(xla_f64, fn)(x))
    np.testing.assert_array_equal(got.view(np.uint64), np.asarray(F64_EXPECTED[fn], np.uint64))


@pytest.mark.parametrize("fn", ["erf_inv", "log1p", "exp"])
def test_xla_f64_accurate_and_jax_bits(fn):
    rng = np.random.default_rng(3)
    if fn == "exp":
        x = rng.uniform(-700, 700, 5000)
    elif fn == "erf_inv":
        x = np.concatenate([rng.uniform(-1, 1, 4000), 1 - rng.uniform(0, 1e-8, 500),
                            -1 + np.exp2(-rng.integers(20, 53, 500))])
    else:
        x = rng.uniform(0, 1, 5000) * np.exp2(rng.integers(-30, 30, 5000))
    got = np.asarray(getattr(xla_f64, fn)(x))
    scipy_special = pytest.importorskip("scipy.special")
    ref = {"exp": np.exp, "log1p": np.log1p, "erf_inv": scipy_special.erfinv}[fn](x)
    if fn == "erf_inv":
        # XLA forms 1 - x * x in float64 before its log, so near |x| = 1 JAX's erf_inv
        # keeps about 9 digits; elsewhere it is accurate to rounding
        inner = np.abs(x) < 0.9
        np.testing.assert_allclose(got[inner], ref[inner], rtol=1e-14)
        np.testing.assert_allclose(got, ref, rtol=1e-9)
    else:
        np.testing.assert_allclose(got, ref, rtol=4e-16)
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        try:
            want = np.asarray(getattr(jax.lax, fn)(x))
        finally:
            jax.config.update("jax_enable_x64", False)
        np.testing.assert_array_equal(got, want)


def test_xla_f64_traced_agrees_to_rounding(x64):
    x = np.linspace(-0.99, 0.99, 41)
    for fn in (xla_f64.erf_inv, xla_f64.log1p):
        np.testing.assert_allclose(minijax.jit(fn)(x), fn(x), rtol=1e-15, atol=1e-300)
    e = np.linspace(-50, 50, 41)
    np.testing.assert_array_equal(minijax.jit(xla_f64.exp)(e), xla_f64.exp(e))


def test_emulated_fma_rounds_once(x64):
    a, b = 1 + 2.0**-52, 1 - 2.0**-52
    got = minijax.jit(xla_f64.emulated_fma)(np.float64(a), np.float64(b), np.float64(-1))
    assert float(got) == -(2.0**-104)
