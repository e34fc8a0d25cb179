"""numpyro: Bayesian linear regression fitted by SVI with an AutoNormal guide (Adam, 100
steps); the loss curve and the guide's parameters."""

import time

import jax
import numpy as np
import numpyro
from _eco_numpyro_model import data, model
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal

STEPS = 100


def run():
    x, y = data()
    guide = AutoNormal(model)
    svi = SVI(model, guide, numpyro.optim.Adam(0.05), Trace_ELBO())
    state = svi.init(jax.random.PRNGKey(0), x, y)
    step = jax.jit(svi.update)
    losses, times = [], []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        state, loss = step(state, x, y)
        losses.append(float(loss))
        times.append(time.perf_counter() - t0)
    params = svi.get_params(state)
    out = {"losses": np.array(losses, np.float32)}
    out.update({f"param_{k}": v for k, v in params.items()})
    out["_step_seconds"] = float(np.median(times[1:]))
    return out
