"""Control flow: cond, switch, while_loop, fori_loop, scan, map, associative_scan.

References: Python loops and NumPy for values, finite differences for gradients
(check_grads), Python loops over the batch for vmap, eager evaluation for jit, and the
HLO evaluator for the lowering.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
from minijax import lax
from minijax.compiler.evaluator import evaluate_module
from minijax.compiler.lower import lower_jaxpr_to_module
from minijax.interpreters.partial_eval_jaxpr import partial_eval_jaxpr
from minijax.test_util import check_grads, check_vmap

pytestmark = pytest.mark.usefixtures("x64")  # conftest's fixture, for every test here


def _hlo_run(f, *args):
    """Lower make_jaxpr(f) to HLO and run it with the reference evaluator."""
    closed = minijax.make_jaxpr(f)(*args)
    module, hoisted = lower_jaxpr_to_module(closed, "f")
    flat = [np.asarray(a) for a in minijax.tree_util.tree_leaves(args)]
    return evaluate_module(module, flat + [np.asarray(h) for h in hoisted])


def _close(a, b, **kw):
    if isinstance(b, list) and all(np.ndim(v) == 0 for v in b):
        b = np.array(b, dtype=np.float64)
    for x, y in zip(minijax.tree_util.tree_leaves(a), minijax.tree_util.tree_leaves(b),
                    strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), **kw)


# --------------------------------------------------------------------------- cond / switch


def _cond_f(p, x):
    return lax.cond(p, lambda y: (lax.sin(y) * x, y), lambda y: (lax.cos(y), y * 2.0), x)


def test_cond_values():
    x = np.array([0.5, -1.0])
    for p in (True, False, 0, 3):
        got = _cond_f(p, x)
        want = (np.sin(x) * x, x) if p else (np.cos(x), x * 2)
        _close(got, want)
    assert lax.cond(True, lambda: 1.0, lambda: 2.0) == 1.0
    assert float(lax.cond(False, lambda a: a + 1.0, lambda a: a - 1.0, operand=3.0)) == 2.0


def test_switch_values_and_clamping():
    branches = [lambda x: x + 1.0, lambda x: x * 10.0, lambda x: -x]
    x = np.float64(2.0)
    for i, want in [(-5, 3.0), (0, 3.0), (1, 20.0), (2, -2.0), (7, -2.0)]:
        assert float(lax.switch(i, branches, x)) == want
        assert float(minijax.jit(lambda i, x: lax.switch(i, branches, x))(i, x)) == want
    assert float(lax.switch(3, [lambda x: x * 5.0], x)) == 10.0


@pytest.mark.parametrize("p", [True, False])
def test_cond_grads(p):
    x = np.array([0.3, -0.7])
    check_grads(lambda x: _cond_f(p, x), (x,), order=2, modes=("fwd",))
    check_grads(lambda x: _cond_f(p, x), (x,), order=1)
    g = minijax.grad(lambda x: lax.reduce_sum(_cond_f(p, x)[0], (0,)))(x)
    want = np.sin(x) + x * np.cos(x) if p else -np.sin(x)
    _close(g, want, rtol=1e-12)


def test_cond_grads_second_order_reverse():
    x = np.array([0.3, -0.7])
    check_grads(lambda x: _cond_f(True, x), (x,), order=2)


def test_switch_grads():
    branches = [lambda x: lax.sin(x), lambda x: x * x, lambda x: lax.exp(x)]
    x = np.array([0.2, 0.9])
    for i in range(3):
        check_grads(lambda x, i=i: lax.switch(i, branches, x), (x,), order=2, modes=("fwd",))
        check_grads(lambda x, i=i: lax.switch(i, branches, x), (x,), order=1)


def test_cond_vmap_batched_predicate_and_operands():
    preds = np.array([True, False, True, False])
    xs = np.linspace(-1, 1, 8).reshape(4, 2)
    check_vmap(_cond_f, (preds, xs))
    check_vmap(_cond_f, (True, xs), in_axes=(None, 0))
    check_vmap(_cond_f, (preds, xs[0]), in_axes=(0, None))
    check_vmap(lambda p, x: _cond_f(p, x), (preds, xs.T), in_axes=(0, 1))
    idx = np.array([0, 2, 1, 5, -1])
    branches = [lambda x: x + 1.0, lambda x: x * 10.0, lambda x: -x]
    check_vmap(lambda i, x: lax.switch(i, branches, x), (idx, np.arange(5.0)))


def test_cond_grad_of_vmap_and_vmap_of_grad():
    preds = np.array([True, False, True])
    xs = np.array([0.1, 0.2, 0.3])

    def loss(x, p):
        return lax.reduce_sum(_cond_f(p, x)[0], ())
    per_example = minijax.vmap(minijax.grad(loss))(xs, preds)
    loop = [minijax.grad(loss)(x, p) for x, p in zip(xs, preds, strict=True)]
    _close(per_example, np.array(loop))
    total = minijax.grad(lambda x: lax.reduce_sum(minijax.vmap(loss)(x, preds), (0,)))(xs)
    _close(total, np.array(loop))


def test_cond_jit_and_lowering():
    x = np.array([0.5, 1.5])
    for p in (True, False):
        _close(minijax.jit(_cond_f)(p, x), _cond_f(p, x))
        _close(_hlo_run(_cond_f, p, x), _cond_f(p, x))
        def loss(x, p=p):
            return lax.reduce_sum(_cond_f(p, x)[0], (0,))
        _close(minijax.jit(minijax.grad(loss))(x), minijax.grad(loss)(x))
    text = minijax.jit(_cond_f).lower(True, x).as_text()
    assert "conditional(" in text and "branch_computations" in text


def test_cond_closure_over_traced_value():
    def f(x, y):
        return lax.cond(x[0] > 0, lambda z: z * y, lambda z: z + y, x)
    x, y = np.array([1.0, 2.0]), np.float64(3.0)
    check_grads(f, (x, y), order=1)
    _close(minijax.jit(f)(x, y), x * y)
    _close(minijax.vmap(f, (None, 0))(x, np.array([1.0, 2.0])), np.stack([x * 1.0, x * 2.0]))


def test_cond_weak_type_join():
    out = lax.cond(True, lambda: 1.0, lambda: np.float64(2.0))
    assert out.dtype == np.float64 and not out.weak_type
    out = lax.cond(False, lambda: 1.0, lambda: 2.0)
    assert out.weak_type


def test_cond_errors():
    with pytest.raises(TypeError, match="true_fun and false_fun output must have identical "
                                        "types, got"):
        lax.cond(True, lambda x: x, lambda x: lax.convert_element_type(x, np.int32), 1.0)
    with pytest.raises(TypeError, match="DIFFERENT f64\\[\\] vs. i32\\[\\]"):
        lax.cond(True, lambda x: x, lambda x: lax.convert_element_type(x, np.int32), 1.0)
    with pytest.raises(TypeError, match="true_fun and false_fun output must have same type "
                                        "structure"):
        lax.cond(True, lambda x: (x, x), lambda x: x, 1.0)
    with pytest.raises(TypeError, match="Pred must be a scalar, got"):
        lax.cond(np.array([True, False]), lambda: 1.0, lambda: 2.0)
    # JAX 0.10.2 takes a float predicate (pred != 0) and refuses a complex one
    assert float(lax.cond(1.5, lambda: 1.0, lambda: 2.0)) == 1.0
    with pytest.raises(TypeError, match="Pred type must be either boolean or number, got "
                                        "complex"):
        lax.cond(1 + 1j, lambda: 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="should be callable"):
        lax.cond(True, 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="positional `operands` should not be passed"):
        lax.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0)
    with pytest.raises(ValueError, match="Empty branch sequence"):
        lax.switch(0, [], 1.0)
    with pytest.raises(TypeError, match="Branch index must be scalar"):
        lax.switch(np.array([0, 1]), [lambda: 1.0, lambda: 2.0])
    with pytest.raises(TypeError, match="Index type must be an integer, got float"):
        lax.switch(1.0, [lambda: 1.0, lambda: 2.0])
    with pytest.raises(TypeError, match="branch 0 and 1 outputs must have identical types"):
        lax.switch(0, [lambda: 1.0, lambda: np.int32(2)])


# --------------------------------------------------------------------------- scan


def _rnn_loop(w, h, xs, reverse=False):
    ys = []
    seq = xs[::-1] if reverse else xs
    for x in seq:
        h = np.tanh(w @ h + x)
        ys.append(h.sum())
    ys = np.array(ys)
    return h, ys[::-1] if reverse else ys


def _rnn(w, h, xs, reverse=False):
    def body(h, x):
        h = lax.tanh(lax.dot(w, h) + x)
        return h, lax.reduce_sum(h, (0,))
    return lax.scan(body, h, xs, reverse=reverse)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_rnn_values_jit_and_lowering(reverse):
    rng = np.random.default_rng(0)
    w, h, xs = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3), rng.normal(size=(5, 3))
    want = _rnn_loop(w, h, xs, reverse)
    _close(_rnn(w, h, xs, reverse), want, rtol=1e-12)
    _close(minijax.jit(_rnn, static_argnums=3)(w, h, xs, reverse), want, rtol=1e-12)
    _close(_hlo_run(lambda w, h, xs: _rnn(w, h, xs, reverse), w, h, xs), want, rtol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_rnn_grads(reverse):
    rng = np.random.default_rng(1)
    w, h, xs = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3), rng.normal(size=(4, 3))
    f = lambda w, h, xs: _rnn(w, h, xs, reverse)  # noqa: E731
    check_grads(f, (w, h, xs), order=1)
    check_grads(f, (w, h, xs), order=2, modes=("fwd",))

    def loss(w):
        h_last, ys = f(w, h, xs)
        return lax.reduce_sum(h_last, (0,)) + lax.reduce_sum(ys * ys, (0,))
    g = minijax.grad(loss)(w)
    eps, num = 1e-6, np.zeros_like(w)
    for i in np.ndindex(w.shape):
        d = np.zeros_like(w)
        d[i] = eps
        num[i] = (float(loss(w + d)) - float(loss(w - d))) / (2 * eps)
    _close(g, num, rtol=1e-6, atol=1e-8)
    _close(minijax.jit(minijax.grad(loss))(w), g, rtol=1e-10)


def test_scan_grads_second_order_reverse():
    rng = np.random.default_rng(2)
    w, h, xs = rng.normal(size=(2, 2)) * 0.5, rng.normal(size=2), rng.normal(size=(3, 2))
    check_grads(_rnn, (w, h, xs), order=2)


def test_scan_linearize_saves_constant_residuals_unstacked():
    w, h, xs = np.eye(3) * 0.5, np.ones(3), np.ones((4, 3))
    closed = minijax.make_jaxpr(minijax.grad(
        lambda w: lax.reduce_sum(_rnn(w, h, xs)[1], (0,))))(w)
    scans = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]
    assert len(scans) == 2  # the known forward scan and the transposed scan
    for eqn in scans:
        for v in eqn.outvars:  # nothing of the loop-invariant w is stacked per iteration
            assert v.aval.shape != (4, 3, 3)


def test_scan_xs_none_length_and_pytrees():
    carry, ys = lax.scan(lambda c, _: (c + 1.0, c * 2.0), 0.0, None, length=4)
    assert float(carry) == 4.0
    _close(ys, [0.0, 2.0, 4.0, 6.0])
    xs = {"a": np.arange(3.0), "b": (np.ones((3, 2)),)}

    def body(c, x):
        return (c[0] + x["a"], c[1] * 2.0), {"y": x["b"][0] * c[0]}
    (c0, c1), ys = lax.scan(body, (np.float64(0.0), np.float64(1.0)), xs)
    assert float(c0) == 3.0 and float(c1) == 8.0
    _close(ys["y"], np.array([[0, 0], [0, 0], [1, 1]], float) * np.array([[0], [1], [1]]))
    carry, ys = lax.scan(lambda c, x: (c, None), 1.0, np.zeros((0, 2)))
    assert ys is None and float(carry) == 1.0
    carry, ys = lax.scan(lambda c, x: (c + lax.reduce_sum(x, (0,)), x), 0.0, np.zeros((0, 2)))
    assert np.asarray(ys).shape == (0, 2)


@settings(max_examples=12, deadline=None)
@given(length=st.integers(0, 5), width=st.integers(0, 3), reverse=st.booleans())
def test_scan_cumulative_matches_numpy(length, width, reverse):
    xs = np.arange(length * width, dtype=np.float64).reshape(length, width) + 1.0
    carry, ys = lax.scan(lambda c, x: (c * 0.5 + x, c), np.zeros(width), xs, reverse=reverse)
    c, want = np.zeros(width), []
    for x in (xs[::-1] if reverse else xs):
        want.append(c)
        c = c * 0.5 + x
    want = np.array(want).reshape(length, width)
    _close(carry, c)
    _close(ys, want[::-1] if reverse else want)
    _close(minijax.jit(lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, c), np.zeros(width), xs,
                                           reverse=reverse))(xs), (c, ys))


def test_scan_vmap():
    rng = np.random.default_rng(3)
    w, h, xs = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(4, 3)), rng.normal(size=(4, 5, 3))
    check_vmap(_rnn, (w, h, xs), in_axes=(None, 0, 0))
    check_vmap(_rnn, (w, h[0], xs), in_axes=(None, None, 0))
    check_vmap(_rnn, (w, h, xs[0]), in_axes=(None, 0, None))
    ws = rng.normal(size=(4, 3, 3)) * 0.5
    check_vmap(_rnn, (ws, h[0], xs[0]), in_axes=(0, None, None))
    check_vmap(_rnn, (w, h, np.moveaxis(xs, 0, 2)), in_axes=(None, 0, 2), out_axes=1)


def test_scan_int_carry_and_weak_promotion():
    carry, ys = lax.scan(lambda c, x: (c + x, c), 0, np.arange(4, dtype=np.int32))
    assert carry.dtype == np.int32 and int(carry) == 6
    c, _ = lax.scan(lambda c, x: (c + x, None), 0.0, np.arange(3.0))
    assert c.dtype == np.float64 and not c.weak_type


def test_scan_errors():
    with pytest.raises(ValueError, match="scan got value with no leading axis to scan over"):
        lax.scan(lambda c, x: (c, x), 0.0, np.float64(1.0))
    with pytest.raises(ValueError, match="scan got values with different leading axis sizes: "
                                         "3, 4."):
        lax.scan(lambda c, x: (c, x), 0.0, (np.zeros(3), np.zeros(4)))
    with pytest.raises(ValueError, match="scan got `length` argument of 5 which disagrees with "
                                         "leading axis sizes \\[3\\]."):
        lax.scan(lambda c, x: (c, x), 0.0, np.zeros(3), length=5)
    with pytest.raises(ValueError, match="scan got no values to scan over and `length` not "
                                         "provided."):
        lax.scan(lambda c, x: (c, x), 0.0, None)
    with pytest.raises(TypeError, match="scan carry output and input must have identical "
                                        "types"):
        lax.scan(lambda c, x: (lax.convert_element_type(c, np.int32), x), np.float64(0.0),
                 np.zeros(3))
    with pytest.raises(TypeError, match="scan carry output and input must have same type "
                                        "structure"):
        lax.scan(lambda c, x: ((c, c), x), 0.0, np.zeros(3))
    with pytest.raises(TypeError, match="scan body output must be a pair"):
        lax.scan(lambda c, x: c, 0.0, np.zeros(3))
    with pytest.raises(TypeError, match="f argument should be a callable"):
        lax.scan(None, 0.0, np.zeros(3))


def test_map():
    xs = np.arange(12.0).reshape(6, 2)
    f = lambda x: lax.reduce_sum(lax.sin(x), (0,))  # noqa: E731
    want = np.sin(xs).sum(1)
    _close(lax.map(f, xs), want)
    _close(lax.map(f, xs, batch_size=4), want)
    _close(lax.map(f, xs, batch_size=3), want)
    _close(minijax.jit(lambda xs: lax.map(f, xs))(xs), want)
    check_grads(lambda xs: lax.map(f, xs), (xs,), order=1)
    check_vmap(lambda xs: lax.map(f, xs), (np.stack([xs, xs * 2]),))


# --------------------------------------------------------------------------- fori / while


def _fori(x, n=5):
    return lax.fori_loop(0, n, lambda i, c: lax.sin(c) * 1.5
                         + lax.convert_element_type(i, np.float64), x)


def _fori_ref(x, n=5):
    for i in range(n):
        x = np.sin(x) * 1.5 + i
    return x


def test_fori_loop_static_is_reverse_differentiable():
    x = np.array([0.3, 1.0])
    _close(_fori(x), _fori_ref(x))
    _close(minijax.jit(_fori)(x), _fori_ref(x))
    check_grads(_fori, (x,), order=1)
    check_grads(_fori, (x,), order=2, modes=("fwd",))
    check_vmap(_fori, (np.stack([x, x + 1]),))
    closed = minijax.make_jaxpr(_fori)(x)
    assert [e.primitive.name for e in closed.jaxpr.eqns].count("scan") == 1
    _close(lax.fori_loop(3, 1, lambda i, c: c + 1.0, 0.0), 0.0)


def test_fori_loop_traced_bounds_is_a_while_loop():
    f = minijax.jit(lambda x, n: _fori(x, n))
    x = np.array([0.3, 1.0])
    _close(f(x, 4), _fori_ref(x, 4))
    closed = minijax.make_jaxpr(lambda x, n: _fori(x, n))(x, 4)
    assert [e.primitive.name for e in closed.jaxpr.eqns].count("while") == 1
    check_grads(lambda x: f(x, 3), (x,), order=1, modes=("fwd",))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                                         "lax.while_loop or lax.fori_loop with dynamic "
                                         "start/stop values. Try using lax.scan"):
        minijax.jit(minijax.grad(lambda x, n: lax.reduce_sum(_fori(x, n), (0,))))(x, 3)
    with pytest.raises(TypeError, match="lower and upper arguments to fori_loop must have "
                                        "equal types, got float"):
        lax.fori_loop(0.5, 3, lambda i, c: c, 0.0)
    with pytest.raises(TypeError, match="fori_loop lower bound must be an integer scalar"):
        minijax.jit(lambda lo: lax.fori_loop(lo, 3.0, lambda i, c: c, 0.0))(0.5)


def _collatz_like(n, x):
    def cond(c):
        return lax.lt(c[0], n)

    def body(c):
        return lax.add(c[0], 1), c[1] * 1.5 + lax.sin(c[1])
    return lax.while_loop(cond, body, (np.int32(0), x))


def _collatz_ref(n, x):
    i = 0
    while i < n:
        i, x = i + 1, x * 1.5 + np.sin(x)
    return i, x


def test_while_loop_values_jit_lowering():
    x = np.array([0.2, -0.4])
    for n in (0, 1, 4):
        _close(_collatz_like(np.int32(n), x), _collatz_ref(n, x))
        _close(minijax.jit(_collatz_like)(np.int32(n), x), _collatz_ref(n, x))
        _close(_hlo_run(_collatz_like, np.int32(n), x),
               _collatz_ref(n, x))


def test_while_loop_jvp_and_linearize():
    x = np.array([0.2, -0.4])
    n = np.int32(3)
    check_grads(lambda x: _collatz_like(n, x)[1], (x,), order=2, modes=("fwd",))
    y, f_jvp = minijax.linearize(lambda x: _collatz_like(n, x)[1], x)
    _, t = minijax.jvp(lambda x: _collatz_like(n, x)[1], (x,), (np.ones(2),))
    _close(f_jvp(np.ones(2)), t)


def test_while_loop_vmap_batched_predicate():
    ns = np.array([0, 3, 1, 5], np.int32)
    xs = np.array([0.1, 0.2, 0.3, 0.4])
    check_vmap(_collatz_like, (ns, xs))
    check_vmap(_collatz_like, (np.int32(2), xs), in_axes=(None, 0))
    check_vmap(_collatz_like, (ns, np.float64(0.5)), in_axes=(0, None))
    _close(minijax.jit(minijax.vmap(_collatz_like))(ns, xs), minijax.vmap(_collatz_like)(ns, xs))
    # The batched predicate under jvp (per-example tangents of a data-dependent loop).
    f = minijax.vmap(lambda n, x: minijax.jvp(lambda x: _collatz_like(n, x)[1], (x,),
                                              (np.float64(1.0),))[1])
    loop = [minijax.jvp(lambda x, n=n: _collatz_like(n, x)[1], (x,), (np.float64(1.0),))[1]
            for n, x in zip(ns, xs, strict=True)]
    _close(f(ns, xs), np.array(loop))


def test_while_loop_errors():
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar, but got "
                                        "output type"):
        lax.while_loop(lambda c: c, lambda c: c, 0)
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar, but got pytree"):
        lax.while_loop(lambda c: (True, True), lambda c: c, 0)
    with pytest.raises(TypeError, match="body_fun output and input must have identical types"):
        lax.while_loop(lambda c: True, lambda c: lax.convert_element_type(c, np.float32),
                       np.int32(0))
    with pytest.raises(TypeError, match="body_fun output and input must have same type "
                                        "structure"):
        lax.while_loop(lambda c: True, lambda c: (c, c), 0)


# --------------------------------------------------------------------------- associative_scan


@settings(max_examples=15, deadline=None)
@given(n=st.integers(0, 11), reverse=st.booleans())
def test_associative_scan_matches_cumsum(n, reverse):
    x = np.arange(1.0, n + 1.0)
    got = lax.associative_scan(lax.add, x, reverse=reverse)
    want = np.cumsum(x[::-1])[::-1] if reverse else np.cumsum(x)
    _close(got, want)


def test_associative_scan_axis_pytree_grads_jit():
    rng = np.random.default_rng(4)
    x = rng.uniform(0.5, 1.5, size=(3, 6))
    _close(lax.associative_scan(lax.mul, x, axis=1), np.cumprod(x, axis=1))
    _close(lax.associative_scan(lax.max, x, axis=-1, reverse=True),
           np.maximum.accumulate(x[:, ::-1], axis=1)[:, ::-1])

    # A linear recurrence h_t = a_t h_{t-1} + b_t as a scan over (a, b) pairs.
    def combine(p, q):
        return (p[0] * q[0], q[0] * p[1] + q[1])
    a, b = rng.uniform(0.1, 0.9, 7), rng.normal(size=7)
    _, h = lax.associative_scan(combine, (a, b))
    ref, acc = [], 0.0
    for at, bt in zip(a, b, strict=True):
        acc = at * acc + bt
        ref.append(acc)
    _close(h, ref)
    check_grads(lambda a, b: lax.associative_scan(combine, (a, b))[1], (a, b), order=1)
    _close(minijax.jit(lambda a, b: lax.associative_scan(combine, (a, b)))(a, b),
           lax.associative_scan(combine, (a, b)))
    with pytest.raises(ValueError, match="Array inputs to associative_scan must have the same "
                                         "first dimension"):
        lax.associative_scan(combine, (np.ones(3), np.ones(4)))


# --------------------------------------------------------------------------- partial_eval_jaxpr


def test_partial_eval_jaxpr_composes_to_original():
    def f(x, y, z):
        a = lax.sin(x) * y
        return a + z, lax.cos(x), a * z
    x, y, z = np.float64(0.3), np.float64(1.2), np.float64(-0.7)
    closed = minijax.make_jaxpr(f)(x, y, z)
    known, unknown, out_uk, n_res = partial_eval_jaxpr(closed, [False, False, True])
    assert out_uk == [True, False, True]
    assert n_res >= 1
    known_outs = known(x, y)
    res = known_outs[len(known_outs) - n_res:]
    unknown_outs = unknown(*res, z)
    _close([unknown_outs[0], known_outs[0], unknown_outs[1]], f(x, y, z))
    assert all(e.primitive.name != "sin" for e in unknown.jaxpr.eqns)
    _, _, out_uk, _ = partial_eval_jaxpr(closed, [False, False, True], instantiate=True)
    assert out_uk == [True, True, True]
