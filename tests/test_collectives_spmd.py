"""Every collective compiled to XLA's HLO collectives and run across 1, 2, 4 and 8 CPU
devices (pmap and shard_map), against NumPy; deterministic bits; timeouts and failures.

The suite has 8 CPU devices (tests/conftest.py); a test over n devices maps an axis of
size n, so pmap uses the first n."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.backends import get_backend
from minijax.backends.spmd import (
    CollectiveAbortedError,
    CollectiveTimeoutError,
    InProcessTransport,
    run_spmd,
)
from minijax.compiler.driver import compile_module
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.options import CompileOptions

SIZES = [1, 2, 4, 8]


def _data(n, *shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed + n)
    return rng.standard_normal((n,) + shape).astype(dtype)


@pytest.mark.parametrize("n", SIZES)
def test_all_reductions(n):
    x = _data(n, 3, 5)
    f = minijax.pmap(lambda v: (lax.psum(v, "i"), lax.pmean(v, "i"), lax.pmax(v, "i"),
                                lax.pmin(v, "i")), axis_name="i")
    s, m, hi, lo = f(x)
    for got, want in ((s, x.sum(0)), (m, x.mean(0)), (hi, x.max(0)), (lo, x.min(0))):
        assert got.shape == x.shape
        np.testing.assert_allclose(np.asarray(got), np.broadcast_to(want, x.shape),
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", SIZES)
def test_integer_and_bool_psum(n):
    x = np.arange(n * 4, dtype=np.int32).reshape(n, 4)
    out = minijax.pmap(lambda v: (lax.psum(v, "i"), lax.psum(v > 3, "i")), axis_name="i")(x)
    np.testing.assert_array_equal(np.asarray(out[0]), np.broadcast_to(x.sum(0), x.shape))
    assert out[1].dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out[1]),
                                  np.broadcast_to((x > 3).sum(0), x.shape))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("axis", [0, 1])
def test_all_gather(n, axis):
    x = _data(n, 2, 3)
    stacked, tiled = minijax.pmap(lambda v: (lax.all_gather(v, "i", axis=axis),
                                             lax.all_gather(v, "i", axis=axis, tiled=True)),
                                  axis_name="i")(x)
    want = np.stack(list(x), axis=axis)
    np.testing.assert_array_equal(np.asarray(stacked), np.broadcast_to(want, (n,) + want.shape))
    want_t = np.concatenate(list(x), axis=axis)
    np.testing.assert_array_equal(np.asarray(tiled), np.broadcast_to(want_t,
                                                                     (n,) + want_t.shape))


@pytest.mark.parametrize("n", SIZES)
def test_psum_scatter(n):
    x = _data(n, n * 2, 3)
    tiled = minijax.pmap(lambda v: lax.psum_scatter(v, "i", tiled=True), axis_name="i")(x)
    total = x.sum(0)
    want = np.stack([total[2 * i:2 * i + 2] for i in range(n)])
    np.testing.assert_allclose(np.asarray(tiled), want, rtol=1e-5, atol=1e-6)
    y = _data(n, 3, n, seed=1)
    plain = minijax.pmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1),
                         axis_name="i")(y)
    want = np.stack([y.sum(0)[:, i] for i in range(n)])
    np.testing.assert_allclose(np.asarray(plain), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", SIZES)
def test_ppermute_ring_and_partial(n):
    x = _data(n, 4)
    ring = [(i, (i + 1) % n) for i in range(n)]
    out = minijax.pmap(lambda v: lax.ppermute(v, "i", ring), axis_name="i")(x)
    np.testing.assert_array_equal(np.asarray(out), np.roll(x, 1, axis=0))
    part = [(0, n - 1)]
    out = minijax.pmap(lambda v: lax.ppermute(v, "i", part), axis_name="i")(x)
    want = np.zeros_like(x)
    want[n - 1] = x[0]
    np.testing.assert_array_equal(np.asarray(out), want)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("split, concat", [(0, 0), (0, 1), (1, 0)])
def test_all_to_all(n, split, concat):
    x = _data(n, *((n, 3) if split == 0 else (3, n)))
    out = minijax.pmap(lambda v: lax.all_to_all(v, "i", split, concat), axis_name="i")(x)
    # member i receives chunk i (along split) of every member j, placed at concat.
    want = np.stack([np.stack([np.take(x[j], i, axis=split) for j in range(n)], axis=concat)
                     for i in range(n)])
    np.testing.assert_array_equal(np.asarray(out), want)


@pytest.mark.parametrize("n", SIZES)
def test_all_to_all_tiled_and_vmap_agree(n):
    x = _data(n, 2 * n, 3)

    def f(v):
        return lax.all_to_all(v, "i", 0, 1, tiled=True)
    got = minijax.pmap(f, axis_name="i")(x)
    want = np.stack([np.concatenate([x[j][2 * i:2 * i + 2] for j in range(n)], axis=1)
                     for i in range(n)])
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(minijax.vmap(f, axis_name="i")(x)), want)


@pytest.mark.parametrize("n", SIZES)
def test_axis_index(n):
    out = minijax.pmap(lambda v: lax.axis_index("i") + v, axis_name="i")(np.zeros(n, np.int32))
    np.testing.assert_array_equal(np.asarray(out), np.arange(n))


def test_reduction_order_is_fixed_bits_equal_on_every_device_and_run():
    x = (np.random.default_rng(3).standard_normal((8, 1000)) * 1e4).astype(np.float32)
    f = minijax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
    first = np.asarray(f(x))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(x)), first)
    assert all(np.array_equal(first[0], row) for row in first)
    acc = x[0].copy()                        # the documented order: members in group order
    for row in x[1:]:
        acc = acc + row
    np.testing.assert_array_equal(first[0], acc)


def test_hlo_text_of_pmap_has_xla_collectives():
    f = minijax.pmap(lambda v: (lax.psum(v, "i"), lax.all_gather(v, "i"),
                                lax.ppermute(v, "i", [(0, 1), (1, 0)]), lax.axis_index("i")),
                     axis_name="i")
    f(np.ones((2, 3), np.float32))
    (program, *_), = f._programs.values()
    text = program.as_text()
    assert "all-reduce(" in text and "replica_groups={{0,1}}" in text
    assert "use_global_device_ids=true" in text and "channel_id=1" in text
    assert "all-gather(" in text and "dimensions={0}" in text
    assert "collective-permute(" in text and "source_target_pairs={{0,1},{1,0}}" in text
    assert "partition-id()" in text


_ALL_REDUCE = """HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  p = f32[4]{0} parameter(0)
  r = f32[4]{0} all-reduce(p), channel_id=1, replica_groups={{0,1}}, to_apply=add
  ROOT t = (f32[4]{0}) tuple(r)
}
"""


def _executable(text):
    backend = get_backend("cpu")
    exe, _ = compile_module(parse_module(text), backend, CompileOptions(backend="cpu"))
    return backend, exe


def test_a_participant_that_never_arrives_times_out_with_a_clear_error():
    backend, exe = _executable(_ALL_REDUCE)
    transport = InProcessTransport(2, timeout=0.3)
    devs = minijax.devices()[:2]
    # Only participant 0 runs the program: participant 1 "died" before its collective.
    with pytest.raises(CollectiveTimeoutError, match=r"participants \[1\].*did not arrive"):
        run_spmd(backend, _OnlyRank0(exe), devs, [[np.ones(4, np.float32)]] * 2, transport)


class _OnlyRank0:
    def __init__(self, exe):
        self.exe = exe

    def execute(self, args):
        from minijax.backends.spmd import current_context
        if current_context().rank == 1:
            return []
        return self.exe.execute(args)


class _FailingRank1(_OnlyRank0):
    def execute(self, args):
        from minijax.backends.spmd import current_context
        if current_context().rank == 1:
            raise FloatingPointError("device 1 failed")
        return self.exe.execute(args)


def test_a_failing_participant_wakes_the_others_and_its_error_is_raised():
    backend, exe = _executable(_ALL_REDUCE)
    transport = InProcessTransport(2, timeout=60)
    with pytest.raises(FloatingPointError, match="device 1 failed"):
        run_spmd(backend, _FailingRank1(exe), minijax.devices()[:2],
                 [[np.ones(4, np.float32)]] * 2, transport)
    transport = InProcessTransport(2, timeout=60)
    transport.abort(RuntimeError("boom"), 1)
    with pytest.raises(CollectiveAbortedError, match="participant 1 failed"):
        transport.exchange(1, 0, (0, 1), np.ones(2), lambda v: v)


def test_collective_outside_a_named_axis_is_a_name_error():
    with pytest.raises(NameError, match="unbound axis name"):
        minijax.jit(lambda v: lax.psum(v, "nope"))(jnp.ones(2))
