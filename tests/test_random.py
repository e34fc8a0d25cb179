"""minijax.random: threefry known answers, JAX's documented values, direct comparison with
JAX (when importable), transformations (jit, vmap, lowering), distribution moments, errors."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.random as random
from minijax.lax import threefry

try:
    import jax
    import jax.random as jrandom
except Exception:  # pragma: no cover - JAX is optional
    jax = None

needs_jax = pytest.mark.skipif(jax is None, reason="JAX is not importable")




@pytest.fixture
def original_threefry():
    minijax.config.update("jax_threefry_partitionable", False)
    yield
    minijax.config.update("jax_threefry_partitionable", True)


def u32(*values):
    return np.array(values, dtype=np.uint32)


# --------------------------------------------------------------------------- threefry KATs

# Random123 known-answer vectors (random123 tests/kat_vectors, lines "threefry2x32 R
# ctr0 ctr1 key0 key1 out0 out1"; the 20-round ones are also the vectors of JAX's
# random_test.py testThreefry2x32, from Random123-Boost's test_threefry.cpp).
KAT = [
    (13, (0, 0), (0, 0), (0x9D1C5EC6, 0x8BD50731)),
    (13, (0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 2, (0xFD36D048, 0x2D17272C)),
    (13, (0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344), (0xBA3E4725, 0xF27D669E)),
    (20, (0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
    (20, (0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 2, (0x1CB996FC, 0xBB002BE7)),
    (20, (0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344), (0xC4923A9C, 0x483DF7A0)),
]


@pytest.mark.parametrize("rounds,ctr,key,expected", KAT)
def test_threefry_known_answers(rounds, ctr, key, expected):
    got = threefry.threefry2x32_reference(key[0], key[1], ctr[0], ctr[1], rounds)
    assert tuple(int(g) for g in got) == expected
    if rounds == 20:
        prim = threefry.threefry2x32(*(np.uint32(v) for v in (*key, *ctr)))
        assert tuple(int(np.asarray(p)) for p in prim) == expected
        jitted = minijax.jit(threefry.threefry2x32)(*(u32(v) for v in (*key, *ctr)))
        assert tuple(int(np.asarray(p)[0]) for p in jitted) == expected
        # JAX's threefry_2x32(keypair, count) form of the same vector (random_test.py).
        out = threefry.threefry_2x32(u32(*key), u32(*ctr))
        assert tuple(int(v) for v in np.asarray(out)) == expected


def test_threefry_primitive_lowering_matches_impl():
    from minijax.compiler.evaluator import evaluate_module
    from minijax.compiler.lower import lower_jaxpr_to_module
    rng = np.random.default_rng(0)
    args = [rng.integers(0, 2 ** 32, (3, 5), dtype=np.uint32) for _ in range(4)]
    args[0] = np.uint32(12345)  # a rank-0 operand broadcasts
    closed = minijax.make_jaxpr(threefry.threefry2x32)(*args)
    module, hoisted = lower_jaxpr_to_module(closed)
    text = minijax.jit(threefry.threefry2x32).lower(*args).as_text()
    for opcode in ("shift-left", "shift-right-logical", "xor", "or(", "add("):
        assert opcode in text
    got = evaluate_module(module, [np.asarray(a) for a in args] + list(hoisted))
    want = threefry.threefry2x32_reference(*args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, np.broadcast_to(w, (3, 5)))


def test_threefry_vmap_matches_loop():
    rng = np.random.default_rng(1)
    k = rng.integers(0, 2 ** 32, (4, 2), dtype=np.uint32)
    x = rng.integers(0, 2 ** 32, (4, 3), dtype=np.uint32)
    f = minijax.vmap(lambda k, x: threefry.threefry2x32(k[0], k[1], x, x), in_axes=(0, 1),
                     out_axes=1)
    y0, y1 = f(k, x.T.copy())
    for i in range(4):
        w0, w1 = threefry.threefry2x32_reference(k[i, 0], k[i, 1], x[i], x[i])
        np.testing.assert_array_equal(np.asarray(y0)[:, i], w0)
        np.testing.assert_array_equal(np.asarray(y1)[:, i], w1)


def test_threefry_errors():
    with pytest.raises(TypeError, match="threefry2x32 requires uint32 arguments.*i32"):
        threefry.threefry2x32(u32(1), u32(2), np.int32(3), u32(4))
    with pytest.raises(TypeError, match=r"threefry2x32 requires arguments of equal shapes"):
        threefry.threefry2x32(u32(1), u32(2), np.zeros(3, np.uint32), np.zeros(4, np.uint32))
    with pytest.raises(TypeError, match="8-, 16-, 32- or 64-bit"):
        threefry.threefry_random_bits(u32(0, 0), 12, (2,))


# --------------------------------------------------------------------------- documented values


def test_documented_values():
    # docs.jax.dev/en/latest/jax.random.html ("PRNG keys"): key(0) overlays [0 0];
    # random.uniform(key) is 0.947667, and after `key, subkey = split(key)`,
    # uniform(subkey) is 0.00729382.
    key = random.key(0)
    np.testing.assert_array_equal(random.key_data(key), [0, 0])
    assert repr(key).startswith("Array((), dtype=key<fry>) overlaying:")
    np.testing.assert_allclose(random.uniform(key), 0.947667, rtol=1e-6)
    key, subkey = random.split(key)
    np.testing.assert_allclose(random.uniform(subkey), 0.00729382, rtol=1e-5)
    # jax.random.PRNGKey(0) is the raw key [0, 0] (docs of jax.random.PRNGKey).
    np.testing.assert_array_equal(random.PRNGKey(0), np.zeros(2, np.uint32))
    assert random.PRNGKey(0).dtype == np.uint32


def test_documented_values_original_threefry(original_threefry):
    # "Deep Learning with Python", 3rd ed., section 3.5.3 (printed with JAX's older
    # default jax_threefry_partitionable=False): normal(key(123), (3,)) and the normal
    # samples of split(key(123), num=1)[0].
    key = random.key(123)
    np.testing.assert_allclose(random.normal(key, (3,)), [-0.1470326, 0.5524756, 1.648498],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(random.normal(random.split(key, num=1)[0], (3,)),
                               [0.5362355, -1.1920372, 2.450225], rtol=1e-5, atol=1e-6)


# Values printed by JAX 0.10.2 (the default configuration) on this project's dev machine.
RECORDED = {
    "split": [[1797259609, 2579123966], [928981903, 3453687069]],
    "split3": [[1797259609, 2579123966], [928981903, 3453687069], [4146024105, 2718843009]],
    "bits32": [4070199207, 4202968722, 1427181096, 2012915765, 2447653815],
    "bits8": [167, 146, 40],
    "bits16": [20391, 13970, 3624],
    "normal": [1.6226422, 2.0252647, -0.43359444],
    "randint": [9, 0, 2, 3],
    "permutation": [0, 1, 8, 5, 6, 4, 3, 2, 7, 9],
    "choice": [0, 1, 4],
}


def test_recorded_jax_values():
    k = random.PRNGKey(0)
    np.testing.assert_array_equal(random.split(k), RECORDED["split"])
    np.testing.assert_array_equal(random.split(k, 3), RECORDED["split3"])
    np.testing.assert_array_equal(random.fold_in(k, 0), RECORDED["split"][0])
    np.testing.assert_array_equal(random.fold_in(k, 1), RECORDED["split"][1])
    np.testing.assert_array_equal(random.bits(k, (5,)), RECORDED["bits32"])
    np.testing.assert_array_equal(random.bits(k, (3,), np.uint8), RECORDED["bits8"])
    np.testing.assert_array_equal(random.bits(k, (3,), np.uint16), RECORDED["bits16"])
    np.testing.assert_allclose(random.normal(k, (3,)), RECORDED["normal"], rtol=2e-6)
    np.testing.assert_array_equal(random.randint(k, (4,), 0, 10), RECORDED["randint"])
    np.testing.assert_array_equal(random.permutation(k, 10), RECORDED["permutation"])
    np.testing.assert_array_equal(random.choice(k, 5, (3,), replace=False), RECORDED["choice"])


def test_seeds_like_jax(x64):
    # Recorded from JAX 0.10.2: with x64 the seed's high word is used; without it, Python
    # ints wrap to 32 bits.
    assert random.PRNGKey(2 ** 32 + 5).tolist() == [1, 5]
    assert random.PRNGKey(-1).tolist() == [4294967295, 4294967295]
    assert random.PRNGKey(-2 ** 35).tolist() == [4294967288, 0]
    assert random.PRNGKey(2 ** 63 - 1).tolist() == [2147483647, 4294967295]
    minijax.config.update("jax_enable_x64", False)
    assert random.PRNGKey(2 ** 32 + 5).tolist() == [0, 5]
    assert random.PRNGKey(-1).tolist() == [0, 4294967295]
    assert random.PRNGKey(2 ** 40).tolist() == [0, 0]
    assert random.PRNGKey(np.uint32(7)).tolist() == [0, 7]
    with pytest.raises(OverflowError):
        random.PRNGKey(2 ** 64)


def test_original_scheme_bits(original_threefry):
    # Recorded from JAX 0.10.2 with jax_threefry_partitionable=False.
    k = random.PRNGKey(0)
    np.testing.assert_array_equal(random.split(k), [[4146024105, 967050713],
                                                    [2718843009, 1272950319]])
    np.testing.assert_array_equal(random.bits(k, (5,)), [2467461003, 428148500, 1688610540,
                                                         3840466878, 2562233961])
    np.testing.assert_array_equal(random.bits(k, (5,), np.uint8), [143, 35, 95, 55, 29])
    np.testing.assert_array_equal(random.bits(k, (3,), np.uint16), [9103, 14175, 5405])


# --------------------------------------------------------------------------- bits vs reference


def reference_bits(key, shape):
    """Partitionable bits from the NumPy reference hash: element i hashes (0, i)."""
    n = math.prod(shape)
    i = np.arange(n, dtype=np.uint64)
    y0, y1 = threefry.threefry2x32_reference(key[0], key[1], (i >> 32).astype(np.uint32),
                                             (i & 0xFFFFFFFF).astype(np.uint32))
    return (y0 ^ y1).reshape(shape)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1),
       shape=st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple))
def test_bits_and_uniform_match_reference(seed, shape):
    key = random.PRNGKey(seed)
    want = reference_bits(np.asarray(key), shape)
    got = random.bits(key, shape)
    assert got.shape == shape and got.dtype == np.uint32
    np.testing.assert_array_equal(got, want)
    u = np.asarray(random.uniform(key, shape))
    assert u.dtype == np.float32
    np.testing.assert_array_equal(u, ((want >> 9) | 0x3F800000).view(np.float32) - 1)
    assert np.all((u >= 0) & (u < 1))


def test_bits_64(x64):
    key = random.PRNGKey(3)
    got = np.asarray(random.bits(key, (4,)))
    assert got.dtype == np.uint64
    i = np.arange(4, dtype=np.uint32)
    y0, y1 = threefry.threefry2x32_reference(0, 3, np.zeros(4, np.uint32), i)
    np.testing.assert_array_equal(got, (y0.astype(np.uint64) << 32) | y1)
    assert random.uniform(key, (3,)).dtype == np.float64


# --------------------------------------------------------------------------- key API


def test_split_shapes_and_fold_in_determinism():
    k = random.PRNGKey(42)
    assert random.split(k, (2, 3)).shape == (2, 3, 2)
    np.testing.assert_array_equal(random.split(k, (2, 3)).reshape(6, 2), random.split(k, 6))
    np.testing.assert_array_equal(random.split(k, 4)[:2], random.split(k, 2))
    np.testing.assert_array_equal(random.fold_in(k, 5), random.fold_in(k, 5))
    assert not np.array_equal(random.fold_in(k, 5), random.fold_in(k, 6))
    np.testing.assert_array_equal(random.normal(k, (3,)), random.normal(k, (3,)))
    keys = {tuple(np.asarray(x).tolist()) for x in np.asarray(random.split(k, 100))}
    assert len(keys) == 100


def test_typed_keys_round_trip():
    k = random.key(9)
    assert k.shape == () and k.ndim == 0 and str(k.dtype) == "key<fry>"
    ks = random.split(k, 3)
    assert isinstance(ks, random.PRNGKeyArray) and ks.shape == (3,) and len(ks) == 3
    np.testing.assert_array_equal(random.key_data(ks), random.split(random.PRNGKey(9), 3))
    wrapped = random.wrap_key_data(random.key_data(ks))
    assert bool(np.all(wrapped == ks))
    np.testing.assert_array_equal(random.uniform(ks[1], (2,)),
                                  random.uniform(random.split(random.PRNGKey(9), 3)[1], (2,)))
    assert [x.shape for x in ks] == [(), (), ()]
    assert random.key_impl(k) == "threefry2x32"
    f = random.fold_in(k, 3)
    assert isinstance(f, random.PRNGKeyArray)
    grid = random.split(k, (2, 3))
    assert grid[1, :2].shape == (2,) and grid[..., 0].shape == (2,)
    np.testing.assert_array_equal(random.key_data(grid[1, 2]),
                                  random.split(random.PRNGKey(9), (2, 3))[1, 2])
    assert grid.reshape(3, 2).shape == (3, 2) and grid.flatten().shape == (6,)
    with pytest.raises(IndexError):
        ks[3]
    with pytest.raises(TypeError, match="len"):
        len(k)


def test_jit_matches_eager_and_vmap_matches_loop():
    k = random.PRNGKey(11)

    def sample(key):
        a, b = random.split(key)
        return random.normal(a, (3,)) + random.uniform(b, (3,)), random.randint(b, (2,), 0, 9)

    eager = sample(k)
    # The interpreter backend runs the lowered HLO; opt_level=1 skips fusion, which takes
    # tens of seconds on these programs for now (test_jit_default_backend covers the default
    # pipeline and backend on a small one).
    jitted = minijax.jit(sample, backend="interpreter", opt_level=1)(k)
    np.testing.assert_allclose(jitted[0], eager[0], rtol=1e-6)
    np.testing.assert_array_equal(jitted[1], eager[1])
    keys = random.split(k, 4)
    batched = minijax.vmap(sample)(keys)
    for i in range(4):
        one = sample(np.asarray(keys)[i])
        np.testing.assert_allclose(np.asarray(batched[0])[i], one[0], rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(batched[1])[i], one[1])
    # typed keys pass through jit and vmap as their data
    typed = random.split(random.key(11), 4)
    out = minijax.jit(lambda ks: minijax.vmap(lambda q: random.uniform(q))(ks),
                      backend="interpreter", opt_level=1)(typed)
    np.testing.assert_array_equal(out, [random.uniform(q) for q in typed])
    np.testing.assert_array_equal(minijax.jit(random.PRNGKey)(np.int32(-1)), [0, 4294967295])


def test_jit_default_backend():
    k = random.PRNGKey(4)
    f = minijax.jit(lambda key: random.normal(key, (3,)))
    np.testing.assert_allclose(f(k), random.normal(k, (3,)), rtol=1e-6)
    np.testing.assert_array_equal(minijax.jit(lambda key: random.split(key, 3))(k),
                                  random.split(k, 3))


# --------------------------------------------------------------------------- moments

N = 40000


def _check_mean(x, mean, std, sigmas=5.0):
    x = np.asarray(x, np.float64)
    assert abs(x.mean() - mean) < sigmas * std / math.sqrt(x.size), (x.mean(), mean)


def test_moments_continuous():
    ks = random.split(random.PRNGKey(2024), 8)
    u = random.uniform(ks[0], (N,), minval=2.0, maxval=5.0)
    _check_mean(u, 3.5, 3 / math.sqrt(12))
    assert float(np.min(u)) >= 2.0 and float(np.max(u)) < 5.0
    z = np.asarray(random.normal(ks[1], (N,)), np.float64)
    _check_mean(z, 0.0, 1.0)
    _check_mean(z ** 2, 1.0, math.sqrt(2))  # variance 1 (var of z^2 is 2)
    _check_mean(random.exponential(ks[2], (N,)), 1.0, 1.0)
    _check_mean(random.laplace(ks[3], (N,)), 0.0, math.sqrt(2))
    _check_mean(random.logistic(ks[4], (N,)), 0.0, math.pi / math.sqrt(3))
    g = random.gumbel(ks[5], (N,))
    _check_mean(g, np.euler_gamma, math.pi / math.sqrt(6))
    t = np.asarray(random.truncated_normal(ks[6], -0.5, 1.5, (N,)))
    assert t.min() > -0.5 and t.max() < 1.5
    from scipy import stats
    tn = stats.truncnorm(-0.5, 1.5)
    _check_mean(t, tn.mean(), tn.std())
    b = random.bernoulli(ks[7], 0.3, (N,))
    assert b.dtype == np.bool_
    _check_mean(b, 0.3, math.sqrt(0.21))


def test_moments_gamma_family():
    ks = random.split(random.PRNGKey(5), 4)
    n = 4000
    for a in (0.5, 3.0):
        g = random.gamma(ks[0], a, (n,))
        _check_mean(g, a, math.sqrt(a))
        assert float(np.min(g)) >= 0
    bt = random.beta(ks[1], 2.0, 3.0, (n,))
    _check_mean(bt, 0.4, math.sqrt(2 * 3 / (25 * 6)))
    d = np.asarray(random.dirichlet(ks[2], np.array([1.0, 2.0, 3.0]), (n,)))
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-5)
    _check_mean(d[:, 2], 0.5, math.sqrt(0.5 * 0.5 / 7))
    p = random.poisson(ks[3], np.array([0.5, 30.0]), (n, 2))
    _check_mean(np.asarray(p)[:, 0], 0.5, math.sqrt(0.5))
    _check_mean(np.asarray(p)[:, 1], 30.0, math.sqrt(30.0))


def test_discrete_samplers():
    ks = random.split(random.PRNGKey(77), 6)
    r = np.asarray(random.randint(ks[0], (N,), -3, 4))
    assert r.min() == -3 and r.max() == 3
    counts = np.bincount(r + 3, minlength=7)
    expected = N / 7
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 40  # 6 degrees of freedom: P(chi2 > 40) ~ 5e-7
    r8 = random.randint(ks[1], (100,), -200, 300, dtype=np.int8)
    assert r8.dtype == np.int8 and int(np.min(r8)) >= -128
    big = random.randint(ks[1], (1000,), 0, 2 ** 31 - 1)
    assert int(np.max(big)) > 2 ** 30
    p = np.asarray(random.permutation(ks[2], 50))
    assert sorted(p.tolist()) == list(range(50))
    c = np.asarray(random.choice(ks[3], 20, (20,), replace=False))
    assert sorted(c.tolist()) == list(range(20))
    x = np.arange(12).reshape(3, 4)
    perm = np.asarray(random.permutation(ks[4], x, axis=1, independent=True))
    assert all(sorted(row) == list(x_row) for row, x_row in zip(perm.tolist(), x.tolist(),
                                                                  strict=True))
    rad = np.asarray(random.rademacher(ks[5], (1000,)))
    assert set(rad.tolist()) == {-1, 1}
    logits = np.log(np.array([0.1, 0.6, 0.3], np.float32))
    cat = np.asarray(random.categorical(ks[0], logits, shape=(20000,)))
    _check_mean(cat == 1, 0.6, math.sqrt(0.24))


def test_linear_algebra_samplers():
    k = random.PRNGKey(3)
    q = np.asarray(random.orthogonal(k, 4, (2,)))
    assert q.shape == (2, 4, 4)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4),
                                                                           (2, 4, 4)), atol=1e-5)
    cov = np.array([[2.0, 0.6], [0.6, 1.0]], np.float32)
    mvn = np.asarray(random.multivariate_normal(k, np.array([1.0, -1.0]), cov, (20000,)),
                     np.float64)
    np.testing.assert_allclose(mvn.mean(0), [1.0, -1.0], atol=5 * math.sqrt(2 / 20000))
    c = cov.astype(np.float64)
    sigma = np.sqrt((np.outer(np.diag(c), np.diag(c)) + c ** 2) / 20000)
    assert np.all(np.abs(np.cov(mvn.T) - c) < 5 * sigma)


# --------------------------------------------------------------------------- against JAX


SAMPLERS = {
    "uniform": lambda r, k: r.uniform(k, (4, 3), minval=-2.0, maxval=3.0),
    "normal": lambda r, k: r.normal(k, (5,)),
    "normal_complex": lambda r, k: r.normal(k, (2,), np.complex64),
    "truncated_normal": lambda r, k: r.truncated_normal(k, -1.0, 2.0, (5,)),
    "bernoulli": lambda r, k: r.bernoulli(k, 0.3, (6,)),
    "bernoulli_high": lambda r, k: r.bernoulli(k, 0.3, (6,), mode="high"),
    "randint": lambda r, k: r.randint(k, (2, 3), -5, 100),
    "randint_int8": lambda r, k: r.randint(k, (6,), -5, 100, dtype=np.int8),
    "permutation": lambda r, k: r.permutation(k, 12),
    "permutation_axis": lambda r, k: r.permutation(k, np.arange(12).reshape(3, 4), axis=1),
    "permutation_independent": lambda r, k: r.permutation(
        k, np.arange(12).reshape(3, 4), axis=1, independent=True),
    "choice": lambda r, k: r.choice(k, 10, (4,)),
    "choice_array_axis": lambda r, k: r.choice(k, np.arange(12).reshape(3, 4), (2,), axis=1),
    "choice_without_replacement": lambda r, k: r.choice(k, 10, (4,), replace=False),
    "choice_p": lambda r, k: r.choice(
        k, 5, (4,), p=np.array([0.1, 0.2, 0.3, 0.2, 0.2], np.float32)),
    "choice_p_without_replacement": lambda r, k: r.choice(
        k, 5, (3,), replace=False, p=np.array([0.1, 0.2, 0.3, 0.2, 0.2], np.float32)),
    "gumbel": lambda r, k: r.gumbel(k, (4,)),
    "gumbel_high": lambda r, k: r.gumbel(k, (4,), mode="high"),
    "categorical": lambda r, k: r.categorical(
        k, np.log(np.array([[0.1, 0.5, 0.4], [0.3, 0.3, 0.4]], np.float32)), shape=(5, 2)),
    "categorical_without_replacement": lambda r, k: r.categorical(
        k, np.array([[0.1, 0.5, 0.4, 1.0], [0.3, 0.3, 0.4, 2.0]], np.float32), shape=(2, 2),
        replace=False),
    "exponential": lambda r, k: r.exponential(k, (4,)),
    "laplace": lambda r, k: r.laplace(k, (4,)),
    "logistic": lambda r, k: r.logistic(k, (4,)),
    "cauchy": lambda r, k: r.cauchy(k, (4,)),
    "rademacher": lambda r, k: r.rademacher(k, (6,)),
    "gamma": lambda r, k: r.gamma(k, np.array([0.5, 1.0, 3.0], np.float32)),
    "loggamma": lambda r, k: r.loggamma(k, np.array([0.5, 1.0, 3.0], np.float32)),
    "beta": lambda r, k: r.beta(k, 2.0, 3.0, (3,)),
    "dirichlet": lambda r, k: r.dirichlet(k, np.array([1.0, 2.0, 3.0], np.float32)),
    "poisson": lambda r, k: r.poisson(k, np.array([0.5, 3.0, 20.0], np.float32)),
    "multivariate_normal": lambda r, k: r.multivariate_normal(
        k, np.zeros(2, np.float32), np.array([[2.0, 0.5], [0.5, 1.0]], np.float32), (3,)),
    "orthogonal": lambda r, k: r.orthogonal(k, 3),
    "bits_uint8": lambda r, k: r.bits(k, (7,), np.uint8),
    "split_fold": lambda r, k: r.fold_in(r.split(k, (2, 2))[1, 0], 123),
}


@needs_jax
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_against_jax(name):
    f = SAMPLERS[name]
    for seed in (0, 7):
        want = np.asarray(f(jrandom, jrandom.PRNGKey(seed)))
        got = np.asarray(f(random, random.PRNGKey(seed)))
        assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
        else:
            np.testing.assert_array_equal(got, want)


@needs_jax
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(-2 ** 31, 2 ** 31 - 1), data=st.integers(0, 2 ** 32 - 1),
       num=st.integers(1, 5))
def test_key_ops_against_jax(seed, data, num):
    np.testing.assert_array_equal(random.PRNGKey(seed), jrandom.PRNGKey(seed))
    k = random.PRNGKey(seed)
    jk = jrandom.PRNGKey(seed)
    np.testing.assert_array_equal(random.split(k, num), jrandom.split(jk, num))
    np.testing.assert_array_equal(random.fold_in(k, data), jrandom.fold_in(jk, data))


# --------------------------------------------------------------------------- errors


def test_errors():
    k = random.PRNGKey(0)
    with pytest.raises(TypeError, match=r"expected key_data.shape to end with \(2,\)"):
        random.split(np.zeros(3, np.uint32))
    with pytest.raises(TypeError, match="expected key_data.dtype = uint32; got dtype=int32"):
        random.split(np.zeros(2, np.int32))
    with pytest.raises(ValueError, match=r"uniform accepts a single key, but was given a key "
                                         r"array of shape \(3, 2\) != \(\)"):
        random.uniform(np.zeros((3, 2), np.uint32))
    with pytest.raises(ValueError, match="must be a float dtype, got int32"):
        random.uniform(k, dtype=np.int32)
    with pytest.raises(ValueError, match="must be an unsigned int dtype"):
        random.bits(k, dtype=np.int32)
    with pytest.raises(TypeError, match="randint only accepts integer dtypes"):
        random.randint(k, (2,), 0, 3, dtype=np.float32)
    with pytest.raises(TypeError, match="bernoulli probability `p` must have a floating"):
        random.bernoulli(k, 1)
    with pytest.raises(ValueError, match="got mode='mid'"):
        random.bernoulli(k, 0.5, mode="mid")
    with pytest.raises(TypeError, match="PRNG key seed must be an integer"):
        random.PRNGKey(1.5)
    with pytest.raises(TypeError, match=r"accepts a scalar seed, but was given an array of "
                                        r"shape \(2,\)"):
        random.key(np.arange(2))
    with pytest.raises(TypeError, match="fold_in accepts a scalar"):
        random.fold_in(k, np.arange(3))
    with pytest.raises(OverflowError, match="out of bounds for uint32"):
        random.fold_in(k, -1)
    with pytest.raises(ValueError, match="Cannot take a larger sample"):
        random.choice(k, 3, (4,), replace=False)
    with pytest.raises(TypeError, match="shape argument of jax.random.choice must be a seq"):
        random.choice(k, 3, 4)
    with pytest.raises(ValueError, match="p must be None or a 1D vector"):
        random.choice(k, 3, (2,), p=np.ones(4) / 4)
    with pytest.raises(TypeError, match="x must be an integer or at least 1-dimensional"):
        random.permutation(k, 2.5)
    with pytest.raises(ValueError, match="broadcast-compatible with shape"):
        random.truncated_normal(k, np.zeros(3), 1.0, (2,))
    with pytest.raises(ValueError, match="dirichlet requires alpha.ndim >= 1"):
        random.dirichlet(k, 1.0)
    with pytest.raises(ValueError, match="method must be one of"):
        random.multivariate_normal(k, np.zeros(2), np.eye(2), method="qr")
    with pytest.raises(ValueError, match="multivariate_normal requires cov.shape"):
        random.multivariate_normal(k, np.zeros(2), np.eye(3))
    with pytest.raises(ValueError, match="Must provide valid mode for gumbel"):
        random.gumbel(k, mode="bad")
    with pytest.raises(TypeError, match="unexpected PRNG key type"):
        random.normal([0, 0])


def test_shuffle_is_deprecated():
    k = random.PRNGKey(0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = random.shuffle(k, np.arange(10))
    assert any(issubclass(x.category, DeprecationWarning) for x in w)
    np.testing.assert_array_equal(out, random.permutation(k, np.arange(10), independent=True))
