"""minijax.scipy.stats against scipy.stats (values over hypothesis-drawn parameters),
finite differences (gradients), a Python loop (vmap), and JAX's edge-case semantics."""

import importlib
import inspect

import numpy as np
import pytest
import scipy.special as ss_special
import scipy.stats as ss
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax.scipy import special, stats

_KINDS = {
    "real": st.floats(-4, 4),
    "pos": st.floats(0.3, 4),
    "shape": st.floats(0.4, 12),
    "prob": st.floats(0.05, 0.95),
    "q": st.floats(0.02, 0.98),
    "int": st.integers(0, 14).map(float),
    "n": st.integers(1, 20).map(float),
    "unit": st.floats(0.02, 0.98),
    "kappa": st.floats(0.1, 30),
    "angle": st.floats(-3.1, 3.1),
    "angle2pi": st.floats(0.01, 6.2),
    "xpos": st.floats(0.01, 15),
}

# (distribution, functions, argument kinds per function group, optional prep of the drawn
# arguments). Arguments are in JAX's (= scipy's) order.
_CONT = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]
CASES = [
    ("norm", _CONT, ["real", "real", "pos"], None),
    ("norm", ["ppf", "isf"], ["q", "real", "pos"], None),
    ("cauchy", _CONT, ["real", "real", "pos"], None),
    ("cauchy", ["ppf", "isf"], ["q", "real", "pos"], None),
    ("laplace", ["logpdf", "pdf", "cdf"], ["real", "real", "pos"], None),
    ("logistic", ["logpdf", "pdf", "cdf", "sf"], ["real", "real", "pos"], None),
    ("logistic", ["ppf", "isf"], ["q", "real", "pos"], None),
    ("expon", _CONT, ["real", "real", "pos"], None),
    ("expon", ["ppf"], ["q", "real", "pos"], None),
    ("uniform", ["logpdf", "pdf", "cdf"], ["real", "real", "pos"], None),
    ("uniform", ["ppf"], ["q", "real", "pos"], None),
    ("gumbel_r", _CONT, ["real", "real", "pos"], None),
    ("gumbel_r", ["ppf"], ["q", "real", "pos"], None),
    ("gumbel_l", _CONT, ["real", "real", "pos"], None),
    ("gumbel_l", ["ppf"], ["q", "real", "pos"], None),
    ("pareto", _CONT, ["xpos", "pos", "real", "pos"], None),
    ("pareto", ["ppf"], ["q", "pos", "real", "pos"], None),
    ("gennorm", ["logpdf", "pdf", "cdf"], ["real", "shape"], None),
    ("t", ["logpdf", "pdf"], ["real", "shape", "real", "pos"], None),
    ("vonmises", ["logpdf", "pdf"], ["angle", "kappa"], None),
    ("wrapcauchy", ["logpdf", "pdf"], ["angle2pi", "unit"], None),
    ("gamma", _CONT, ["xpos", "shape", "real", "pos"], None),
    ("chi2", _CONT, ["xpos", "shape", "real", "pos"], None),
    ("beta", _CONT, ["unit", "shape", "shape", "real", "pos"], None),
    ("truncnorm", _CONT, ["unit", "real", "pos", "real", "pos"],
     # b = a + width; x between a and b in standardized units
     lambda x, a, w, loc, s: (loc + s * (a + x * w), a, a + w, loc, s)),
    ("poisson", ["logpmf", "pmf", "cdf"], ["int", "shape", "int"], None),
    ("bernoulli", ["logpmf", "pmf"], ["int", "prob", "int"],
     lambda k, p, loc: (loc + k % 2, p, loc)),
    ("bernoulli", ["cdf"], ["int", "prob"], None),
    ("bernoulli", ["ppf"], ["q", "prob"], None),
    ("binom", ["logpmf", "pmf"], ["int", "n", "prob", "int"],
     lambda k, n, p, loc: (loc + k % (n + 1), n, p, loc)),
    ("nbinom", ["logpmf", "pmf"], ["int", "shape", "prob", "int"], None),
    ("geom", ["logpmf", "pmf"], ["n", "prob", "int"], None),
    ("betabinom", ["logpmf", "pmf"], ["int", "n", "shape", "shape", "int"],
     lambda k, n, a, b, loc: (loc + k % (n + 1), n, a, b, loc)),
]


