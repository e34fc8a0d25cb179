"""pmap inside an outer jit, grad, vmap (and control flow), as in JAX: values against the
unsharded NumPy computation, gradients against finite differences of it. Also what decides
the path: any enclosing transformation (even one seen only through a closed-over value)
makes pmap run as a device-axis vmap; keyword arguments are mapped over axis 0; the mapped
size must fit the devices in every case."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.sharding import Mesh
from minijax.sharding import PartitionSpec as P

pytestmark = pytest.mark.skipif(len(minijax.devices()) < 4, reason="needs 4 CPU devices")

X = (np.arange(24, dtype=np.float32).reshape(4, 6) / 10 - 1).astype(np.float32)


def _pmap(f, **kw):
    return minijax.pmap(f, axis_name="i", devices=minijax.devices()[:4], **kw)


def body(v):
    return jnp.sin(v) * lax.psum(v, "i") + lax.pmax(v * v, "i")


def body_np(x):
    """body over all devices at once (axis 0 is the device axis), float64."""
    x = np.asarray(x, np.float64)
    return np.sin(x) * x.sum(0) + (x * x).max(0)


def _fd_grad(fun, x, eps=1e-4):
    """Central differences of the float64 scalar function `fun` at x."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (fun(x + d) - fun(x - d)) / (2 * eps)
    return g


W = np.linspace(-1, 1, 24).reshape(4, 6)


def loss_np(x):
    return float(np.sum(W * body_np(x)))


def loss(x):
    return jnp.sum(W.astype(np.float32) * _pmap(body)(x))


def test_top_level_matches_numpy():
    np.testing.assert_allclose(np.asarray(_pmap(body)(X)), body_np(X), rtol=1e-5, atol=1e-6)


