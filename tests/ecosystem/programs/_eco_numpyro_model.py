"""The model and data shared by the numpyro programs: Bayesian linear regression."""

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist


def data():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(50,)).astype(np.float32)
    y = (1.5 * x - 0.7 + 0.3 * rng.normal(size=(50,))).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(y)


def model(x, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 2.0))
    b = numpyro.sample("b", dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("y", dist.Normal(w * x + b, sigma), obs=y)
