"""minijax.scipy.stats: the probability distributions and statistics of jax.scipy.stats.

Each distribution is a module with JAX's functions (`norm.logpdf`, `gamma.cdf`, ...) written
in jnp terms, so they work under jit, vmap and grad.
"""

from minijax.scipy.stats import (
    bernoulli,
    beta,
    betabinom,
    binom,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    gennorm,
    geom,
    gumbel_l,
    gumbel_r,
    laplace,
    logistic,
    multinomial,
    multivariate_normal,
    nbinom,
    norm,
    pareto,
    poisson,
    t,
    truncnorm,
    uniform,
    vonmises,
    wrapcauchy,
)
from minijax.scipy.stats.descriptive import ModeResult, mode, rankdata, sem
from minijax.scipy.stats.kde import gaussian_kde

__all__ = ["ModeResult", "bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2",
           "dirichlet", "expon", "gamma", "gaussian_kde", "gennorm", "geom", "gumbel_l",
           "gumbel_r", "laplace", "logistic", "mode", "multinomial", "multivariate_normal",
           "nbinom", "norm", "pareto", "poisson", "rankdata", "sem", "t", "truncnorm",
           "uniform", "vonmises", "wrapcauchy"]