def _case_id(case):
    return f"{case[0]}-{case[1][0]}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_matches_scipy_float32(case, data):
    dist, fns, kinds, prep = case
    args = tuple(data.draw(st.tuples(*[_KINDS[k] for k in kinds])))
    if prep is not None:
        args = prep(*args)
    args = tuple(float(np.float32(a)) for a in args)  # the reference sees the f32 inputs
    mod = getattr(stats, dist)
    ref_dist = getattr(ss, dist)
    for fn in fns:
        got = np.asarray(getattr(mod, fn)(*[np.float32(a) for a in args]))
        want = getattr(ref_dist, fn)(*args)
        assert got.dtype == np.float32, (dist, fn)
        np.testing.assert_allclose(got, want, rtol=5e-4, atol=2e-5,
                                   err_msg=f"{dist}.{fn}{args}")


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in
                                  ("gamma", "beta", "truncnorm", "t", "poisson", "vonmises",
                                   "betabinom", "chi2", "gennorm", "norm")],
                         ids=_case_id)
@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_matches_scipy_float64(x64, case, data):
    dist, fns, kinds, prep = case
    args = tuple(data.draw(st.tuples(*[_KINDS[k] for k in kinds])))
    if prep is not None:
        args = prep(*args)
    for fn in fns:
        got = np.asarray(getattr(getattr(stats, dist), fn)(*args))
        want = getattr(getattr(ss, dist), fn)(*args)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12,
                                   err_msg=f"{dist}.{fn}{args}")


def test_signatures_follow_jax():
    # JAX 0.10.2's argument names and defaults (recorded from jax.scipy.stats).
    expected = {
        ("norm", "logpdf"): "(x, loc=0, scale=1)", ("norm", "ppf"): "(q, loc=0, scale=1)",
        ("gamma", "cdf"): "(x, a, loc=0, scale=1)", ("beta", "sf"): "(x, a, b, loc=0, scale=1)",
        ("poisson", "logpmf"): "(k, mu, loc=0)", ("poisson", "entropy"): "(mu, loc=0)",
        ("bernoulli", "cdf"): "(k, p)", ("bernoulli", "ppf"): "(q, p)",
        ("betabinom", "pmf"): "(k, n, a, b, loc=0)", ("gumbel_r", "ppf"): "(p, loc=0, scale=1)",
        ("multivariate_normal", "logpdf"): "(x, mean, cov, allow_singular=None)",
        ("dirichlet", "logpdf"): "(x, alpha)", ("multinomial", "pmf"): "(x, n, p)",
        ("truncnorm", "logsf"): "(x, a, b, loc=0, scale=1)", ("vonmises", "pdf"): "(x, kappa)",
        ("wrapcauchy", "logpdf"): "(x, c)", ("gennorm", "cdf"): "(x, beta)",
        ("pareto", "ppf"): "(q, b, loc=0, scale=1)", ("logistic", "isf"): "(x, loc=0, scale=1)",
    }
    for (dist, fn), sig in expected.items():
        got = inspect.signature(getattr(getattr(stats, dist), fn))
        assert str(got).replace(": None", "") == sig, (dist, fn, str(got))


def test_function_sets_match_jax():
    # Recorded from dir() of each jax.scipy.stats submodule in JAX 0.10.2.
    expected = {
        "bernoulli": "cdf logpmf pmf ppf", "beta": "cdf logcdf logpdf logsf pdf sf",
        "betabinom": "logpmf pmf", "binom": "logpmf pmf",
        "cauchy": "cdf isf logcdf logpdf logsf pdf ppf sf",
        "chi2": "cdf logcdf logpdf logsf pdf sf", "dirichlet": "logpdf pdf",
        "expon": "cdf logcdf logpdf logsf pdf ppf sf", "gamma": "cdf logcdf logpdf logsf pdf sf",
        "gennorm": "cdf logpdf pdf", "geom": "logpmf pmf",
        "gumbel_l": "cdf logcdf logpdf logsf pdf ppf sf",
        "gumbel_r": "cdf logcdf logpdf logsf pdf ppf sf", "laplace": "cdf logpdf pdf",
        "logistic": "cdf isf logpdf pdf ppf sf", "multinomial": "logpmf pmf",
        "multivariate_normal": "logpdf pdf", "nbinom": "logpmf pmf",
        "norm": "cdf isf logcdf logpdf logsf pdf ppf sf",
        "pareto": "cdf logcdf logpdf logsf pdf ppf sf", "poisson": "cdf entropy logpmf pmf",
        "t": "logpdf pdf", "truncnorm": "cdf logcdf logpdf logsf pdf sf",
        "uniform": "cdf logpdf pdf ppf", "vonmises": "logpdf pdf", "wrapcauchy": "logpdf pdf",
    }
    for dist, fns in expected.items():
        mod = importlib.import_module(f"minijax.scipy.stats.{dist}")
        assert sorted(mod.__all__) == fns.split(), dist


