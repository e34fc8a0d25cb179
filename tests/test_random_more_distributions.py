"""minijax.random's derived samplers (pareto, t, chisquare, f, maxwell, wald, ..., binomial,
multinomial), clone and key_dtype: samples equal JAX 0.10.2's for the same key (values
hard-coded, and compared live when JAX is importable), distributions pass KS / moment tests
against scipy.stats, and argument errors match JAX's."""

import numpy as np
import pytest
from scipy import stats

import minijax
import minijax.random as random
from minijax import dtypes

try:
    import jax
except Exception:  # pragma: no cover - JAX is optional
    jax = None

needs_jax = pytest.mark.skipif(jax is None, reason="JAX is not importable")

# (name, args, kwargs, JAX 0.10.2's samples for jax.random.key(0), flattened)
JAX_SAMPLES = [
    ("pareto", (2.5,), dict(shape=(4,)),
     [3.2545409202575684, 4.652338027954102, 1.175344705581665, 1.287815809249878]),
    ("t", (3.0,), dict(shape=(4,)),
     [0.6902246475219727, -3.2393364906311035, -1.6745249032974243, -1.8150756359100342]),
    ("chisquare", (2.0,), dict(shape=(4,)),
     [1.2369725704193115, 1.452569842338562, 0.7020197510719299, 4.787210941314697]),
    ("f", (3.0, 5.0), dict(shape=(4,)),
     [2.579707384109497, 0.1921967715024948, 0.15977689623832703, 0.3884202837944031]),
    ("maxwell", (), dict(shape=(4,)),
     [2.631096601486206, 0.9910328388214111, 0.9649305939674377, 3.078275203704834]),
    ("double_sided_maxwell", (1.0, 2.0), dict(shape=(4,)),
     [4.091442108154297, 4.148255348205566, -3.1650609970092773, 5.584834575653076]),
    ("weibull_min", (2.0, 1.5), dict(shape=(4,)),
     [4.113933563232422, 4.9072957038879395, 1.0928194522857666, 1.4734783172607422]),
    ("generalized_normal", (1.5,), dict(shape=(4,)),
     [1.0603917837142944, 0.08920828253030777, -1.375133752822876, 0.5591428875923157]),
    ("ball", (3,), dict(shape=(2,)),
     [0.9171597361564636, 0.3927421569824219, 0.01165350154042244, -0.8613650798797607,
      0.3168482482433319, -0.06285543739795685]),
    ("rayleigh", (2.0,), dict(shape=(4,)),
     [0.6557566523551941, 0.41620054841041565, 2.9688284397125244, 2.4622910022735596]),
    ("wald", (1.5,), dict(shape=(4,)),
     [0.4688202738761902, 0.5198179483413696, 0.6178595423698425, 0.39529651403427124]),
    ("geometric", (0.3,), dict(shape=(4,)), [1, 1, 4, 3]),
    ("triangular", (0.0, 0.3, 1.0), dict(shape=(4,)),
     [0.8086022734642029, 0.8775496482849121, 0.31633639335632324, 0.3901376724243164]),
    ("lognormal", (0.5,), dict(shape=(4,)),
     [2.2508795261383057, 2.752837896347046, 0.8050932288169861, 0.961453914642334]),
    ("binomial", (5.0, 0.3), dict(shape=(4,)), [2.0, 1.0, 1.0, 0.0]),        # inversion
    ("binomial", (100.0, 0.4), dict(shape=(4,)), [33.0, 38.0, 34.0, 45.0]),  # BTRS
    ("binomial", (np.array([20., 50, 3]), np.array([0.9, 0.5, 0.1])), {}, [18.0, 27.0, 0.0]),
    ("multinomial", (20.0, np.array([0.2, 0.5, 0.3])), {}, [1.0, 13.0, 6.0]),
    ("multinomial", (200.0, np.array([0.2, 0.5, 0.3])), dict(shape=(2, 3)),
     [32.0, 115.0, 53.0, 37.0, 104.0, 59.0]),
]


@pytest.mark.parametrize("name,args,kwargs,expected", JAX_SAMPLES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(JAX_SAMPLES)])
def test_samples_equal_jax(name, args, kwargs, expected):
    got = np.asarray(getattr(random, name)(random.key(0), *args, **kwargs))
    expected = np.asarray(expected)
    assert got.dtype == (np.int32 if name == "geometric" else np.float32)
    np.testing.assert_allclose(got.ravel(), expected, rtol=2e-5, atol=1e-6)
    # Raw keys give the same samples as typed keys.
    raw = np.asarray(getattr(random, name)(random.PRNGKey(0), *args, **kwargs))
    np.testing.assert_array_equal(raw, got)


