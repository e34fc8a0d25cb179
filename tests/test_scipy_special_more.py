"""minijax.scipy.special's gamma relatives, integrals, zeta/polygamma, hypergeometric and
Bessel functions: values against scipy.special over hypothesis-drawn arguments (float64 and
float32 tolerances), JAX's conventions at poles and domain edges (JAX 0.10.2's values
hard-coded), gradients against finite differences, jit and vmap."""

import numpy as np
import pytest
import scipy.special as ss
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minijax
from minijax.scipy import special
from minijax.test_util import check_grads, check_vmap, enable_x64


def floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=64)


def arrays(lo, hi, n=8):
    return hnp.arrays(np.float64, n, elements=floats(lo, hi))


# name: (scipy reference, argument ranges, float64 rtol, float32 rtol)
CASES = {
    "gamma": (ss.gamma, [(-20, 40)], 1e-12, 5e-5),
    "gammasgn": (ss.gammasgn, [(-20, 40)], 0, 0),
    "loggamma": (ss.loggamma, [(1e-3, 1e3)], 1e-13, 2e-6),
    "beta": (ss.beta, [(0.05, 20), (0.05, 20)], 1e-12, 5e-5),
    "factorial": (ss.factorial, [(0, 100)], 1e-12, 5e-5),
    "comb": (ss.comb, [(0, 50), (0, 50)], 1e-11, 5e-5),
    "poch": (ss.poch, [(0.1, 10), (-3, 10)], 1e-12, 5e-5),
    "zeta": (ss.zeta, [(1.05, 30), (0.05, 40)], 1e-12, 5e-5),
    "erfcx": (ss.erfcx, [(-5, 1e3)], 1e-13, 1e-5),
    "dawsn": (ss.dawsn, [(-50, 50)], 1e-13, 1e-5),
    "exp1": (ss.exp1, [(1e-4, 80)], 1e-13, 2e-5),
    "expn": (ss.expn, [(0, 12), (0, 40)], 1e-12, 2e-5),
    "spence": (ss.spence, [(0, 1e4)], 1e-13, 1e-5),
    "owens_t": (ss.owens_t, [(-7, 7), (-20, 20)], 1e-12, 1e-5),
    # p log(p / q) - p + q cancels near p == q: float32 is held to an absolute 1e-6
    "kl_div": (ss.kl_div, [(-1, 3), (-1, 3)], 1e-13, 1e-3),
    # float32 p log(p / q) near p == q loses digits to rounding of p / q: JAX gives
    # rel_entr(0.65625, 0.65234375) = 0.0039179027, 2.8e-6 from the float64 value.
    "rel_entr": (ss.rel_entr, [(-1, 3), (-1, 3)], 1e-14, 1e-5),
    "boxcox": (ss.boxcox, [(1e-3, 100), (-3, 3)], 1e-13, 1e-5),
    "boxcox1p": (ss.boxcox1p, [(-0.9, 100), (-3, 3)], 1e-13, 1e-5),
    "hyp1f1": (ss.hyp1f1, [(0.1, 5), (0.1, 5), (-20, 20)], 1e-11, 1e-4),
    "hyp2f1": (ss.hyp2f1, [(0.1, 4), (0.1, 4), (0.1, 6), (-5, 0.9)], 1e-11, 1e-4),
}
INTEGER_FIRST = {"expn"}


def _draw(data, name):
    ref, ranges, _, _ = CASES[name]
    args = [data.draw(arrays(lo, hi)) for lo, hi in ranges]
    if name in INTEGER_FIRST:
        args[0] = np.floor(args[0])
    return ref, args


def _compare(got, want, rtol, dtype, atol=None):
    got = np.asarray(got, np.float64)
    big = np.finfo(dtype).max / 10
    tiny = np.finfo(dtype).tiny * 1e4
    keep = np.isfinite(want) & (np.abs(want) < big) & ((np.abs(want) > tiny) | (want == 0))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    atol = rtol * 1e-3 if atol is None else atol
    np.testing.assert_allclose(got[keep], want[keep], rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_values_float64(name, data):
    ref, args = _draw(data, name)
    with enable_x64():
        got = getattr(special, name)(*args)
    assert got.dtype == np.float64
    _compare(got, ref(*args), CASES[name][2], np.float64)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_values_float32(name, data):
    ref, args = _draw(data, name)
    args32 = [a.astype(np.float32) for a in args]
    got = getattr(special, name)(*args32)
    assert got.dtype == np.float32
    _compare(got, ref(*[a.astype(np.float64) for a in args32]), CASES[name][3], np.float32,
             atol=1e-6 if name == "kl_div" else None)


@settings(max_examples=10, deadline=None)
@given(x=arrays(-40, 40), n=st.integers(0, 6))
def test_polygamma_sici_fresnel_bessel(x, n):
    with enable_x64():
        _check_polygamma_sici_fresnel_bessel(x, n)


def _check_polygamma_sici_fresnel_bessel(x, n):
    q = np.abs(x) + 0.05
    np.testing.assert_allclose(special.polygamma(np.full(8, n), q), ss.polygamma(n, q),
                               rtol=1e-11)
    for ours, ref in ((special.sici, ss.sici), (special.fresnel, ss.fresnel)):
        for got, want in zip(ours(x), ref(x)):
            np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-14)
    z = x / 2
    np.testing.assert_allclose(special.bessel_jn(z, v=n),
                               ss.jv(np.arange(n + 1)[:, None], z), atol=1e-13)


