"""minijax.scipy.signal against scipy.signal: convolve/correlate/fftconvolve (N-d, every
mode, hypothesis shapes), convolve2d/correlate2d, detrend, stft/istft/csd/welch over their
options; JAX's errors; jit, vmap and grad."""

import numpy as np
import pytest
import scipy.signal as ss
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
from minijax.scipy import signal
from minijax.test_util import enable_x64

MODES = st.sampled_from(["full", "same", "valid"])


@settings(max_examples=25, deadline=None)
@given(ndim=st.integers(1, 3), data=st.data(), mode=MODES)
def test_convolutions_match_scipy(ndim, data, mode):
    s1 = data.draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim))
    if mode == "valid":  # one input at least as large as the other everywhere
        s2 = [data.draw(st.integers(1, n)) for n in s1]
        if data.draw(st.booleans()):
            s1, s2 = s2, s1
    else:
        s2 = data.draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim))
    rng = np.random.RandomState(sum(s1) + 10 * sum(s2))
    a, b = rng.normal(size=s1), rng.normal(size=s2)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    cases = [(signal.convolve, ss.convolve), (signal.correlate, ss.correlate),
             (signal.fftconvolve, ss.fftconvolve)]
    if ndim == 2:
        cases += [(signal.convolve2d, ss.convolve2d), (signal.correlate2d, ss.correlate2d)]
    for ours, ref in cases:
        got = ours(a32, b32, mode=mode)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, ref(a, b, mode=mode), rtol=1e-4, atol=1e-4,
                                   err_msg=f"{ours.__name__} {s1} {s2} {mode}")
    np.testing.assert_allclose(signal.convolve(a32, b32, mode=mode, method="fft"),
                               ss.convolve(a, b, mode=mode), rtol=1e-4, atol=1e-4)


