"""minijax.random: JAX's counter-based PRNG API on the threefry2x32 hash.

Keys. `PRNGKey(seed)` returns a raw key, a uint32[2] array, as JAX's legacy keys.
`key(seed)` returns a typed key: a `PRNGKeyArray`, a small pytree wrapper around raw key data
of shape (*key_shape, 2) whose own shape is key_shape and whose dtype prints as `key<fry>`
(JAX's threefry tag). Every function accepts either kind; `split` and `fold_in` return the
kind they were given. Typed keys pass through jit and vmap as their raw data (a pytree
leaf), so vmap maps their leading axes.

Bits equal JAX's for the same key and call under JAX's default configuration
(threefry2x32 with `jax_threefry_partitionable=True`); float samplers apply JAX's formulas to
those bits, so they agree with JAX to rounding of the transcendental functions.

The package imports one way: `base` (keys, bits, uniform/normal/randint and friends) is the
lowest, `distributions` (the other samplers) builds on it, and this module re-exports both.
"""

from minijax.lax.out_sharding import accepts_out_sharding as _accepts_out_sharding
from minijax.random.base import KeyDType as KeyDType  # minijax.ref uses it; not in __all__
from minijax.random.base import (
    PRNGKey,
    PRNGKeyArray,
    bernoulli,
    bits,
    clone,
    fold_in,
    key,
    key_data,
    key_dtype,
    key_impl,
    normal,
    rademacher,
    randint,
    split,
    truncated_normal,
    uniform,
    wrap_key_data,
)
from minijax.random.distributions import (
    ball,
    beta,
    binomial,
    categorical,
    cauchy,
    chisquare,
    choice,
    dirichlet,
    double_sided_maxwell,
    exponential,
    f,
    gamma,
    generalized_normal,
    geometric,
    gumbel,
    laplace,
    loggamma,
    logistic,
    lognormal,
    maxwell,
    multinomial,
    multivariate_normal,
    orthogonal,
    pareto,
    permutation,
    poisson,
    rayleigh,
    shuffle,
    t,
    triangular,
    wald,
    weibull_min,
)

__all__ = [
    "PRNGKey", "PRNGKeyArray", "ball", "bernoulli", "beta", "binomial", "bits", "categorical",
    "cauchy", "chisquare", "choice", "clone", "dirichlet", "double_sided_maxwell",
    "exponential", "f", "fold_in", "gamma", "generalized_normal", "geometric", "gumbel", "key",
    "key_data", "key_dtype", "key_impl", "laplace", "loggamma", "logistic", "lognormal",
    "maxwell", "multinomial", "multivariate_normal", "normal", "orthogonal", "pareto",
    "permutation", "poisson", "rademacher", "randint", "rayleigh", "shuffle", "split", "t",
    "triangular", "truncated_normal", "uniform", "wald", "weibull_min", "wrap_key_data",
]

# The samplers that take JAX's out_sharding keyword (validated and applied to the result).
for _name in ("ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare",
              "dirichlet", "exponential", "f", "gamma", "generalized_normal", "geometric",
              "gumbel", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
              "multivariate_normal", "normal", "orthogonal", "pareto", "permutation", "poisson",
              "rademacher", "randint", "rayleigh", "t", "triangular", "truncated_normal",
              "uniform", "wald"):
    globals()[_name] = _accepts_out_sharding(globals()[_name])
del _name
