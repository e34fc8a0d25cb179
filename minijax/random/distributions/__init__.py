"""The samplers of minijax.random beyond uniform/normal/randint: basic.py (permutations,
choice, gumbel/categorical, exponential family, gamma/beta/dirichlet, poisson,
multivariate_normal, orthogonal), derived.py (transforms of those: t, chisquare, f, pareto,
maxwell, wald, ...), binomial.py (binomial, multinomial). Re-exported by minijax.random."""

from minijax.random.distributions.basic import (
    beta,
    categorical,
    cauchy,
    choice,
    dirichlet,
    exponential,
    gamma,
    gumbel,
    laplace,
    loggamma,
    logistic,
    multivariate_normal,
    orthogonal,
    permutation,
    poisson,
    shuffle,
)
from minijax.random.distributions.binomial import binomial, multinomial
from minijax.random.distributions.derived import (
    ball,
    chisquare,
    double_sided_maxwell,
    f,
    generalized_normal,
    geometric,
    lognormal,
    maxwell,
    pareto,
    rayleigh,
    t,
    triangular,
    wald,
    weibull_min,
)

__all__ = ["ball", "beta", "binomial", "categorical", "cauchy", "chisquare", "choice",
           "dirichlet", "double_sided_maxwell", "exponential", "f", "gamma",
           "generalized_normal", "geometric", "gumbel", "laplace", "loggamma", "logistic",
           "lognormal", "maxwell", "multinomial", "multivariate_normal", "orthogonal",
           "pareto", "permutation", "poisson", "rayleigh", "shuffle", "t", "triangular",
           "wald", "weibull_min"]
