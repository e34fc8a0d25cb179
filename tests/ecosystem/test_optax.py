"""optax on minijax: an optimizer chain (clipping, adamw, warmup-cosine schedule) trains an
MLP; losses and parameters match real JAX's (recorded in fixtures/optax_mlp.npz)."""

import harness
import numpy as np
import pytest

PROGRAM = "optax_mlp"
pytestmark = pytest.mark.skipif(harness.missing(PROGRAM) is not None,
                                reason=str(harness.missing(PROGRAM)))


def test_optax_training_matches_jax():
    got = harness.run_program(PROGRAM)
    want = harness.load_fixture(PROGRAM)
    assert got["losses"][-1] < 0.5 * got["losses"][0]  # it trains
    for key, value in want.items():
        if key.startswith("_"):
            continue
        np.testing.assert_allclose(got[key], value, rtol=2e-5, atol=2e-6, err_msg=key)
