"""minijax.nn.dot_product_attention, log1mexp, logmeanexp, squareplus and sparse_sigmoid:
values and gradients against JAX 0.10.2 (hard-coded, and live when importable), a float64
NumPy reference for attention over random shapes and options, finite differences."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.nn as nn

try:
    import jax
except Exception:  # pragma: no cover - JAX is optional
    jax = None

needs_jax = pytest.mark.skipif(jax is None, reason="JAX is not importable")

Q = np.sin(np.arange(8, dtype=np.float32)).reshape(1, 2, 2, 2)
K = np.cos(np.arange(6, dtype=np.float32)).reshape(1, 3, 1, 2)
V = np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2) / 3
BIAS = np.array([0., .5, -1.], np.float32).reshape(1, 1, 1, 3)


def test_attention_matches_jax_values():
    # JAX: jax.nn.dot_product_attention(Q, K, V) (two query heads share one K/V head)
    np.testing.assert_allclose(nn.dot_product_attention(Q, K, V), [[
        [[0.6249048709869385, 0.9582381844520569], [0.40371665358543396, 0.73704993724823]],
        [[0.7934185862541199, 1.1267518997192383], [0.7200378775596619, 1.0533711910247803]]]],
        rtol=1e-5)
    np.testing.assert_allclose(nn.dot_product_attention(Q, K, V, bias=BIAS, is_causal=True), [[
        [[0.0, 0.3333333432674408], [0.0, 0.3333333432674408]],
        [[0.6056675910949707, 0.9390009045600891], [0.34480950236320496, 0.678142786026001]]]],
        rtol=1e-5, atol=1e-7)
    grad = minijax.grad(lambda q: (nn.dot_product_attention(q, K, V, bias=BIAS) ** 2).sum())(Q)
    np.testing.assert_allclose(grad, [[
        [[-0.5901614427566528, -0.2642063498497009], [-0.3959070146083832, -0.2714317739009857]],
        [[-0.22027254104614258, -0.02551407739520073],
         [-0.6380143761634827, -0.2556646466255188]]]], rtol=2e-5, atol=1e-7)


def reference_attention(q, k, v, bias=None, mask=None, scale=None, is_causal=False,
                        q_len=None, kv_len=None, window=None):
    """Float64 loops over batch and head, written from the definition."""
    b, t, n, h = q.shape
    s, kh = k.shape[1], k.shape[2]
    scale = 1 / np.sqrt(h) if scale is None else scale
    out = np.zeros((b, t, n, h))
    for bi in range(b):
        for ni in range(n):
            kv = ni // (n // kh)
            logits = q[bi, :, ni].astype(np.float64) @ k[bi, :, kv].T.astype(np.float64)
            logits = logits * scale
            if bias is not None:
                logits = logits + np.broadcast_to(bias, (b, n, t, s))[bi, ni]
            allowed = np.ones((t, s), bool)
            if mask is not None:
                allowed &= np.broadcast_to(mask, (b, n, t, s))[bi, ni]
            ti, si = np.arange(t)[:, None], np.arange(s)[None, :]
            if is_causal:
                allowed &= ti >= si
            if window is not None:
                allowed &= (ti <= si + window[0]) & (ti >= si - window[1])
            if q_len is not None:
                allowed &= ti < q_len[bi]
            if kv_len is not None:
                allowed &= si < kv_len[bi]
            logits = np.where(allowed, logits, -0.7 * np.finfo(np.float32).max)
            p = np.exp(logits - logits.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            out[bi, :, ni] = p @ v[bi, :, kv].astype(np.float64)
            if q_len is not None:
                out[bi, q_len[bi]:, ni] = 0
    return out


@settings(max_examples=12, deadline=None)
@given(st.data())
def test_attention_against_float64_reference(data):
    b, t, s = (data.draw(st.integers(1, 3)) for _ in range(3))
    kh = data.draw(st.sampled_from([1, 2]))
    n = kh * data.draw(st.sampled_from([1, 2, 3]))
    h = data.draw(st.integers(1, 4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    q = rng.standard_normal((b, t, n, h)).astype(np.float32)
    k = rng.standard_normal((b, s, kh, h)).astype(np.float32)
    v = rng.standard_normal((b, s, kh, h)).astype(np.float32)
    kw = {}
    if data.draw(st.booleans()):
        kw["bias"] = rng.standard_normal((1, data.draw(st.sampled_from([1, n])), t, s)
                                         ).astype(np.float32)
    if data.draw(st.booleans()):
        kw["mask"] = rng.random((b, 1, t, s)) > 0.3
    kw["is_causal"] = data.draw(st.booleans())
    if data.draw(st.booleans()):
        kw["scale"] = 0.7
    if data.draw(st.booleans()):
        kw["query_seq_lengths"] = rng.integers(1, t + 1, b).astype(np.int32)
        kw["key_value_seq_lengths"] = rng.integers(1, s + 1, b).astype(np.int32)
    if data.draw(st.booleans()):
        kw["local_window_size"] = data.draw(st.sampled_from([1, (0, 1), (2, 0)]))
    got = np.asarray(nn.dot_product_attention(q, k, v, **kw))
    window = kw.get("local_window_size")
    window = (window, window) if isinstance(window, int) else window
    want = reference_attention(q, k, v, kw.get("bias"), kw.get("mask"), kw.get("scale"),
                               kw["is_causal"], kw.get("query_seq_lengths"),
                               kw.get("key_value_seq_lengths"), window)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@needs_jax
def test_attention_matches_live_jax_with_all_options():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    k = rng.standard_normal((2, 4, 2, 5)).astype(np.float32)
    v = rng.standard_normal((2, 4, 2, 5)).astype(np.float32)
    kw = dict(bias=rng.standard_normal((1, 4, 3, 4)).astype(np.float32),
              mask=rng.random((2, 1, 3, 4)) > 0.3, scale=0.3, is_causal=True,
              local_window_size=(2, 0), query_seq_lengths=np.array([2, 3], np.int32))
    np.testing.assert_allclose(nn.dot_product_attention(q, k, v, **kw),
                               jax.nn.dot_product_attention(q, k, v, **kw), atol=1e-6)
    got = nn.dot_product_attention(q[0], k[0], v[0], return_residual=True, is_causal=True)
    want = jax.nn.dot_product_attention(q[0], k[0], v[0], return_residual=True,
                                        is_causal=True)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, atol=1e-6)


def test_attention_gradients_finite_differences():
    # The softmax runs in float32 even for float64 inputs (as JAX), so the central
    # differences use a step that float32 resolves.
    rng = np.random.default_rng(1)
    q = rng.standard_normal((1, 2, 2, 3)).astype(np.float32)
    k = rng.standard_normal((1, 3, 1, 3)).astype(np.float32)
    v = rng.standard_normal((1, 3, 1, 3)).astype(np.float32)

    def loss(q, k, v):
        return (nn.dot_product_attention(q, k, v, is_causal=True) ** 3).sum()

    grads = minijax.grad(loss, argnums=(0, 1, 2))(q, k, v)
    eps = 1e-2
    for i, arg in enumerate((q, k, v)):
        fd = np.zeros(arg.shape)
        for idx in np.ndindex(arg.shape):
            args = [q, k, v]
            hi, lo = arg.copy(), arg.copy()
            hi[idx] += eps
            lo[idx] -= eps
            args[i] = hi
            f_hi = float(loss(*args))
            args[i] = lo
            fd[idx] = (f_hi - float(loss(*args))) / (2 * eps)
        np.testing.assert_allclose(grads[i], fd, rtol=2e-3, atol=2e-3)


def test_attention_errors_match_jax():
    with pytest.raises(ValueError, match="Unsupported implementation option: foo"):
        nn.dot_product_attention(Q, K, V, implementation="foo")
    with pytest.raises(ValueError, match="mask dtype should be bool, but got float32"):
        nn.dot_product_attention(Q, K, V, mask=np.ones((1, 1, 2, 3), np.float32))
    with pytest.raises(ValueError, match="multiple of key/value heads, but got 3 vs 2"):
        nn.dot_product_attention(np.zeros((1, 2, 3, 2), np.float32),
                                 np.zeros((1, 3, 2, 2), np.float32),
                                 np.zeros((1, 3, 2, 2), np.float32))
    with pytest.raises(ValueError, match="value dtype should be float32"):
        nn.dot_product_attention(Q, K, V.astype(np.float16))
    with pytest.raises(ValueError, match="query_seq_lengths dtype should be int32"):
        nn.dot_product_attention(Q, K, V, query_seq_lengths=np.array([1.0], np.float32))
    assert nn.dot_product_attention(Q, K, V, implementation="xla").shape == Q.shape


def test_log1mexp():
    x = np.array([1e-3, 0.69, 0.7, 5.0], np.float32)
    # JAX's values
    np.testing.assert_allclose(nn.log1mexp(x), [-6.908255577087402, -0.6963042616844177,
                                                -0.6863409876823425, -0.006760749500244856],
                               rtol=1e-6)
    xd = x.astype(np.float64)
    minijax.config.update("jax_enable_x64", True)
    try:
        np.testing.assert_allclose(nn.log1mexp(xd), np.log(-np.expm1(-xd)), rtol=1e-13)
        grad = minijax.vmap(minijax.grad(nn.log1mexp))(xd)
        np.testing.assert_allclose(grad, 1 / np.expm1(xd), rtol=1e-13)
    finally:
        minijax.config.update("jax_enable_x64", False)
    assert np.isnan(nn.log1mexp(-1.0)) and nn.log1mexp(0.0) == -np.inf
    # large x: log1p(-exp(-x)) keeps the tiny result (JAX: -9.357622912219837e-14 at 30)
    np.testing.assert_allclose(nn.log1mexp(np.float32(30.0)), -9.357622912219837e-14,
                               rtol=1e-6)


def test_logmeanexp():
    x = np.array([[0., 1., 2.], [3., -1., 0.5]], np.float32)
    # JAX's values
    np.testing.assert_allclose(nn.logmeanexp(x, axis=1), [1.3089935779571533,
                                                          1.9970619678497314], rtol=1e-6)
    where = np.array([[True, False, True], [True, True, False]])
    want = [np.log(np.mean(np.exp(row[w]))) for row, w in zip(x, where, strict=True)]
    got = nn.logmeanexp(x, axis=1, where=where, keepdims=True)
    assert got.shape == (2, 1)
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-6)
    np.testing.assert_allclose(nn.logmeanexp(x), np.log(np.mean(np.exp(x))), rtol=1e-6)


def test_squareplus_and_sparse_sigmoid():
    # JAX's values for squareplus([-3, 0, 2], b=1)
    np.testing.assert_allclose(nn.squareplus(np.array([-3., 0., 2.], np.float32), b=1),
                               [0.08113884925842285, 0.5, 2.1180338859558105], rtol=1e-6)
    x = np.linspace(-3, 3, 13).astype(np.float32)
    np.testing.assert_allclose(nn.squareplus(x), (x + np.sqrt(x * x + 4)) / 2, rtol=1e-6)
    np.testing.assert_allclose(nn.sparse_sigmoid(x), np.clip((x + 1) / 2, 0, 1))
    g = minijax.vmap(minijax.grad(nn.squareplus))(x)
    np.testing.assert_allclose(g, (1 + x / np.sqrt(x * x + 4)) / 2, rtol=1e-6)
    g = minijax.vmap(minijax.grad(nn.sparse_sigmoid))(np.array([-2., -0.5, 0.5, 2.],
                                                               np.float32))
    np.testing.assert_array_equal(g, [0, 0.5, 0.5, 0])
    # sparse_sigmoid is the derivative of sparse_plus
    np.testing.assert_allclose(minijax.vmap(minijax.grad(nn.sparse_plus))(x),
                               nn.sparse_sigmoid(x), atol=1e-7)