def test_public_functions_carry_their_own_name_module_and_docstring():
    """Every public function, those built by the shared helpers included (of_z, chi2's
    delegation to gamma), carries its own name, module and docstring."""
    dists = [m for m in vars(stats).values() if inspect.ismodule(m) and hasattr(m, "__all__")]
    assert len(dists) >= 25
    for mod in dists:
        for fn in mod.__all__:
            f = getattr(mod, fn)
            assert (f.__name__, f.__module__) == (fn, mod.__name__), (mod, fn)
            assert f.__doc__, (mod, fn)


def test_multivariate_normal_matches_scipy():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    mean = rng.normal(size=3)
    x = rng.normal(size=(5, 3))
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(x, mean, cov),
                               ss.multivariate_normal.logpdf(x, mean, cov), rtol=1e-5)
    np.testing.assert_allclose(stats.multivariate_normal.pdf(x[0], mean, cov),
                               ss.multivariate_normal.pdf(x[0], mean, cov), rtol=1e-5)
    # scalar covariance and scalar mean
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(x, mean, 2.0),
                               ss.multivariate_normal.logpdf(x, mean, 2.0 * np.eye(3)),
                               rtol=1e-5)
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(0.3, 0.1, 2.0),
                               ss.norm.logpdf(0.3, 0.1, np.sqrt(2.0)), rtol=1e-6)
    # batched covariances
    covs = np.stack([cov, 2 * cov])
    got = stats.multivariate_normal.logpdf(x[:2], mean, covs)
    want = [ss.multivariate_normal.logpdf(x[i], mean, covs[i]) for i in range(2)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    with pytest.raises(NotImplementedError, match="allow_singular"):
        stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)
    with pytest.raises(ValueError, match="incompatible shapes"):
        stats.multivariate_normal.logpdf(x, mean, np.eye(2))


def test_dirichlet_and_multinomial_match_scipy():
    alpha = np.array([0.7, 2.0, 3.5])
    x = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(stats.dirichlet.logpdf(x, alpha),
                               ss.dirichlet.logpdf(x, alpha), rtol=1e-5)
    # one component fewer: the last is 1 - sum
    np.testing.assert_allclose(stats.dirichlet.pdf(x[:2], alpha), ss.dirichlet.pdf(x, alpha),
                               rtol=1e-5)
    xs = np.array([[0.2, 0.1], [0.3, 0.6], [0.5, 0.3]])  # components on the first axis
    np.testing.assert_allclose(stats.dirichlet.logpdf(xs, alpha),
                               ss.dirichlet.logpdf(xs, alpha), rtol=1e-5)
    assert stats.dirichlet.logpdf(np.array([0.5, 0.6, 0.1]), alpha) == -np.inf
    with pytest.raises(ValueError, match="one entry fewer"):
        stats.dirichlet.logpdf(np.ones(5) / 5, alpha)
    counts, p = np.array([2, 0, 3]), np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(stats.multinomial.logpmf(counts, 5, p),
                               ss.multinomial.logpmf(counts, 5, p), rtol=1e-5)
    np.testing.assert_allclose(stats.multinomial.pmf(counts, 5, p),
                               ss.multinomial.pmf(counts, 5, p), rtol=1e-5)
    assert stats.multinomial.logpmf(counts, 6, p) == -np.inf
    with pytest.raises(ValueError, match="integer"):
        stats.multinomial.logpmf(counts.astype(np.float32), 5, p)


