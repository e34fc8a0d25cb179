"""Reshapes of split Arrays under jit (spmd_rules._reshape_target): a split dimension stays
split along the output dimension that starts at the same row-major offset when the
devices divide it (each device's block is then a contiguous leading block of that output
dimension), as JAX keeps it; other splits are gathered first. Values equal NumPy exactly,
every shard holds its slice of the value, kept splits need no collective, and output
shardings equal JAX 0.10.2's (hard-coded below; compared live where jax is importable)."""

import importlib.util
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
from minijax.sharding import Mesh, NamedSharding
from minijax.sharding import PartitionSpec as P

pytestmark = pytest.mark.skipif(len(minijax.devices()) < 4, reason="needs 4 CPU devices")

HAVE_JAX = importlib.util.find_spec("jax") is not None
MESH2 = Mesh(np.array(minijax.devices()[:2]), ("d",))
MESH4 = Mesh(np.array(minijax.devices()[:4]), ("d",))
MESH22 = Mesh(np.array(minijax.devices()[:4]).reshape(2, 2), ("a", "b"))
X = np.arange(48, dtype=np.float32).reshape(8, 6)

# (input spec, output shape, JAX 0.10.2's output spec on 2 devices), printed by
# jax.jit(lambda a: a.reshape(shape))(device_put(x, NamedSharding(mesh, spec))).sharding.
CASES = [
    (P("d"), (6, 8), P("d")),
    (P("d"), (4, 12), P("d")),
    (P("d"), (48,), P("d")),
    (P("d"), (2, 4, 6), P("d")),
    (P("d"), (16, 3), P("d")),
    (P("d"), (8, 3, 2), P("d")),
    (P("d"), (2, 24), P("d")),
    (P("d"), (3, 16), P()),            # 3 rows do not split in 2: gathered
    (P(None, "d"), (4, 2, 6), P(None, None, "d")),
    (P(None, "d"), (48,), P()),
    (P(None, "d"), (4, 12), P()),
    (P(None, "d"), (8, 3, 2), P()),
    (P(None, "d"), (16, 3), P()),
]


def _jax_spec(x, spec, shape, n):
    jax = pytest.importorskip("jax")
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:n]), ("d",))
    put = jax.device_put(x, jax.sharding.NamedSharding(jmesh, jax.sharding.PartitionSpec(
        *spec)))
    return jax.jit(lambda a: a.reshape(shape))(put).sharding.spec


def _check(out, want):
    np.testing.assert_array_equal(np.asarray(out), want)
    for shard in out.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), want[shard.index])


@pytest.mark.parametrize("spec, shape, jax_spec", CASES, ids=str)
def test_reshape_of_a_split_array_keeps_jax_split(spec, shape, jax_spec):
    x = minijax.device_put(X, NamedSharding(MESH2, spec))
    f = minijax.jit(lambda a: a.reshape(shape))
    out = f(x)
    _check(out, X.reshape(shape))
    assert tuple(out.sharding.spec) == tuple(jax_spec)
    assert out.sharding.mesh == MESH2
    compiled = f.lower(x).compile().as_text()
    gathers = len(re.findall(r"\ball-gather\(", compiled))
    # A kept split runs on blocks; a lost one gathers once.
    assert gathers == (0 if any(jax_spec) else 1), compiled
    if HAVE_JAX:
        assert tuple(_jax_spec(X, spec, shape, 2)) == tuple(jax_spec)


# Two splits merge into one output dimension when each device holds one index of the
# dimensions between them: (src, spec over the 2 x 2 mesh (a, b), dst, JAX 0.10.2's spec).
MERGES = [
    ((2, 48), P("a", "b"), (96,), P(("a", "b"))),
    ((2, 48), P("a", "b"), (4, 24), P(("a", "b"))),
    ((2, 48), P("b", "a"), (96,), P(("b", "a"))),
    ((2, 1, 4, 12), P("a", None, "b"), (8, 12), P(("a", "b"))),
    ((4, 6), P("a", "b"), (24,), P("a")),            # 2 rows each: b is gathered
    ((2, 3, 16), P("a", None, "b"), (96,), P("a")),  # 3 whole rows between
]


