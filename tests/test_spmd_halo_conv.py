"""Spatially split convolutions under sharded jit (compiler/spmd_halo.py): an input split
along a spatial dimension keeps its split through a halo exchange with the neighbouring
devices (collective-permute, no all-gather), for 1-D and 2-D convolutions with SAME,
VALID and explicit padding, kernels 1/3/5, over 2, 4 and 8 devices, the split over H or
W or both; the cases the halo cannot serve fall back to gathering; gradients through a
split convolution (input gradient by halo, kernel gradient by halo + all-reduce).
References: unsharded jit and a NumPy float64 convolution."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.sharding import NamedSharding
from minijax.sharding import PartitionSpec as P


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _pads(padding, spatial, window, strides):
    """lax's padding names as (lo, hi) pairs (SAME: output ceil(n / s), the extra row
    high)."""
    if padding == "VALID":
        return [(0, 0)] * len(spatial)
    if padding == "SAME":
        total = [max((-(-n // s) - 1) * s + w - n, 0)
                 for n, w, s in zip(spatial, window, strides)]
        return [(t // 2, t - t // 2) for t in total]
    return list(padding)


def np_conv(x, w, strides, padding, rhs_dilation=None):
    """Channels-last convolution in float64: x (N, *spatial, C), w (*window, C, O)."""
    nsp = x.ndim - 2
    window = w.shape[:nsp]
    dil = rhs_dilation or (1,) * nsp
    pads = _pads(padding, x.shape[1:-1], [(k - 1) * d + 1 for k, d in zip(window, dil)],
                 strides)
    xp = np.pad(x.astype(np.float64), [(0, 0)] + pads + [(0, 0)])
    out_sp = [(xp.shape[1 + i] - (window[i] - 1) * dil[i] - 1) // strides[i] + 1
              for i in range(nsp)]
    out = np.zeros((x.shape[0], *out_sp, w.shape[-1]))
    for pos in np.ndindex(*window):
        sl = tuple(slice(p * d, p * d + (o - 1) * s + 1, s)
                   for p, d, o, s in zip(pos, dil, out_sp, strides))
        out += xp[(slice(None), *sl)] @ w[pos].astype(np.float64)
    return out


DN = {1: ("NWC", "WIO", "NWC"), 2: ("NHWC", "HWIO", "NHWC")}


def _conv(strides, padding, nsp, rhs_dilation=None):
    def f(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, rhs_dilation=rhs_dilation,
                                        dimension_numbers=DN[nsp])
    return f


def _run_split(f, x, w, spec, mesh):
    g = minijax.jit(f, in_shardings=(NamedSharding(mesh, spec), NamedSharding(mesh, P())))
    return g(x, w), g.lower(x, w).compile().as_text()


def _check(got, x, w, strides, padding, nsp, rhs_dilation=None):
    f = _conv(strides, padding, nsp, rhs_dilation)
    np.testing.assert_allclose(np.asarray(got), np.asarray(minijax.jit(f)(x, w)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got), np_conv(x, w, strides, padding, rhs_dilation),
                               rtol=1e-4, atol=1e-4)


def _assert_halo(text):
    assert "collective-permute" in text
    assert "all-gather" not in text


# (kernel, padding): every one keeps the split by a halo exchange on 2, 4 and 8 devices of
# an H (or W) of 16: the output size divides and the halo is at most a shard.
HALO_CASES = [(1, "SAME"), (3, "SAME"), (5, "SAME"), (1, "VALID"), (3, ((1, 1), (1, 1))),
              (5, ((2, 2), (2, 2))), (3, ((2, 0), (0, 2)))]


@pytest.mark.parametrize("ndev", [2, 4, 8])
@pytest.mark.parametrize("kernel,padding", HALO_CASES, ids=str)
@pytest.mark.parametrize("over", ["H", "W"])
def test_conv2d_split_spatially_is_a_halo_exchange(ndev, kernel, padding, over):
    mesh = minijax.make_mesh((ndev,), ("x",))
    x, w = _x(2, 16, 16, 3), _x(kernel, kernel, 3, 4, seed=1)
    spec = P(None, "x") if over == "H" else P(None, None, "x")
    got, text = _run_split(_conv((1, 1), padding, 2), x, w, spec, mesh)
    _check(got, x, w, (1, 1), padding, 2)
    if kernel > 1:
        _assert_halo(text)
    assert "all-gather" not in text
    assert got.sharding.spec == spec   # the output stays split the same way


@pytest.mark.parametrize("ndev", [2, 4, 8])
@pytest.mark.parametrize("kernel,padding", [(1, "VALID"), (3, "SAME"), (5, "SAME"),
                                            (5, ((4, 0),)), (3, ((0, 2),))], ids=str)
def test_conv1d_split_over_width(ndev, kernel, padding):
    mesh = minijax.make_mesh((ndev,), ("x",))
    x, w = _x(3, 32, 2), _x(kernel, 2, 5, seed=2)
    got, text = _run_split(_conv((1,), padding, 1), x, w, P(None, "x"), mesh)
    _check(got, x, w, (1,), padding, 1)
    assert "all-gather" not in text
    if kernel > 1:
        assert "collective-permute" in text
    assert got.sharding.spec == P(None, "x")


@pytest.mark.parametrize("ndev,n,kernel,padding,strides,dil", [
    (2, 16, 5, "VALID", (1,), None),        # output 12: blocks start at different rows
    (4, 20, 5, "VALID", (1,), None),        # output 16
    (4, 32, 3, "SAME", (2,), None),         # stride 2, output 16
    (2, 16, 3, "SAME", (1,), (2,)),         # window dilation 2
    (8, 64, 3, ((0, 1),), (2,), None),
], ids=str)
def test_conv1d_halo_with_uneven_offsets_strides_and_dilation(ndev, n, kernel, padding,
                                                                 strides, dil):
    mesh = minijax.make_mesh((ndev,), ("x",))
    x, w = _x(2, n, 3), _x(kernel, 3, 2, seed=3)
    got, text = _run_split(_conv(strides, padding, 1, dil), x, w, P(None, "x"), mesh)
    _check(got, x, w, strides, padding, 1, dil)
    _assert_halo(text)
    assert got.sharding.spec == P(None, "x")


@pytest.mark.parametrize("ndev,n,kernel,padding,why", [
    (4, 16, 3, "VALID", "output 14 does not divide"),
    (2, 16, 3, ((2, 1),), "output 17 does not divide"),
    (8, 8, 5, "SAME", "halo 2 is wider than a 1-row shard"),
    (4, 8, 7, "SAME", "halo 3 is wider than a 2-row shard"),
], ids=lambda v: str(v))
def test_conv1d_falls_back_to_gathering(ndev, n, kernel, padding, why):
    mesh = minijax.make_mesh((ndev,), ("x",))
    x, w = _x(2, n, 3), _x(kernel, 3, 2, seed=4)
    got, text = _run_split(_conv((1,), padding, 1), x, w, P(None, "x"), mesh)
    _check(got, x, w, (1,), padding, 1)
    assert "all-gather" in text and "collective-permute" not in text, why
    assert got.sharding.spec == P()


@pytest.mark.parametrize("spec", [P(None, "x", "y"), P(None, "y", "x"), P("x", "y"),
                                  P(None, ("x", "y")), P(None, None, ("y", "x"))], ids=str)
def test_conv2d_on_a_2d_mesh(spec):
    """Both spatial dims split (the corners come with the second exchange), the split
    over two mesh axes, and batch + spatial splits."""
    mesh = minijax.make_mesh((2, 4), ("x", "y"))
    x, w = _x(2, 16, 16, 3), _x(3, 3, 3, 4, seed=5)
    got, text = _run_split(_conv((1, 1), "SAME", 2), x, w, spec, mesh)
    _check(got, x, w, (1, 1), "SAME", 2)
    _assert_halo(text)
    assert got.sharding.spec == spec


@pytest.mark.parametrize("ndev", [2, 4, 8])
@pytest.mark.parametrize("kernel", [1, 3, 5])
def test_gradients_through_a_spatially_split_conv(ndev, kernel):
    """The input gradient is a halo convolution too, the kernel gradient one per block
    plus an all-reduce: no all-gather anywhere."""
    mesh = minijax.make_mesh((ndev,), ("x",))
    x, w = _x(2, 16, 6, 3), _x(kernel, kernel, 3, 4, seed=6)
    target = _x(2, 16, 6, 4, seed=7)
    conv = _conv((1, 1), "SAME", 2)

    def loss(x, w):
        return jnp.sum((jnp.tanh(conv(x, w)) - target) ** 2)
    grad = minijax.grad(loss, argnums=(0, 1))
    want = minijax.jit(grad)(x, w)
    g = minijax.jit(grad, in_shardings=(NamedSharding(mesh, P(None, "x")),
                                        NamedSharding(mesh, P())))
    got = g(x, w)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4)
    text = g.lower(x, w).compile().as_text()
    assert "all-gather" not in text
    assert got[0].sharding.spec == P(None, "x")
    # Finite differences of the loss along a random direction (float64 NumPy forward).
    d = _x(*x.shape, seed=8).astype(np.float64)

    def np_loss(xx):
        y = np.tanh(np_conv(xx, w, (1, 1), "SAME"))
        return np.sum((y - target) ** 2)
    eps = 1e-4
    fd = (np_loss(x + eps * d) - np_loss(x - eps * d)) / (2 * eps)
    np.testing.assert_allclose(np.sum(np.asarray(got[0], np.float64) * d), fd, rtol=1e-3)


def test_strided_gradient_gathers_only_the_output_gradient():
    """A stride-2 forward conv is a halo convolution; its input gradient (base dilation)
    falls back to gathering the output gradient; the values match."""
    mesh = minijax.make_mesh((4,), ("x",))
    x, w = _x(2, 16, 4, 3), _x(3, 3, 3, 2, seed=9)
    conv = _conv((2, 1), "SAME", 2)
    grad = minijax.grad(lambda x, w: jnp.sum(jnp.sin(conv(x, w))), argnums=(0, 1))
    g = minijax.jit(grad, in_shardings=(NamedSharding(mesh, P(None, "x")),
                                        NamedSharding(mesh, P())))
    got, want = g(x, w), minijax.jit(grad)(x, w)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4)
    text = g.lower(x, w).compile().as_text()
    assert "collective-permute" in text
    gathered = [ln for ln in text.splitlines() if " all-gather(" in ln]
    assert len(gathered) == 1 and "f32[2,8,4,2]" in gathered[0]   # dy whole, not x