def test_bernoulli_softmax():
    np.testing.assert_allclose(special.bernoulli(8),
                               [1, -0.5, 1 / 6, 0, -1 / 30, 0, 1 / 42, 0, -1 / 30], rtol=1e-7)
    x = np.array([[1.0, 2.0], [3.0, 5.0]], np.float32)
    np.testing.assert_allclose(special.softmax(x), np.exp(x) / np.exp(x).sum(), rtol=1e-6)
    np.testing.assert_allclose(special.log_softmax(x, axis=0),
                               x - np.log(np.exp(x).sum(0)), rtol=1e-6)


NAN, INF = np.nan, np.inf


def test_jax_conventions_at_poles_and_edges():
    x = np.array([-2.0, -1.5, -0.5, 0.0, -0.0, 0.5, 2.5, INF, -INF, NAN], np.float32)
    # JAX 0.10.2's values on these arguments
    np.testing.assert_allclose(special.gamma(x), [NAN, 2.3632715, -3.5449064, INF, -INF,
                                                  1.7724535, 1.3293406, INF, NAN, NAN],
                               rtol=2e-6)
    np.testing.assert_array_equal(special.gammasgn(x),
                                  [NAN, 1, -1, 1, -1, 1, 1, 1, NAN, NAN])
    np.testing.assert_allclose(special.loggamma(x), [NAN] * 5 + [0.5723649, 0.2846829, INF,
                                                                 NAN, NAN], rtol=2e-6)
    np.testing.assert_allclose(special.exp1(x), [NAN] * 3 + [INF, INF, 0.5597736, 0.02491492,
                                                              0, NAN, NAN], rtol=2e-6)
    np.testing.assert_allclose(special.spence(x), [NAN] * 3 + [1.644934, 1.644934, 0.5822405,
                                                                -1.1473806, NAN, NAN, NAN],
                               rtol=2e-6)
    si, ci = special.sici(x)
    np.testing.assert_allclose(ci, [0.42298084, 0.47035635, -0.17778407, -INF, -INF,
                                    -0.17778407, 0.28587127, 0, NAN, NAN], rtol=2e-6)
    np.testing.assert_allclose(si[-3:-1], [np.pi / 2, -np.pi / 2], rtol=1e-7)
    np.testing.assert_allclose(np.asarray(special.erfcx(x))[[0, 3, 7, 8]], [108.94092, 1, 0, INF],
                               rtol=2e-6)
    a = np.array([-1.0, 0.0, 0.5, 2.0], np.float32)
    np.testing.assert_allclose(special.beta(a, np.array([1.0, 1, 0.5, -0.5], np.float32)),
                               [NAN, INF, np.pi, -4.0], rtol=2e-6)
    np.testing.assert_allclose(special.factorial(np.array([-1.0, 0, 3, 3.5])),
                               [0, 1, 6, 11.631728], rtol=2e-6)
    np.testing.assert_allclose(special.comb(np.array([5.0, 5, -1, 3.5, 2]),
                                            np.array([0.0, 6, 1, 2, -1])), [1, 0, 0, 4.375, 0],
                               rtol=2e-6)
    np.testing.assert_allclose(special.comb(5, 2, repetition=True), 15, rtol=2e-6)
    np.testing.assert_allclose(special.poch(np.array([1.0, -1, 0, -2]),
                                            np.array([3.0, 2, 0, 1])), [6, NAN, 1, NAN],
                               rtol=2e-6)
    np.testing.assert_allclose(special.zeta(np.array([2.0, 1, 0.5, 3, 2, 4]),
                                            np.array([1.0, 1, 1, -1, -0.5, 0])),
                               [1.644934, INF, NAN, NAN, 8.934802, INF], rtol=2e-6)
    np.testing.assert_allclose(special.expn(np.array([0.0, 2, -1, 2.5, 3, 0]),
                                            np.array([1.0, 0, 1, 1, -1, 0])),
                               [0.36787945, 1.0, NAN, NAN, NAN, INF], rtol=2e-6)
    # (JAX 0.10.2 gives 0.5 for expn(2, 0); E_n(0) = 1 / (n - 1), as scipy)
    np.testing.assert_allclose(special.kl_div(np.array([0.0, 1, -1, 0]),
                                              np.array([1.0, 0, 1, 0])), [1, INF, INF, 0])
    np.testing.assert_allclose(special.rel_entr(np.array([0.0, 1, -1, 0]),
                                                np.array([1.0, 0, 1, 0])), [0, INF, INF, 0])
    np.testing.assert_allclose(special.polygamma(np.array([0, 1, 2, 1, -1, 3]),
                                                 np.array([0.5, 0.5, 0.5, -1, 0.5, -1.5])),
                               [-1.96351, 4.934802, -16.828799, INF, NAN, 194.59445],
                               rtol=2e-6)
    assert special.gamma(np.arange(3)).dtype == np.float32


