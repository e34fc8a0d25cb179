"""Loop dot hoisting (compiler/passes/loop_dot_hoisting.py): a scan's per-step dot of its
input slice by a loop-invariant matrix becomes one dot over the whole sequence in front of
the loop. Values are checked against NumPy loops, gradients against finite differences, and
the rewrite itself through the optimized HLO."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.compiler.hlo.parser import parse_module


def _dots_per_iteration(f, *args) -> int:
    """The dots left in the while bodies of f's optimized HLO."""
    module = parse_module(minijax.jit(f).lower(*args).compile().as_text())
    bodies = [i.called["body"] for c in module.computations for i in c.instructions
              if i.opcode == "while"]
    assert bodies, "no while loop left"
    return sum(i.opcode == "dot" for body in bodies for i in body.instructions)


def _rnn(xs, wx, wh, h0, reverse=False):
    def body(h, x):
        h = jnp.tanh(x @ wx + h @ wh)
        return h, h.sum()
    return lax.scan(body, h0, xs, reverse=reverse)


def _rnn_numpy(xs, wx, wh, h0, reverse=False):
    h = h0.astype(np.float64)
    sums = np.zeros(xs.shape[0])
    order = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
    for t in order:
        h = np.tanh(xs[t] @ wx + h @ wh)
        sums[t] = h.sum()
    return h, sums


def _inputs(steps=7, batch=3, din=5, hidden=4, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((steps, batch, din)).astype(dtype),
            (rng.standard_normal((din, hidden)) / np.sqrt(din)).astype(dtype),
            (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(dtype),
            rng.standard_normal((batch, hidden)).astype(dtype))


@pytest.mark.parametrize("reverse", [False, True])
def test_rnn_input_projection_is_hoisted_and_exact(reverse):
    args = _inputs()
    f = lambda *a: _rnn(*a, reverse=reverse)  # noqa: E731
    assert _dots_per_iteration(f, *args) == 1      # h @ wh stays; x @ wx left the loop
    h, sums = minijax.jit(f)(*args)
    ref_h, ref_sums = _rnn_numpy(*args, reverse=reverse)
    np.testing.assert_allclose(np.asarray(h), ref_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(sums), ref_sums, rtol=1e-4, atol=1e-4)


def test_slice_on_the_right_hand_side_and_a_middle_sequence_dim():
    """dot(W, x_t) with the sequence along dim 1 of xs: the hoisted dot's sliced dim sits
    behind W's free dims."""
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((4, 6, 3)).astype(np.float32)    # [din, T, batch]
    w = rng.standard_normal((5, 4)).astype(np.float32)

    def f(xs, w):
        def body(i, acc):
            x = lax.dynamic_index_in_dim(xs, i, axis=1, keepdims=False)    # [din, batch]
            return acc + jnp.tanh(w @ x)
        return lax.fori_loop(0, 6, body, jnp.zeros((5, 3), jnp.float32))

    assert _dots_per_iteration(f, xs, w) == 0
    ref = sum(np.tanh(w.astype(np.float64) @ xs[:, t, :]) for t in range(6))
    np.testing.assert_allclose(np.asarray(minijax.jit(f)(xs, w)), ref, rtol=1e-5, atol=1e-5)


def test_loops_that_read_only_part_of_the_sequence_are_left_alone():
    args = _inputs(steps=8)

    def half(xs, wx, wh, h0):
        def body(i, h):
            return jnp.tanh(xs[i] @ wx + h @ wh)
        return lax.fori_loop(0, 4, body, h0)

    def data_dependent(xs, wx, wh, h0):
        def cond(c):
            i, h = c
            return (i < 8) & (h.sum() < 1e6)
        def body(c):
            i, h = c
            return i + 1, jnp.tanh(xs[i] @ wx + h @ wh)
        return lax.while_loop(cond, body, (0, h0))[1]

    for f in (half, data_dependent):
        assert _dots_per_iteration(f, *args) == 2
    ref = args[3].astype(np.float64)
    for t in range(4):
        ref = np.tanh(args[0][t] @ args[1] + ref @ args[2])
    np.testing.assert_allclose(np.asarray(minijax.jit(half)(*args)), ref, rtol=1e-5, atol=1e-5)


def test_weights_updated_in_the_loop_are_not_hoisted():
    args = _inputs()

    def f(xs, wx, wh, h0):
        def body(carry, x):
            h, w = carry
            return (jnp.tanh(x @ w + h @ wh), w * 0.5), None
        return lax.scan(body, (h0, wx), xs)[0][0]

    assert _dots_per_iteration(f, *args) == 2
    xs, wx, wh, h0 = args
    h, w = h0.astype(np.float64), wx.astype(np.float64)
    for t in range(xs.shape[0]):
        h, w = np.tanh(xs[t] @ w + h @ wh), w * 0.5
    np.testing.assert_allclose(np.asarray(minijax.jit(f)(*args)), h, rtol=1e-5, atol=1e-5)


def test_gradient_through_the_hoisted_loop_matches_finite_differences():
    xs, wx, wh, h0 = _inputs()

    def loss(wx, wh):
        h, sums = _rnn(xs, wx, wh, h0)
        return (h ** 2).sum() + sums.sum()

    def loss_numpy(wx, wh):
        h, sums = _rnn_numpy(xs, wx, wh, h0)
        return (h ** 2).sum() + sums.sum()

    grads = minijax.jit(minijax.grad(loss, argnums=(0, 1)))(wx, wh)
    eps = 1e-6
    weights = [wx.astype(np.float64), wh.astype(np.float64)]
    for k, g in enumerate(grads):
        num = np.zeros_like(weights[k])
        for idx in np.ndindex(*num.shape):
            plus, minus = list(weights), list(weights)
            plus[k], minus[k] = weights[k].copy(), weights[k].copy()
            plus[k][idx] += eps
            minus[k][idx] -= eps
            num[idx] = (loss_numpy(*plus) - loss_numpy(*minus)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(g), num, rtol=2e-4, atol=2e-4)


@settings(max_examples=12, deadline=None)
@given(steps=st.integers(2, 9), batch=st.integers(1, 4), din=st.integers(1, 6),
       hidden=st.integers(1, 5), reverse=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_hoisted_rnn_matches_numpy_over_shapes(steps, batch, din, hidden, reverse, seed):
    args = _inputs(steps, batch, din, hidden, seed)
    h, sums = minijax.jit(lambda *a: _rnn(*a, reverse=reverse))(*args)
    ref_h, ref_sums = _rnn_numpy(*args, reverse=reverse)
    np.testing.assert_allclose(np.asarray(h), ref_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(sums), ref_sums, rtol=1e-4, atol=1e-4)
