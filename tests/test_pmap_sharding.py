"""pmap's results are laid out over its devices, also inside jit (JAX 0.10.2's shardings):
`pmap(f)(x)`, `jit(pmap(f))(x)` and jit programs mixing pmapped and unmapped computation
give NamedShardings over the pmap's devices (mesh axis `axis_name`, else
'_internal_pmap_axis_name'), with every shard on its device, and values equal to NumPy's.
A pmap's output fed back to it (the training-loop pattern) is used in place, not copied.
Gradients of jit(pmap) match finite differences.

JAX's shardings are hard-coded next to each case (printed by JAX 0.10.2 with
XLA_FLAGS=--xla_force_host_platform_device_count=8) and, where jax is importable, also
compared live."""

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import api_spmd, global_arrays, lax
from minijax.sharding import NamedSharding

pytestmark = pytest.mark.skipif(len(minijax.devices()) < 4, reason="needs 4 CPU devices")

HAVE_JAX = importlib.util.find_spec("jax") is not None
X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.arange(12, dtype=np.float32).reshape(3, 4)
V = np.arange(3, dtype=np.float32)
PM = "_internal_pmap_axis_name"
XS = np.arange(18, dtype=np.float32).reshape(3, 2, 3)


def _double(a):
    return a * 2


def _scan_sin_grad(c0):
    """d/dc0 of sum(c2 ** 2), c1 = 1.5 sin(c0), c2 = 1.5 sin(c1) (float64)."""
    c0 = c0.astype(np.float64)
    c1 = 1.5 * np.sin(c0)
    c2 = 1.5 * np.sin(c1)
    return 2 * c2 * 1.5 * np.cos(c1) * 1.5 * np.cos(c0)


def _normalized_twice(x):
    for _ in range(2):
        x = x / x.sum(0) + 1
    return x


