"""Sharded jit (in_shardings over a 2 x 2 mesh) of gathers and scatters: take_along_axis,
jnp.take / fancy indexing, .at[].add, segment_sum, an embedding lookup and their gradients
(scatter-add), each equal to unsharded jit for every sharding of operand and indices. Also:
a sharded jit whose function only closes over a traced value is traced inline (it used to
be compiled with the tracer as a constant: a wrong gradient)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.sharding import Mesh, NamedSharding
from minijax.sharding import PartitionSpec as P

pytestmark = pytest.mark.skipif(len(minijax.devices()) < 4, reason="needs 4 CPU devices")

MESH = Mesh(np.array(minijax.devices()[:4]).reshape(2, 2), ("d", "m"))
SPECS = [P(), P("d"), P(None, "m"), P("d", "m"), P("m", "d"), P(("d", "m"))]
RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 12)).astype(np.float32)
IDX = RNG.integers(-12, 12, (8, 4)).astype(np.int32)


def _sh(spec):
    return NamedSharding(MESH, spec)


def take_along(a, i):
    return jnp.take_along_axis(a, i, axis=1)


def take_along0(a, i):
    return jnp.take_along_axis(a, jnp.tile(i, (1, 3)) % 8, axis=0)


def take_rows(a, i):
    return a[i[:, 0] % 8]


def fancy(a, i):
    return a[i[:, 0] % 8][:, i[0] % 12]


def scatter_add(a, i):
    return a.at[i[:, 0] % 8, i[:, 1]].add(10.0)


def segment(a, i):
    return minijax.ops.segment_sum(a, i[:, 0] % 3, 3)


FUNS = [take_along, take_along0, take_rows, fancy, scatter_add, segment]


def _check(fun, xs, is_):
    want = minijax.jit(fun)(X, IDX)
    got = minijax.jit(fun, in_shardings=(_sh(xs), _sh(is_)))(X, IDX)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)


@settings(max_examples=12, deadline=None)
@given(fun=st.sampled_from(FUNS), xs=st.sampled_from(SPECS), is_=st.sampled_from(SPECS))
def test_gathers_and_scatters_equal_unsharded_jit(fun, xs, is_):
    _check(fun, xs, is_)


@pytest.mark.parametrize("fun", FUNS, ids=lambda f: f.__name__)
def test_gradients_equal_unsharded_jit(fun):
    """The gradient of a gather is a scatter-add (of a scatter: a gather)."""
    def loss(a, i):
        return jnp.sum(jnp.sin(fun(a, i)) ** 2)
    g = minijax.grad(loss)
    want = np.asarray(minijax.jit(g)(X, IDX))
    for xs, is_ in [(P("d"), P("d")), (P(None, "m"), P()), (P("d", "m"), P("m", "d"))]:
        got = minijax.jit(g, in_shardings=(_sh(xs), _sh(is_)))(X, IDX)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_take_along_axis_matches_numpy_and_output_shardings_apply():
    want = np.take_along_axis(X, IDX % 12, axis=1)
    f = minijax.jit(take_along, in_shardings=(_sh(P("d")), _sh(P("d"))),
                    out_shardings=_sh(P("d", "m")))
    out = f(X, IDX)
    np.testing.assert_array_equal(np.asarray(out), want)
    assert out.sharding.spec == P("d", "m")
    g = minijax.jit(lambda a, i: lax.with_sharding_constraint(take_along(a, i), _sh(P(None, "m")))
                    * 2, in_shardings=(_sh(P("d", "m")), _sh(P("d"))))
    np.testing.assert_array_equal(np.asarray(g(X, IDX)), 2 * want)


def test_cross_entropy_step_with_labels_gathered():
    """A data/model-parallel softmax cross-entropy: labels picked by take_along_axis."""
    w = RNG.standard_normal((12, 4)).astype(np.float32)
    labels = (IDX[:, 0] % 4).astype(np.int32)

    def xent(w, a, lab):
        lp = minijax.nn.log_softmax(a @ w)
        return -jnp.take_along_axis(lp, lab[:, None], axis=1).mean()
    step = minijax.value_and_grad(xent)
    want_l, want_g = minijax.jit(step)(w, X, labels)
    # float64 reference of the loss
    logits = X.astype(np.float64) @ w
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(float(want_l), -lp[np.arange(8), labels].mean(), rtol=1e-5)
    for sw, sa in [(P(None, "m"), P("d")), (P("m"), P("d", "m"))]:
        loss, grad = minijax.jit(step, in_shardings=(_sh(sw), _sh(sa), _sh(P("d"))))(
            w, X, labels)
        np.testing.assert_allclose(float(loss), float(want_l), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(grad), np.asarray(want_g), rtol=1e-4, atol=1e-6)


def test_sharded_jit_with_only_a_closed_over_tracer_is_traced_inline():
    z0 = np.linspace(1, 2, 12).astype(np.float32)
    f = minijax.grad(lambda z: minijax.jit(lambda a: jnp.sum(a * z * z),
                                           in_shardings=_sh(P("d")))(X))
    np.testing.assert_allclose(np.asarray(f(z0)), 2 * z0 * X.sum(0), rtol=1e-5, atol=1e-5)


def test_embedding_lookup_runs_on_blocks():
    """A table split by columns and indices split by rows: the gather runs on each
    device's blocks (no collective at all), the output split as both; the gradient
    scatter-adds into each device's block of the table (the table is never gathered)."""
    table = RNG.standard_normal((10, 8)).astype(np.float32)
    ids = RNG.integers(0, 10, (4, 6)).astype(np.int32)
    sh = (_sh(P(None, "m")), _sh(P("d")))
    f = minijax.jit(lambda e, i: e[i], in_shardings=sh)
    out = f(table, ids)
    np.testing.assert_array_equal(np.asarray(out), table[ids])
    assert out.sharding.spec == P("d", None, "m")
    text = f.lower(table, ids).compile().as_text()
    assert not any(op in text for op in ("all-gather(", "all-reduce(", "all-to-all("))
    assert "f32[2,6,4]{2,1,0} gather(" in text          # one block of rows and columns

    g = minijax.jit(minijax.grad(lambda e, i: jnp.sum(e[i] ** 2)), in_shardings=sh)
    grad = g(table, ids)
    want = np.zeros_like(table)
    np.add.at(want, ids, 2 * table[ids])
    np.testing.assert_allclose(np.asarray(grad), want, rtol=1e-6)
    assert grad.sharding.spec == P(None, "m")
    text = g.lower(table, ids).compile().as_text()
    assert "f32[10,4]{1,0} scatter(" in text            # the device's columns only
    assert not any("all-gather(" in ln and "f32[10," in ln for ln in text.splitlines())


