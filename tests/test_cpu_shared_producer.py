"""CPU code generation when several consumers share one producer (issue 14).

A descending sort and a softmax of the same exp(x) in one jit returned unsorted data: the row
fusion kept exp(x) of the current column in a scratch row and handed that value to every read
of exp(x), also to the reverse feeding the sort, which reads other columns. The property test
builds random small programs in which sorts, reductions, softmax, reverses, slices and
elementwise ops all consume one producer, and compares the CPU backend with the interpreter
backend (the HLO evaluator).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")

import minijax as jax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402

PRODUCERS = {
    "exp": jnp.exp,
    "sin": jnp.sin,
    "exp2": jnp.exp2,
    "log_softmax": jax.nn.log_softmax,
    "tanh": jnp.tanh,
    "square+1": lambda x: x * x + 1.0,
    "log1p|x|": lambda x: jnp.log1p(jnp.abs(x)),
}

CONSUMERS = {
    "sort": lambda p: jnp.sort(p, axis=-1),
    "sort_desc": lambda p: jnp.sort(p, axis=-1, descending=True),
    "sort_axis0": lambda p: jnp.sort(p, axis=0),
    "argsort": lambda p: jnp.argsort(p, axis=-1).astype(jnp.float32),
    "softmax": lambda p: jax.nn.softmax(p, axis=-1),
    "log_softmax": lambda p: jax.nn.log_softmax(p, axis=-1),
    "sum": lambda p: jnp.sum(p, axis=-1),
    "max": lambda p: jnp.max(p, axis=-1),
    "min0": lambda p: jnp.min(p, axis=0),
    "centered": lambda p: p - jnp.mean(p, axis=-1, keepdims=True),
    "normalized": lambda p: p / jnp.sum(p * p, axis=-1, keepdims=True),
    "flip": lambda p: jnp.flip(p, axis=-1),
    "flip_minus_max": lambda p: jnp.flip(p, axis=-1) - jnp.max(p, axis=-1, keepdims=True),
    "flip0": lambda p: jnp.flip(p, axis=0),
    "stride2": lambda p: p[..., ::2],
    "shifted": lambda p: p[..., 1:] - p[..., :-1],
    "transpose": lambda p: p.T * 2.0,
    "cumsum": lambda p: jnp.cumsum(p, axis=-1),
    "elementwise": lambda p: jnp.sqrt(jnp.abs(p)) + p,
    "roll_softmax": lambda p: jnp.roll(jax.nn.softmax(p, axis=-1), 1, axis=-1),
}


def _program(producer, consumers):
    def f(x):
        p = PRODUCERS[producer](x)
        return tuple(CONSUMERS[c](p) for c in consumers)
    return f


def test_issue_reproducer_descending_sort_and_softmax():
    x = jnp.array([1.0, 3.0, 2.0])
    for prod in (jnp.exp, jnp.sin, jnp.exp2, jax.nn.log_softmax):
        f = jax.jit(lambda x, prod=prod: (jnp.sort(prod(x), descending=True),
                                          jax.nn.softmax(prod(x))))
        got = np.asarray(f(x)[0])
        want = np.sort(np.asarray(prod(x)))[::-1]
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # JAX's value for the exp case.
    got = jax.jit(lambda x: (jnp.sort(jnp.exp(x), descending=True),
                             jax.nn.softmax(jnp.exp(x))))(x)
    np.testing.assert_allclose(np.asarray(got[0]), [20.085537, 7.389056, 2.7182817], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got[1]), [2.8674453e-08, 9.9999690e-01,
                                                    3.0618726e-06], rtol=1e-5)


@settings(max_examples=40)
@given(producer=st.sampled_from(sorted(PRODUCERS)),
       consumers=st.lists(st.sampled_from(sorted(CONSUMERS)), min_size=2, max_size=4),
       rows=st.integers(1, 3), cols=st.integers(2, 9), seed=st.integers(0, 2 ** 16))
def test_shared_producer_cpu_matches_interpreter(producer, consumers, rows, cols, seed):
    x = np.random.default_rng(seed).normal(0, 2, (rows, cols)).astype(np.float32)
    f = _program(producer, consumers)
    got = jax.jit(f, backend="cpu")(x)
    want = jax.jit(f, backend="interpreter")(x)
    for name, g, w in zip(consumers, got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-5,
                                   err_msg=f"{producer} -> {name}")