@pytest.mark.parametrize("mu", [0.5, 3.0, 12.0, 49.0, 51.0, 250.0])
def test_poisson_entropy(mu):
    np.testing.assert_allclose(stats.poisson.entropy(mu), ss.poisson(mu).entropy(), rtol=1e-5)


def test_poisson_entropy_jax_docstring_values():
    # The values in JAX's docstring for jax.scipy.stats.poisson.entropy.
    np.testing.assert_allclose(stats.poisson.entropy(jnp.array([1, 10, 100])),
                               [1.3048419, 2.561407, 3.7206903], rtol=2e-6)
    assert np.isnan(stats.poisson.entropy(-1.0)) and stats.poisson.entropy(0.0) == 0


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


@pytest.mark.parametrize("name,fn,point,argnum", [
    ("gamma cdf d/da", lambda a: stats.gamma.cdf(2.5, a), 1.7, 0),
    ("gamma cdf d/dx", lambda x: stats.gamma.cdf(x, 3.2), 4.5, 0),
    ("gamma sf d/da (continued fraction)", lambda a: stats.gamma.sf(9.0, a), 2.5, 0),
    ("beta cdf d/da", lambda a: stats.beta.cdf(0.3, a, 2.5), 1.4, 0),
    ("beta cdf d/db (flipped series)", lambda b: stats.beta.cdf(0.8, 2.0, b), 3.0, 0),
    ("t logpdf d/ddf", lambda df: stats.t.logpdf(0.7, df), 3.3, 0),
    ("truncnorm logpdf d/da", lambda a: stats.truncnorm.logpdf(0.5, a, 2.0), -0.3, 0),
    ("truncnorm logcdf d/dx", lambda x: stats.truncnorm.logcdf(x, 1.0, 3.0), 1.8, 0),
    ("vonmises logpdf d/dkappa", lambda k: stats.vonmises.logpdf(0.4, k), 2.2, 0),
    ("poisson cdf d/dmu", lambda mu: stats.poisson.cdf(4.0, mu), 3.1, 0),
    ("chi2 logcdf d/ddf", lambda df: stats.chi2.logcdf(3.0, df), 4.0, 0),
    ("norm logcdf d/dx (tail)", lambda x: stats.norm.logcdf(x), -12.0, 0),
])
def test_gradients_match_finite_differences(x64, name, fn, point, argnum):
    got = minijax.grad(fn)(point)
    want = _fd(lambda v: float(fn(v)), point)
    np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=name)


