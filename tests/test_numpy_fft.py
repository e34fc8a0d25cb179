"""jnp.fft against NumPy (values), finite differences (gradients) and JAX conventions."""

from __future__ import annotations

import numpy as np
import pytest

import minijax as mj
import minijax.numpy as jnp

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6)).astype(np.float32)
X5 = RNG.standard_normal((2, 3, 2, 2, 3)).astype(np.float32)


@pytest.mark.parametrize("name,kwargs", [
    ("fft", {}), ("ifft", {}), ("rfft", {}), ("fft2", {}), ("ifft2", {}), ("rfft2", {}),
    ("fftn", {}), ("ifftn", {}), ("rfftn", {}), ("fft", {"n": 8, "axis": 0}),
    ("rfft", {"n": 4, "norm": "ortho"}), ("ifft", {"norm": "forward"}),
    ("fftn", {"axes": (1, 0), "s": (5, 3)}),
])
@pytest.mark.parametrize("jit", [False, True])
def test_forward_transforms_match_numpy(name, kwargs, jit):
    f = getattr(jnp.fft, name)
    fn = mj.jit(lambda v: f(v, **kwargs)) if jit else (lambda v: f(v, **kwargs))
    got = np.asarray(fn(X))
    want = getattr(np.fft, name)(X.astype(np.float64), **kwargs)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name,kwargs", [("irfft", {}), ("irfft", {"n": 9}),
                                         ("irfft2", {}), ("irfftn", {"norm": "ortho"})])
def test_inverse_real_transforms_match_numpy(name, kwargs):
    c = np.fft.rfft2(X).astype(np.complex64)
    got = np.asarray(mj.jit(lambda v: getattr(jnp.fft, name)(v, **kwargs))(c))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, getattr(np.fft, name)(c, **kwargs), rtol=1e-4, atol=1e-4)


def test_more_than_three_axes_and_round_trip():
    np.testing.assert_allclose(jnp.fft.fftn(X5), np.fft.fftn(X5), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(jnp.fft.rfftn(X5), np.fft.rfftn(X5), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(jnp.fft.irfftn(jnp.fft.rfftn(X5), s=X5.shape), X5, atol=1e-5)


def test_frequencies_and_shifts():
    np.testing.assert_allclose(jnp.fft.fftfreq(5, 0.5), np.fft.fftfreq(5, 0.5), rtol=1e-6)
    np.testing.assert_allclose(jnp.fft.rfftfreq(6, 2.0), np.fft.rfftfreq(6, 2.0), rtol=1e-6)
    assert jnp.fft.fftfreq(4).dtype == np.float32
    a = np.arange(15).reshape(3, 5)
    np.testing.assert_array_equal(jnp.fft.fftshift(a), np.fft.fftshift(a))
    np.testing.assert_array_equal(jnp.fft.ifftshift(a, axes=1), np.fft.ifftshift(a, axes=1))


def test_vmap_matches_per_row_loop():
    got = mj.vmap(jnp.fft.rfft)(X)
    np.testing.assert_allclose(got, np.stack([np.fft.rfft(r) for r in X]), rtol=1e-4,
                               atol=1e-4)


def _numeric_grad(loss, x, h=1e-6):
    x = x.astype(np.float64)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        out[idx] = (loss(x + e) - loss(x - e)) / (2 * h)
    return out


W = RNG.standard_normal((4, 6))


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "fft2", "rfftn"])
def test_gradients_match_finite_differences(name):
    def make(mod):
        def loss(v):
            y = getattr(mod.fft, name)(v)
            k = y.shape[-1]
            return (mod.abs(y) ** 2 * W[..., :k]).sum() + (y.real * W[..., :k]).sum() \
                + 2 * (y.imag * W[..., :k]).sum()
        return loss
    got = np.asarray(mj.jit(mj.grad(make(jnp)))(X))
    want = _numeric_grad(lambda v: float(make(np)(v)), X)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_complex_input_gradient_follows_jax_convention():
    # JAX 0.10.2: jax.grad(lambda c: jnp.fft.irfft(c)[1:].sum())(c) for this c.
    c = np.array([1 + 0j, 2 - 1j, 0.5 + 0.5j, 1 + 0j], np.complex64)
    got = np.asarray(mj.grad(lambda v: jnp.fft.irfft(v)[1:].sum())(c))
    want = np.array([0.8333334, -0.33333334, -0.33333334, -0.16666667], np.complex64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_errors():
    with pytest.raises(TypeError, match="needs real input"):
        jnp.fft.rfft(np.ones(3, np.complex64))
    with pytest.raises(ValueError, match="norm"):
        jnp.fft.fft(X, norm="bad")
