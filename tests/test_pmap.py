"""pmap: in_axes/out_axes, static and donated arguments, devices=, axis_size, sharded
outputs, errors, and compositions with grad, vmap, jit and control flow, each against the
unsharded computation (vmap with the same axis name, or NumPy)."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.sharding import NamedSharding


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_in_axes_out_axes_and_unmapped_arguments():
    x, w = _x(3, 4), _x(4, seed=1)

    def f(a, b):
        return a * b + lax.psum(a, "i"), b
    out, b = minijax.pmap(f, axis_name="i", in_axes=(1, None), out_axes=(1, None))(x.T, w)
    want = x * w + x.sum(0)
    np.testing.assert_allclose(np.asarray(out), want.T, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(b), w)


def test_outputs_are_sharded_over_the_devices_used():
    out = minijax.pmap(lambda v: v * 2)(np.arange(8.0, dtype=np.float32).reshape(4, 2))
    assert isinstance(out, minijax.Array) and isinstance(out.sharding, NamedSharding)
    assert out.devices() == set(minijax.devices()[:4])
    assert out.is_fully_addressable
    shards = out.addressable_shards
    assert [s.device for s in shards] == minijax.devices()[:4]
    for i, s in enumerate(shards):
        np.testing.assert_array_equal(np.asarray(s.data), [[4.0 * i, 4.0 * i + 2]])
        assert s.data.device == minijax.devices()[i]
    np.testing.assert_array_equal(np.asarray(out.addressable_data(3)), [[12.0, 14.0]])
    again = minijax.pmap(lambda v: v + 1)(out)             # sharded output as input
    np.testing.assert_array_equal(np.asarray(again), np.asarray(out) + 1)


def test_static_broadcasted_argnums_and_pytrees():
    def f(params, x, scale):
        return {"y": params["w"] * x * scale, "n": lax.psum(x, "i")}
    f_p = minijax.pmap(f, axis_name="i", in_axes=(None, 0, None),
                       static_broadcasted_argnums=2)
    params, x = {"w": np.float32(3.0)}, _x(2, 5)
    out = f_p(params, x, 2)
    np.testing.assert_allclose(np.asarray(out["y"]), 6 * x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out["n"]), np.broadcast_to(x.sum(0), x.shape),
                               rtol=1e-6)
    out3 = f_p(params, x, 3)                               # another static value recompiles
    np.testing.assert_allclose(np.asarray(out3["y"]), 9 * x, rtol=1e-6)
    assert len(f_p._programs) == 2
    with pytest.raises(ValueError, match="hashable"):
        f_p(params, x, [1])


def test_donate_argnums_deletes_the_donated_arrays():
    x = jnp.asarray(_x(2, 3))
    y = minijax.pmap(lambda v: v + 1, donate_argnums=0)(x)
    assert x.is_deleted() and not y.is_deleted()
    with pytest.raises(RuntimeError):
        np.asarray(x)


def test_devices_and_axis_size():
    devs = minijax.devices()[4:6]
    out = minijax.pmap(lambda v: lax.psum(v, "i"), axis_name="i", devices=devs)(_x(2, 3))
    assert out.devices() == set(devs)
    n = minijax.pmap(lambda: lax.psum(1, "i"), axis_name="i", axis_size=3)()
    np.testing.assert_array_equal(np.asarray(n), [3, 3, 3])


def test_errors():
    with pytest.raises(ValueError, match="requires 9 logical devices, but only 8"):
        minijax.pmap(lambda v: v)(np.ones((9, 2)))
    with pytest.raises(ValueError, match="inconsistent sizes"):
        minijax.pmap(lambda a, b: a + b)(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="at least one argument with a mapped axis"):
        minijax.pmap(lambda a: a, in_axes=None)(np.ones(2))


def _loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)


def test_pmap_of_grad_with_pmean_is_the_full_batch_gradient():
    w, x, y = _x(3, 2), _x(4, 5, 3, seed=1), _x(4, 5, 2, seed=2)
    step = minijax.pmap(lambda w, x, y: lax.pmean(minijax.grad(_loss)(w, x, y), "d"),
                        axis_name="d", in_axes=(None, 0, 0))
    g = step(w, x, y)
    full = minijax.grad(_loss)(w, x.reshape(20, 3), y.reshape(20, 2))
    for row in np.asarray(g):
        np.testing.assert_allclose(row, np.asarray(full), rtol=1e-4, atol=1e-6)


def test_grad_vmap_and_jit_of_pmap_match_vmap():
    x = _x(4, 3)

    def f(v):
        return jnp.sin(v) * lax.psum(v, "i") + lax.axis_index("i")
    pf, vf = minijax.pmap(f, axis_name="i"), minijax.vmap(f, axis_name="i")
    np.testing.assert_allclose(np.asarray(minijax.jit(pf)(x)), np.asarray(vf(x)), rtol=1e-6)
    gp = minijax.grad(lambda a: jnp.sum(pf(a) ** 2))(x)
    gv = minijax.grad(lambda a: jnp.sum(vf(a) ** 2))(x)
    np.testing.assert_allclose(np.asarray(gp), np.asarray(gv), rtol=1e-5)
    xs = _x(2, 4, 3, seed=5)
    np.testing.assert_allclose(np.asarray(minijax.vmap(pf)(xs)),
                               np.asarray(minijax.vmap(vf)(xs)), rtol=1e-6)


def test_vmap_jit_and_control_flow_inside_pmap():
    x = _x(2, 5, 3)

    def body(v):                                           # v: [5, 3] on each device
        rows = minijax.vmap(lambda r: r / lax.psum(jnp.sum(r), "i"))(v)
        loop = lax.fori_loop(0, 3, lambda i, c: c * 0.5 + lax.pmax(c, "i"), rows)
        branch = lax.cond(lax.axis_index("i") == 0, lambda a: a + 1.0, lambda a: a - 1.0,
                          loop)
        return minijax.jit(lambda a: a * 2)(branch)
    got = minijax.pmap(body, axis_name="i")(x)
    want = minijax.vmap(body, axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    rows = x / x.sum(axis=2, keepdims=True).sum(axis=0, keepdims=True)
    loop = rows
    for _ in range(3):
        loop = loop * 0.5 + loop.max(axis=0, keepdims=True)
    ref = (loop + np.array([1.0, -1.0], np.float32)[:, None, None]) * 2
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-5)


def test_scan_with_ppermute_inside_pmap():
    x = _x(4, 3)

    def f(v):
        def step(c, _):
            c = lax.ppermute(c, "i", [(i, (i + 1) % 4) for i in range(4)])
            return c, c
        return lax.scan(step, v, None, length=4)[1]
    got = np.asarray(minijax.pmap(f, axis_name="i")(x))
    for k in range(4):
        np.testing.assert_array_equal(got[:, k], np.roll(x, k + 1, axis=0))
