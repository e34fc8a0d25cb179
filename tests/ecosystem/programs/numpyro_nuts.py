"""numpyro: NUTS on a small Bayesian linear regression (200 warmup + 300 samples, one
chain); posterior samples and summary statistics."""

import time

import jax
import numpy as np
from _eco_numpyro_model import data, model
from numpyro.infer import MCMC, NUTS

WARMUP, SAMPLES = 200, 300


def run():
    x, y = data()
    mcmc = MCMC(NUTS(model), num_warmup=WARMUP, num_samples=SAMPLES, progress_bar=False)
    fields = ("num_steps", "accept_prob")
    t0 = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(1), x, y, extra_fields=fields)
    seconds = time.perf_counter() - t0
    samples = mcmc.get_samples()
    out = {f"samples_{k}": v for k, v in samples.items()}
    out.update({f"mean_{k}": np.mean(v) for k, v in samples.items()})
    extra = mcmc.get_extra_fields()
    out["num_steps"] = extra["num_steps"]
    out["accept_prob"] = extra["accept_prob"]
    out["_step_seconds"] = seconds / (WARMUP + SAMPLES)
    return out
