"""flax.linen on minijax: an MLP of nn.Dense layers initialised from a PRNGKey, applied, and
trained with jit + value_and_grad; results match real JAX's (fixtures/flax_linen_mlp.npz:
same initialisation, same 20 SGD steps)."""

import harness
import numpy as np
import pytest

PROGRAM = "flax_linen_mlp"
pytestmark = pytest.mark.skipif(harness.missing(PROGRAM) is not None,
                                reason=str(harness.missing(PROGRAM)))


def test_flax_linen_training_matches_jax():
    got = harness.run_program(PROGRAM)
    want = harness.load_fixture(PROGRAM)
    assert got["losses"][-1] < got["losses"][0]
    # JAX: the sizes of (bias, kernel) of each Dense layer, in flax's (sorted) order
    np.testing.assert_array_equal(got["param_shapes"], [16, 48, 16, 256, 1, 16])
    for key, value in want.items():
        if key.startswith("_"):
            continue
        np.testing.assert_allclose(got[key], value, rtol=2e-5, atol=2e-6, err_msg=key)
