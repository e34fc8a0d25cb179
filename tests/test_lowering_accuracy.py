"""Accuracy of the HLO expansions of the elementwise ops XLA has no opcode for
(minijax/lax/elementwise_lowering.py, special_lowering.py), run through jit on the
"interpreter" and "cpu" backends, in ulps against float64 references.

References: NumPy's float64 functions and the `math` module (erfc, lgamma); digamma and
erf_inv, which neither has, come from minijax.lax.special_math (float64 series checked
against `math` and known values in test_lax_special_math.py) and are cross-checked here
against the round trip through math.erf and the defining identities.

The samples are dense grids over each domain plus logarithmic clusters at the hard spots:
|x| -> 1 for atanh/asin/acos/erf_inv, the argument rounding region of sinh/cosh near their
overflow, erfc's switch from 1 - erf to the complementary form, the zeros of lgamma at 1 and
2 and digamma's root at 1.4616. An error of k ulp means |got - want| <= k spacings of the
float32 value nearest to want (the smallest subnormal at least).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax as jax
from minijax import lax
from minijax.lax import special_math

BACKENDS = ("interpreter", "cpu")
DIGAMMA_ROOT = 1.4616321449683622


def _signed(a):
    return np.concatenate([a, -a])


def _around(c, lo=-8.0, hi=-1.0, n=1500):
    d = np.logspace(lo, hi, n)
    return np.concatenate([c - d, c + d])


_UNIT = np.concatenate([np.linspace(-1, 1, 8001), _around(1.0), _around(-1.0),
                        _signed(np.logspace(-40, 0, 1500))])


def _lgamma_or_pole(v):
    try:
        return math.lgamma(v)
    except ValueError:  # the poles at 0, -1, -2, ...
        return math.inf


_math_lgamma = np.vectorize(_lgamma_or_pole, otypes=[np.float64])
_math_erfc = np.vectorize(math.erfc, otypes=[np.float64])

# name -> (function, float64 reference, samples, max ulp on float32)
CASES = {
    "atanh": (lax.atanh, np.arctanh, _UNIT, 4),
    "asin": (lax.asin, np.arcsin, _UNIT, 4),
    "acos": (lax.acos, np.arccos, _UNIT, 4),
    "atan": (lax.atan, np.arctan, _signed(np.logspace(-40, 38, 6000)), 2),
    "sinh": (lax.sinh, np.sinh, np.concatenate([np.linspace(-89.4, 89.4, 8001),
                                                _signed(np.logspace(-40, 1, 3000))]), 4),
    "cosh": (lax.cosh, np.cosh, np.concatenate([np.linspace(-89.4, 89.4, 8001),
                                                _signed(np.logspace(-40, 1, 3000))]), 4),
    "asinh": (lax.asinh, np.arcsinh, _signed(np.logspace(-40, 38.5, 6000)), 4),
    "acosh": (lax.acosh, np.arccosh, np.concatenate([1 + np.logspace(-7, 38.5, 6000),
                                                     np.linspace(1, 10, 4000)]), 4),
    "exp2": (lax.exp2, np.exp2, np.linspace(-149, 127.9, 8001), 2),
    "erfc": (lax.erfc, _math_erfc, np.concatenate([np.linspace(-6, 10.05, 16001),
                                                   _around(0.5, -7, -1),
                                                   _signed(np.logspace(-40, 0, 1500))]), 6),
    "erf_inv": (lax.erf_inv, special_math.erf_inv, _UNIT, 6),
    "lgamma": (lax.lgamma, _math_lgamma, np.concatenate([
        np.linspace(1e-3, 40, 16001), _around(1.0, -8, -0.5), _around(2.0, -8, -0.5),
        _around(DIGAMMA_ROOT, -8, -0.5), np.logspace(-40, 36, 2000)]), 4),
    "digamma": (lax.digamma, special_math.digamma, np.concatenate([
        np.linspace(1e-3, 40, 16001), _around(DIGAMMA_ROOT, -8, -0.5),
        np.logspace(-40, 36, 2000)]), 4),
}
_JITS: dict = {}


def _run(name, x, backend):
    key = (name, backend)
    if key not in _JITS:
        _JITS[key] = jax.jit(CASES[name][0], backend=backend)
    return np.asarray(_JITS[key](x))


def ulp_errors(got, want, dtype, floor=None):
    """|got - want| in spacings of `dtype` at |want| (or at max(|want|, floor)); NaNs and
    infinities must agree exactly (an error of 0 there, inf otherwise)."""
    got = np.asarray(got, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = want.astype(dtype).astype(np.float64)
        scale = np.abs(want) if floor is None else np.maximum(np.abs(want), floor)
        spacing = np.spacing(scale.astype(dtype)).astype(np.float64)
        spacing = np.maximum(spacing, float(np.finfo(dtype).smallest_subnormal))
        err = np.abs(got - want) / spacing
    special = np.isnan(want) | np.isinf(rounded) | np.isnan(got) | np.isinf(got)
    agree = (np.isnan(got) & np.isnan(want)) | (got == rounded)
    return np.where(special, np.where(agree, 0.0, np.inf), err)


def _check(name, x, got, want, bound, dtype, floor=None):
    err = ulp_errors(got, want, dtype, floor)
    k = int(np.argmax(err)) if err.size else 0
    assert not err.size or err[k] <= bound, (
        f"{name}: {err[k]:.2f} ulp > {bound} at x={x[k]!r}: got {got[k]!r}, want {want[k]!r}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_max_ulp_error(name, backend):
    _, ref, samples, bound = CASES[name]
    x = np.unique(samples.astype(np.float32))
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    got = _run(name, x, backend)
    assert got.dtype == np.float32 and got.shape == x.shape
    _check(name, x, got, want, bound, np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lgamma_exact_zeros_and_digamma_root(backend):
    x = np.array([1.0, 2.0], np.float32)
    out = _run("lgamma", x, backend)
    np.testing.assert_array_equal(out, [0.0, 0.0])
    assert not np.signbit(out).any()
    # Near the zeros the result is relatively accurate, not just absolutely.
    z = np.float32(np.ldexp(1.0, -np.arange(1, 30)))
    x = np.concatenate([1 + z, 1 - z / 2, 2 + 2 * z, 2 - z]).astype(np.float32)
    _check("lgamma", x, _run("lgamma", x, backend), _math_lgamma(x.astype(np.float64)), 4,
           np.float32)
    x = (np.float32(DIGAMMA_ROOT) + np.arange(-300, 301, dtype=np.float32)
         * np.spacing(np.float32(DIGAMMA_ROOT))).astype(np.float32)
    want = special_math.digamma(x.astype(np.float64))
    got = _run("digamma", x, backend)
    _check("digamma", x, got, want, 4, np.float32)
    assert np.abs(got - want).max() < 1e-12 * 300


def _reflection_scale(name, x):
    """The size of the terms the reflection formula adds for x < 0, which bounds the
    attainable absolute accuracy there (lgamma and digamma cross zero between poles)."""
    y = 1 - x
    if name == "lgamma":
        return np.abs(_math_lgamma(y)) + np.abs(np.log(np.abs(np.sin(np.pi * x)))) + 1
    return np.abs(special_math.digamma(y)) + np.abs(np.pi / np.tan(np.pi * x)) + 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_gamma_family_negative_arguments(name, backend):
    x = np.linspace(-30, 0, 12001).astype(np.float32)
    x = x[x != np.round(x)]
    x64 = x.astype(np.float64)
    want = (_math_lgamma if name == "lgamma" else special_math.digamma)(x64)
    got = _run(name, x, backend)
    _check(name, x, got, want, 4, np.float32, floor=_reflection_scale(name, x64))
    # poles: lgamma = inf, digamma = nan; tiny arguments: -log|x| and -1/x
    poles = np.array([0.0, -0.0, -1.0, -7.0, -2.0 ** 30, -np.inf], np.float32)
    out = _run(name, poles, backend)
    if name == "lgamma":
        np.testing.assert_array_equal(out, np.inf)
    else:
        assert np.isnan(out).all()
    tiny = np.float32([1e-30, -1e-30, 3e-39, -3e-39])
    want = _math_lgamma(tiny.astype(np.float64)) if name == "lgamma" else \
        special_math.digamma(tiny.astype(np.float64))
    _check(name, tiny, _run(name, tiny, backend), want, 4, np.float32)


def test_erf_inv_reference_round_trip():
    # The erf_inv reference inverts math.erf: erf(erf_inv(y)) == y to float64 accuracy.
    y = np.concatenate([np.linspace(-0.9999, 0.9999, 2001), 1 - np.logspace(-15, -2, 50)])
    x = special_math.erf_inv(y)
    np.testing.assert_allclose([math.erf(v) for v in x], y, rtol=3e-15, atol=1e-300)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float16_through_float32(backend):
    # 16-bit floats are evaluated in float32 and rounded once (asin/acos in float16, as
    # atan2 of well-conditioned operands): within 1 ulp of float16
    # (2 for asin and acos).
    x = np.linspace(-1, 1, 4001).astype(np.float16)
    for name in ["atanh", "asin", "acos", "erf_inv", "erfc", "sinh", "cosh", "asinh"]:
        want = CASES[name][1](x.astype(np.float64))
        got = _run(name, x, backend)
        assert got.dtype == np.float16
        _check(name, x, got, want, 2 if name in ("asin", "acos") else 1, np.float16)
    x = np.linspace(0.05, 30, 4001).astype(np.float16)
    for name in ["lgamma", "digamma", "acosh"]:
        with np.errstate(invalid="ignore"):
            want = CASES[name][1](x.astype(np.float64))
        _check(name, x, _run(name, x, backend), want, 1, np.float16)




# float64 bounds. lgamma, digamma and erf_inv are within 3 ulp of 30-digit mpmath values; the
# bounds here cover the float64 references' own errors (up to ~13 ulp).
_F64_BOUNDS = {"atanh": 4, "asin": 4, "acos": 4, "sinh": 4, "cosh": 4, "asinh": 4,
               "acosh": 4, "lgamma": 16, "digamma": 16, "erfc": 6, "erf_inv": 16}


@pytest.mark.parametrize("name", sorted(_F64_BOUNDS))
def test_float64_max_ulp_error(name, x64):
    fn, ref, samples, _ = CASES[name]
    x = np.unique(samples)[::4]
    if name in ("lgamma", "digamma"):
        x = x[x < 1e15]
    with np.errstate(all="ignore"):
        want = ref(x)
    got = np.asarray(jax.jit(fn, backend="interpreter")(x))
    assert got.dtype == np.float64
    # The float64 references of lgamma and digamma (CPython's Lanczos lgamma, special_math's
    # digamma) are only absolutely accurate near the zeros: ulps of max(|want|, 1) there.
    floor = 1.0 if name in ("lgamma", "digamma") else None
    _check(name, x, got, want, _F64_BOUNDS[name], np.float64, floor)


@settings(max_examples=25)
@given(name=st.sampled_from(sorted(CASES)), bits=st.lists(
    st.integers(0, 2**32 - 1), min_size=1, max_size=40))
def test_random_float32_bit_patterns(name, bits):
    # Any float32 bit pattern (NaN, inf, subnormals, -0.0): finite errors within the bound
    # on positive gamma arguments and everywhere else; NaN and inf where the reference has.
    x = np.array(bits, np.uint32).view(np.float32)
    _, ref, _, bound = CASES[name]
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    got = _run(name, x, "interpreter")
    floor = None
    if name in ("lgamma", "digamma"):
        with np.errstate(all="ignore"):
            floor = np.where(x < 0, _reflection_scale(name, x.astype(np.float64)), 0)
        floor = np.where(np.isnan(floor), np.inf, floor)
    _check(name, x, got, want, bound, np.float32, floor)
