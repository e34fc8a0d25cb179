"""lax.scan's `unroll`: the compiled loop runs `unroll` steps per iteration and the remainder
after it (no loop when unroll >= length). Values, gradients and vmap are checked against a
NumPy loop and against unroll=1, compiled (CPU backend) and on the HLO evaluator; the HLO
is inspected to see that the unrolling happened."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
from minijax import lax
from minijax.test_util import check_grads, check_vmap, evaluate_lowered

SETTINGS = settings(max_examples=25, deadline=None)
UNROLLS = st.sampled_from([1, 2, 3, 4, 5, 8, True, False])


def _body(c, x):
    """A step whose order matters: the carry is a (2,)-vector, there are two ys."""
    a, b = c
    new = (a * 0.5 + x[0] * b, b - 0.25 * a + x[1])
    return new, (a * b, x[0] - a)


def _reference(xs, reverse):
    a, b = np.float32(1.0), np.float32(-0.5)
    ys0, ys1 = [], []
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for i in order:
        x = xs[i]
        ys0.append(a * b)
        ys1.append(x[0] - a)
        a, b = np.float32(a * 0.5 + x[0] * b), np.float32(b - 0.25 * a + x[1])
    if reverse:
        ys0, ys1 = ys0[::-1], ys1[::-1]
    return (a, b), (np.array(ys0, np.float32), np.array(ys1, np.float32))


def _scan(xs, unroll, reverse):
    return lax.scan(_body, (np.float32(1.0), np.float32(-0.5)), xs, unroll=unroll,
                    reverse=reverse)


def _assert_close(got, want, rtol=1e-5):
    got_l, want_l = minijax.tree_util.tree_leaves(got), minijax.tree_util.tree_leaves(want)
    assert len(got_l) == len(want_l)
    for g, w in zip(got_l, want_l):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-6)


@SETTINGS
@given(length=st.sampled_from([0, 1, 2, 3, 5, 7, 8, 11]), unroll=UNROLLS,
       reverse=st.booleans())
def test_unrolled_scan_values(length, unroll, reverse):
    xs = np.random.default_rng(length).uniform(-1, 1, (length, 2)).astype(np.float32)
    want = _reference(xs, reverse)
    f = minijax.jit(lambda xs: _scan(xs, unroll, reverse))
    _assert_close(f(xs), want)
    _assert_close(f(xs), minijax.jit(lambda xs: _scan(xs, 1, reverse))(xs), rtol=1e-6)
    flat_want = minijax.tree_util.tree_leaves(want)
    for got, w in zip(evaluate_lowered(lambda xs: _scan(xs, unroll, reverse), xs), flat_want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


def _while_loops_and_body_steps(text):
    """(number of while instructions, number of body steps in the loop body)."""
    loops = len(re.findall(r"\bwhile\(", text))
    body = re.search(r"\n(%?scan_body[^\s]*) .*?\{(.*?)\n\}", text, re.S)
    steps = len(re.findall(r"\bdynamic-update-slice\(", body.group(2))) if body else 0
    return loops, steps


@pytest.mark.parametrize("length,unroll,loops,steps,rest", [
    (7, 1, 1, 1, 0), (7, 2, 1, 2, 1), (7, 3, 1, 3, 1), (9, 3, 1, 3, 0), (7, 7, 0, 0, 7),
    (7, 20, 0, 0, 7), (7, True, 0, 0, 7), (0, 4, 0, 0, 0), (1, 2, 0, 0, 1)])
def test_unrolled_scan_hlo_structure(length, unroll, loops, steps, rest):
    xs = np.zeros((length, 3), np.float32)
    text = minijax.jit(lambda xs: lax.scan(lambda c, x: (c + x, c * x), np.zeros(3, np.float32),
                                           xs, unroll=unroll)).lower(xs).as_text()
    assert _while_loops_and_body_steps(text) == (loops, steps)
    # The y written per step: `steps` in the loop body, the remainder in the entry.
    assert len(re.findall(r"\bdynamic-update-slice\(", text)) == steps + rest


@pytest.mark.parametrize("length,unroll", [(7, 3), (6, 4), (5, True), (0, 2), (1, 3)])
@pytest.mark.parametrize("reverse", [False, True])
def test_unrolled_scan_gradients(x64, length, unroll, reverse):
    rng = np.random.default_rng(5)
    w, h, xs = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3), rng.normal(size=(length, 3))

    def rnn(w, h, xs, unroll=unroll):
        def body(h, x):
            h = lax.tanh(lax.dot(w, h) + x)
            return h, lax.reduce_sum(h * x, (0,))
        return lax.scan(body, h, xs, unroll=unroll, reverse=reverse)

    def loss(w, h, xs, unroll=unroll):
        h_last, ys = rnn(w, h, xs, unroll)
        return lax.reduce_sum(h_last, (0,)) + lax.reduce_sum(ys * ys, (0,))
    check_grads(minijax.jit(rnn), (w, h, xs), order=2)
    g = minijax.jit(minijax.grad(loss, argnums=(0, 1, 2)))(w, h, xs)
    g1 = minijax.jit(minijax.grad(lambda *a: loss(*a, unroll=1), argnums=(0, 1, 2)))(w, h, xs)
    _assert_close(g, g1, rtol=1e-12)
    lin = minijax.jit(lambda t: minijax.jvp(lambda a: rnn(a, h, xs), (w,), (t,))[1])
    lin1 = minijax.jit(lambda t: minijax.jvp(lambda a: rnn(a, h, xs, 1), (w,), (t,))[1])
    _assert_close(lin(w * 0.3), lin1(w * 0.3), rtol=1e-12)


@pytest.mark.parametrize("length,unroll", [(7, 3), (4, 2), (3, True), (0, 3)])
def test_unrolled_scan_vmap(length, unroll):
    rng = np.random.default_rng(6)
    xs = rng.uniform(-1, 1, (4, length, 2)).astype(np.float32)
    f = minijax.jit(lambda xs: _scan(xs, unroll, False))
    check_vmap(f, (xs,), 0, 0, atol=1e-5, rtol=1e-5)
    check_vmap(f, (np.moveaxis(xs, 0, 2),), 2, 0, atol=1e-5, rtol=1e-5)
    _assert_close(minijax.vmap(f)(xs), minijax.vmap(lambda xs: _scan(xs, 1, False))(xs))
    g = minijax.jit(minijax.vmap(minijax.grad(lambda xs: lax.reduce_sum(
        _scan(xs, unroll, True)[1][0], (0,)))))
    g1 = minijax.vmap(minijax.grad(lambda xs: lax.reduce_sum(
        _scan(xs, 1, True)[1][0], (0,))))
    _assert_close(g(xs), g1(xs))


def test_unrolled_scan_carry_over_threading_threshold():
    n = (1 << 20) + 3
    rng = np.random.default_rng(7)
    xs = rng.uniform(-1, 1, (5, n)).astype(np.float32)
    f = minijax.jit(lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, c - x),
                                         np.zeros(n, np.float32), xs, unroll=2))
    c, want = np.zeros(n, np.float32), []
    for x in xs:
        want.append(c - x)
        c = c * np.float32(0.5) + x
    got_c, got_ys = f(xs)
    np.testing.assert_allclose(np.asarray(got_c), c, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got_ys), np.array(want), rtol=1e-6)


def test_fori_loop_unroll():
    f = minijax.jit(lambda v: lax.fori_loop(0, 7, lambda i, v: v * 2.0 + i, v, unroll=3))
    v, want = np.float32(0.5), np.float32(0.5)
    for i in range(7):
        want = want * 2 + i
    np.testing.assert_allclose(float(f(v)), want)


@pytest.mark.parametrize("unroll", [0, -2, 1.5, "2"])
def test_unroll_errors(unroll):
    with pytest.raises(ValueError, match="`unroll` must be a bool or a positive int"):
        lax.scan(lambda c, x: (c, x), 0.0, np.zeros(3), unroll=unroll)
