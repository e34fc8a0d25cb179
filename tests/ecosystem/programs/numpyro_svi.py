"""numpyro: Bayesian linear regression fitted by SVI with an AutoNormal guide (Adam, 50
steps); the loss curve and the guide's parameters.

The steps run eagerly by default: compiling numpyro's update takes minijax about 2 s
(10.5 s before threefry became one fusion node and fusion's bookkeeping linear), against
about 1 s to run 50 steps op by op. ECO_JIT=1 jits the update (benchmarks/ecosystem.py
times both ways).
"""

import os
import time

import jax
import numpy as np
import numpyro
from _eco_numpyro_model import data, model
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal

STEPS = 50
JIT = os.environ.get("ECO_JIT") == "1"


def run():
    x, y = data()
    guide = AutoNormal(model)
    svi = SVI(model, guide, numpyro.optim.Adam(0.05), Trace_ELBO())
    state = svi.init(jax.random.PRNGKey(0), x, y)
    step = jax.jit(svi.update) if JIT else svi.update
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
