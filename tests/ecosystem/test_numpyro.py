"""numpyro on minijax: SVI with an AutoNormal guide (losses and guide parameters match real
JAX's step for step) and NUTS (posterior statistics agree with JAX's run).

NUTS trajectories are chaotic in the last bits of floating point (JAX's and minijax's
kernels round differently), so the NUTS test compares posterior means and spreads, not
individual samples. Compiling the NUTS program took minijax ~90 s before threefry became one
fusion node and fusion's bookkeeping linear; the whole test now takes ~4 s.
"""

import harness
import numpy as np
import pytest

pytestmark = pytest.mark.skipif(harness.missing("numpyro_svi") is not None,
                                reason=str(harness.missing("numpyro_svi")))


def test_numpyro_svi_matches_jax():
    got = harness.run_program("numpyro_svi")
    want = harness.load_fixture("numpyro_svi")
    assert got["losses"][-10:].mean() < got["losses"][:10].mean()
    for key, value in want.items():
        if key.startswith("_"):
            continue
        np.testing.assert_allclose(got[key], value, rtol=1e-4, atol=1e-4, err_msg=key)


def test_numpyro_nuts_posterior_matches_jax():
    got = harness.run_program("numpyro_nuts")
    want = harness.load_fixture("numpyro_nuts")
    for name in ("w", "b", "sigma"):
        g, w = got[f"samples_{name}"], want[f"samples_{name}"]
        assert g.shape == w.shape == (300,)
        spread = w.std()
        assert abs(g.mean() - w.mean()) < 0.3 * spread, name     # Monte Carlo error
        assert 0.7 < g.std() / spread < 1.4, name
    assert 0.5 < got["accept_prob"].mean() <= 1.0
