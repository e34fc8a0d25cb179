"""Donation on the partitioned path (api_sharded_jit.py): `jit(f, donate_argnums=...,
in_shardings=..., out_shardings=...)` keeps an output paired with a donated argument of
its shape and dtype in that argument's memory (every output shard's data pointer is the
donated shard's), its values equal the undonated call's and NumPy's, and the donated
Array is deleted (using it raises JAX's RuntimeError). Memory another array still uses
(a NumPy view of the argument) is never overwritten; results that read the donated
argument stay right."""

import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.sharding import NamedSharding
from minijax.sharding import PartitionSpec as P

MESH = minijax.make_mesh((4,), ("x",))
ROWS = NamedSharding(MESH, P("x"))
MESH2 = minijax.make_mesh((2, 2), ("a", "b"))
GRID = NamedSharding(MESH2, P("a", "b"))


def _ptr(a) -> int:
    return np.asarray(a).__array_interface__["data"][0]


def _shard_ptrs(a) -> list:
    return [np.asarray(s.data).__array_interface__["data"][0] for s in a.addressable_shards]


def _deleted(a):
    assert a.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(a)
    with pytest.raises(RuntimeError, match="deleted"):
        a + 1


def _sgd(p, g):
    return p - 0.1 * g


# Small (plain NumPy memory) and large (the CPU backend's warm host blocks) parameters.
@pytest.mark.parametrize("shape", [(64, 32), (512, 256)])
@pytest.mark.parametrize("sharding", [ROWS, GRID], ids=["rows", "grid"])
def test_sgd_update_writes_into_the_donated_shards(shape, sharding):
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal(shape).astype(np.float32)
    g0 = rng.standard_normal(shape).astype(np.float32)
    plain = minijax.jit(_sgd, in_shardings=(sharding, sharding), out_shardings=sharding)
    donating = minijax.jit(_sgd, in_shardings=(sharding, sharding), out_shardings=sharding,
                           donate_argnums=0)
    want = plain(minijax.device_put(p0, sharding), minijax.device_put(g0, sharding))
    p, g = minijax.device_put(p0, sharding), minijax.device_put(g0, sharding)
    where, shards = _ptr(p), _shard_ptrs(p)
    out = donating(p, g)
    assert _ptr(out) == where   # the global buffer: every device's block of it
    if sharding is ROWS:   # contiguous blocks: each shard's data is a view of it
        assert _shard_ptrs(out) == shards
    assert out.sharding == sharding
    np.testing.assert_array_equal(np.asarray(out), np.asarray(want))
    np.testing.assert_allclose(np.asarray(out), p0 - np.float32(0.1) * g0, rtol=1e-6)
    _deleted(p)
    assert not g.is_deleted()
    np.testing.assert_array_equal(np.asarray(g), g0)


def test_a_training_loop_stays_in_place():
    rng = np.random.default_rng(1)
    p0 = rng.standard_normal((256, 256)).astype(np.float32)
    g0 = rng.standard_normal((256, 256)).astype(np.float32)
    step = minijax.jit(_sgd, in_shardings=(ROWS, ROWS), out_shardings=ROWS,
                       donate_argnums=0)
    p, g = minijax.device_put(p0, ROWS), minijax.device_put(g0, ROWS)
    where = _ptr(p)
    want = p0.copy()
    for _ in range(4):
        old, p = p, step(p, g)
        _deleted(old)
        want = want - np.float32(0.1) * g0
        assert _ptr(p) == where
    np.testing.assert_allclose(np.asarray(p), want, rtol=1e-5)


def test_momentum_step_reuses_both_donated_arguments():
    rng = np.random.default_rng(2)
    p0, m0, g0 = (rng.standard_normal((32, 16)).astype(np.float32) for _ in range(3))

    def step(p, m, g):
        m = 0.9 * m + g
        return p - 0.1 * m, m
    f = minijax.jit(step, in_shardings=ROWS, out_shardings=ROWS, donate_argnums=(0, 1))
    p, m, g = (minijax.device_put(a, ROWS) for a in (p0, m0, g0))
    pp, mp = _ptr(p), _ptr(m)
    new_p, new_m = f(p, m, g)
    assert (_ptr(new_p), _ptr(new_m)) == (pp, mp)
    m_want = np.float32(0.9) * m0 + g0
    np.testing.assert_allclose(np.asarray(new_m), m_want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(new_p), p0 - np.float32(0.1) * m_want, rtol=1e-5)
    _deleted(p)
    _deleted(m)


def _eager(shape):
    """A large eager result (device_put of it copies it)."""
    return jnp.arange(int(np.prod(shape)), dtype=jnp.float32).reshape(shape) * 1.0


# The donated Array's memory: its own NumPy array (a sharded jit's output), a view of one
# (device_put of NumPy data or of an eager result).
@pytest.mark.parametrize("source,shape", [("jit_output", (64, 8)), ("device_put", (64, 8)),
                                          ("device_put", (512, 128)), ("eager", (512, 128))])
