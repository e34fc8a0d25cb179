"""custom_jvp, custom_vjp, stop_gradient and checkpoint/remat under grad, vmap and jit.

References: closed-form derivatives in float64, finite differences (check_grads), Python
loops for vmap, eager evaluation for jit.
"""

import functools

import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.test_util import check_grads, check_vmap

pytestmark = pytest.mark.usefixtures("x64")  # conftest's fixture, for every test here


def _close(a, b, **kw):
    for x, y in zip(minijax.tree_util.tree_leaves(a), minijax.tree_util.tree_leaves(b),
                    strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), **kw)


def _sum(x):
    return lax.reduce_sum(x, tuple(range(np.ndim(x))))


# --------------------------------------------------------------------------- custom_jvp


@minijax.custom_jvp
def log1pexp(x):
    return lax.log1p(lax.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1.0 - 1.0 / (1.0 + lax.exp(x)))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_custom_jvp_log1pexp_stable_gradient():
    x = np.array([-3.0, 0.0, 2.0, 800.0])
    _close(log1pexp(x[:3]), np.log1p(np.exp(x[:3])))
    g = minijax.grad(lambda x: _sum(log1pexp(x)))(x)
    _close(g, _sigmoid(x))
    assert np.all(np.isfinite(np.asarray(g)))
    # Without the custom rule the gradient at 800 is nan (inf / inf).
    naive = minijax.grad(lambda x: _sum(lax.log1p(lax.exp(x))))(x)
    assert np.isnan(np.asarray(naive)[3])


def test_custom_jvp_under_jit_vmap_and_compositions():
    x = np.array([-1.0, 0.5, 900.0])
    want = _sigmoid(x)
    _close(minijax.jit(minijax.grad(lambda x: _sum(log1pexp(x))))(x), want)
    _close(minijax.vmap(minijax.grad(log1pexp))(x), want)
    _close(minijax.grad(lambda x: _sum(minijax.vmap(log1pexp)(x)))(x), want)
    _close(minijax.grad(lambda x: _sum(minijax.jit(log1pexp)(x)))(x), want)
    _close(minijax.jit(log1pexp)(x[:2]), np.log1p(np.exp(x[:2])))
    _close(minijax.jvp(log1pexp, (x,), (np.ones(3),))[1], want)
    # Second derivative: the rule's own derivative (sigmoid') through log1pexp again.
    g2 = minijax.grad(minijax.grad(log1pexp))(np.float64(0.3))
    s = _sigmoid(0.3)
    _close(g2, s * (1 - s))
    check_vmap(minijax.grad(log1pexp), (x,))
    check_grads(log1pexp, (x[:2],), order=2)


def test_custom_jvp_rule_is_used_not_the_primal():
    @minijax.custom_jvp
    def f(x):
        return lax.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), t * 100.0
    x = np.float64(0.4)
    assert float(minijax.grad(f)(x)) == 100.0
    assert float(minijax.jit(minijax.grad(f))(x)) == 100.0
    assert float(f(x)) == pytest.approx(np.sin(0.4))
    closed = minijax.make_jaxpr(f)(x)
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["custom_jvp_call"]


def test_custom_jvp_defjvps_pytrees_and_nondiff_argnums():
    @minijax.custom_jvp
    def f(x, y):
        return x * y, x + y

    f.defjvps(lambda g, ans, x, y: (g * y, g), lambda g, ans, x, y: (x * g, g))
    x, y = np.float64(2.0), np.float64(3.0)
    gx, gy = minijax.grad(lambda x, y: f(x, y)[0] + 2.0 * f(x, y)[1], (0, 1))(x, y)
    assert (float(gx), float(gy)) == (5.0, 4.0)

    @functools.partial(minijax.custom_jvp, nondiff_argnums=(0,))
    def app(fn, x):
        return fn(x)

    @app.defjvp
    def app_jvp(fn, primals, tangents):
        (x,), (t,) = primals, tangents
        return app(fn, x), 2.0 * t
    assert float(minijax.grad(lambda x: app(lax.sin, x))(x)) == 2.0
    assert float(app(lax.exp, np.float64(0.0))) == 1.0
    _close(minijax.vmap(minijax.grad(lambda x: app(lax.sin, x)))(np.ones(3)), 2.0 * np.ones(3))


def test_custom_jvp_kwargs_and_dict_inputs():
    @minijax.custom_jvp
    def f(p, scale=1.0):
        return p["a"] * scale

    @f.defjvp
    def f_jvp(primals, tangents):
        (p, scale), (tp, ts) = primals, tangents
        return f(p, scale), tp["a"] * scale + p["a"] * ts
    g = minijax.grad(lambda p: f(p, scale=3.0))({"a": np.float64(2.0)})
    assert float(g["a"]) == 3.0


