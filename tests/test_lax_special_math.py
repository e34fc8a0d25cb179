"""Accuracy of the float64 NumPy special functions in minijax.lax.special_math against the
`math` module, known values and identities (scipy only as an extra check)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minijax.lax import special_math


def test_special_math_against_math_module():
    xs = np.concatenate([np.linspace(-7, 7, 1401), [1e-300, -1e-12, 27.0, 1e3]])
    np.testing.assert_allclose(special_math.erf(xs), [math.erf(v) for v in xs], rtol=2e-15,
                               atol=1e-300)
    np.testing.assert_allclose(special_math.erfc(xs), [math.erfc(v) for v in xs], rtol=5e-14,
                               atol=1e-300)
    gs = np.concatenate([np.linspace(-30.25, 60, 2001), [1e-9, 0.5, 1, 2, 171.3, 1e6, 1e15]])
    np.testing.assert_allclose(special_math.lgamma(gs), [math.lgamma(v) for v in gs],
                               rtol=1e-14, atol=5e-15)


def test_special_math_known_values():
    euler = 0.5772156649015329
    xs = np.array([1.0, 0.5, 2.0, 5.0, 0.25, -0.5, 1.4616321449683623])
    want = [-euler, -euler - 2 * math.log(2), 1 - euler, 1 + 1 / 2 + 1 / 3 + 1 / 4 - euler,
            -math.pi / 2 - 3 * math.log(2) - euler, 0.03648997397857652, 0.0]
    np.testing.assert_allclose(special_math.digamma(xs), want, rtol=1e-14, atol=1e-15)
    # trigamma(1) = pi^2/6, trigamma(1/2) = pi^2/2
    np.testing.assert_allclose(special_math.trigamma(np.array([1.0, 0.5])),
                               [math.pi ** 2 / 6, math.pi ** 2 / 2], rtol=1e-14)
    # erfinv: erf(erfinv(y)) == y, and two tabulated values
    ys = np.concatenate([np.linspace(-0.999, 0.999, 999), [1 - 1e-12, -1e-300]])
    np.testing.assert_allclose([math.erf(v) for v in special_math.erf_inv(ys)], ys,
                               rtol=2e-15, atol=1e-300)
    np.testing.assert_allclose(special_math.erf_inv(np.array([0.5, 0.9])),
                               [0.4769362762044699, 1.1630871536766743], rtol=1e-15)


def test_special_math_edges():
    inf, nan = np.inf, np.nan
    np.testing.assert_array_equal(special_math.lgamma(np.array([0.0, -3.0, inf, -inf])),
                                  [inf] * 4)
    assert np.isnan(special_math.lgamma(np.array([nan]))).all()
    d = special_math.digamma(np.array([0.0, -2.0, inf, -inf, nan]))
    assert np.isnan(d[[0, 1, 3, 4]]).all() and d[2] == inf
    np.testing.assert_array_equal(special_math.erf_inv(np.array([1.0, -1.0, 0.0])),
                                  [inf, -inf, 0])
    assert np.isnan(special_math.erf_inv(np.array([1.5, nan]))).all()
    np.testing.assert_array_equal(special_math.erfc(np.array([inf, -inf])), [0, 2])


def test_special_math_against_scipy():
    sc = pytest.importorskip("scipy.special")
    xs = np.linspace(-9.7, 40, 3001)
    np.testing.assert_allclose(special_math.digamma(xs), sc.digamma(xs), rtol=1e-12,
                               atol=1e-12)
    ys = np.linspace(-0.9999, 0.9999, 2001)
    np.testing.assert_allclose(special_math.erf_inv(ys), sc.erfinv(ys), rtol=1e-13)