# name -> (run(jax_module, lax_module) -> pytree, NumPy values, JAX's layout of each leaf:
# (mesh axis names, mesh device ids, spec)).
CASES = {
    "pmap": (lambda jx, lx: jx.pmap(_double)(X), [X * 2], [((PM,), (0, 1), (PM,))]),
    "pmap_axis_name": (lambda jx, lx: jx.pmap(_double, axis_name="i")(X), [X * 2],
                       [(("i",), (0, 1), ("i",))]),
    "jit_pmap": (lambda jx, lx: jx.jit(jx.pmap(_double))(X), [X * 2],
                 [((PM,), (0, 1), (PM,))]),
    "jit_pmap_plus_one": (lambda jx, lx: jx.jit(lambda a: jx.pmap(_double)(a) + 1)(X),
                          [X * 2 + 1], [((PM,), (0, 1), (PM,))]),
    "jit_pmap_two_outputs": (
        lambda jx, lx: jx.jit(lambda a: jx.pmap(lambda b: (b, b.sum()))(a))(X),
        [X, X.sum(1)], [((PM,), (0, 1), (PM,))] * 2),
    "jit_pmap_then_sum": (lambda jx, lx: jx.jit(lambda a: jx.pmap(_double)(a).sum())(X),
                          [np.float32(30)], [((PM,), (0, 1), ())]),
    "jit_pmap_out_axes_1": (lambda jx, lx: jx.jit(jx.pmap(_double, out_axes=1))(X),
                            [X.T * 2], [((PM,), (0, 1), (None, PM))]),
    "pmap_out_axes_1": (lambda jx, lx: jx.pmap(_double, out_axes=1)(X), [X.T * 2],
                        [((PM,), (0, 1), (None, PM))]),
    # An output computed outside the pmap is replicated over the pmap's devices.
    "jit_mixed_outputs": (lambda jx, lx: jx.jit(lambda a, b: (jx.pmap(_double)(a), b + 1))(
        X, 3.0), [X * 2, np.float32(4)], [((PM,), (0, 1), (PM,)), ((PM,), (0, 1), ())]),
    "jit_pmap_transposed": (
        lambda jx, lx: jx.jit(lambda a: jx.pmap(_double, axis_name="i")(a).T)(X),
        [X.T * 2], [(("i",), (0, 1), (None, "i"))]),
    "jit_pmap_psum": (
        lambda jx, lx: jx.jit(jx.pmap(lambda b: lx.psum(b, "i"), axis_name="i"))(X),
        [np.broadcast_to(X.sum(0), X.shape)], [(("i",), (0, 1), ("i",))]),
    "jit_pmap_out_axes_none": (
        lambda jx, lx: jx.jit(jx.pmap(lambda b: (b, b.sum()), out_axes=(0, None)))(X),
        [X, X[0].sum()], [((PM,), (0, 1), (PM,)), ((PM,), (0, 1), ())]),
    "pmap_out_axes_none": (
        lambda jx, lx: jx.pmap(lambda b: (b, b.sum()), out_axes=(0, None))(X),
        [X, X[0].sum()], [((PM,), (0, 1), (PM,)), ((PM,), (0, 1), ())]),
    # One device: JAX's jit reports the split over a mesh axis of size 1 as none.
    "jit_pmap_one_device": (lambda jx, lx: jx.jit(jx.pmap(_double))(X[:1]), [X[:1] * 2],
                            [((PM,), (0,), ())]),
    "pmap_one_device": (lambda jx, lx: jx.pmap(_double)(X[:1]), [X[:1] * 2],
                        [((PM,), (0,), (PM,))]),
    # Two pmaps: the result's mesh is the first traced (the inner one).
    "jit_two_pmaps": (lambda jx, lx: jx.jit(lambda a: jx.pmap(_double, axis_name="i")(
        jx.pmap(lambda b: b + 1, axis_name="j")(a)))(X), [(X + 1) * 2],
        [(("j",), (0, 1), ("j",))]),
    "jit_pmap_in_axes_1": (lambda jx, lx: jx.jit(lambda a: jx.pmap(
        _double, in_axes=1, out_axes=0)(a[:, :2]))(Y), [Y[:, :2].T * 2],
        [((PM,), (0, 1), (PM,))]),
    "jit_pmap_unmapped_argument": (lambda jx, lx: jx.jit(jx.pmap(
        lambda a, b: a * b, in_axes=(0, None)))(X, V), [X * V], [((PM,), (0, 1), (PM,))]),
    "jit_pmap_devices_reversed": (lambda jx, lx: jx.jit(jx.pmap(
        _double, devices=jx.devices()[1::-1]))(X), [X * 2], [((PM,), (1, 0), (PM,))]),
    "jit_pmap_fed_back": (lambda jx, lx: jx.jit(jx.pmap(_double))(
        jx.jit(jx.pmap(_double))(X)), [X * 4], [((PM,), (0, 1), (PM,))]),
    "pmap_of_jit_pmap": (lambda jx, lx: jx.pmap(_double)(jx.jit(jx.pmap(_double))(X)),
                         [X * 4], [((PM,), (0, 1), (PM,))]),
    "jit_grad_of_pmap": (lambda jx, lx: jx.jit(jx.grad(
        lambda a: jx.pmap(jx.numpy.sin)(a).sum()))(X), [np.cos(X)],
        [((PM,), (0, 1), (PM,))]),
    "jit_pmap_all_gather": (lambda jx, lx: jx.jit(jx.pmap(
        lambda b: lx.all_gather(b, "i"), axis_name="i"))(X), [np.stack([X, X])],
        [(("i",), (0, 1), ("i",))]),
    "jit_pmap_ppermute": (lambda jx, lx: jx.jit(jx.pmap(
        lambda b: lx.ppermute(b, "i", [(0, 1), (1, 0)]), axis_name="i"))(X), [X[::-1]],
        [(("i",), (0, 1), ("i",))]),
    # Under vmap (eager or jit) the pmap's axis stays split, behind the batch axis.
    "vmap_of_pmap": (lambda jx, lx: jx.vmap(jx.pmap(_double))(np.stack([X, X + 1])),
                     [np.stack([X, X + 1]) * 2], [((PM,), (0, 1), (None, PM))]),
    "jit_vmap_of_pmap": (lambda jx, lx: jx.jit(jx.vmap(jx.pmap(_double)))(
        np.stack([X, X + 1])), [np.stack([X, X + 1]) * 2], [((PM,), (0, 1), (None, PM))]),
    # pmap inside control flow under jit: the loop carry / cond result takes the pmap's
    # split (also from the branch not taken), scan's ys stay split behind the scan axis.
    "jit_scan_carry_pmap": (lambda jx, lx: jx.jit(lambda c: lx.scan(
        lambda c, _: (jx.pmap(_double)(c), None), c, None, length=3)[0])(X), [X * 8],
        [((PM,), (0, 1), (PM,))]),
    "jit_scan_ys_pmap": (lambda jx, lx: jx.jit(lambda xs: lx.scan(
        lambda c, x: (c + 1.0, jx.pmap(_double)(x)), 0.0, xs))(XS), [np.float32(3), XS * 2],
        [((PM,), (0, 1), ()), ((PM,), (0, 1), (None, PM))]),
    "jit_scan_carry_pmap_psum": (lambda jx, lx: jx.jit(lambda c: lx.scan(
        lambda c, _: (jx.pmap(lambda v: v / lx.psum(v, "i"), axis_name="i")(c) + 1, None),
        c, None, length=2)[0])(X), [_normalized_twice(X)], [(("i",), (0, 1), ("i",))]),
    "jit_scan_carry_and_ys": (lambda jx, lx: jx.jit(lambda c: lx.scan(
        lambda c, _: (jx.pmap(_double)(c), c.sum()), c, None, length=2))(X),
        [X * 4, np.array([X.sum(), 2 * X.sum()])], [((PM,), (0, 1), (PM,)),
                                                    ((PM,), (0, 1), ())]),
    "jit_fori_loop_pmap": (lambda jx, lx: jx.jit(lambda c: lx.fori_loop(
        0, 3, lambda i, c: jx.pmap(_double)(c), c))(X), [X * 8], [((PM,), (0, 1), (PM,))]),
    "jit_while_loop_pmap": (lambda jx, lx: jx.jit(lambda c: lx.while_loop(
        lambda c: c.sum() < 100, lambda c: jx.pmap(_double)(c) + 1, c))(X),
        [((X * 2 + 1) * 2 + 1) * 2 + 1], [((PM,), (0, 1), (PM,))]),  # sums 36, 78, 162
    "jit_cond_pmap_taken": (lambda jx, lx: jx.jit(lambda c, p: lx.cond(
        p, lambda v: jx.pmap(_double)(v), lambda v: v + 1, c))(X, True), [X * 2],
        [((PM,), (0, 1), (PM,))]),
    "jit_cond_pmap_not_taken": (lambda jx, lx: jx.jit(lambda c, p: lx.cond(
        p, lambda v: jx.pmap(_double)(v), lambda v: v + 1, c))(X, False), [X + 1],
        [((PM,), (0, 1), (PM,))]),
    "jit_switch_pmap": (lambda jx, lx: jx.jit(lambda c, i: lx.switch(i, [
        _double, lambda v: v - 1, lambda v: jx.pmap(jx.numpy.sin)(v)], c))(X, 2),
        [np.sin(X)], [((PM,), (0, 1), (PM,))]),
    "jit_cond_pmap_two_outputs": (lambda jx, lx: jx.jit(lambda c, p: lx.cond(
        p, lambda v: (jx.pmap(_double)(v), v.sum()), lambda v: (v, v.sum() * 2), c))(X, True),
        [X * 2, X.sum()], [((PM,), (0, 1), (PM,)), ((PM,), (0, 1), ())]),
    "jit_grad_scan_pmap": (lambda jx, lx: jx.jit(jx.grad(lambda c: (lx.scan(
        lambda c, _: (jx.pmap(jx.numpy.sin)(c) * 1.5, None), c, None, length=2)[0] ** 2
    ).sum()))(X / 6), [_scan_sin_grad(X / 6)], [((PM,), (0, 1), (PM,))]),
    # An eager sharding constraint lays the value out (what pmap's pins do eagerly).
    "eager_with_sharding_constraint": (lambda jx, lx: lx.with_sharding_constraint(
        Y[:, :2], jx.sharding.NamedSharding(jx.sharding.Mesh(np.array(jx.devices()[:2]), "d"),
                                            jx.sharding.PartitionSpec(None, "d"))),
        [Y[:, :2]], [(("d",), (0, 1), (None, "d"))]),
}


