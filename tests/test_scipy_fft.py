"""minijax.scipy.fft: dct/idct/dctn/idctn against scipy.fft (hypothesis shapes, axes, sizes,
norms), complex input, JAX's errors, and jit/vmap/grad."""

import numpy as np
import pytest
import scipy.fft
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
from minijax.scipy import fft

NORMS = st.sampled_from([None, "backward", "ortho"])


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), norm=NORMS,
       data=st.data())
def test_dct_idct_match_scipy(shape, norm, data):
    x = np.random.RandomState(len(shape)).normal(size=shape).astype(np.float32)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = data.draw(st.one_of(st.none(), st.integers(1, 7)))
    for ours, ref in ((fft.dct, scipy.fft.dct), (fft.idct, scipy.fft.idct)):
        got = ours(x, n=n, axis=axis, norm=norm)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, ref(x.astype(np.float64), n=n, axis=axis, norm=norm),
                                   rtol=2e-4, atol=2e-4)


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), norm=NORMS,
       data=st.data())
def test_dctn_idctn_match_scipy(shape, norm, data):
    x = np.random.RandomState(sum(shape)).normal(size=shape)
    ndim = len(shape)
    axes = data.draw(st.one_of(st.none(), st.lists(st.integers(0, ndim - 1), min_size=1,
                                                     max_size=ndim, unique=True)))
    k = len(axes) if axes is not None else ndim
    s = data.draw(st.one_of(st.none(), st.lists(st.integers(1, 5), min_size=k, max_size=k)))
    for ours, ref in ((fft.dctn, scipy.fft.dctn), (fft.idctn, scipy.fft.idctn)):
        np.testing.assert_allclose(ours(x.astype(np.float32), s=s, axes=axes, norm=norm),
                                   ref(x, s=s, axes=axes, norm=norm), rtol=2e-4, atol=2e-4)


def test_values_match_jax():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    # JAX's values: jax.scipy.fft.dctn(x, s=(1, 2)), dct(x, n=2, axis=0), complex dct
    np.testing.assert_allclose(fft.dctn(x, s=(1, 2)), [[4.0, -2.828427]], rtol=1e-6)
    np.testing.assert_allclose(fft.dct(x, n=2, axis=0),
                               [[6, 10, 14], [-4.2426405] * 3], rtol=1e-6)
    got = fft.dct(np.array([1 + 2j, 3, 4j], np.complex64))
    np.testing.assert_allclose(got, [8 + 12j, 1.7320507 - 3.4641016j, -5 + 6j], rtol=1e-6)
    assert fft.dct(np.arange(3)).dtype == np.float32


def test_inverse_roundtrip_and_errors():
    x = np.random.RandomState(0).normal(size=(3, 4)).astype(np.float32)
    for norm in (None, "ortho"):
        np.testing.assert_allclose(fft.idctn(fft.dctn(x, norm=norm), norm=norm), x, atol=1e-5)
    with pytest.raises(NotImplementedError, match="type 2"):
        fft.dct(x, type=1)
    with pytest.raises(ValueError, match="norm"):
        fft.dctn(x, norm="forward")
    with pytest.raises(ValueError, match="at most"):
        fft.dctn(x, s=(1, 2, 3))


def test_dct_under_jit_vmap_grad():
    x = np.random.RandomState(1).normal(size=(4, 5)).astype(np.float32)
    jitted = minijax.jit(lambda v: fft.dctn(v, norm="ortho"))(x)
    np.testing.assert_allclose(jitted, scipy.fft.dctn(x, norm="ortho"), rtol=1e-4, atol=1e-5)
    rows = minijax.vmap(fft.dct)(x)
    np.testing.assert_allclose(rows, np.stack([scipy.fft.dct(r) for r in x]), rtol=1e-4,
                               atol=1e-4)
    # the orthonormal DCT is orthogonal: the gradient of sum(w * dct(x)) is idct(w)
    w = np.random.RandomState(2).normal(size=5).astype(np.float32)
    g = minijax.grad(lambda v: (fft.dct(v, norm="ortho") * w).sum())(x[0])
    np.testing.assert_allclose(g, scipy.fft.idct(w, norm="ortho"), rtol=1e-4, atol=1e-5)
