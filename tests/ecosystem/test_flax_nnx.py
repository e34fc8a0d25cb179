"""flax.nnx on minijax: an MLP of nnx.Linear layers in nnx.Sequential (parameters from
nnx.Rngs), trained by an nnx.jit-ed step with nnx.value_and_grad and nnx.Optimizer(optax
sgd with momentum), then split/merged; results match real JAX's (fixtures/flax_nnx_mlp.npz:
same initialisation, same 20 steps)."""

import harness
import numpy as np
import pytest

PROGRAM = "flax_nnx_mlp"
pytestmark = pytest.mark.skipif(harness.missing(PROGRAM) is not None,
                                reason=str(harness.missing(PROGRAM)))


def test_flax_nnx_training_matches_jax():
    got = harness.run_program(PROGRAM)
    want = harness.load_fixture(PROGRAM)
    assert got["losses"][-1] < got["losses"][0]
    # JAX: (bias, kernel) sizes of the three Linear layers in nnx's state order
    np.testing.assert_array_equal(got["param_sizes"], [16, 48, 16, 256, 1, 16])
    assert int(got["opt_step"]) == 20
    for key, value in want.items():
        if key.startswith("_"):
            continue
        np.testing.assert_allclose(got[key], value, rtol=2e-5, atol=2e-6, err_msg=key)
