"""minijax.random's extra distributions (minijax/random_more.py) against real JAX 0.10.2's
samples for the same key (hard-coded; JAX and minijax use the same formulas and key splits),
and binomial/multinomial against their moments (their samplers differ from JAX's)."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
import minijax.random as r

# name -> (call, JAX 0.10.2's values for PRNGKey(3))
JAX_SAMPLES = {
    "pareto": ("r.pareto(k, 2.0, (4,))",
            [1.0392184257507324, 4.020779132843018, 1.687795639038086, 6.404599189758301]),
    "t": ("r.t(k, 3.0, (4,))",
            [-2.486884355545044, -1.718506932258606, -0.5658463835716248, -0.5742847919464111]),
    "chisquare": ("r.chisquare(k, 3.0, (4,))",
            [0.7037352323532104, 0.9603685736656189, 9.939547538757324, 0.8150467872619629]),
    "f": ("r.f(k, 2.0, 5.0, (4,))",
            [2.815150737762451, 0.7919605374336243, 0.7386152148246765, 3.9283511638641357]),
    "maxwell": ("r.maxwell(k, (4,))",
            [2.1465470790863037, 2.0670928955078125, 1.5122445821762085, 1.6472820043563843]),
    "dsm": ("r.double_sided_maxwell(k, 1.0, 2.0, (4,))",
            [6.935983657836914, -1.9695570468902588, 7.647068977355957, -5.1548542976379395]),
    "weibull": ("r.weibull_min(k, 2.0, 1.5, (4,))",
            [0.3617900013923645, 3.9570093154907227, 2.0619843006134033, 4.796529769897461]),
    "gnorm": ("r.generalized_normal(k, 1.5, (4,))",
            [0.08286304026842117, -0.9900006651878357, 0.7537884712219238, -0.8563817143440247]),
    "ball": ("r.ball(k, 3, 2, (2,))",
            [0.6855275630950928, 0.5922616124153137, 0.4016343355178833, 0.2726835012435913,
             -0.8189635872840881, 0.1326536387205124]),
    "rayleigh": ("r.rayleigh(k, 2.0, (4,))",
            [4.563314437866211, 0.7147110104560852, 1.8598682880401611, 0.4443521201610565]),
    "wald": ("r.wald(k, 1.5, (4,))",
            [0.14439105987548828, 0.24172651767730713, 0.8289141654968262, 0.4893689751625061]),
    "geometric": ("r.geometric(k, 0.3, (4,))",
            [8, 1, 2, 1]),
    "triangular": ("r.triangular(k, 0., 1., 3., (4,))",
            [0.47133609652519226, 2.3907923698425293, 1.548704743385315, 2.617542028427124]),
    "lognormal": ("r.lognormal(k, 0.5, (4,))",
            [0.48523184657096863, 2.159097909927368, 1.2107658386230469, 2.6787517070770264]),
}


@pytest.mark.parametrize("name", sorted(JAX_SAMPLES))
def test_matches_jax_samples(name):
    call, want = JAX_SAMPLES[name]
    got = eval(call, {"r": r, "k": minijax.random.PRNGKey(3)})
    assert got.shape == np.shape(want) or got.size == len(want)
    np.testing.assert_allclose(np.ravel(got), want, rtol=2e-6, atol=1e-7, err_msg=name)


def test_geometric_is_integer():
    assert r.geometric(minijax.random.PRNGKey(0), 0.5, (3,)).dtype == jnp.int32


def test_binomial_moments():
    n, p = 7.0, 0.3
    x = np.asarray(r.binomial(minijax.random.PRNGKey(1), n, p, (4000,)))
    assert set(np.unique(x)) <= set(range(8))
    assert abs(x.mean() - n * p) < 0.1 and abs(x.var() - n * p * (1 - p)) < 0.15


def test_binomial_high_p_and_edges():
    p = jnp.array([0.0, 1.0, 0.9])
    x = np.asarray(r.binomial(minijax.random.PRNGKey(2), 10.0, p, (500, 3)))
    assert (x[:, 0] == 0).all() and (x[:, 1] == 10).all()
    assert abs(x[:, 2].mean() - 9.0) < 0.15


def test_multinomial_counts_sum_to_n_with_right_means():
    p = jnp.array([0.2, 0.3, 0.5])
    x = np.asarray(r.multinomial(minijax.random.PRNGKey(4), 6.0, p, shape=(3000,)))
    assert x.shape == (3000, 3) and (x.sum(-1) == 6).all() and (x >= 0).all()
    np.testing.assert_allclose(x.mean(0), 6 * np.asarray(p), atol=0.08)


def test_clone_and_top_level_names():
    key = minijax.random.key(1)
    np.testing.assert_array_equal(minijax.random.key_data(r.clone(key)), [0, 1])  # JAX's
    assert minijax.P is minijax.sharding.PartitionSpec
    assert minijax.NamedSharding is minijax.sharding.NamedSharding
    assert minijax.float0 == minijax.dtypes.float0
