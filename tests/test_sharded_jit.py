"""jit(in_shardings=, out_shardings=) and lax.with_sharding_constraint through the SPMD
partitioner pass: results equal unsharded jit for elementwise ops, reductions, broadcasts,
reshapes, dot in every sharding, and the data-parallel and 2-D (data x model) MLP steps."""

import sys

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.compiler.hlo.sharding import spec_to_text, text_to_spec
from minijax.sharding import NamedSharding
from minijax.sharding import PartitionSpec as P

MESH = minijax.make_mesh((2, 4), ("x", "y"))


def S(*parts, mesh=MESH):
    return NamedSharding(mesh, P(*parts))


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _same(sharded_out, ref, rtol=1e-5, atol=1e-5):
    for got, want in zip(minijax.tree_util.tree_leaves(sharded_out),
                         minijax.tree_util.tree_leaves(ref), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


SPECS_2D = [P(), P("x"), P(None, "y"), P("x", "y"), P("y", "x"), P(("x", "y")),
            P(None, ("y", "x"))]


@pytest.mark.parametrize("spec", SPECS_2D, ids=str)
def test_elementwise_reductions_broadcasts(spec):
    a, b = _x(8, 16), _x(8, 16, seed=1)

    def f(a, b):
        c = jnp.tanh(a) * b + 2.0
        return c, jnp.sum(c, axis=0), jnp.max(c, axis=1), jnp.sum(c), c + jnp.sum(c, 1,
                                                                                 keepdims=True)
    out = minijax.jit(f, in_shardings=(NamedSharding(MESH, spec), S()))(a, b)
    _same(out, minijax.jit(f)(a, b))
    assert out[0].sharding == NamedSharding(MESH, spec)     # elementwise keeps the split


@pytest.mark.parametrize("ls, rs", [
    (P("x"), P()),                       # data parallel: lhs rows
    (P(), P(None, "y")),                 # model parallel: rhs columns
    (P(None, "y"), P("y")),              # contracting dim split: all-reduce
    (P("x", "y"), P("y", None)),         # rows and contracting
    (P("x", "y"), P("y", "x")),          # rhs free dim on an axis the lhs uses: gathered
    (P("y"), P("x", "y")),               # reshard rhs contracting to the lhs's (replicated)
], ids=str)
def test_dot_in_each_sharding(ls, rs):
    a, b = _x(8, 16), _x(16, 8, seed=1)
    out = minijax.jit(lambda a, b: a @ b, in_shardings=(S(*ls), S(*rs)))(a, b)
    np.testing.assert_allclose(np.asarray(out), a @ b, rtol=1e-4, atol=1e-4)


def test_batched_dot_and_reshape_and_transpose():
    a, b = _x(4, 8, 8), _x(4, 8, 5, seed=1)

    def f(a, b):
        c = jnp.einsum("bij,bjk->bik", a, b)
        return c.reshape(4, 40), jnp.transpose(c, (2, 0, 1)), c.reshape(160)
    out = minijax.jit(f, in_shardings=(S("x", None, "y"), S("x", "y")))(a, b)
    _same(out, minijax.jit(f)(a, b), rtol=1e-4, atol=1e-4)


def test_out_shardings_and_with_sharding_constraint():
    a = _x(8, 8)

    def f(a):
        b = lax.with_sharding_constraint(jnp.exp(a), S("y", "x"))
        return b * 2, jnp.sum(b, axis=1)
    g = minijax.jit(f, in_shardings=S("x"), out_shardings=(S(None, "y"), S()))
    out = g(a)
    _same(out, minijax.jit(f)(a))
    assert out[0].sharding == S(None, "y") and out[1].sharding == S()
    shards = out[0].addressable_shards
    assert len(shards) == 8 and shards[1].data.shape == (8, 2)
    text = g.lower(a).as_text()
    assert 'custom_call_target="Sharding"' in text and "sharding={devices=[2,1,4]" in text
    compiled = g.lower(a).compile().as_text()
    assert "all-gather(" in compiled or "all-reduce(" in compiled
    assert "partition-id()" in compiled


def test_with_sharding_constraint_outside_sharded_jit_is_identity_with_grad_and_vmap():
    a = _x(4, 8)

    def f(v):
        return jnp.sum(lax.with_sharding_constraint(v * v, S("x")))
    np.testing.assert_allclose(np.asarray(f(a)), (a * a).sum(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(minijax.grad(f)(a)), 2 * a, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(minijax.jit(f)(a)), (a * a).sum(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(minijax.vmap(f)(np.stack([a, a]))),
                               [(a * a).sum()] * 2, rtol=1e-5)


def test_sharded_arguments_bring_their_sharding_and_grad_inside():
    a = minijax.device_put(_x(8, 4), S("x"))
    w = _x(4, seed=3)

    def loss(w, a):
        return jnp.mean(jnp.tanh(a @ w) ** 2)
    g = minijax.jit(minijax.grad(loss), in_shardings=(S(), None))(w, a)
    np.testing.assert_allclose(np.asarray(g), np.asarray(minijax.grad(loss)(w, a)),
                               rtol=1e-4, atol=1e-6)


def test_errors():
    other = minijax.make_mesh((2,), ("x",))
    with pytest.raises(ValueError, match="same mesh"):
        minijax.jit(lambda a, b: a + b, in_shardings=(S("x"), S("x", mesh=other)))(
            _x(4), _x(4))
    with pytest.raises(Exception, match="not divisible"):
        minijax.jit(lambda a: a + 1, in_shardings=S("y"))(_x(6))


def test_sharding_text_round_trip():
    names, sizes = ("x", "y"), (2, 4)
    for spec in [((), ()), (("x",), ()), ((), ("y",)), (("y",), ("x",)), (("x", "y"), ())]:
        assert text_to_spec(spec_to_text(names, sizes, spec), names, sizes, 2) == spec
    assert text_to_spec("{devices=[4,1]<=[4]}", ("i",), (4,), 2) == (("i",), ())
    assert text_to_spec("{maximal device=0}", names, sizes, 2) is None


def _mlp_step():
    sys.path.insert(0, "examples")
    import data_parallel as dp

    def step(params, x, y):
        loss, grads = minijax.value_and_grad(dp.loss_fn)(params, x, y)
        return dp.sgd(params, grads), loss
    return dp, step


def test_data_parallel_mlp_step_equals_unsharded_jit():
    dp, step = _mlp_step()
    mesh = minijax.make_mesh((4,), ("batch",))
    rep, bat = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch"))
    sharded = minijax.jit(step, in_shardings=(rep, bat, bat), out_shardings=(rep, rep))
    plain = minijax.jit(step)
    x, y = dp.make_data(128)
    pa = pb = dp.init_params()
    for _ in range(5):
        pa, la = sharded(pa, x, y)
        pb, lb = plain(pb, x, y)
        np.testing.assert_allclose(float(la), float(lb), rtol=1e-5)
    _same(pa, pb, rtol=1e-4, atol=1e-6)


def test_2d_data_model_mlp_step_equals_unsharded_jit():
    dp, step = _mlp_step()
    mesh = minijax.make_mesh((2, 2), ("data", "model"))

    def s(*p):
        return NamedSharding(mesh, P(*p))
    psh = {"w1": s(None, "model"), "b1": s("model"), "w2": s("model", None), "b2": s()}
    sharded = minijax.jit(step, in_shardings=(psh, s("data"), s("data")),
                          out_shardings=(psh, s()))
    x, y = dp.make_data(64)
    p0 = dp.init_params()
    (pa, la), (pb, lb) = sharded(p0, x, y), minijax.jit(step)(p0, x, y)
    np.testing.assert_allclose(float(la), float(lb), rtol=1e-5)
    _same(pa, pb, rtol=1e-4, atol=1e-6)
    assert pa["w1"].sharding == s(None, "model")