def test_errors():
    with pytest.raises(ValueError, match="integer type"):
        special.polygamma(1.0, 2.0)
    with pytest.raises(NotImplementedError, match="Riemann"):
        special.zeta(2.0)
    with pytest.raises(NotImplementedError, match="exact"):
        special.factorial(3, exact=True)


GRADS = [
    ("gamma", (2.3,)), ("beta", (1.7, 2.4)), ("poch", (1.5, 2.2)), ("erfcx", (0.7,)),
    ("erfcx", (3.1,)), ("dawsn", (1.3,)), ("dawsn", (7.5,)), ("exp1", (0.6,)),
    ("exp1", (3.0,)), ("spence", (0.3,)), ("spence", (1.4,)), ("spence", (5.0,)),
    ("owens_t", (0.8, 0.6)), ("owens_t", (1.2, 2.5)), ("hyp1f1", (1.2, 2.3, -1.5)),
    ("hyp2f1", (0.7, 1.1, 2.3, 0.4)), ("boxcox", (2.0, 0.7)), ("kl_div", (0.6, 1.3)),
    ("loggamma", (3.3,)),
]


@pytest.mark.parametrize("name, args", GRADS)
def test_gradients_match_finite_differences(name, args, x64):
    check_grads(getattr(special, name), tuple(np.float64(a) for a in args), order=1,
                modes=("rev",), atol=1e-6, rtol=1e-6)


def test_tuple_outputs_and_bessel_gradients(x64):
    for x in (1.2, 6.0):
        check_grads(lambda v: special.sici(v)[0] + 2 * special.sici(v)[1], (x,), order=1,
                    modes=("rev",), atol=1e-6, rtol=1e-6)
        check_grads(lambda v: special.fresnel(v)[0] - special.fresnel(v)[1], (x,), order=1,
                    modes=("rev",), atol=1e-6, rtol=1e-6)
    # d/dz J0 = -J1; d/dx zeta(s, x) = -s zeta(s + 1, x); d/dx polygamma(n, x) = polygamma(n+1)
    np.testing.assert_allclose(minijax.grad(lambda z: special.bessel_jn(z, v=1)[0])(2.0),
                               -ss.j1(2.0), rtol=1e-10)
    np.testing.assert_allclose(minijax.grad(lambda q: special.zeta(3.0, q))(1.5),
                               -3 * ss.zeta(4.0, 1.5), rtol=1e-10)
    np.testing.assert_allclose(minijax.grad(lambda q: special.polygamma(1, q))(1.5),
                               ss.polygamma(2, 1.5), rtol=1e-10)


def test_jit_and_vmap():
    a = np.linspace(0.2, 3, 6).astype(np.float32)
    x = np.linspace(-2, 2, 6).astype(np.float32)
    check_vmap(special.hyp1f1, (a, a + 1, x), atol=1e-5, rtol=1e-5)
    check_vmap(special.owens_t, (x, a), atol=1e-6, rtol=1e-5)
    jitted = minijax.jit(lambda v: (special.gamma(v), special.dawsn(v), special.spence(v)))
    for got, ref in zip(jitted(a), (ss.gamma, ss.dawsn, ss.spence)):
        np.testing.assert_allclose(got, ref(a.astype(np.float64)), rtol=5e-5)
    out = minijax.jit(lambda v: special.bessel_jn(v, v=3))(x)
    assert out.shape == (4, 6)
    np.testing.assert_allclose(out, ss.jv(np.arange(4)[:, None], x), atol=1e-6)


@settings(max_examples=10, deadline=None)
@given(re=arrays(-30, 30), im=arrays(-4, 30))
def test_wofz_matches_scipy(re, im):
    z = re + 1j * im
    want = ss.wofz(z)
    with enable_x64():
        got = special.wofz(z)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    got32 = special.wofz(z.astype(np.complex64))
    assert got32.dtype == np.complex64
    ok = np.abs(want) < 1e30
    np.testing.assert_allclose(np.asarray(got32)[ok], want[ok], rtol=2e-5, atol=1e-30)


def test_wofz_real_input_and_gradient():
    # JAX 0.10.2's values; w'(z) = -2 z w(z) + 2i/sqrt(pi), so d/dx Re w(x) = -2 x Re w(x)
    np.testing.assert_allclose(special.wofz(np.array([1.0, 0.5], np.float32)),
                               [0.36787948 + 0.60715777j, 0.7788009 + 0.4789253j], rtol=1e-6)
    np.testing.assert_allclose(minijax.grad(lambda x: special.wofz(x).real)(1.0), -0.73575896,
                               rtol=1e-5)