@needs_jax
@pytest.mark.parametrize("seed", [42])
@pytest.mark.parametrize("name,args,kwargs,expected", JAX_SAMPLES[::2],
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(JAX_SAMPLES[::2])])
def test_samples_equal_live_jax(seed, name, args, kwargs, expected):
    want = np.asarray(getattr(jax.random, name)(jax.random.key(seed), *args, **kwargs))
    got = np.asarray(getattr(random, name)(random.key(seed), *args, **kwargs))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_special_values_match_jax():
    # JAX: binomial(key(1), [5, -1, inf, 4], [.3, .3, .5, nan]) -> [1, nan, inf, nan]
    got = np.asarray(random.binomial(random.key(1), np.array([5., -1, np.inf, 4]),
                                     np.array([0.3, 0.3, 0.5, np.nan])))
    np.testing.assert_array_equal(got, [1.0, np.nan, np.inf, np.nan])
    # JAX: pareto(PRNGKey(3), [1, 2, 3])
    np.testing.assert_allclose(random.pareto(random.PRNGKey(3), np.array([1., 2., 3.])),
                               [1.079974889755249, 4.020779132843018, 1.4175766706466675],
                               rtol=2e-5)
    # JAX: multinomial with batched n and p
    got = random.multinomial(random.key(1), np.array([10., 30.]),
                             np.array([[0.1, 0.9], [0.5, 0.5]]))
    np.testing.assert_array_equal(got, [[1.0, 9.0], [18.0, 12.0]])
    # JAX: complex lognormal
    got = random.lognormal(random.key(1), shape=(2,), dtype=np.complex64)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, [1.4350332021713257 - 0.24999484419822693j,
                                     0.5974830985069275 + 0.05204172059893608j], rtol=2e-5)
    # JAX: ball(key(1), 2, p=1, shape=(3,))
    np.testing.assert_allclose(
        random.ball(random.key(1), 2, p=1.0, shape=(3,)),
        [[-0.24623394012451172, 0.2811349332332611], [0.4581712484359741, 0.2583468556404114],
         [0.6794934272766113, -0.24900150299072266]], rtol=2e-5)


N = 4000

KS_CASES = [
    ("pareto", (3.0,), stats.pareto(3.0)),
    ("t", (4.0,), stats.t(4.0)),
    ("chisquare", (3.0,), stats.chi2(3.0)),
    ("f", (4.0, 7.0), stats.f(4.0, 7.0)),
    ("rayleigh", (2.0,), stats.rayleigh(scale=2.0)),
    ("wald", (1.5,), stats.invgauss(1.5)),
    ("triangular", (0.0, 0.3, 2.0), stats.triang(0.15, loc=0.0, scale=2.0)),
    ("lognormal", (0.7,), stats.lognorm(0.7)),
]


@pytest.mark.parametrize("name,args,dist", KS_CASES, ids=[c[0] for c in KS_CASES])
def test_ks_against_scipy(name, args, dist):
    x = np.asarray(getattr(random, name)(random.key(11), *args, shape=(N,)), np.float64)
    assert stats.kstest(x, dist.cdf).pvalue > 1e-4


def test_ks_shape_only_samplers():
    k = random.key(5)
    x = np.asarray(random.maxwell(k, (N,)), np.float64)
    assert stats.kstest(x, stats.maxwell.cdf).pvalue > 1e-4
    x = np.asarray(random.double_sided_maxwell(k, 1.0, 2.0, (N,)), np.float64)
    # |x - loc| / scale is Maxwell-distributed; the sign is symmetric.
    assert stats.kstest(np.abs(x - 1.0) / 2.0, stats.maxwell.cdf).pvalue > 1e-4
    assert abs(np.mean(x > 1.0) - 0.5) < 0.04
    x = np.asarray(random.weibull_min(k, 2.0, 1.5, (N,)), np.float64)
    assert stats.kstest(x, stats.weibull_min(1.5, scale=2.0).cdf).pvalue > 1e-4
    x = np.asarray(random.generalized_normal(k, 1.5, (N,)), np.float64)
    assert stats.kstest(x, stats.gennorm(1.5).cdf).pvalue > 1e-4