@pytest.mark.parametrize("viewed", ["asarray", "shard"])
def test_memory_a_numpy_view_still_uses_is_not_overwritten(source, shape, viewed):
    p0 = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    f = minijax.jit(_sgd, in_shardings=(ROWS, ROWS), out_shardings=ROWS, donate_argnums=0)
    p, g = minijax.device_put(p0, ROWS), minijax.device_put(np.ones_like(p0), ROWS)
    if source == "jit_output":
        p = minijax.jit(lambda a: a * 1.0, in_shardings=ROWS, out_shardings=ROWS)(p)
    if source == "eager":
        p = minijax.device_put(_eager(shape), ROWS)
    # Shares p's memory: NumPy's view of it, or a view of one device's block.
    view = np.asarray(p) if viewed == "asarray" else np.asarray(p)[:8]
    out = f(p, g)
    _deleted(p)
    assert _ptr(out) != _ptr(np.asarray(view).base if viewed == "shard" else view)
    np.testing.assert_array_equal(view, p0[:len(view)])
    np.testing.assert_allclose(np.asarray(out), p0 - np.float32(0.1), rtol=1e-6)


def test_results_reading_the_donated_argument_stay_right():
    x0 = np.arange(32 * 4, dtype=np.float32).reshape(32, 4)
    f = minijax.jit(lambda x: (x * 2, x, x[::-1] + 1), in_shardings=ROWS,
                    out_shardings=ROWS, donate_argnums=0)
    x = minijax.device_put(x0, ROWS)
    a, b, c = f(x)
    _deleted(x)
    np.testing.assert_array_equal(np.asarray(a), x0 * 2)
    np.testing.assert_array_equal(np.asarray(b), x0)
    np.testing.assert_array_equal(np.asarray(c), x0[::-1] + 1)


def test_an_output_of_another_global_shape_is_not_put_in_the_donated_buffer():
    """(a * b).T has b's per-device size but not its global shape: b is donated and
    deleted (JAX's pairing) but the output gets its own memory; values are right."""
    x0 = np.arange(48, dtype=np.float32).reshape(8, 6)
    f = minijax.jit(lambda a, b: (a * b).T, in_shardings=ROWS, donate_argnums=1)
    x, y = minijax.device_put(x0, ROWS), minijax.device_put(x0 + 1, ROWS)
    yp = _ptr(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = f(x, y)
    _deleted(y)
    assert _ptr(out) != yp
    np.testing.assert_array_equal(np.asarray(out), (x0 * (x0 + 1)).T)


def test_plain_jit_of_split_arrays_donates_the_same_way():
    p0 = np.random.default_rng(3).standard_normal((16, 8)).astype(np.float32)
    f = minijax.jit(_sgd, donate_argnums=0)
    p, g = minijax.device_put(p0, ROWS), minijax.device_put(p0 * 2, ROWS)
    where = _ptr(p)
    out = f(p, g)
    assert _ptr(out) == where
    assert out.sharding == ROWS
    _deleted(p)
    np.testing.assert_allclose(np.asarray(out), p0 - np.float32(0.1) * (p0 * 2), rtol=1e-6)


def test_undonated_arguments_keep_their_memory_and_values():
    p0 = np.ones((16, 8), np.float32)
    f = minijax.jit(_sgd, in_shardings=(ROWS, ROWS), out_shardings=ROWS)
    p, g = minijax.device_put(p0, ROWS), minijax.device_put(p0, ROWS)
    out = f(p, g)
    assert _ptr(out) not in (_ptr(p), _ptr(g))
    np.testing.assert_array_equal(np.asarray(p), p0)
    np.testing.assert_allclose(np.asarray(out), np.full((16, 8), 0.9, np.float32))


def test_an_eager_array_sharing_the_memory_keeps_its_value():
    """device_put of an eager result to a sharding shares its memory: the donated Array's
    memory holds the output only once that result is gone."""
    shape = (512, 128)
    want = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    f = minijax.jit(_sgd, in_shardings=(ROWS, ROWS), out_shardings=ROWS, donate_argnums=0)
    g = minijax.device_put(np.ones(shape, np.float32), ROWS)
    e = _eager(shape)
    p = minijax.device_put(e, ROWS)
    out = f(p, g)
    _deleted(p)
    assert _ptr(out) != _ptr(e)
    np.testing.assert_array_equal(np.asarray(e), want)   # e keeps its value
    p = minijax.device_put(_eager(shape), ROWS)   # its eager result is gone at once
    where = _ptr(p)
    out = f(p, g)
    assert _ptr(out) == where
    np.testing.assert_allclose(np.asarray(out), want - np.float32(0.1), rtol=1e-6)


def test_one_array_donated_twice_holds_one_output():
    x0 = np.arange(64, dtype=np.float32).reshape(16, 4)
    f = minijax.jit(lambda a, b: (a + b, a * b), in_shardings=ROWS, out_shardings=ROWS,
                    donate_argnums=(0, 1))
    x = minijax.device_put(x0, ROWS)
    where = _ptr(x)
    s, m = f(x, x)
    _deleted(x)
    assert _ptr(s) == where != _ptr(m)
    np.testing.assert_array_equal(np.asarray(s), x0 + x0)
    np.testing.assert_array_equal(np.asarray(m), x0 * x0)