def _layout(out) -> tuple:
    """(mesh axis names, mesh device ids, spec without trailing Nones) of an Array."""
    s = out.sharding
    spec = list(s.spec)
    while spec and spec[-1] is None:
        spec.pop()
    return (tuple(s.mesh.axis_names), tuple(d.id for d in s.mesh.devices.flat), tuple(spec))


def _check_shards(out) -> None:
    """Every shard sits on its device and holds the array's block there."""
    value = np.asarray(out)
    indices = out.sharding.devices_indices_map(out.shape)
    shards = out.addressable_shards
    assert [s.device for s in shards] == list(out.sharding.mesh.devices.flat)
    for s in shards:
        assert s.index == indices[s.device]
        assert s.data.devices() == {s.device} and s.data.committed
        np.testing.assert_array_equal(np.asarray(s.data), value[s.index])


@pytest.mark.parametrize("name", list(CASES))
def test_pmap_results_have_jax_shardings_and_numpy_values(name):
    run, want, layouts = CASES[name]
    leaves = minijax.tree_util.tree_leaves(run(minijax, lax))
    assert len(leaves) == len(want)
    for got, value, layout in zip(leaves, want, layouts, strict=True):
        np.testing.assert_allclose(np.asarray(got), value, rtol=1e-6, atol=1e-6)
        assert isinstance(got.sharding, NamedSharding), got.sharding
        assert _layout(got) == layout
        _check_shards(got)