def test_multivariate_normal_gradient_wrt_cov(x64):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    x, mean = rng.normal(size=3), rng.normal(size=3)
    g = np.asarray(minijax.grad(lambda c: stats.multivariate_normal.logpdf(x, mean, c))(cov))
    # d/dC log N(x; m, C) = 1/2 (C^-1 d d^T C^-1 - C^-1) for symmetric C
    ci = np.linalg.inv(cov)
    d = x - mean
    want = 0.5 * (ci @ np.outer(d, d) @ ci - ci)
    np.testing.assert_allclose(0.5 * (g + g.T), want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("dist,fn,args", [
    ("gamma", "cdf", (np.array([0.5, 2.0, 7.0]), np.array([1.5, 2.0, 3.0]))),
    ("beta", "logpdf", (np.array([0.2, 0.5, 0.9]), np.array([2.0, 0.8, 3.0]), 2.0)),
    ("truncnorm", "logsf", (np.array([0.1, 0.5, 1.5]), -1.0, np.array([1.0, 2.0, 3.0]))),
    ("poisson", "logpmf", (np.array([0.0, 3.0, 7.0]), np.array([1.0, 2.5, 9.0]))),
    ("vonmises", "logpdf", (np.array([0.1, -2.0, 3.0]), np.array([0.5, 4.0, 40.0]))),
])
def test_jit_and_vmap_match_eager(dist, fn, args):
    f = getattr(getattr(stats, dist), fn)
    eager = np.asarray(f(*args))
    np.testing.assert_allclose(minijax.jit(f)(*args), eager, rtol=1e-5, atol=1e-6)
    in_axes = tuple(0 if np.ndim(a) else None for a in args)
    batched = minijax.vmap(f, in_axes=in_axes)(*args)
    loop = [f(*[a[i] if np.ndim(a) else a for a in args]) for i in range(3)]
    np.testing.assert_allclose(batched, np.array(loop), rtol=1e-5, atol=1e-6)


# Edge and out-of-support points, with JAX 0.10.2's values (recorded).
EDGES = [
    ("poisson", "logpmf", (2.5, 3.0), -np.inf),
    ("poisson", "logpmf", (-1.0, 3.0), -np.inf),
    ("poisson", "cdf", (-0.5, 3.0), 0.0),
    ("bernoulli", "cdf", (-1.0, 0.3), 0.0),
    ("bernoulli", "cdf", (0.5, 1.3), np.nan),
    ("bernoulli", "ppf", (1.5, 0.3), np.nan),
    ("bernoulli", "ppf", (0.7, 0.3), 0.0),
    ("expon", "logpdf", (-1.0,), -np.inf),
    ("expon", "ppf", (1.5,), np.nan),
    ("uniform", "logpdf", (1.5,), -np.inf),
    ("pareto", "logpdf", (0.5, 2.0), -np.inf),
    ("pareto", "cdf", (0.5, 2.0), 0.0),
    ("beta", "logpdf", (1.5, 2.0, 2.0), -np.inf),
    ("beta", "logpdf", (0.5, -1.0, 2.0), np.nan),
    ("gamma", "logpdf", (-1.0, 2.0), -np.inf),
    ("gamma", "cdf", (-1.0, 2.0), 0.0),
    ("geom", "logpmf", (0.0, 0.5), -np.inf),
    ("binom", "logpmf", (6.0, 5.0, 0.3), -np.inf),
    ("binom", "logpmf", (0.0, 0.0, 0.3), 0.0),
    ("betabinom", "logpmf", (2.0, 5.0, -1.0, 2.0), np.nan),
    ("vonmises", "logpdf", (0.3, -1.0), np.nan),
    ("wrapcauchy", "logpdf", (7.0, 0.5), -np.inf),
    ("wrapcauchy", "logpdf", (1.0, 1.5), np.nan),
    ("truncnorm", "logpdf", (3.0, -1.0, 2.0), -np.inf),
    ("truncnorm", "cdf", (3.0, -1.0, 2.0), 1.0),
    ("truncnorm", "sf", (-3.0, -1.0, 2.0), 1.0),
]


@pytest.mark.parametrize("dist,fn,args,want", EDGES, ids=[f"{e[0]}.{e[1]}{e[2]}" for e in EDGES])
def test_edge_values_match_jax(dist, fn, args, want):
    got = float(getattr(getattr(stats, dist), fn)(*args))
    np.testing.assert_equal(got, want)


def test_edge_values_against_installed_jax():
    jax = pytest.importorskip("jax")
    jax_stats = pytest.importorskip("jax.scipy.stats")

    def all_edges():  # one compiled function: much faster than JAX's op-by-op dispatch
        return [getattr(getattr(jax_stats, dist), fn)(*args) for dist, fn, args, _ in EDGES]
    for (dist, fn, args, want), got in zip(EDGES, jax.jit(all_edges)(), strict=True):
        np.testing.assert_equal(float(got), want, err_msg=f"{dist}.{fn}{args}")


def test_special_incomplete_functions_match_scipy(x64):
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0.1, 40, 300), rng.uniform(0.1, 40, 300)
    x, u = rng.uniform(0, 80, 300), rng.uniform(0, 1, 300)
    np.testing.assert_allclose(special.gammainc(a, x), ss_special.gammainc(a, x),
                               rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(special.gammaincc(a, x), ss_special.gammaincc(a, x),
                               rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(special.betainc(a, b, u), ss_special.betainc(a, b, u),
                               rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(special.betaln(a, b), ss_special.betaln(a, b), rtol=1e-12)
    np.testing.assert_allclose(special.multigammaln(a + 2, 3),
                               ss_special.multigammaln(a + 2, 3), rtol=1e-12)
    xs = np.linspace(-90, 90, 181)
    for name in ("i0e", "i1e"):
        np.testing.assert_allclose(getattr(special, name)(xs), getattr(ss_special, name)(xs),
                                   rtol=1e-13, err_msg=name)
    xs = np.linspace(-20, 20, 41)
    for name in ("i0", "i1"):
        np.testing.assert_allclose(getattr(special, name)(xs), getattr(ss_special, name)(xs),
                                   rtol=1e-13, err_msg=name)
    # boundaries and invalid arguments, as scipy
    assert float(special.gammainc(2.0, 0.0)) == 0 and float(special.gammaincc(2.0, 0.0)) == 1
    assert float(special.gammainc(2.0, np.inf)) == 1
    assert np.isnan(special.gammainc(-1.0, 2.0)) and np.isnan(special.betainc(1.0, 2.0, 1.5))
    assert float(special.betainc(2.0, 3.0, 0.0)) == 0 and float(special.betainc(2.0, 3.0, 1.0)) == 1


def test_mode_rankdata_sem_match_scipy():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, size=(6, 5)).astype(np.float32)
    for axis in (0, 1, None):
        got = stats.mode(a, axis=axis)
        want = ss.mode(a, axis=axis)
        np.testing.assert_array_equal(got.mode, want.mode)
        np.testing.assert_array_equal(got.count, want.count)
    assert stats.mode(a, axis=1, keepdims=True).mode.shape == (6, 1)
    assert isinstance(stats.mode(a), stats.ModeResult)
    v = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0])
    for method in ("average", "min", "max", "dense", "ordinal"):
        np.testing.assert_array_equal(stats.rankdata(v, method), ss.rankdata(v, method))
        np.testing.assert_array_equal(stats.rankdata(a, method, axis=1),
                                      ss.rankdata(a, method, axis=1))
    assert np.isnan(stats.rankdata(np.array([1.0, np.nan]))).all()
    with pytest.raises(ValueError, match="unknown method"):
        stats.rankdata(v, "bogus")
    with pytest.raises(NotImplementedError):
        stats.rankdata(v, nan_policy="omit")
    np.testing.assert_allclose(stats.sem(a, axis=0), ss.sem(a, axis=0), rtol=1e-6)
    np.testing.assert_allclose(stats.sem(a, axis=None), ss.sem(a, axis=None), rtol=1e-6)
    b = a.copy()
    b[0, 0] = np.nan
    np.testing.assert_allclose(stats.sem(b, axis=0, nan_policy="omit"),
                               ss.sem(b, axis=0, nan_policy="omit"), rtol=1e-6)


