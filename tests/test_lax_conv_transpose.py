"""lax.conv_transpose / conv_general_dilated_patches / batch_matmul against JAX 0.10.2
(hard-coded) and against real JAX over layouts and paddings when it is importable."""

import numpy as np
import pytest

import minijax
from minijax import lax

X = np.arange(1, 9, dtype=np.float32).reshape(1, 4, 2)  # NHC
K = np.array([[[1.0, 2.0], [0.0, -1.0]], [[3.0, 0.0], [1.0, 1.0]]], np.float32)  # HIO

# JAX 0.10.2: lax.conv_transpose(X, K, (2,), pad, transpose_kernel=tk) (SAME == VALID here)
PLAIN = [[5, 2], [1, 0], [13, 4], [3, 2], [21, 6], [5, 4], [29, 8], [7, 6]]
FLIPPED = [[5, -2], [3, 3], [11, -4], [9, 7], [17, -6], [15, 11], [23, -8], [21, 15]]


@pytest.mark.parametrize("pad", ["SAME", "VALID"])
def test_conv_transpose_matches_jax_values(pad):
    np.testing.assert_allclose(lax.conv_transpose(X, K, (2,), pad), [PLAIN])
    np.testing.assert_allclose(lax.conv_transpose(X, K, (2,), pad, transpose_kernel=True),
                               [FLIPPED])
    out = minijax.jit(lambda x: lax.conv_transpose(x, K, (2,), pad))(X)
    np.testing.assert_allclose(out, [PLAIN])


def test_conv_transpose_is_the_gradient_of_a_strided_conv():
    # transpose_kernel=True with the forward conv's padding gives its input cotangent
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 6, 2)).astype(np.float32)
    k = rng.standard_normal((3, 2, 4)).astype(np.float32)
    dn = ("NHC", "HIO", "NHC")

    def fwd(x):
        return lax.conv_general_dilated(x, k, (2,), "SAME", dimension_numbers=dn)
    ct = rng.standard_normal(fwd(x).shape).astype(np.float32)
    _, vjp = minijax.vjp(fwd, x)
    got = lax.conv_transpose(ct, k, (2,), "SAME", dimension_numbers=dn,
                             transpose_kernel=True)
    np.testing.assert_allclose(got, vjp(ct)[0], rtol=1e-5, atol=1e-5)


def test_conv_general_dilated_patches_matches_jax_values():
    xc = np.arange(12, dtype=np.float32).reshape(1, 2, 2, 3)  # NCHW
    out = lax.conv_general_dilated_patches(xc, (2, 2), (1, 1), "VALID")
    # JAX 0.10.2 (channel-major patches: c0 then c1, each a flattened 1x2 window)
    want = [[[[0, 1]], [[1, 2]], [[3, 4]], [[4, 5]], [[6, 7]], [[7, 8]], [[9, 10]],
             [[10, 11]]]]
    np.testing.assert_allclose(out, want)


def test_batch_matmul():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    np.testing.assert_allclose(lax.batch_matmul(a, b), a @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="batch_matmul"):
        lax.batch_matmul(a, b[:1])


def test_against_real_jax_layouts_and_paddings():
    jax_lax = pytest.importorskip("jax.lax")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    k = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
    xc = rng.standard_normal((2, 3, 7, 5)).astype(np.float32)
    cases = []
    for pad in ("SAME", "VALID", ((1, 2), (0, 1))):
        for tk in (False, True):
            kk = k if not tk else np.ascontiguousarray(k.transpose(0, 1, 3, 2))
            cases.append(lambda m, kk=kk, pad=pad, tk=tk: m.conv_transpose(
                x, kk, (2, 1), pad, transpose_kernel=tk))
    cases.append(lambda m: m.conv_transpose(x, k, (2, 3), ((1, 0), (2, 1)),
                                            rhs_dilation=(2, 1), use_consistent_padding=True))
    cases.append(lambda m: m.conv_general_dilated_patches(xc, (2, 3), (1, 2), "SAME"))
    cases.append(lambda m: m.conv_general_dilated_patches(
        x, (2, 2), (1, 1), "VALID", dimension_numbers=("NHWC", "OIHW", "NHWC")))
    for case in cases:
        want = np.asarray(case(jax_lax))
        got = np.asarray(case(lax))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