def test_custom_jvp_errors():
    @minijax.custom_jvp
    def f(x):
        return x

    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function f using "
                                             "defjvp."):
        f(1.0)
    f.defjvp(lambda primals, tangents: primals[0])
    with pytest.raises(TypeError, match="Custom JVP rule must produce a pair"):
        minijax.grad(f)(np.float64(1.0))
    f.defjvp(lambda primals, tangents: ((primals[0],), (tangents[0],)))
    with pytest.raises(TypeError, match="Custom JVP rule must produce primal outputs with "
                                        "equal container"):
        minijax.grad(f)(np.float64(1.0))
    f.defjvp(lambda primals, tangents: (primals[0], np.ones(3)))
    with pytest.raises(TypeError, match="Custom JVP rule must produce primal and tangent "
                                        "outputs with corresponding shapes and dtypes. "
                                        "Expected f64\\[\\]"):
        minijax.grad(f)(np.float64(1.0))
    with pytest.raises(TypeError, match="Can't use ``defjvps`` with ``nondiff_argnums``"):
        minijax.custom_jvp(lambda a, x: x, nondiff_argnums=(0,)).defjvps(None)

    def outer(y):
        @minijax.custom_jvp
        def g(x):
            return x * y
        g.defjvp(lambda p, t: (g(p[0]), t[0] * y))
        return g(np.float64(1.0))
    with pytest.raises(TypeError, match="Detected differentiation of a custom_jvp function "
                                        "with respect to a closed-over value"):
        minijax.grad(outer)(np.float64(2.0))


# --------------------------------------------------------------------------- custom_vjp


@minijax.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def _clip_fwd(lo, hi, x):
    return x, (lo, hi)


def _clip_bwd(res, g):
    lo, hi = res
    return (None, None, lax.clamp(lo, g, hi))


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_clip_gradient():
    x = np.array([0.5, -2.0, 3.0])

    def loss(x):
        return _sum(clip_gradient(-0.75, 0.75, x * x))
    _close(clip_gradient(-1.0, 1.0, x), x)
    want = np.clip(1.0, -0.75, 0.75) * 2 * x
    _close(minijax.grad(loss)(x), want)
    _close(minijax.jit(minijax.grad(loss))(x), want)
    _close(minijax.vmap(minijax.grad(lambda x: clip_gradient(-0.75, 0.75, x * x)))(x), want)
    _close(minijax.grad(lambda x: _sum(minijax.vmap(
        lambda x: clip_gradient(-0.75, 0.75, x * x))(x)))(x), want)
    check_vmap(lambda x: clip_gradient(-1.0, 1.0, x), (x,))
    _close(minijax.jit(lambda x: clip_gradient(-1.0, 1.0, x))(x), x)


def test_custom_vjp_residuals_and_nondiff_argnums():
    @functools.partial(minijax.custom_vjp, nondiff_argnums=(0,))
    def scaled_sin(k, x):
        return lax.sin(x) * k

    def fwd(k, x):
        return scaled_sin(k, x), {"cos": lax.cos(x), "x": x}

    def bwd(k, res, g):
        return (g * res["cos"] * k,)
    scaled_sin.defvjp(fwd, bwd)
    x = np.array([0.1, 0.7])
    _close(minijax.grad(lambda x: _sum(scaled_sin(3.0, x)))(x), 3.0 * np.cos(x))
    _close(minijax.jit(minijax.grad(lambda x: _sum(scaled_sin(3.0, x))))(x), 3.0 * np.cos(x))
    _close(minijax.jacrev(lambda x: scaled_sin(2.0, x))(x), np.diag(2.0 * np.cos(x)))


def test_custom_vjp_bwd_is_called_once_per_grad():
    calls = []

    @minijax.custom_vjp
    def f(x):
        return x * 2.0

    def bwd(res, g):
        calls.append(1)
        return (g * 7.0,)
    f.defvjp(lambda x: (f(x), None), bwd)
    assert float(minijax.grad(f)(np.float64(1.0))) == 7.0
    assert len(calls) == 1


def test_custom_vjp_errors():
    @minijax.custom_vjp
    def f(x):
        return x

    with pytest.raises(AttributeError, match="No VJP defined for custom_vjp function f using "
                                             "defvjp."):
        f(1.0)
    f.defvjp(lambda x: (x, None), lambda res, g: (g,))
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff \\(jvp\\) to a "
                                        "custom_vjp function."):
        minijax.jvp(f, (np.float64(1.0),), (np.float64(1.0),))
    f.defvjp(lambda x: x, lambda res, g: (g,))
    with pytest.raises(TypeError, match="Custom VJP fwd rule must produce a pair"):
        minijax.grad(f)(np.float64(1.0))
    f.defvjp(lambda x: ((x, x), None), lambda res, g: (g,))
    with pytest.raises(TypeError, match="Custom VJP fwd rule <lambda> for function f must "
                                        "produce a pair"):
        minijax.grad(f)(np.float64(1.0))
    f.defvjp(lambda x: (x, None), lambda res, g: (g, g))
    with pytest.raises(TypeError, match="Custom VJP bwd rule must produce an output with the "
                                        "same container"):
        minijax.grad(f)(np.float64(1.0))
    f.defvjp(lambda x: (x, None), lambda res, g: (np.ones(3),))
    with pytest.raises(ValueError, match="must produce an output with the same shape/dtypes "
                                         "as the args tuple"):
        minijax.grad(f)(np.float64(1.0))