def test_complex_axes_and_errors():
    rng = np.random.RandomState(0)
    a = rng.normal(size=5) + 1j * rng.normal(size=5)
    b = rng.normal(size=3) - 2j * rng.normal(size=3)
    with enable_x64():
        for mode in ("full", "same", "valid"):
            np.testing.assert_allclose(signal.correlate(a, b, mode=mode),
                                       ss.correlate(a, b, mode=mode), rtol=1e-10)
        x, y = rng.normal(size=(3, 8)), rng.normal(size=(3, 4))
        np.testing.assert_allclose(signal.fftconvolve(x, y, axes=[1]),
                                   ss.fftconvolve(x, y, axes=[1]), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="mode"):
        signal.convolve(np.ones(3), np.ones(2), mode="circular")
    with pytest.raises(ValueError, match="dimensions"):
        signal.convolve(np.ones(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match="valid"):
        signal.convolve(np.ones((3, 1)), np.ones((1, 3)), mode="valid")
    with pytest.raises(NotImplementedError, match="boundary"):
        signal.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap")
    with pytest.raises(ValueError, match="method"):
        signal.convolve(np.ones(3), np.ones(2), method="slow")


@settings(max_examples=15, deadline=None)
@given(n=st.integers(3, 30), kind=st.sampled_from(["linear", "constant"]),
       bp=st.lists(st.integers(1, 29), max_size=2, unique=True))
def test_detrend_matches_scipy(n, kind, bp):
    bp = sorted(b for b in bp if b < n) or 0  # (scipy fails on an empty list)
    x = np.random.RandomState(n).normal(size=(2, n)) + np.arange(n)
    with enable_x64():
        got = signal.detrend(x, type=kind, bp=bp)
    np.testing.assert_allclose(got, ss.detrend(x, type=kind, bp=bp), atol=1e-10)


SPECTRAL = [dict(nperseg=16), dict(nperseg=16, noverlap=4, nfft=20),
            dict(nperseg=15, window="hamming", scaling="spectrum"),
            dict(nperseg=16, average="median"), dict(nperseg=16, detrend="linear"),
            dict(nperseg=16, return_onesided=False), dict(nperseg=12, window="boxcar")]


@pytest.mark.parametrize("kw", SPECTRAL)
def test_welch_csd_match_scipy(kw, x64):
    rng = np.random.RandomState(1)
    x, y = rng.normal(size=(2, 100)), rng.normal(size=(2, 100))
    for got, want in ((signal.welch(x, **kw), ss.welch(x, **kw)),
                      (signal.csd(x, y, fs=2.0, **kw), ss.csd(x, y, fs=2.0, **kw))):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-9, atol=1e-14)
    f, p = signal.welch(x.T, axis=0, **kw)
    np.testing.assert_allclose(p, ss.welch(x.T, axis=0, **kw)[1], rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("kw", [dict(nperseg=16), dict(nperseg=16, noverlap=4, nfft=20),
                                dict(nperseg=15, boundary=None, padded=False),
                                dict(nperseg=16, boundary="even"),
                                dict(nperseg=16, return_onesided=False)])
def test_stft_istft_match_scipy(kw, x64):
    x = np.random.RandomState(2).normal(size=(2, 100))
    f, t, z = signal.stft(x, fs=4.0, **kw)
    fw, tw, zw = ss.stft(x, fs=4.0, **kw)
    np.testing.assert_allclose(f, fw)
    np.testing.assert_allclose(t, tw)
    np.testing.assert_allclose(z, zw, rtol=1e-10, atol=1e-14)
    if kw.get("boundary", "zeros") == "zeros" and kw.get("return_onesided", True):
        extra = {k: v for k, v in kw.items() if k in ("nperseg", "noverlap", "nfft")}
        tr, xr = signal.istft(zw, fs=4.0, **extra)
        twr, xwr = ss.istft(zw, fs=4.0, **extra)
        np.testing.assert_allclose(tr, twr)  # (both count the batch axis: scipy's quirk)
        np.testing.assert_allclose(xr, xwr, atol=1e-12)
        np.testing.assert_allclose(np.asarray(xr)[:, :100], x, atol=1e-12)
        t1, x1 = signal.istft(zw[0], fs=4.0, **extra)
        np.testing.assert_allclose(t1, ss.istft(zw[0], fs=4.0, **extra)[0])
        tt, xt = signal.istft(np.moveaxis(zw, -1, 0), fs=4.0, time_axis=0, freq_axis=-1,
                              **extra)
        np.testing.assert_allclose(xt, np.moveaxis(xwr, -1, 0), atol=1e-12)


def test_spectral_jit_vmap_grad_and_errors():
    x = np.random.RandomState(3).normal(size=(3, 64)).astype(np.float32)
    jitted = minijax.jit(lambda v: signal.welch(v, nperseg=16)[1])(x)
    np.testing.assert_allclose(jitted, ss.welch(x, nperseg=16)[1], rtol=1e-4, atol=1e-7)
    rows = minijax.vmap(lambda v: signal.convolve(v, np.ones(3, np.float32), mode="same"))(x)
    np.testing.assert_allclose(rows, [np.convolve(r, np.ones(3), "same") for r in x],
                               rtol=1e-5, atol=1e-5)
    # d/dx sum(convolve(x, k)) = sum(k) for every x entry
    k = np.array([1.0, -2.0, 0.5], np.float32)
    g = minijax.grad(lambda v: signal.convolve(v, k).sum())(x[0])
    np.testing.assert_allclose(g, np.full(64, k.sum()), rtol=1e-6)
    with pytest.raises(ValueError, match="noverlap"):
        signal.welch(x, nperseg=8, noverlap=8)
    with pytest.raises(ValueError, match="scaling"):
        signal.welch(x, scaling="power")
    with pytest.raises(ValueError, match="average"):
        signal.csd(x, x, average="mode")


@pytest.mark.parametrize("kwargs, match", [
    ({"nperseg": 0}, "nperseg must be a positive integer"),
    ({"nperseg": 8, "noverlap": 8}, "noverlap must be less than nperseg"),
    ({"nperseg": 8, "noverlap": 9}, "noverlap must be less than nperseg"),
])
def test_stft_and_istft_check_segment_arguments_alike(kwargs, match):
    """stft and istft share their nperseg/noverlap checks (scipy's and JAX's messages)."""
    x = np.random.RandomState(0).normal(size=64).astype(np.float32)
    with pytest.raises(ValueError, match=match):
        signal.stft(x, **kwargs)
    z = signal.stft(x, nperseg=8)[2]
    with pytest.raises(ValueError, match=match):
        signal.istft(z, **kwargs)


def test_stft_and_istft_nfft_shorter_than_a_segment_is_an_error():
    x = np.random.RandomState(0).normal(size=64).astype(np.float32)
    with pytest.raises(ValueError, match="nfft must be greater than or equal to nperseg"):
        signal.stft(x, nperseg=8, nfft=4)
    with pytest.raises(ValueError, match=r"FFT length \(nfft\) must be at least as long"):
        signal.istft(signal.stft(x, nperseg=8)[2], nperseg=8, nfft=4)
