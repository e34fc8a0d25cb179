"""Smaller pieces of JAX's surface that the ecosystem libraries need: incomplete gamma/beta,
Bessel i0e/i1e, expi, multigammaln (against SciPy), the import hook's fallback modules
(scipy linalg/fft/optimize/stats.gaussian_kde, sparse BCOO, checkify, io_callback),
lax.all_to_all / pswapaxes (JAX's values), lax.cond's per-branch form, lax.broadcast_shapes,
dtypes.prng_key and compiling a deep fused chain."""

import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg
import scipy.special
import scipy.stats

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.compat.fallback import sparse
from minijax.experimental import checkify, io_callback
from minijax.scipy import fft as scipy_fft
from minijax.scipy import linalg as scipy_linalg
from minijax.scipy import optimize as scipy_optimize
from minijax.scipy import special
from minijax.scipy.stats import gaussian_kde, norm

RNG = np.random.RandomState(0)


@pytest.mark.parametrize("name, ref, args", [
    ("gammainc", scipy.special.gammainc, (RNG.uniform(0.1, 20, 64), RNG.uniform(0, 30, 64))),
    ("gammaincc", scipy.special.gammaincc, (RNG.uniform(0.1, 20, 64), RNG.uniform(0, 30, 64))),
    ("betainc", scipy.special.betainc,
     (RNG.uniform(0.1, 20, 64), RNG.uniform(0.1, 20, 64), RNG.uniform(0, 1, 64))),
    ("betaln", scipy.special.betaln, (RNG.uniform(0.1, 20, 64), RNG.uniform(0.1, 20, 64))),
    ("i0e", scipy.special.i0e, (np.linspace(-60, 60, 97),)),
    ("i1e", scipy.special.i1e, (np.linspace(-60, 60, 97),)),
    ("expi", scipy.special.expi, (np.concatenate([np.linspace(-50, -0.01, 40),
                                                  np.linspace(0.01, 80, 40)]),)),
])
def test_special_functions_match_scipy(name, ref, args):
    got = np.asarray(getattr(special, name)(*[a.astype(np.float32) for a in args]))
    want = ref(*args)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=5e-6)


def test_special_edge_values_and_gradient():
    assert float(special.gammainc(1.0, 0.0)) == 0.0 and np.isnan(special.gammainc(-1.0, 1.0))
    assert float(special.betainc(2.0, 3.0, 1.0)) == 1.0
    # d/dx P(2, x) = x e^-x / Gamma(2)
    np.testing.assert_allclose(minijax.grad(lambda x: special.gammainc(2.0, x))(1.5),
                               1.5 * np.exp(-1.5), rtol=1e-5)
    np.testing.assert_allclose(minijax.grad(special.i0e)(2.0),
                               scipy.special.i1e(2.0) - scipy.special.i0e(2.0), rtol=1e-5)
    np.testing.assert_allclose(special.multigammaln(np.float32(3.5), 3),
                               scipy.special.multigammaln(3.5, 3), rtol=1e-6)