def test_jit_of_pmap_matches_top_level():
    got = minijax.jit(lambda x: _pmap(body)(x))(X)
    np.testing.assert_allclose(np.asarray(got), body_np(X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("transform", ["grad", "jit(grad)", "grad(jit)", "vjp"])
def test_grad_of_pmap_matches_finite_differences(transform):
    want = _fd_grad(loss_np, X)
    if transform == "grad":
        got = minijax.grad(loss)(X)
    elif transform == "jit(grad)":
        got = minijax.jit(minijax.grad(loss))(X)
    elif transform == "grad(jit)":
        got = minijax.grad(minijax.jit(loss))(X)
    else:
        _, pullback = minijax.vjp(_pmap(body), X)
        (got,) = pullback(W.astype(np.float32))
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3, atol=2e-3)


def test_pmap_of_grad_equals_grad_of_pmap_for_a_per_device_loss():
    def dev_loss(v):
        return lax.psum(jnp.sum(jnp.sin(v) * v), "i")
    inner = _pmap(minijax.grad(dev_loss))(X)
    # d/dx of sum_i psum(...) counts each device's copy of the total: 4 times JAX's
    # pmap(grad) result, which differentiates one device's copy.
    outer = minijax.grad(lambda x: jnp.sum(_pmap(dev_loss)(x)))(X)
    want = _fd_grad(lambda x: float(np.sum(np.sin(x) * x)), X)
    np.testing.assert_allclose(np.asarray(inner), 4 * want, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(np.asarray(outer), 4 * want, rtol=2e-3, atol=2e-3)


def test_jacfwd_and_jacrev_of_pmap_agree():
    x = X[:, :2]
    fwd = minijax.jacfwd(_pmap(body))(x)
    rev = minijax.jacrev(_pmap(body))(x)
    assert fwd.shape == rev.shape == (4, 2, 4, 2)
    np.testing.assert_allclose(np.asarray(fwd), np.asarray(rev), rtol=1e-5, atol=1e-6)
    # One column of the Jacobian by finite differences.
    col = _fd_grad(lambda y: body_np(y)[1, 0], x)
    np.testing.assert_allclose(np.asarray(fwd)[1, 0], col, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("in_axes, out_axes", [(1, 0), (1, 1), (0, 2), (2, 0)])
def test_vmap_of_pmap_matches_a_python_loop(in_axes, out_axes):
    xs = np.stack([X, 2 * X, -X], axis=in_axes)
    got = minijax.vmap(_pmap(body), in_axes=in_axes, out_axes=out_axes)(xs)
    want = np.stack([body_np(np.take(xs, b, axis=in_axes)) for b in range(3)], out_axes)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_collectives_under_jit_of_pmap():
    perm = [(0, 1), (1, 2), (2, 3), (3, 0)]
    f = _pmap(lambda v: (lax.ppermute(v, "i", perm), lax.all_gather(v, "i"),
                         lax.all_to_all(v[:4], "i", 0, 0), lax.axis_index("i"),
                         lax.psum_scatter(v[:4], "i")))
    top = f(X)
    jitted = minijax.jit(f)(X)
    want = [np.roll(X, 1, axis=0), np.broadcast_to(X, (4, 4, 6)), X[:, :4].T,
            np.arange(4), X[:, :4].sum(0)]
    for t, j, w in zip(top, jitted, want, strict=True):
        np.testing.assert_allclose(np.asarray(t), w, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(j), w, rtol=1e-6)


def test_gradients_of_each_collective_under_outer_grad_match_finite_differences():
    perm = [(0, 1), (1, 2), (2, 0)]
    cases = [
        (lambda v: lax.all_gather(v, "i") * jnp.arange(4.0)[:, None],
         lambda x: np.broadcast_to(x, (4, 4, 6)) * np.arange(4.0)[None, :, None]),
        (lambda v: lax.ppermute(v, "i", perm) * lax.axis_index("i"),
         lambda x: np.stack([x[2], x[0], x[1], 0 * x[3]]) * np.arange(4.0)[:, None]),
        (lambda v: lax.all_to_all(v[:4], "i", 0, 0) * jnp.arange(4.0),
         lambda x: x[:, :4].T * np.arange(4.0)),
        (lambda v: lax.psum_scatter(v[:4], "i", tiled=True) * (1 + lax.axis_index("i")),
         lambda x: x[:, :4].sum(0).reshape(4, 1) * np.arange(1.0, 5.0)[:, None]),
    ]
    for f, ref in cases:
        got = minijax.grad(lambda x, f=f: jnp.sum(_pmap(f)(x) ** 2))(X)
        want = _fd_grad(lambda x, ref=ref: float(np.sum(ref(x) ** 2)), X)
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3, atol=2e-3)


def test_control_flow_inside_jit_of_pmap():
    def f(v):
        v = lax.cond(lax.axis_index("i") > 1, lambda a: lax.psum(a, "i"),
                     lambda a: -lax.psum(a, "i"), v)
        return lax.fori_loop(0, 3, lambda _, c: c + lax.pmean(c, "i"), v)
    total = X.sum(0)
    signs = np.array([-1, -1, 1, 1])[:, None]
    v = signs * total
    for _ in range(3):
        v = v + v.mean(0)
    np.testing.assert_allclose(np.asarray(_pmap(f)(X)), v, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(minijax.jit(_pmap(f))(X)), v, rtol=1e-5)


def test_closed_over_tracer_takes_the_transformed_path():
    """Only a closed-over value is traced (the mapped argument is concrete): the pmap must
    still see the tracer (it used to be compiled as a constant: wrong gradient, or a
    TracerArrayConversionError under jit)."""
    z0 = np.linspace(1, 2, 6).astype(np.float32)
    g = minijax.grad(lambda z: jnp.sum(_pmap(lambda v: v * z * z)(X)))(z0)
    np.testing.assert_allclose(np.asarray(g), 2 * z0 * X.sum(0), rtol=1e-5, atol=1e-5)
    out = minijax.jit(lambda z: _pmap(lambda v: v * z)(X))(z0)
    np.testing.assert_allclose(np.asarray(out), X * z0, rtol=1e-6)


def test_keyword_arguments_are_mapped_over_axis_0():
    f = _pmap(lambda v, s: v * s + lax.psum(s, "i"))
    want = X * X + X.sum(0)
    np.testing.assert_allclose(np.asarray(f(X, s=X)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(minijax.jit(lambda x: f(x, s=x))(X)), want,
                               rtol=1e-6)


def test_static_in_axes_none_and_out_axes_none_under_jit():
    f = _pmap(lambda v, w, s: (v * w * s, lax.psum(v, "i")), in_axes=(0, None, None),
              out_axes=(0, None), static_broadcasted_argnums=2)
    for call in (f, minijax.jit(f, static_argnums=2)):
        a, b = call(X, X[0], 3.0)
        np.testing.assert_allclose(np.asarray(a), X * X[0] * 3, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(b), X.sum(0), rtol=1e-6)


def test_mapped_size_must_fit_the_devices_under_transformations_too():
    big = np.ones((len(minijax.devices()) + 1, 2), np.float32)
    f = minijax.pmap(lambda v: v * 2)
    for call in (f, minijax.jit(f), minijax.grad(lambda x: jnp.sum(f(x)))):
        with pytest.raises(ValueError, match="logical devices"):
            call(big)
    two = minijax.pmap(lambda v: v * 2, devices=minijax.devices()[:2])
    with pytest.raises(ValueError, match="requires 4 logical devices, but only 2"):
        minijax.jit(two)(X)


def test_nested_pmap_and_named_vmap_around_pmap():
    x = X.reshape(2, 2, 6)
    f = minijax.pmap(minijax.pmap(lambda v: lax.psum(v, "j") + 10 * lax.psum(v, "i"),
                                  axis_name="j"), axis_name="i")
    want = x.sum(1, keepdims=True) + 10 * x.sum(0, keepdims=True)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(minijax.jit(f)(x)), want, rtol=1e-6)
    g = minijax.vmap(_pmap(lambda v: lax.psum(v, "i") + 10 * lax.psum(v, "b")),
                     axis_name="b")
    xs = np.stack([X, X + 1])
    np.testing.assert_allclose(np.asarray(g(xs)),
                               xs.sum(1, keepdims=True) + 10 * xs.sum(0, keepdims=True),
                               rtol=1e-6)


def test_shard_map_with_only_a_closed_over_tracer():
    mesh = Mesh(np.array(minijax.devices()[:4]), ("i",))
    z0 = np.linspace(1, 2, 6).astype(np.float32)

    def run(z):
        f = minijax.shard_map(lambda v: v * z * z, mesh=mesh, in_specs=P("i"),
                              out_specs=P("i"))
        return jnp.sum(f(X))
    g = minijax.grad(run)(z0)
    np.testing.assert_allclose(np.asarray(g), 2 * z0 * X.sum(0), rtol=1e-5, atol=1e-5)


def test_shard_map_and_pmap_nested_in_shard_map():
    m1 = Mesh(np.array(minijax.devices()[:2]), ("a",))
    m2 = Mesh(np.array(minijax.devices()[2:4]), ("b",))
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    inner = minijax.shard_map(lambda v: lax.psum(v, "b"), mesh=m2, in_specs=P("b"),
                              out_specs=P())
    f = minijax.shard_map(lambda v: inner(v) + jnp.sum(lax.psum(v, "a")), mesh=m1,
                          in_specs=P("a"), out_specs=P("a"))
    blocks = x.reshape(2, 2, 2)
    np.testing.assert_allclose(np.asarray(f(x)), blocks.sum(1) + x.sum(), rtol=1e-6)
    g = minijax.shard_map(lambda v: minijax.pmap(lambda w: lax.psum(w, "p"), "p")(v),
                          mesh=m1, in_specs=P("a"), out_specs=P("a"))
    want = np.repeat(blocks.sum(1), 2, axis=0)
    np.testing.assert_allclose(np.asarray(g(x)), want, rtol=1e-6)
