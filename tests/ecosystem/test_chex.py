"""chex on minijax: its assertions pass and fail where they do on real JAX, and
chex.dataclass / assert_max_traces work through jit (fixtures/chex_asserts.npz)."""

import harness
import numpy as np
import pytest

PROGRAM = "chex_asserts"
pytestmark = pytest.mark.skipif(harness.missing(PROGRAM) is not None,
                                reason=str(harness.missing(PROGRAM)))


def test_chex_assertions_match_jax():
    got = harness.run_program(PROGRAM)
    want = harness.load_fixture(PROGRAM)
    assert 0 < got["checks"].sum() < len(got["checks"])  # some pass, some fail
    for key, value in want.items():
        if key.startswith("_"):
            continue
        np.testing.assert_array_equal(got[key], value, err_msg=key)
