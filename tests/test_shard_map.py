"""minijax.sharding (Mesh, PartitionSpec, NamedSharding, make_mesh, device_put with a
sharding, addressable shards) and shard_map on 1-D and 2-D meshes, with check_vma, grad,
jit and vmap, against the unsharded computation."""

from functools import partial

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from minijax.sharding import PartitionSpec as P


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_mesh_and_named_sharding_indices():
    mesh = minijax.make_mesh((2, 4), ("x", "y"))
    assert mesh.shape == {"x": 2, "y": 4} and mesh.size == 8
    np.testing.assert_array_equal(mesh.device_ids, np.arange(8).reshape(2, 4))
    s = NamedSharding(mesh, P("x", None))
    idx = s.devices_indices_map((4, 6))
    d = minijax.devices()
    assert idx[d[0]] == idx[d[3]] == (slice(0, 2), slice(None))       # replicas along y
    assert idx[d[5]] == (slice(2, 4), slice(None))
    assert s.shard_shape((4, 6)) == (2, 6)
    both = NamedSharding(mesh, P(("x", "y")))
    assert both.devices_indices_map((16,))[d[6]] == (slice(12, 14),)
    with pytest.raises(ValueError, match="not in the mesh"):
        NamedSharding(mesh, P("z"))
    with pytest.raises(ValueError, match="should be divisible by 4"):
        minijax.device_put(np.ones((3, 3)), NamedSharding(mesh, P(None, "y")))
    with pytest.raises(ValueError, match="needs 16 devices"):
        minijax.make_mesh((4, 4), ("a", "b"))


def test_device_put_with_shardings_and_shards():
    mesh = Mesh(np.array(minijax.devices()[:4]).reshape(2, 2), ("x", "y"))
    a = _x(4, 6)
    xs = minijax.device_put(a, NamedSharding(mesh, P("x", "y")))
    np.testing.assert_array_equal(np.asarray(xs), a)
    assert xs.sharding == NamedSharding(mesh, P("x", "y"))
    shards = xs.addressable_shards
    assert len(shards) == 4 and xs.is_fully_addressable
    for s in shards:
        np.testing.assert_array_equal(np.asarray(s.data), a[s.index])
        assert s.data.shape == (2, 3) and s.data.device == s.device
    rep = minijax.device_put(a, NamedSharding(mesh, P()))
    assert sorted(s.replica_id for s in rep.addressable_shards) == [0, 1, 2, 3]
    one = minijax.device_put(a, SingleDeviceSharding(minijax.devices()[3]))
    assert one.device == minijax.devices()[3] and one.committed
    assert one.sharding == SingleDeviceSharding(minijax.devices()[3])
    np.testing.assert_allclose(np.asarray(jnp.sum(xs)), a.sum(), rtol=1e-5)  # usable as is


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_data_parallel_matmul_1d_mesh(n):
    mesh = minijax.make_mesh((n,), ("d",))
    x, w = _x(2 * n, 3), _x(3, 5, seed=1)
    f = minijax.shard_map(lambda a, b: (a @ b, lax.psum(jnp.sum(a @ b, 0), "d")), mesh=mesh,
                          in_specs=(P("d"), P()), out_specs=(P("d"), P()))
    y, total = f(x, w)
    np.testing.assert_allclose(np.asarray(y), x @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(total), (x @ w).sum(0), rtol=1e-4, atol=1e-5)
    assert y.sharding == NamedSharding(mesh, P("d"))


def test_2d_mesh_contracting_dim_sharded_with_psum_and_all_gather():
    mesh = minijax.make_mesh((2, 4), ("x", "y"))
    a, b = _x(8, 16), _x(16, 4, seed=1)

    def g(a_blk, b_blk):
        part = lax.psum(a_blk @ b_blk, "y")             # [4, 4] rows of block x
        return lax.all_gather(part, "x", tiled=True), lax.axis_index("x")[None]
    f = minijax.shard_map(g, mesh=mesh, in_specs=(P("x", "y"), P("y", None)),
                          out_specs=(P(), P("x")), check_vma=False)
    full, ids = f(a, b)
    np.testing.assert_allclose(np.asarray(full), a @ b, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(ids), [0, 1])
    # The same through jit (nested vmaps over the mesh axes).
    full_j, ids_j = minijax.jit(f)(a, b)
    np.testing.assert_allclose(np.asarray(full_j), a @ b, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(ids_j), [0, 1])


def test_check_vma_and_check_rep():
    mesh = minijax.make_mesh((4,), ("i",))
    x = _x(8, 2)
    bad = partial(minijax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P())
    with pytest.raises(ValueError, match=r"out_specs\[0\] is PartitionSpec\(\).*varying over"):
        bad(lambda v: v * 2)(x)
    with pytest.raises(ValueError, match="varying"):
        bad(lambda v: lax.all_gather(v, "i", tiled=True))(x)
    ok = bad(lambda v: lax.psum(v, "i"))(x)             # invariant after psum
    np.testing.assert_allclose(np.asarray(ok), x.reshape(4, 2, 2).sum(0), rtol=1e-5)
    loose = minijax.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("i"), out_specs=P(),
                              check_rep=False)(x)
    np.testing.assert_array_equal(np.asarray(loose), 2 * x[:2])     # device 0's block
    with pytest.raises(ValueError, match="not divisible by 4"):
        minijax.shard_map(lambda v: v, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(_x(6))


def test_grad_and_vmap_of_shard_map_match_unsharded():
    mesh = minijax.make_mesh((4,), ("d",))
    w, x, y = _x(3, 2), _x(8, 3, seed=1), _x(8, 2, seed=2)

    def loss_local(w, x, y):
        return lax.pmean(jnp.mean((jnp.tanh(x @ w) - y) ** 2), "d")
    sharded = minijax.shard_map(loss_local, mesh=mesh, in_specs=(P(), P("d"), P("d")),
                                out_specs=P())

    def full(w, x, y):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)
    np.testing.assert_allclose(np.asarray(sharded(w, x, y)), np.asarray(full(w, x, y)),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(minijax.grad(sharded)(w, x, y)),
                               np.asarray(minijax.grad(full)(w, x, y)), rtol=1e-4, atol=1e-6)
    # grad inside the body, averaged with pmean: the data-parallel step.
    step = minijax.shard_map(
        lambda w, x, y: lax.pmean(minijax.grad(full)(w, x, y), "d"), mesh=mesh,
        in_specs=(P(), P("d"), P("d")), out_specs=P())
    np.testing.assert_allclose(np.asarray(step(w, x, y)),
                               np.asarray(minijax.grad(full)(w, x, y)), rtol=1e-4, atol=1e-6)
    ws = np.stack([w, 2 * w])
    got = minijax.vmap(sharded, in_axes=(0, None, None))(ws, x, y)
    want = [full(v, x, y) for v in ws]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)


def test_shard_map_needs_a_mesh_and_uses_the_context_mesh():
    f = minijax.shard_map(lambda v: v + 1, in_specs=P("i"), out_specs=P("i"))
    with pytest.raises(ValueError, match="requires a mesh"):
        f(np.ones(4))
    with minijax.make_mesh((2,), ("i",)):
        np.testing.assert_array_equal(np.asarray(f(np.ones(4))), 2 * np.ones(4))