def test_concatenate_keeps_the_other_dimensions_split():
    a, c = X[:, :6], X[:, 6:]
    f = minijax.jit(lambda a, c: jnp.concatenate([a, c * 2], axis=1),
                    in_shardings=(_sh(P("d")), _sh(P("d"))))
    out = f(a, c)
    np.testing.assert_array_equal(np.asarray(out), np.concatenate([a, c * 2], axis=1))
    assert out.sharding.spec == P("d")
    assert "all-gather(" not in f.lower(a, c).compile().as_text()


def test_data_parallel_take_along_axis_and_its_gradient_need_no_gather():
    """take_along_axis pairs an iota over the rows with the column indices: with rows split
    each device gathers from (and its gradient scatter-adds into) its own rows, through a
    local iota; nothing is all-gathered."""
    sh = (_sh(P("d")), _sh(P("d")))
    idx = IDX % 12
    f = minijax.jit(take_along, in_shardings=sh)
    out = f(X, idx)
    np.testing.assert_array_equal(np.asarray(out), np.take_along_axis(X, idx, axis=1))
    assert out.sharding.spec == P("d")
    text = f.lower(X, idx).compile().as_text()
    assert "all-gather(" not in text and "f32[4,4]{1,0} gather(" in text
    g = minijax.jit(minijax.grad(lambda a, i: jnp.sum(take_along(a, i) ** 2)), in_shardings=sh)
    want = np.zeros_like(X)
    np.add.at(want, (np.arange(8)[:, None], idx), 2 * np.take_along_axis(X, idx, axis=1))
    grad = g(X, idx)
    np.testing.assert_allclose(np.asarray(grad), want, rtol=1e-6)
    assert grad.sharding.spec == P("d")
    text = g.lower(X, idx).compile().as_text()
    assert "all-gather(" not in text and "f32[4,12]{1,0} scatter(" in text
    # Indices split on another mesh axis than the operand's rows: still correct.
    h = minijax.jit(take_along, in_shardings=(_sh(P("d")), _sh(P("m"))))
    np.testing.assert_array_equal(np.asarray(h(X, idx)), np.take_along_axis(X, idx, axis=1))