def test_scipy_fallbacks_match_scipy():
    a = np.tril(RNG.normal(size=(4, 4))) + 4 * np.eye(4)
    b = RNG.normal(size=(4, 2))
    f32 = np.float32
    for trans in (0, 1):
        np.testing.assert_allclose(
            scipy_linalg.solve_triangular(a.astype(f32), b.astype(f32), trans=trans, lower=True),
            scipy.linalg.solve_triangular(a, b, trans=trans, lower=True), rtol=1e-4)
    spd = a @ a.T
    c = scipy_linalg.cho_factor(spd.astype(f32), lower=True)
    np.testing.assert_allclose(scipy_linalg.cho_solve(c, b[:, 0].astype(f32)),
                               np.linalg.solve(spd, b[:, 0]), rtol=1e-4)
    np.testing.assert_allclose(scipy_linalg.cholesky(spd.astype(f32)),
                               scipy.linalg.cholesky(spd), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scipy_linalg.toeplitz([1.0, 2, 3], [1.0, 4, 5, 6]),
                               scipy.linalg.toeplitz([1.0, 2, 3], [1.0, 4, 5, 6]))
    x = RNG.normal(size=(3, 7)).astype(f32)
    for norm_ in (None, "ortho"):
        np.testing.assert_allclose(scipy_fft.dct(x, norm=norm_),
                                   scipy.fft.dct(x, norm=norm_), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(scipy_fft.idct(x, norm=norm_),
                                   scipy.fft.idct(x, norm=norm_), rtol=1e-4, atol=1e-5)
    data, w = RNG.normal(size=(2, 40)), RNG.uniform(size=40)
    pts = RNG.normal(size=(2, 3))
    np.testing.assert_allclose(gaussian_kde(data.astype(f32), weights=w).evaluate(pts),
                               scipy.stats.gaussian_kde(data, weights=w).evaluate(pts),
                               rtol=1e-4)
    q = np.array([-1.5, 0.0, 2.0], f32)
    np.testing.assert_allclose(norm.logpdf(q, 1.0, 2.0), scipy.stats.norm.logpdf(q, 1, 2),
                               rtol=1e-6)
    np.testing.assert_allclose(norm.cdf(q), scipy.stats.norm.cdf(q), rtol=1e-6)


def test_bfgs_finds_the_minimum_under_jit():
    weights = jnp.array([1.0, 10.0, 100.0])

    def f(x):
        return jnp.sum((x - jnp.arange(3.0)) ** 2 * weights)

    result = minijax.jit(lambda x0: scipy_optimize.minimize(f, x0, method="BFGS"))(
        jnp.zeros(3))
    assert bool(result.success)
    np.testing.assert_allclose(result.x, [0.0, 1.0, 2.0], atol=1e-4)


def test_bcoo_checkify_io_callback():
    dense = np.array([[0.0, 2.0], [3.0, 0.0]], np.float32)
    m = sparse.BCOO.fromdense(dense)
    assert m.nse == 2
    np.testing.assert_array_equal(m.todense(), dense)
    np.testing.assert_array_equal(minijax.jit(lambda s: s @ jnp.ones(2))(m), [2.0, 3.0])
    err, out = checkify.checkify(lambda x: (checkify.check(x > 0, "x={x}", x=x), x)[1])(-1.0)
    assert "x=-1.0" in err.get() and out is None
    with pytest.raises(checkify.JaxRuntimeError):
        checkify.check(jnp.array([True, False]), "failed")
    with pytest.raises(NotImplementedError, match="concrete"):
        minijax.jit(lambda x: checkify.check(x > 0, "x"))(1.0)
    spec = minijax.ShapeDtypeStruct((2,), jnp.float32)
    np.testing.assert_array_equal(io_callback(lambda x: x * 2, spec, jnp.ones(2)), [2, 2])


def test_all_to_all_matches_jax():
    x = jnp.arange(3 * 6 * 2.0).reshape(3, 6, 2)
    y = minijax.vmap(lambda v: lax.all_to_all(v, "i", 0, 1, tiled=True), axis_name="i")(x)
    assert y.shape == (3, 2, 6)
    # JAX 0.10.2's value of y[1]:
    np.testing.assert_array_equal(y[1], [[4, 5, 16, 17, 28, 29], [6, 7, 18, 19, 30, 31]])
    x = jnp.arange(3 * 3 * 2 * 4.0).reshape(3, 3, 2, 4)
    for s, c, shape in [(0, 0, (3, 3, 2, 4)), (0, 1, (3, 2, 3, 4)), (0, 2, (3, 2, 4, 3))]:
        y = minijax.vmap(lambda v, s=s, c=c: lax.all_to_all(v, "i", s, c), axis_name="i")(x)
        assert y.shape == shape
        # element i stacks chunk i of every element j along c: y[i][.., j@c, ..] = x[j][i@s]
        np.testing.assert_array_equal(np.moveaxis(np.asarray(y), c + 1, 1),
                                      np.swapaxes(np.asarray(x), 0, 1))
    swapped = minijax.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")(x)
    np.testing.assert_array_equal(swapped, np.swapaxes(np.asarray(x), 0, 1))
    ct = jnp.asarray(RNG.normal(size=(3, 2, 3, 4)).astype(np.float32))
    g = minijax.grad(lambda v: jnp.sum(minijax.vmap(
        lambda e: lax.all_to_all(e, "i", 0, 1), axis_name="i")(v) * ct))(x)
    np.testing.assert_allclose(g, np.swapaxes(np.moveaxis(np.asarray(ct), 2, 1), 0, 1))


def test_lax_cond_per_branch_operands_and_broadcast_shapes():
    assert float(lax.cond(True, 1.0, lambda a: a + 1, 2.0, lambda b: b * 10)) == 2.0
    assert float(minijax.jit(lambda p: lax.cond(p, 1.0, lambda a: a + 1, 2.0,
                                                lambda b: b * 10))(False)) == 20.0
    assert float(lax.cond(True, lambda a, b: a, lambda a, b: b, 1.0, 2.0)) == 1.0
    assert lax.broadcast_shapes((3, 1), (1, 4), (4,)) == (3, 4)
    with pytest.raises(ValueError, match="Incompatible shapes"):
        lax.broadcast_shapes((3,), (4,))


def test_prng_key_dtype_is_extended():
    d = minijax.dtypes
    key = minijax.random.key(0)
    assert d.issubdtype(key.dtype, d.prng_key) and d.issubdtype(key.dtype, d.extended)
    assert not d.issubdtype(np.uint32, d.prng_key)
    assert not d.issubdtype(key.dtype, np.floating) and d.issubdtype(np.float32, np.floating)


def test_deep_fused_chain_compiles():
    """A chain of ~180 elementwise ops recursed past a low recursion limit in the emitter."""
    code = ("import sys; sys.setrecursionlimit(400)\n"
            "import numpy as np, minijax, minijax.numpy as jnp\n"
            "def f(x, m=jnp):\n"
            "    for i in range(60):\n"
            "        x = m.sin(x) * 1.01 + 0.1 if i % 2 else m.cos(x) - 0.2\n"
            "    return x\n"
            "got = minijax.jit(f)(jnp.ones(3, jnp.float32))\n"
            "np.testing.assert_allclose(got, f(np.ones(3, np.float32), np), rtol=1e-5)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_abstract_mesh_as_jax():
    """jax.sharding.AbstractMesh / get_abstract_mesh (flax.linen reads them at import and
    init). JAX: outside jax.set_mesh (and inside the legacy `with mesh:`) the abstract mesh
    is the empty one."""
    from minijax.sharding import AbstractMesh, get_abstract_mesh, make_mesh
    empty = get_abstract_mesh()
    assert empty.empty and empty.axis_names == () and empty.shape == {}
    mesh = make_mesh((1,), ("x",))
    with mesh:
        assert get_abstract_mesh().empty
    am = mesh.abstract_mesh
    assert am == AbstractMesh((1,), ("x",)) and hash(am) == hash(AbstractMesh((1,), "x"))
    assert not am.empty and am.axis_sizes == (1,) and am.shape_tuple == (("x", 1),)
    ab = AbstractMesh((2, 3), ("a", "b"))
    assert ab.shape == {"a": 2, "b": 3} and ab.size == 6 and ab != am
    with pytest.raises(ValueError, match="axis names"):
        AbstractMesh((2,), ("a", "b"))