@pytest.mark.skipif(not HAVE_JAX, reason="jax is not installed")
@pytest.mark.parametrize("name", list(CASES))
def test_shardings_match_live_jax(name):
    import jax

    run = CASES[name][0]
    want = [_layout(o) for o in jax.tree_util.tree_leaves(run(jax, jax.lax))]
    got = [_layout(o) for o in minijax.tree_util.tree_leaves(run(minijax, lax))]
    assert got == want == CASES[name][2]


@settings(max_examples=6, deadline=None)
@given(n=st.sampled_from([1, 2, 4]), out_axis=st.sampled_from([0, 1, -1, None]),
       extra=st.integers(0, 2))
def test_jit_pmap_layout_follows_out_axes(n, out_axis, extra):
    """jit(pmap(f, out_axes=k)) splits dimension k over the pmap's n devices (nothing
    split on one device, or for out_axes=None, whose value is device 0's)."""
    x = np.random.default_rng(n + extra).standard_normal((n, 3 + extra)).astype(np.float32)
    out = minijax.jit(minijax.pmap(lambda a: jnp.sin(a) * 2, out_axes=out_axis))(x)
    want = np.sin(x.astype(np.float64)) * 2
    if out_axis is None:
        want = want[0]
    elif out_axis % 2 == 1:
        want = want.T
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-6)
    spec = () if out_axis is None or n == 1 else (None,) * (out_axis % 2) + (PM,)
    assert _layout(out) == ((PM,), tuple(range(n)), spec)
    _check_shards(out)


def _capture(monkeypatch, module):
    """Record the per-device argument lists `module.run_spmd` is called with."""
    calls = []
    real = module.run_spmd

    def spy(backend, executable, devices, per_device_args, *rest):
        calls.append(per_device_args)
        return real(backend, executable, devices, per_device_args, *rest)
    monkeypatch.setattr(module, "run_spmd", spy)
    return calls


