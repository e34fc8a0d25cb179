"""Control flow and convolutions through the SPMD partitioner (sharded jit): while loops
(fori_loop, scan, while_loop), conditionals (cond, switch) and convolutions run on blocks
with their splits kept, equal to NumPy / unsharded jit, with the output shardings real JAX
gives (hard-coded; compared with JAX itself where it is installed)."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.hlo.sharding import spec_to_text
from minijax.compiler.passes.spmd_partitioner import partition_module
from minijax.sharding import Mesh, NamedSharding
from minijax.sharding import PartitionSpec as P

pytestmark = pytest.mark.skipif(len(minijax.devices()) < 4, reason="needs 4 CPU devices")

MESH1 = Mesh(np.array(minijax.devices()[:2]), ("d",))
MESH2 = Mesh(np.array(minijax.devices()[:4]).reshape(2, 2), ("d", "m"))


def _x(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _run(f, args, specs, mesh):
    """f jit-ed over `args` split as `specs`, two ways: in_shardings, and plain jit of
    Arrays device_put with those shardings (the partitioned program both times)."""
    shardings = tuple(NamedSharding(mesh, s) for s in specs)
    out = minijax.jit(f, in_shardings=shardings)(*args)
    put = [minijax.device_put(a, s) for a, s in zip(args, shardings, strict=True)]
    again = minijax.jit(f)(*put)
    for a, b in zip(minijax.tree_util.tree_leaves(out), minijax.tree_util.tree_leaves(again),
                    strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert a.sharding == b.sharding
    return out


def _specs(out):
    return [o.sharding.spec for o in minijax.tree_util.tree_leaves(out)]


def _close(got, want, tol=1e-5):
    for g, w in zip(minijax.tree_util.tree_leaves(got), minijax.tree_util.tree_leaves(want),
                    strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


def _compiled(f, args, specs, mesh) -> str:
    shardings = tuple(NamedSharding(mesh, s) for s in specs)
    return minijax.jit(f, in_shardings=shardings).lower(*args).compile().as_text()


# ----------------------------------------------------------------------------- fori_loop
def _fori(x):
    return lax.fori_loop(0, 4, lambda i, c: c * 0.5 + i * jnp.mean(c), x)


def _fori_ref(x):
    c = x.astype(np.float64)
    for i in range(4):
        c = c * 0.5 + i * c.mean()
    return c


@pytest.mark.parametrize("mesh, spec", [(MESH1, P("d")), (MESH1, P(None, "d")),
                                        (MESH2, P("d", "m")), (MESH2, P(("d", "m")))],
                         ids=str)
def test_fori_loop_keeps_the_split_and_all_reduces_its_mean(mesh, spec):
    x = _x(8, 4)
    out = _run(_fori, [x], [spec], mesh)
    _close(out, _fori_ref(x))
    assert _specs(out) == [spec]        # JAX: P('d') on the 1-D mesh, P('d', 'm') on 2x2
    text = _compiled(_fori, [x], [spec], mesh)
    assert "all-gather" not in text and "all-reduce" in text


# ---------------------------------------------------------------------------------- scan
def _rnn(reverse):
    def f(xs, h, w, u):
        def step(h, x):
            h = jnp.tanh(x @ w + h @ u)
            return h, h * 2
        return lax.scan(step, h, xs, reverse=reverse)
    return f


def _rnn_ref(xs, h, w, u, reverse):
    ys = np.zeros(xs.shape[:2] + (h.shape[1],))
    h = h.astype(np.float64)
    for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
        h = np.tanh(xs[t] @ w + h @ u)
        ys[t] = h * 2
    return h, ys


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("mesh, xs_spec, h_spec", [
    (MESH1, P(None, "d"), P("d")),
    (MESH1, P(None, "d"), P()),              # the carry takes the split the body gives it
    (MESH2, P(None, "d", "m"), P("d")),      # features split too: an all-reduce over m
], ids=str)
def test_batch_split_rnn_scan_runs_split_with_no_gather_in_the_loop(reverse, mesh, xs_spec,
                                                                    h_spec):
    xs, h, w, u = _x(5, 8, 4), _x(8, 6, seed=1), _x(4, 6, seed=2), _x(6, 6, seed=3, scale=.3)
    f = _rnn(reverse)
    specs = [xs_spec, h_spec, P(), P()]
    out = _run(f, [xs, h, w, u], specs, mesh)
    _close(out, _rnn_ref(xs, h, w, u, reverse), tol=1e-4)
    # JAX (both meshes, forward and reverse, h split or not): h P('d'), ys P(None, 'd').
    assert _specs(out) == [P("d"), P(None, "d")]
    text = _compiled(f, [xs, h, w, u], specs, mesh)
    assert "all-gather" not in text
    # The loop carries blocks: h is f32[4,6] on each device, xs's batch is 4 of 8.
    (carry,) = re.findall(r"= (\(.*\)) while\(", text)
    assert "f32[4,6]" in carry and "f32[8,6]" not in carry


def test_partitioned_loop_module_prints_callees_first_and_parses_back():
    xs, h, w, u = _x(5, 8, 4), _x(8, 6, seed=1), _x(4, 6, seed=2), _x(6, 6, seed=3)
    module = parse_module(minijax.jit(_rnn(False)).lower(xs, h, w, u).as_text())
    # xs's features split on m: the loop body all-reduces x @ w with an add computation
    # the pass makes, which must print before the body.
    for p, dims in zip(module.entry.parameters, [((), ("d",), ("m",)), (("d",), ()),
                                                 ((), ()), ((), ())]):
        p.attrs["sharding"] = spec_to_text(("d", "m"), (2, 2), dims)
    assert partition_module(module, ("d", "m"), (2, 2)) == [(("d",), ()), ((), ("d",), ())]
    text = module_to_text(module)
    again = parse_module(text)
    names = [c.name for c in again.computations]
    assert names == [c.name for c in module.computations] and names[-1] == module.entry.name
    assert "all-gather" not in text
    (loop,) = [i for i in module.entry.instructions if i.opcode == "while"]
    body = loop.called["body"]
    # The body (with the carry's blocks) replaces the global one, which is gone.
    carry = [t.dims for t in body.parameters[0].shape.tuple_shapes]
    assert (4, 6) in carry and (8, 6) not in carry and (5, 4, 2) in carry
    assert "all-reduce" in text
    assert len([c for c in module.computations if c.name.startswith("scan_body")]) == 1


# ----------------------------------------------------------------------------- while_loop
def _grow(x):
    return lax.while_loop(lambda c: jnp.sum(jnp.abs(c[1])) < 1e3,
                          lambda c: (c[0] + 1, c[1] * 2 + 1), (0, x))


@pytest.mark.parametrize("mesh, spec", [(MESH1, P("d")), (MESH2, P("d", "m"))], ids=str)
def test_while_loop_with_a_condition_on_split_data(mesh, spec):
    x = _x(8, 4, scale=0.1)
    n, y = _run(_grow, [x], [spec], mesh)
    want_y, want_n = x.astype(np.float64), 0
    while np.abs(want_y).sum() < 1e3:
        want_y, want_n = want_y * 2 + 1, want_n + 1
    assert int(n) == want_n and want_n > 2
    _close(y, want_y)
    assert _specs((n, y)) == [P(), spec]     # JAX: P(), P('d') (P('d', 'm') on 2x2)


@settings(max_examples=12)
@given(st.sampled_from([(MESH1, P("d")), (MESH1, P(None, "d")), (MESH2, P("m", "d")),
                        (MESH2, P(None, ("m", "d")))]),
       st.floats(1.0, 500.0))
def test_while_loop_trip_count_is_the_same_on_every_device(mesh_spec, limit):
    mesh, spec = mesh_spec
    x = np.abs(_x(4, 8, seed=4)) + 0.5

    def f(x, limit):
        return lax.while_loop(lambda c: jnp.max(c[1]) < limit,
                              lambda c: (c[0] + 1, c[1] * 1.5), (0, x))
    n, y = _run(f, [x, np.float32(limit)], [spec, P()], mesh)
    want_n, want_y = 0, x.astype(np.float32)
    while want_y.max() < np.float32(limit):
        want_n, want_y = want_n + 1, want_y * np.float32(1.5)
    assert int(n) == want_n
    _close(y, want_y)


@pytest.mark.parametrize("mesh, spec", [(MESH1, P("d")), (MESH2, P("d", "m"))], ids=str)
def test_rnn_training_gradients_with_a_split_batch(mesh, spec):
    xs, h = _x(5, 8, 4), _x(8, 6, seed=1)
    w, u = _x(4, 6, seed=2), _x(6, 6, seed=3, scale=.3)

    def loss(w, u, xs, h):
        def step(h, x):
            h = jnp.tanh(x @ w + h @ u)
            return h, jnp.sum(h ** 2)
        return jnp.mean(lax.scan(step, h, xs)[1])
    g = minijax.grad(loss, argnums=(0, 1))
    specs = [P(), P(), P(None, *spec), P(spec[0])]
    out = _run(g, [w, u, xs, h], specs, mesh)
    _close(out, minijax.jit(g)(w, u, xs, h), tol=1e-4)
    # JAX: P(), P() on the 1-D mesh; on 2x2 (xs's features split on m) P('m'), P().
    assert _specs(out) == [P(*spec[1:]), P()]
    text = _compiled(g, [w, u, xs, h], specs, mesh)
    assert "all-gather" not in text and "all-reduce" in text


def test_nested_loops_conditionals_argmax_and_row_sorts_stay_split():
    x = _x(8, 6)

    def f(x):
        def outer(i, c):
            c = lax.fori_loop(0, 2, lambda j, d: d * 0.5 + jnp.mean(d), c)
            c = lax.cond(i > 1, lambda c: c, lambda c: -c, c)
            best = jnp.argmax(c, axis=1)[:, None].astype(jnp.float32)
            return jnp.sort(c, axis=1) + best
        return lax.fori_loop(0, 3, outer, x)

    def ref(x):
        c = x.astype(np.float64)
        for i in range(3):
            for _ in range(2):
                c = c * 0.5 + c.mean()
            c = c if i > 1 else -c
            c = np.sort(c, axis=1) + np.argmax(c, axis=1)[:, None]
        return c
    for mesh, spec in ((MESH1, P("d")), (MESH2, P(("d", "m")))):
        out = _run(f, [x], [spec], mesh)
        _close(out, ref(x), tol=1e-4)
        assert _specs(out) == [spec]          # JAX: the input's split
        assert "all-gather" not in _compiled(f, [x], [spec], mesh)


# ---------------------------------------------------------------------------- cond/switch
def _cond(x):
    return lax.cond(jnp.sum(x) > 0, lambda x: x * 2,
                    lambda x: jnp.sum(jnp.sin(x), 0, keepdims=True) + x, x)


@pytest.mark.parametrize("mesh, spec", [(MESH1, P("d")), (MESH2, P("d", "m"))], ids=str)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_on_split_data_branches_partitioned_alike(mesh, spec, sign):
    x = np.abs(_x(8, 4)) * sign
    out = _run(_cond, [x], [spec], mesh)
    want = x * 2 if sign > 0 else np.sin(x).sum(0, keepdims=True) + x
    _close(out, want)
    assert _specs(out) == [spec]             # JAX: P('d') (P('d', 'm') on 2x2)


@pytest.mark.parametrize("index", [-1, 0, 1, 2, 5])
def test_switch_with_a_replicated_index(index):
    x = _x(8, 6)
    branches = [lambda x: x * 2, lambda x: x - jnp.max(x, axis=1, keepdims=True), jnp.sin]
    f = lambda i, x: lax.switch(i, branches, x)   # noqa: E731
    out = _run(f, [np.int32(index), x], [P(), P("d")], MESH1)
    want = [x * 2, x - x.max(1, keepdims=True), np.sin(x)][min(max(index, 0), 2)]
    _close(out, want)
    assert _specs(out) == [P("d")]            # JAX: P('d')


def test_branches_that_split_differently_take_the_operands_split():
    x = _x(8, 8)
    f = lambda p, x: lax.cond(p, lambda x: x, lambda x: x.T, x)   # noqa: E731
    for p in (True, False):
        out = _run(f, [np.bool_(p), x], [P(), P("d")], MESH1)
        _close(out, x if p else x.T)
        assert _specs(out) == [P("d")]            # JAX: P('d')
    # The transposing branch moves its split back with an all-to-all, not a gather.
    text = _compiled(f, [np.bool_(True), x], [P(), P("d")], MESH1)
    assert "all-to-all" in text and "all-gather" not in text


# -------------------------------------------------------------------------- convolutions
def _conv(img, k):
    return lax.conv_general_dilated(img, k, (1, 1), "SAME")


def _conv_ref(img, k):
    """NCHW x OIHW, stride 1, SAME padding, in float64."""
    kh, kw = k.shape[2:]
    pad = np.pad(img.astype(np.float64), ((0, 0), (0, 0), ((kh - 1) // 2, kh // 2),
                                          ((kw - 1) // 2, kw // 2)))
    h, w = img.shape[2:]
    out = np.zeros((img.shape[0], k.shape[0], h, w))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", pad[:, :, i:i + h, j:j + w], k[:, :, i, j])
    return out


@pytest.mark.parametrize("mesh, img_spec, k_spec, out_spec", [
    (MESH1, P("d"), P(), P("d")),                   # batch split: no communication
    (MESH1, P(), P("d"), P(None, "d")),             # kernel output features split
    (MESH2, P("d"), P("m"), P("d", "m")),           # both
    (MESH1, P(None, "d"), P(None, "d"), P()),       # input features: partial sums
], ids=str)
def test_convolution_splits(mesh, img_spec, k_spec, out_spec):
    img, k = _x(4, 6, 8, 8), _x(4, 6, 3, 3, seed=1)
    out = _run(_conv, [img, k], [img_spec, k_spec], mesh)
    _close(out, _conv_ref(img, k), tol=1e-4)
    assert _specs(out) == [out_spec]    # JAX: P('d'), P(None, 'd'), P('d', 'm'), P()
    text = _compiled(_conv, [img, k], [img_spec, k_spec], mesh)
    assert "all-gather" not in text and "all-to-all" not in text


def test_grouped_convolution_and_its_kernel_gradient_with_a_split_batch():
    img, k = _x(4, 6, 8, 8), _x(6, 1, 3, 3, seed=1)

    def depthwise(img, k):
        return lax.conv_general_dilated(img, k, (1, 1), "SAME", feature_group_count=6)

    def f(img, k):
        # The kernel's gradient is a convolution with batch_group_count=6.
        return depthwise(img, k), minijax.grad(lambda k: jnp.sum(depthwise(img, k) ** 2))(k)
    out = _run(f, [img, k], [P("d"), P()], MESH1)
    _close(out, minijax.jit(f)(img, k), tol=1e-4)
    assert _specs(out) == [P("d"), P()]       # JAX: P('d'), P()


def _cnn_loss(k1, k2, img):
    return jnp.mean(_conv(_relu(_conv(img, k1)), k2) ** 2)


def _relu(x):
    return jnp.maximum(x, 0.0)


@pytest.mark.parametrize("mesh", [MESH1, MESH2], ids=["1d", "2x2"])
def test_cnn_training_step_with_a_split_batch(mesh):
    k1, k2, img = _x(4, 3, 3, 3, scale=.3), _x(2, 4, 3, 3, seed=1, scale=.3), _x(4, 3, 8, 8,
                                                                                 seed=2)

    def step(k1, k2, img):
        loss, (g1, g2) = minijax.value_and_grad(_cnn_loss, argnums=(0, 1))(k1, k2, img)
        return loss, k1 - 0.1 * g1, k2 - 0.1 * g2
    out = _run(step, [k1, k2, img], [P(), P(), P("d")], mesh)
    _close(out, minijax.jit(step)(k1, k2, img), tol=1e-4)
    assert _specs(out) == [P(), P(), P()]     # JAX: the kernels' gradients are P()
    text = _compiled(step, [k1, k2, img], [P(), P(), P("d")], mesh)
    # The kernels' gradients contract over the split batch: all-reduced, never gathered.
    assert "all-gather" not in text and "all-reduce" in text


# ------------------------------------------------------------------- reshapes and slices
@pytest.mark.parametrize("shape, out_spec", [
    ((8, 2, 3), P("d")), ((2, 4, 6), P("d")), ((48,), P("d")), ((1, 8, 6), P(None, "d")),
    ((6, 8), P("d")), ((3, 16), P()),
], ids=str)
def test_reshape_keeps_a_split_major_dimension(shape, out_spec):
    x = _x(8, 6)
    out = _run(lambda x: x.reshape(shape) + 1, [x], [P("d")], MESH1)
    _close(out, x.reshape(shape) + 1)
    # JAX: P('d') for (8, 2, 3), (2, 4, 6), (48,) and (6, 8) (each device's 4 rows are 3
    # rows of 8), P(None, 'd') for (1, 8, 6), P() for (3, 16) (3 rows do not split in 2).
    assert _specs(out) == [out_spec]


@settings(max_examples=12)
@given(st.integers(1, 4), st.sampled_from([2, 4, 6]), st.sampled_from([2, 4]),
       st.integers(1, 2), st.booleans())
def test_scan_over_a_non_scanned_split_dim(t, a, c, split_dim, reverse):
    xs = _x(t, a, c, seed=t + a + c)
    spec = P(None, "d") if split_dim == 1 else P(None, None, "d")

    def f(xs):
        return lax.scan(lambda h, x: (h * 0.9 + x, h[::-1] + x), jnp.zeros((a, c)), xs,
                        reverse=reverse)
    h, ys = _run(f, [xs], [spec], MESH1)
    want_h, want_ys = np.zeros((a, c)), np.zeros((t, a, c))
    for i in (range(t - 1, -1, -1) if reverse else range(t)):
        want_h, want_ys[i] = want_h * 0.9 + xs[i], want_h[::-1] + xs[i]
    _close((h, ys), (want_h, want_ys))
    # The carry takes the split of the xs block it adds.
    assert _specs(h) == [P(*spec[1:])]


def test_output_shardings_match_real_jax():
    jax = pytest.importorskip("jax")
    jjnp = jax.numpy
    if len(jax.devices()) < 2:
        pytest.skip("real JAX has a single device")
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("d",))
    x = _x(8, 4)
    cases = [
        (lambda x: jax.lax.fori_loop(0, 3, lambda i, c: c * 2 + jjnp.sum(c), x), _fori),
        (lambda x: jax.lax.cond(jjnp.sum(x) > 0, lambda x: x * 2, lambda x: x - 1, x),
         lambda x: lax.cond(jnp.sum(x) > 0, lambda x: x * 2, lambda x: x - 1, x)),
        (lambda x: jax.lax.while_loop(lambda c: jjnp.sum(c) < 1e3, lambda c: c * 2 + 1, x),
         lambda x: lax.while_loop(lambda c: jnp.sum(c) < 1e3, lambda c: c * 2 + 1, x)),
    ]
    for jf, mf in cases:
        want = jax.jit(jf)(jax.device_put(x, jax.sharding.NamedSharding(
            jmesh, jax.sharding.PartitionSpec("d")))).sharding.spec
        got = _run(mf, [x], [P("d")], MESH1).sharding.spec
        assert tuple(got) == tuple(want)