# --------------------------------------------------------------------------- stop_gradient


def test_stop_gradient():
    x = np.array([1.0, 2.0])
    _close(lax.stop_gradient(x), x)
    _close(minijax.grad(lambda x: _sum(lax.stop_gradient(x) * x))(x), x)
    _close(minijax.jit(minijax.grad(lambda x: _sum(lax.stop_gradient(x * x) + x)))(x),
           np.ones(2))
    _close(minijax.vmap(minijax.grad(lambda x: lax.stop_gradient(x) * x))(x), x)
    out = lax.stop_gradient({"a": x, "i": np.int32(3)})
    assert int(out["i"]) == 3
    _, t = minijax.jvp(lambda x: lax.stop_gradient(x) + x, (x,), (np.ones(2),))
    _close(t, np.ones(2))


# --------------------------------------------------------------------------- checkpoint


def _chain(x):
    return lax.sin(lax.sin(lax.sin(x)))


def _count(closed, name):
    total = 0
    for eqn in closed.jaxpr.eqns:
        total += eqn.primitive.name == name
        for p in eqn.params.values():
            if hasattr(p, "jaxpr"):
                total += _count(p, name)
    return total


def test_checkpoint_same_gradients_and_recomputes():
    x = np.array([0.3, 1.2])
    f_ckpt = minijax.checkpoint(_chain)
    _close(f_ckpt(x), _chain(x))
    _close(minijax.grad(lambda x: _sum(f_ckpt(x)))(x), minijax.grad(lambda x: _sum(_chain(x)))(x))
    check_grads(f_ckpt, (x,), order=2)
    plain = minijax.make_jaxpr(minijax.grad(lambda x: _sum(_chain(x))))(x)
    ckpt = minijax.make_jaxpr(minijax.grad(lambda x: _sum(f_ckpt(x))))(x)
    # Forward: 3 sins. The backward pass recomputes the two inner sins it needs.
    assert _count(plain, "sin") == 3
    assert _count(ckpt, "sin") == 5
    assert len(ckpt.jaxpr.eqns) > len(plain.jaxpr.eqns)


def test_checkpoint_policies():
    x = np.array([0.3, 1.2])
    save_all = minijax.checkpoint(_chain, policy=minijax.checkpoint_policies.everything_saveable)
    jaxpr = minijax.make_jaxpr(minijax.grad(lambda x: _sum(save_all(x))))(x)
    assert _count(jaxpr, "sin") == 3
    _close(minijax.grad(lambda x: _sum(save_all(x)))(x), minijax.grad(
        lambda x: _sum(_chain(x)))(x))
    none = minijax.checkpoint(_chain, policy=minijax.checkpoint_policies.nothing_saveable)
    assert _count(minijax.make_jaxpr(minijax.grad(lambda x: _sum(none(x))))(x), "sin") == 5
    w = np.array([[0.5, -0.2], [0.1, 0.3]])

    def mlp(x):
        return lax.tanh(lax.dot(w, lax.tanh(lax.dot(w, x))))
    dots = minijax.checkpoint(mlp, policy=minijax.checkpoint_policies.dots_saveable)
    g = minijax.grad(lambda x: _sum(dots(x)))(x)
    _close(g, minijax.grad(lambda x: _sum(mlp(x)))(x))
    plain = minijax.make_jaxpr(minijax.grad(lambda x: _sum(mlp(x))))(x)
    jaxpr = minijax.make_jaxpr(minijax.grad(lambda x: _sum(dots(x))))(x)
    # The tanh outputs are recomputed from the saved dot outputs; no dot is recomputed.
    assert _count(plain, "tanh") == 2 and _count(jaxpr, "tanh") == 4
    assert _count(jaxpr, "dot_general") == _count(plain, "dot_general")
    none = minijax.checkpoint(mlp, policy=minijax.checkpoint_policies.nothing_saveable)
    jaxpr = minijax.make_jaxpr(minijax.grad(lambda x: _sum(none(x))))(x)
    assert _count(jaxpr, "dot_general") > _count(plain, "dot_general")


def test_checkpoint_under_jit_vmap_scan_and_static_args():
    x = np.array([0.3, 1.2])
    f = minijax.remat(_chain)
    _close(minijax.jit(minijax.grad(lambda x: _sum(f(x))))(x),
           minijax.grad(lambda x: _sum(_chain(x)))(x))
    check_vmap(minijax.grad(lambda x: f(x)), (x,))

    def rnn(h, xs):
        body = minijax.checkpoint(lambda h, x: (lax.sin(h) * x, h))
        return lax.scan(body, h, xs)[0]
    xs = np.array([0.5, 1.5, -0.3])
    check_grads(rnn, (np.float64(0.4), xs), order=1)

    g = minijax.checkpoint(lambda x, n: lax.integer_pow(x, n),
                           static_argnums=(1,))
    assert float(minijax.grad(g)(np.float64(2.0), 3)) == 12.0