def test_pmap_output_fed_back_to_pmap_is_not_copied(monkeypatch):
    step = minijax.pmap(lambda p: p * 0.5 + 1)
    params = step(X)
    calls = _capture(monkeypatch, api_spmd)
    out = step(params)
    (per_device,) = calls
    base = params._buf
    for i, (arg, *_) in enumerate(per_device):
        assert arg.shape == (3,)
        assert np.shares_memory(arg, base), f"device {i}'s argument is a copy"
    np.testing.assert_allclose(np.asarray(out), (X * 0.5 + 1) * 0.5 + 1, rtol=1e-6)


def test_jit_pmap_runs_partitioned_and_uses_its_own_output_in_place(monkeypatch):
    step = minijax.jit(minijax.pmap(lambda p, b: p - 0.1 * b * p))
    batch = np.ones((2, 3), np.float32)
    calls = _capture(monkeypatch, global_arrays)
    params = step(X, batch)
    (first,) = calls
    assert [a.shape for a, _ in first] == [(1, 3), (1, 3)]  # each device its own block
    params2 = step(params, batch)
    second = calls[1]
    for arg, _ in second:
        assert np.shares_memory(arg, params._buf)
    np.testing.assert_allclose(np.asarray(params2), X * 0.9 * 0.9, rtol=1e-6)
    assert _layout(params2) == ((PM,), (0, 1), (PM,))


def test_training_loop_keeps_layout_and_matches_numpy():
    """params = p_step(params, batch) over several steps, under jit and not."""
    def step(w, xb, yb):
        g = minijax.grad(lambda w: jnp.mean((xb @ w - yb) ** 2))(w)
        return w - 0.1 * lax.pmean(g, "i")
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((2, 8, 3)).astype(np.float32)
    ys = rng.standard_normal((2, 8)).astype(np.float32)
    w0 = np.zeros((2, 3), np.float32)
    want = np.zeros(3)
    for _ in range(3):
        grads = [2 * xs[d].T.astype(np.float64) @ (xs[d] @ want - ys[d]) / 8 for d in range(2)]
        want = want - 0.1 * np.mean(grads, axis=0)
    for p_step in (minijax.pmap(step, axis_name="i"),
                   minijax.jit(minijax.pmap(step, axis_name="i"))):
        w = w0
        for _ in range(3):
            w = p_step(w, xs, ys)
            assert _layout(w) == (("i",), (0, 1), ("i",))
        np.testing.assert_allclose(np.asarray(w), np.stack([want, want]), rtol=1e-4,
                                   atol=1e-6)


def _fd_grad(fun, x, eps=1e-3):
    g = np.zeros(x.shape, np.float64)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (float(fun(x + d)) - float(fun(x - d))) / (2 * eps)
    return g


def test_gradients_of_jit_pmap_match_finite_differences():
    x = (np.arange(8, dtype=np.float32).reshape(2, 4) / 7 - 0.5).astype(np.float32)

    def loss(a):
        y = minijax.jit(minijax.pmap(lambda v: jnp.sin(v) * lax.psum(v, "i"),
                                     axis_name="i"))(a)
        return jnp.sum(y * y)
    want = _fd_grad(minijax.jit(loss), x)
    np.testing.assert_allclose(np.asarray(minijax.grad(loss)(x)), want, rtol=2e-2,
                               atol=2e-3)
    g = minijax.jit(minijax.grad(loss))(x)
    np.testing.assert_allclose(np.asarray(g), want, rtol=2e-2, atol=2e-3)
    assert _layout(g) == (("i",), (0, 1), ("i",))
    _check_shards(g)


def test_committed_argument_raises_jax_incompatible_devices_error():
    x = minijax.device_put(X, minijax.devices()[1])
    with pytest.raises(ValueError, match=r"Received incompatible devices for jitted "
                       r"computation. Got argument a of .* float32\[2,3\] and with device "
                       r"ids \[1\].*inside jit with device ids \[0, 1\]"):
        minijax.jit(lambda a: minijax.pmap(_double)(a))(x)
