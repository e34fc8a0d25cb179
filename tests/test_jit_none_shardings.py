"""jit(f, in_shardings=..., out_shardings=...) whose shardings are all None (a pytree of
Nones, as flax.nnx passes) is plain jit: compiled once and cached, static and donated
arguments honoured; it was run uncompiled, op by op, on every call."""

import numpy as np

import minijax
import minijax.numpy as jnp
from minijax.api_jit import JitWrapped


def test_none_shardings_compile_and_cache():
    calls = []

    def f(x, y):
        calls.append(1)  # runs only while tracing
        return x * 2 + y, jnp.sum(x)

    g = minijax.jit(f, in_shardings=None, out_shardings=(None, None))
    assert isinstance(g, JitWrapped)
    for _ in range(3):
        out, s = g(jnp.arange(3.0), 1.0)
    np.testing.assert_array_equal(out, [1.0, 3.0, 5.0])
    assert float(s) == 3.0
    assert len(calls) == 1


def test_none_shardings_keep_static_argnames():
    g = minijax.jit(lambda x, n: x * n, out_shardings=(None,), static_argnames="n")
    assert isinstance(g, JitWrapped)
    np.testing.assert_array_equal(g(jnp.ones(2), n=3), [3.0, 3.0])