def test_gaussian_kde_matches_scipy():
    rng = np.random.default_rng(4)
    data = rng.normal(size=(2, 40))
    w = rng.uniform(0.5, 1.5, 40)
    pts = rng.normal(size=(2, 7))
    for kwargs in ({}, {"bw_method": "silverman"}, {"bw_method": 0.4}, {"weights": w}):
        mine, ref = stats.gaussian_kde(data, **kwargs), ss.gaussian_kde(data, **kwargs)
        np.testing.assert_allclose(mine.evaluate(pts), ref.evaluate(pts), rtol=1e-4)
        np.testing.assert_allclose(mine(pts), ref(pts), rtol=1e-4)
        np.testing.assert_allclose(mine.logpdf(pts), ref.logpdf(pts), rtol=1e-4)
        np.testing.assert_allclose(mine.integrate_gaussian(np.zeros(2), np.eye(2)),
                                   ref.integrate_gaussian(np.zeros(2), np.eye(2)), rtol=1e-4)
    one = rng.normal(size=30)
    mine, ref = stats.gaussian_kde(one), ss.gaussian_kde(one)
    np.testing.assert_allclose(mine.integrate_box_1d(-0.5, 1.0), ref.integrate_box_1d(-0.5, 1.0),
                               rtol=1e-5)
    other = stats.gaussian_kde(one[:10] + 1)
    np.testing.assert_allclose(mine.integrate_kde(other),
                               ref.integrate_kde(ss.gaussian_kde(one[:10] + 1)), rtol=1e-5)
    sample = mine.resample(minijax.random.key(0), (500,))
    assert sample.shape == (1, 500)
    assert abs(float(jnp.mean(sample)) - float(np.mean(one))) < 0.3
    # a pytree: it crosses jit
    np.testing.assert_allclose(minijax.jit(lambda k, p: k.evaluate(p))(mine, one[:3]),
                               ref.evaluate(one[:3]), rtol=1e-4)