def test_ball_is_uniform_in_the_ball():
    x = np.asarray(random.ball(random.key(2), 3, shape=(N // 2,)), np.float64)
    r = np.linalg.norm(x, axis=-1)
    assert r.max() <= 1.0
    # Uniform in the 3-ball: P(r <= s) = s^3.
    assert stats.kstest(r, lambda s: np.clip(s, 0, 1) ** 3).pvalue > 1e-4
    x1 = np.asarray(random.ball(random.key(2), 2, p=1.0, shape=(200,)), np.float64)
    assert np.abs(x1).sum(-1).max() <= 1.0


def test_discrete_distributions_against_scipy():
    k = random.key(9)
    g = np.asarray(random.geometric(k, 0.25, (N,)))
    assert g.min() >= 1
    assert abs(g.mean() - stats.geom(0.25).mean()) < 0.2
    for n, p in [(7.0, 0.2), (300.0, 0.35), (40.0, 0.9)]:  # inversion, BTRS, 1 - p branch
        b = np.asarray(random.binomial(k, n, p, (N,)))
        assert np.all(b == np.floor(b)) and b.min() >= 0 and b.max() <= n
        dist = stats.binom(int(n), p)
        assert abs(b.mean() - dist.mean()) < 4 * dist.std() / np.sqrt(N)
        assert abs(b.var() / dist.var() - 1) < 0.15
    m = np.asarray(random.multinomial(k, 50.0, np.array([0.1, 0.6, 0.3]), shape=(N, 3)))
    np.testing.assert_array_equal(m.sum(-1), 50.0)
    np.testing.assert_allclose(m.mean(0), [5, 30, 15], atol=0.3)


def test_jit_and_vmap_agree_with_eager():
    k = random.key(4)
    # (Loop-free samplers only: compiling the rejection loops takes tens of seconds.)
    for fn in (lambda k: random.wald(k, 2.0, (3,)), lambda k: random.geometric(k, 0.2, (3,)),
               lambda k: random.triangular(k, 0.0, 0.5, 2.0, (3,))):
        np.testing.assert_allclose(minijax.jit(fn)(k), fn(k), rtol=1e-5)
    keys = random.split(random.key(4), 3)
    batched = minijax.vmap(lambda k: random.pareto(k, 2.0, (2,)))(keys)
    loop = np.stack([np.asarray(random.pareto(keys[i], 2.0, (2,))) for i in range(3)])
    np.testing.assert_allclose(batched, loop, rtol=1e-6)


def test_shapes_and_dtypes():
    k = random.key(0)
    # As JAX: an empty shape is replaced by the parameters' shape, then it is prepended.
    assert random.double_sided_maxwell(k, np.zeros(3), 1.0).shape == (3, 3)
    assert random.double_sided_maxwell(k, np.zeros(3), 1.0, shape=(2,)).shape == (2, 3)
    assert random.weibull_min(k, 2.0, np.ones(3)).shape == (3,)
    assert random.t(k, np.ones((2, 3))).shape == (2, 3)
    assert random.f(k, np.ones(3), 2.0, shape=(4, 3)).shape == (4, 3)
    assert random.ball(k, 4, shape=(2, 5)).shape == (2, 5, 4)
    assert random.geometric(k, 0.5, dtype=np.int16).dtype == np.int16
    assert random.binomial(k, 5, 0.5).dtype == np.float32
    # JAX: multinomial(key(0), 10., [.2, .8], dtype=int32) -> [1, 9]
    got = random.multinomial(k, 10.0, np.array([0.2, 0.8]), dtype=np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [1, 9])
    minijax.config.update("jax_enable_x64", True)
    try:
        assert random.chisquare(k, 2.0, (2,)).dtype == np.float64
        assert random.geometric(k, 0.5).dtype == np.int64
    finally:
        minijax.config.update("jax_enable_x64", False)


def test_errors_match_jax():
    k = random.key(0)
    for name, args in [("pareto", (2.0,)), ("t", (3.0,)), ("chisquare", (2.0,)),
                       ("maxwell", ()), ("rayleigh", (1.0,)), ("binomial", (3.0, 0.5))]:
        with pytest.raises(ValueError, match=f"dtype argument to `{name}` must be a float"):
            getattr(random, name)(k, *args, dtype=np.int32)
    with pytest.raises(ValueError, match="must be an int dtype"):
        random.geometric(k, 0.3, dtype=np.float32)
    with pytest.raises(ValueError, match="float or complex dtype"):
        random.lognormal(k, dtype=np.int32)
    with pytest.raises(dtypes.TypePromotionError, match="cannot safely cast argument of "
                       "type complex64 to float32"):
        random.pareto(k, 1j)
    with pytest.raises(ValueError, match="broadcast-compatible"):
        random.t(k, np.ones(3), shape=(2,))
    with pytest.raises(ValueError, match="accepts a single key"):
        random.pareto(random.split(k, 2), 2.0)
    with pytest.raises(TypeError, match="binomial requires ndarray or scalar arguments"):
        random.binomial(k, [3.0, 4.0], 0.5)
    with pytest.raises(TypeError, match="multinomial requires ndarray or scalar arguments, "
                       "got <class 'list'> at position 1"):
        random.multinomial(k, 3.0, [0.5, 0.5])
    with pytest.raises(TypeError, match="geometric requires ndarray"):
        random.geometric(k, [0.5])
    with pytest.raises(TypeError, match="Cannot determine dtype"):
        random.pareto(k, [1.0, 2.0])


def test_clone_and_key_dtype():
    k = random.key(3)
    assert random.clone(k) is k
    np.testing.assert_array_equal(random.uniform(random.clone(k), (3,)),
                                  random.uniform(k, (3,)))
    assert random.key_dtype() == k.dtype
    assert str(random.key_dtype("threefry2x32")) == "key<fry>"
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
        random.key_dtype("rbg")
