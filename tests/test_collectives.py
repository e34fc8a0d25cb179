"""Collectives over named vmap axes (lax.psum, pmean, pmax, pmin, all_gather, psum_scatter,
ppermute, axis_index): values against NumPy over the mapped axis, derivatives against
finite differences, composition with jit / grad / nested vmap / control flow, and errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.test_util import check_grads


def _rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# --------------------------------------------------------------------------- values


_REDUCERS = {
    "psum": (lax.psum, lambda a, ax: np.sum(a, axis=ax)),
    "pmean": (lax.pmean, lambda a, ax: np.mean(a, axis=ax)),
    "pmax": (lax.pmax, lambda a, ax: np.max(a, axis=ax)),
    "pmin": (lax.pmin, lambda a, ax: np.min(a, axis=ax)),
}


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(_REDUCERS)),
       shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       axis_seed=st.integers(0, 100), seed=st.integers(0, 1000))
def test_reductions_match_numpy_over_mapped_axis(name, shape, axis_seed, seed):
    op, ref = _REDUCERS[name]
    axis = axis_seed % len(shape)
    x = _rand(shape, seed)
    out = minijax.vmap(lambda v: op(v, "i"), in_axes=axis, axis_name="i")(x)
    want = np.broadcast_to(np.expand_dims(ref(x, axis), 0),
                           (shape[axis],) + tuple(np.delete(shape, axis)))
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)
    assert out.dtype == np.float32


def test_integer_and_bool_operands():
    xi = np.array([3, -1, 7, 2], np.int32)
    np.testing.assert_array_equal(
        minijax.vmap(lambda v: lax.psum(v, "i"), axis_name="i")(xi), np.full(4, 11))
    np.testing.assert_array_equal(
        minijax.vmap(lambda v: lax.pmax(v, "i"), axis_name="i")(xi), np.full(4, 7))
    mean = minijax.vmap(lambda v: lax.pmean(v, "i"), axis_name="i")(xi)
    assert mean.dtype == np.float32  # integer pmean is a float, as in JAX
    np.testing.assert_allclose(mean, np.full(4, 2.75))
    xb = np.array([True, False, True])
    count = minijax.vmap(lambda v: lax.psum(v, "i"), axis_name="i")(xb)
    assert count.dtype == np.int32
    np.testing.assert_array_equal(count, [2, 2, 2])


def test_unmapped_operand_and_python_scalars():
    xs = jnp.arange(5.0)
    c = jnp.array([1.0, 2.0])
    out = minijax.vmap(lambda v: lax.psum(c, "i") + 0 * v, axis_name="i")(xs)
    np.testing.assert_allclose(out, np.tile([5.0, 10.0], (5, 1)))
    size = minijax.vmap(lambda v: lax.psum(1, "i"), axis_name="i")(xs)
    np.testing.assert_array_equal(size, np.full(5, 5))
    np.testing.assert_allclose(
        minijax.vmap(lambda v: lax.pmax(c, "i"), axis_name="i")(xs), np.tile(c, (5, 1)))
    # A psum result is the same for every element: unmapped, so out_axes=None is allowed.
    total = minijax.vmap(lambda v: lax.psum(v, "i"), axis_name="i", out_axes=None)(xs)
    np.testing.assert_allclose(total, 10.0)


def test_pytree_operands():
    tree = {"a": jnp.arange(3.0), "b": (jnp.ones((3, 2)),)}
    out = minijax.vmap(lambda t: lax.psum(t, "i"), axis_name="i")(tree)
    np.testing.assert_allclose(out["a"], np.full(3, 3.0))
    np.testing.assert_allclose(out["b"][0], np.full((3, 2), 3.0))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("tiled", [False, True])
def test_all_gather_matches_numpy(axis, tiled):
    x = _rand((4, 2, 3), 1)  # mapped over axis 0 (size 4); per-element shape (2, 3)
    if tiled and axis == 2:
        # A tiled gather concatenates along an existing axis: 2 is out of range for (2, 3).
        with pytest.raises(ValueError, match="axis 2 is out of bounds"):
            minijax.vmap(lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled),
                         axis_name="i")(x)
        return
    out = minijax.vmap(lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled),
                       axis_name="i")(x)
    ax = axis % (2 if tiled else 3)
    per = np.concatenate(list(x), axis=ax) if tiled else np.stack(list(x), axis=ax)
    np.testing.assert_allclose(out, np.broadcast_to(per, (4,) + per.shape))


def test_all_gather_of_unmapped_value_and_mapped_in_axis():
    c = jnp.array([1.0, 2.0])
    out = minijax.vmap(lambda v: lax.all_gather(c, "i"), axis_name="i")(jnp.zeros(3))
    np.testing.assert_allclose(out, np.broadcast_to(c, (3, 3, 2)))
    x = _rand((2, 3), 2)
    out = minijax.vmap(lambda v: lax.all_gather(v, "i"), in_axes=1, axis_name="i")(x)
    np.testing.assert_allclose(out, np.broadcast_to(x.T, (3, 3, 2)))


@pytest.mark.parametrize("tiled", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_psum_scatter_matches_numpy(tiled, dim):
    n = 3
    per_shape = [2, 2]
    per_shape[dim] = n * (2 if tiled else 1)
    x = _rand((n, *per_shape), 3)
    out = minijax.vmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=dim,
                                                  tiled=tiled), axis_name="i")(x)
    total = x.sum(0)
    for j in range(n):
        if tiled:
            want = np.take(total, np.arange(2 * j, 2 * j + 2), axis=dim)
        else:
            want = np.take(total, j, axis=dim)
        np.testing.assert_allclose(out[j], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("perm", [[(0, 1), (1, 2), (2, 3), (3, 0)], [(0, 2), (3, 1)],
                                  [(1, 1)], []])
def test_ppermute_matches_loop(perm):
    x = _rand((4, 2), 4)
    out = minijax.vmap(lambda v: lax.ppermute(v, "i", perm), axis_name="i")(x)
    want = np.zeros_like(x)
    for s, t in perm:
        want[t] = x[s]
    np.testing.assert_array_equal(out, want)


def test_axis_index_single_and_tuple():
    out = minijax.vmap(lambda v: lax.axis_index("i"), axis_name="i")(jnp.zeros(4))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.arange(4))
    two = minijax.vmap(minijax.vmap(lambda v: lax.axis_index(("i", "j")), axis_name="j"),
                       axis_name="i")(jnp.zeros((2, 3)))
    np.testing.assert_array_equal(two, np.arange(6).reshape(2, 3))


def test_nested_vmaps_with_two_axis_names():
    x = _rand((2, 3, 4), 5)

    def f(v):
        return (lax.psum(v, "i"), lax.psum(v, "j"), lax.psum(v, ("i", "j")),
                lax.pmax(v, ("j", "i")), lax.all_gather(v, "i"))
    si, sj, sij, mij, gi = minijax.vmap(minijax.vmap(f, axis_name="j"), axis_name="i")(x)
    np.testing.assert_allclose(si, np.broadcast_to(x.sum(0), x.shape), rtol=1e-5)
    np.testing.assert_allclose(sj, np.broadcast_to(x.sum(1, keepdims=True), x.shape),
                               rtol=1e-5)
    np.testing.assert_allclose(sij, np.broadcast_to(x.sum((0, 1)), x.shape), rtol=1e-5)
    np.testing.assert_allclose(mij, np.broadcast_to(x.max((0, 1)), x.shape))
    # all_gather over the outer axis inside the inner vmap: element (i, j) sees x[:, j].
    want = np.broadcast_to(np.transpose(x, (1, 0, 2))[None], (2, 3, 2, 4))
    np.testing.assert_allclose(gi, want)


def test_inner_axis_shadows_outer_axis_with_same_name():
    x = jnp.ones((2, 3))
    out = minijax.vmap(minijax.vmap(lambda v: lax.psum(v, "i"), axis_name="i"),
                       axis_name="i")(x)
    np.testing.assert_allclose(out, np.full((2, 3), 3.0))


def test_normalize_by_psum_pattern():
    x = jnp.array([1.0, 2.0, 3.0, 4.0])
    out = minijax.vmap(lambda v: v / lax.psum(v, "i"), axis_name="i")(x)
    np.testing.assert_allclose(out, np.asarray(x) / 10.0, rtol=1e-6)


# --------------------------------------------------------------------------- jit, control flow


def test_jit_over_vmap_of_collectives_matches_eager():
    x = _rand((4, 3), 6)

    def f(v):
        return (v - lax.pmean(v, "i"), lax.all_gather(v, "i", axis=1),
                lax.ppermute(v, "i", [(0, 3), (3, 0)]), lax.axis_index("i"),
                lax.pmin(v, "i"), lax.psum_scatter(jnp.outer(jnp.arange(4.0), v), "i"))
    eager = minijax.vmap(f, axis_name="i")(x)
    jitted = minijax.jit(minijax.vmap(f, axis_name="i"))(x)
    inner = minijax.vmap(minijax.jit(f), axis_name="i")(x)
    for a, b, c in zip(eager, jitted, inner, strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.asarray(c), np.asarray(a), rtol=1e-6, atol=1e-6)
    jaxpr = str(minijax.make_jaxpr(minijax.vmap(lambda v: lax.psum(v, "i"),
                                                axis_name="i"))(x))
    assert "reduce_sum" in jaxpr and "psum" not in jaxpr


def test_collectives_inside_cond_and_scan():
    xs = jnp.arange(4.0)

    def with_cond(v):
        return lax.cond(True, lambda: lax.psum(1.0, "i"), lambda: 0.0)
    np.testing.assert_allclose(minijax.vmap(with_cond, axis_name="i")(xs), np.full(4, 4.0))

    def batched_cond(v):
        return lax.cond(v > 1.0, lambda u: lax.psum(u, "i"), lambda u: u * 0.0, v)
    np.testing.assert_allclose(minijax.vmap(batched_cond, axis_name="i")(xs), [0, 0, 6, 6])

    def with_scan(v):
        def body(c, _):
            return c + lax.psum(v, "i"), lax.axis_index("i")
        return lax.scan(body, 0.0, None, length=3)
    carry, idx = minijax.vmap(with_scan, axis_name="i")(xs)
    np.testing.assert_allclose(carry, np.full(4, 18.0))
    np.testing.assert_array_equal(idx, np.tile(np.arange(4)[:, None], (1, 3)))


# --------------------------------------------------------------------------- derivatives


_GRAD_CASES = {
    "psum": lambda v: jnp.sin(v) * lax.psum(v * v, "i"),
    "pmean": lambda v: v * lax.pmean(jnp.cos(v), "i"),
    "pmax": lambda v: v * lax.pmax(v, "i"),
    "pmin": lambda v: lax.pmin(v ** 3, "i"),
    "all_gather": lambda v: jnp.sum(lax.all_gather(v, "i") ** 2, axis=0) * v,
    "all_gather_tiled": lambda v: lax.all_gather(v, "i", tiled=True)[:2] * v[0],
    "psum_scatter": lambda v: lax.psum_scatter(jnp.outer(jnp.arange(1.0, 4.0), v), "i")
    * v,
    "ppermute": lambda v: lax.ppermute(v ** 2, "i", [(0, 1), (1, 2), (2, 0)]) * v,
}


@pytest.mark.parametrize("name", sorted(_GRAD_CASES))
def test_grads_of_vmapped_collectives_match_finite_differences(name, x64):
    f = minijax.vmap(_GRAD_CASES[name], axis_name="i")
    x = np.random.default_rng(7).standard_normal((3, 2))
    check_grads(f, (x,), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_grad_outside_vmap_of_psum():
    x = jnp.arange(3.0)

    def loss(x):
        return minijax.vmap(lambda v: lax.psum(v ** 2, "i"), axis_name="i")(x).sum()
    # loss = n * sum(x**2), so the gradient is 2 n x.
    np.testing.assert_allclose(minijax.grad(loss)(x), 6.0 * np.asarray(x))
    np.testing.assert_allclose(minijax.jit(minijax.grad(loss))(x), 6.0 * np.asarray(x))


def test_grad_inside_vmap_follows_jax_psum_transpose():
    # JAX transposes psum into psum (psum is psum followed by a broadcast), so per-example
    # grad of psum(x) is the axis size; grad of pmean(x) is 1.
    x = jnp.arange(4.0)
    g = minijax.vmap(minijax.grad(lambda v: lax.psum(v, "i")), axis_name="i")(x)
    np.testing.assert_allclose(g, np.full(4, 4.0))
    g = minijax.vmap(minijax.grad(lambda v: lax.pmean(v, "i")), axis_name="i")(x)
    np.testing.assert_allclose(g, np.ones(4))


def test_pmax_tangent_is_shared_among_ties():
    x = jnp.array([1.0, 3.0, 3.0])
    t = jnp.array([10.0, 2.0, 4.0])
    _, tout = minijax.jvp(minijax.vmap(lambda v: lax.pmax(v, "i"), axis_name="i"), (x,), (t,))
    np.testing.assert_allclose(tout, np.full(3, 3.0))


# --------------------------------------------------------------------------- errors


def test_unbound_axis_name_errors():
    x = jnp.arange(3.0)
    with pytest.raises(NameError, match=r"unbound axis name: i\. .*available to collective "
                                        r"operations: \[\]"):
        lax.psum(x, "i")
    with pytest.raises(NameError, match="unbound axis name: i"):
        minijax.jit(lambda v: lax.pmean(v, "i"))(x)
    with pytest.raises(NameError, match=r"unbound axis name: k\. .*\['j'\]"):
        minijax.vmap(lambda v: lax.all_gather(v, "k"), axis_name="j")(x)
    with pytest.raises(NameError, match="unbound axis name: i"):
        minijax.vmap(lambda v: lax.axis_index("i"))(x)
    with pytest.raises(NameError, match="unbound axis name: j"):
        minijax.vmap(lambda v: lax.psum(v, ("i", "j")), axis_name="i")(x)


def test_argument_errors():
    x = jnp.zeros((3, 2))
    vm = minijax.vmap
    with pytest.raises(TypeError, match="psum: positional axes"):
        lax.psum(x, 0)
    with pytest.raises(NotImplementedError, match="axis_index_groups not supported in vmap"):
        vm(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2]]), axis_name="i")(x)
    with pytest.raises(NotImplementedError, match=r"all_gather over several axis names"):
        vm(lambda v: lax.all_gather(v, ("i", "i")), axis_name="i")(x)
    with pytest.raises(ValueError, match=r"all_gather: axis 2 is out of bounds for an operand "
                                         r"of shape \(2,\) \(tiled=False\)"):
        vm(lambda v: lax.all_gather(v, "i", axis=2), axis_name="i")(x)
    with pytest.raises(ValueError, match=r"psum_scatter: dimension 0 of the operand \(shape "
                                         r"\(2,\)\) has size 2, which must be equal to the "
                                         r"size 3 of axis 'i'"):
        vm(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(x)
    with pytest.raises(ValueError, match="must be a multiple of the size 3"):
        vm(lambda v: lax.psum_scatter(v, "i", tiled=True), axis_name="i")(x)
    with pytest.raises(ValueError, match="psum_scatter: scatter_dimension 1 is out of bounds"):
        vm(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1), axis_name="i")(x)
    with pytest.raises(ValueError, match="ppermute: perm sources and destinations must be "
                                         "unique"):
        vm(lambda v: lax.ppermute(v, "i", [(0, 1), (0, 2)]), axis_name="i")(x)
    with pytest.raises(ValueError, match=r"ppermute: perm \[\(0, 3\)\] has index out of range "
                                         r"for axis 'i' of size 3"):
        vm(lambda v: lax.ppermute(v, "i", [(0, 3)]), axis_name="i")(x)
