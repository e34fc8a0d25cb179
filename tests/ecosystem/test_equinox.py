"""equinox on minijax: eqx.nn.MLP trained with filter_jit / filter_value_and_grad, and
filter_grad, partition/combine, tree_at; results match real JAX's
(fixtures/equinox_mlp.npz: same PRNGKey initialisation, same 20 SGD steps)."""

import harness
import numpy as np
import pytest

PROGRAM = "equinox_mlp"
pytestmark = pytest.mark.skipif(harness.missing(PROGRAM) is not None,
                                reason=str(harness.missing(PROGRAM)))


def test_equinox_training_matches_jax():
    got = harness.run_program(PROGRAM)
    want = harness.load_fixture(PROGRAM)
    assert got["losses"][-1] < got["losses"][0]
    for key, value in want.items():
        if key.startswith("_"):
            continue
        np.testing.assert_allclose(got[key], value, rtol=2e-5, atol=2e-6, err_msg=key)