@pytest.mark.parametrize("src, spec, dst, jax_spec", MERGES, ids=str)
def test_reshape_merges_two_splits_as_jax(src, spec, dst, jax_spec):
    x = np.arange(np.prod(src), dtype=np.float32).reshape(src)
    out = minijax.jit(lambda a: a.reshape(dst))(minijax.device_put(x, NamedSharding(MESH22,
                                                                                    spec)))
    _check(out, x.reshape(dst))
    assert out.sharding == NamedSharding(MESH22, jax_spec)


def test_reshape_keeps_the_split_in_a_bigger_program_and_its_gradient():
    x = minijax.device_put(X, NamedSharding(MESH2, P("d")))

    def loss(a):
        return minijax.numpy.sum(minijax.numpy.tanh(a.reshape(6, 8)) * 2.0)
    g = minijax.jit(minijax.grad(loss))(x)
    want = (1 - np.tanh(X.astype(np.float64)) ** 2) * 2.0
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-6)
    assert tuple(g.sharding.spec) == ("d",)
    y = minijax.jit(lambda a: (a.reshape(6, 8) + 1.0).reshape(48))(x)
    _check(y, (X + 1.0).reshape(48))
    assert tuple(y.sharding.spec) == ("d",)


def _factorizations(n):
    """Strategy: shapes (rank 1..4) whose sizes multiply to n."""
    primes, m, p = [], n, 2
    while m > 1:
        while m % p == 0:
            primes.append(p)
            m //= p
        p += 1

    @st.composite
    def shapes(draw):
        order = draw(st.permutations(primes))
        rank = draw(st.integers(1, min(4, max(1, len(order)))))
        cuts = sorted(draw(st.lists(st.integers(0, len(order)), min_size=rank - 1,
                                    max_size=rank - 1)))
        bounds = [0] + cuts + [len(order)]
        return tuple(int(np.prod(order[a:b], dtype=np.int64)) for a, b in
                     zip(bounds[:-1], bounds[1:]))
    return shapes()


@st.composite
def _problems(draw):
    mesh = draw(st.sampled_from([MESH2, MESH4, MESH22]))
    src = draw(_factorizations(96))
    axes = list(mesh.axis_names)
    spec = []
    for n in src:
        free = [a for a in axes if n % mesh.shape[a] == 0]
        a = draw(st.sampled_from([None] + free))
        spec.append(a)
        if a is not None:
            axes.remove(a)
    if not any(spec):  # unsplit arguments run on one device, as plain jit does
        k = next((d for d, n in enumerate(src) if n % mesh.devices.shape[0] == 0), None)
        if k is None:
            src, k = (96,), 0
            spec = [None]
        spec[k] = mesh.axis_names[0]
    dst = draw(_factorizations(96))
    return mesh, src, P(*spec), dst


@settings(max_examples=int(__import__("os").environ.get("RESHAPE_EXAMPLES", 60)))
@given(_problems())
def test_reshape_of_split_arrays_matches_numpy_and_jax(problem):
    mesh, src, spec, dst = problem
    x = np.arange(96, dtype=np.float32).reshape(src)
    out = minijax.jit(lambda a: a.reshape(dst) * 2.0)(
        minijax.device_put(x, NamedSharding(mesh, spec)))
    _check(out, x.reshape(dst) * 2.0)
    if HAVE_JAX:
        got = tuple(out.sharding.spec)
        jax = pytest.importorskip("jax")
        n = mesh.devices.size
        jmesh = jax.sharding.Mesh(np.array(jax.devices()[:n]).reshape(mesh.devices.shape),
                                  mesh.axis_names)
        put = jax.device_put(x, jax.sharding.NamedSharding(
            jmesh, jax.sharding.PartitionSpec(*spec)))
        want = tuple(jax.jit(lambda a: a.reshape(dst) * 2.0)(put).sharding.spec)
        assert got == _trimmed(want), (src, spec, dst)


def _trimmed(spec):
    parts = list(spec)
    while parts and parts[-1] is None:
        parts.pop()
    return tuple(parts)
