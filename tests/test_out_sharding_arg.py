"""JAX 0.10's `out_sharding=` keyword of dot_general / dot / matmul / einsum (flax.nnx passes
it): None is the default placement; a sharding is refused with a clear error."""

import numpy as np
import pytest

import minijax.lax as lax
import minijax.numpy as jnp

A = np.arange(6.0, dtype=np.float32).reshape(2, 3)
B = np.arange(12.0, dtype=np.float32).reshape(3, 4)
CALLS = {
    "dot_general": lambda **kw: lax.dot_general(A, B, (((1,), (0,)), ((), ())), **kw),
    "dot": lambda **kw: jnp.dot(A, B, **kw),
    "matmul": lambda **kw: jnp.matmul(A, B, **kw),
    "einsum": lambda **kw: jnp.einsum("ij,jk->ik", A, B, **kw),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_out_sharding_none_is_accepted(name):
    np.testing.assert_allclose(CALLS[name](out_sharding=None), A @ B)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_out_sharding_given_is_refused(name):
    with pytest.raises(NotImplementedError, match=f"{name}\\(out_sharding="):
        CALLS[name](out_sharding="x")
