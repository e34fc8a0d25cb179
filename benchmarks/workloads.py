"""The benchmark workloads of issue 5, written once in `lax` terms for minijax and JAX
(and one, make_mlp_jnp, as users write it: with the library's `numpy` module).

Each `make_*` returns `(numpy_fn, traced_fn, args)`: `numpy_fn` is a NumPy implementation
(hand-written backward passes for the training steps), `traced_fn(lax, grad)` builds the
function for a library given its `lax` module and `grad`, so minijax and JAX run the very
same program. Everything is float32.
"""

from __future__ import annotations

import importlib

import numpy as np

F32 = np.float32


def _rng(seed):
    return np.random.default_rng(seed)


def _bcast(lax, v, shape, dims):
    return lax.broadcast_in_dim(v, shape, dims)


# --------------------------------------------------------------------------- fusion


def make_fused_sum(n):
    """sum(x + y * z) over n elements."""
    args = [_rng(0).standard_normal(n).astype(F32) for _ in range(3)]

    def np_fn(x, y, z):
        return np.sum(x + y * z)

    def traced(lax, grad):
        return lambda x, y, z: lax.reduce_sum(lax.add(x, lax.mul(y, z)), (0,))
    return np_fn, traced, args


def make_gelu(n):
    """tanh-approximated GELU over n elements."""
    args = [_rng(1).standard_normal(n).astype(F32)]
    c = F32(0.7978845608)

    def np_fn(x):
        return F32(0.5) * x * (F32(1) + np.tanh(c * (x + F32(0.044715) * x * x * x)))

    def traced(lax, grad):
        def f(x):
            inner = lax.mul(lax.add(x, lax.mul(lax.mul(lax.mul(x, x), x), 0.044715)),
                            0.7978845608)
            return lax.mul(lax.mul(x, 0.5), lax.add(lax.tanh(inner), 1.0))
        return f
    return np_fn, traced, args


def make_softmax(shape):
    """Row softmax of a [rows, cols] matrix."""
    args = [_rng(2).standard_normal(shape).astype(F32)]

    def np_fn(x):
        e = np.exp(x - np.max(x, axis=1, keepdims=True))
        return e / np.sum(e, axis=1, keepdims=True)

    def traced(lax, grad):
        def f(x):
            m = lax.reduce_max(x, (1,))
            e = lax.exp(lax.sub(x, _bcast(lax, m, x.shape, (0,))))
            s = lax.reduce_sum(e, (1,))
            return lax.div(e, _bcast(lax, s, x.shape, (0,)))
        return f
    return np_fn, traced, args


def make_matmul(n):
    """[n, n] @ [n, n]."""
    args = [_rng(3).standard_normal((n, n)).astype(F32) for _ in range(2)]

    def traced(lax, grad):
        return lambda a, b: lax.dot(a, b)
    return (lambda a, b: a @ b), traced, args


# --------------------------------------------------------------------------- training steps


def _log_softmax_ce(lax, logits, labels):
    """Mean softmax cross-entropy of logits [B, C] against one-hot labels."""
    b, c = logits.shape
    m = lax.reduce_max(logits, (1,))
    shifted = lax.sub(logits, _bcast(lax, m, (b, c), (0,)))
    lse = lax.log(lax.reduce_sum(lax.exp(shifted), (1,)))
    logp = lax.sub(shifted, _bcast(lax, lse, (b, c), (0,)))
    return lax.mul(lax.reduce_sum(lax.mul(logp, labels), (0, 1)), -1.0 / b)


def _np_softmax_ce_grad(logits, labels):
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    return (p - labels) / F32(logits.shape[0])


def make_mlp(batch, sizes=(784, 512, 512, 10), lr=0.01):
    """One SGD training step of an MLP with ReLU hidden layers and softmax cross-entropy."""
    rng = _rng(4)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(F32))
        params.append(np.zeros(fan_out, F32))
    x = rng.standard_normal((batch, sizes[0])).astype(F32)
    labels = np.eye(sizes[-1], dtype=F32)[rng.integers(0, sizes[-1], batch)]
    nl = len(sizes) - 1

    def np_fn(x, labels, *ps):
        acts, h = [x], x
        for i in range(nl):
            z = h @ ps[2 * i] + ps[2 * i + 1]
            h = np.maximum(z, F32(0)) if i < nl - 1 else z
            acts.append(h)
        g = _np_softmax_ce_grad(h, labels)
        new = list(ps)
        for i in reversed(range(nl)):
            a = acts[i]
            new[2 * i] = ps[2 * i] - F32(lr) * (a.T @ g)
            new[2 * i + 1] = ps[2 * i + 1] - F32(lr) * g.sum(axis=0)
            if i:
                g = (g @ ps[2 * i].T) * (a > 0)
        return new

    def traced(lax, grad):
        def loss(ps, x, labels):
            h = x
            for i in range(nl):
                w, bias = ps[2 * i], ps[2 * i + 1]
                z = lax.add(lax.dot(h, w), _bcast(lax, bias, (h.shape[0], w.shape[1]), (1,)))
                h = lax.max(z, 0.0) if i < nl - 1 else z
            return _log_softmax_ce(lax, h, labels)

        def step(x, labels, *ps):
            gs = grad(loss)(list(ps), x, labels)
            return [lax.sub(p, lax.mul(g, lr)) for p, g in zip(ps, gs)]
        return step
    return np_fn, traced, [x, labels] + params


def _numpy_of(lax):
    """The NumPy-API module beside `lax` (minijax.numpy for minijax.lax, jax.numpy for
    jax.lax)."""
    return importlib.import_module(lax.__name__.rsplit(".", 1)[0] + ".numpy")


def make_mlp_jnp(batch, sizes=(784, 512, 512, 10), lr=0.01):
    """make_mlp's SGD step written as users write it (issue 15): jnp functions, operators
    and methods, a list of parameters, grad of the loss."""
    np_fn, _, args = make_mlp(batch, sizes, lr)

    def traced(lax, grad):
        jnp = _numpy_of(lax)

        def loss(params, xb, yb):
            w1, b1, w2, b2, w3, b3 = params
            h = jnp.maximum(xb @ w1 + b1, 0)
            h = jnp.maximum(h @ w2 + b2, 0)
            logits = h @ w3 + b3
            logits = logits - logits.max(1, keepdims=True)
            lp = logits - jnp.log(jnp.sum(jnp.exp(logits), 1, keepdims=True))
            return -jnp.mean(jnp.sum(lp * yb, 1))

        def step(xb, yb, *params):
            g = grad(loss)(list(params), xb, yb)
            return [p - lr * gp for p, gp in zip(params, g)]
        return step
    return np_fn, traced, args


def mlp_flops(batch, sizes=(784, 512, 512, 10)) -> int:
    """Multiply-add flops of one MLP training step's dots: forward, weight gradients, and
    input gradients of every layer but the first."""
    layers = list(zip(sizes[:-1], sizes[1:]))
    fwd = sum(2 * batch * a * b for a, b in layers)
    return 3 * fwd - 2 * batch * layers[0][0] * layers[0][1]


def make_cnn(batch, hw=28, cin=32, cout=64, classes=10, lr=0.01):
    """SGD step of conv3x3(SAME, cin->cout) + ReLU + global mean pool + dense + CE (NHWC)."""
    rng = _rng(5)
    x = rng.standard_normal((batch, hw, hw, cin)).astype(F32)
    k = (rng.standard_normal((3, 3, cin, cout)) / np.sqrt(9 * cin)).astype(F32)
    w = (rng.standard_normal((cout, classes)) / np.sqrt(cout)).astype(F32)
    labels = np.eye(classes, dtype=F32)[rng.integers(0, classes, batch)]

    def np_fn(x, labels, k, w):
        xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))
        cols = cols.transpose(0, 1, 2, 4, 5, 3).reshape(batch * hw * hw, 9 * cin)
        z = (cols @ k.reshape(9 * cin, cout)).reshape(batch, hw, hw, cout)
        h = np.maximum(z, F32(0))
        pooled = h.mean(axis=(1, 2))
        g = _np_softmax_ce_grad(pooled @ w, labels)
        gw = pooled.T @ g
        gz = (g @ w.T)[:, None, None, :] * (z > 0) / F32(hw * hw)
        gk = (cols.T @ gz.reshape(-1, cout)).reshape(3, 3, cin, cout)
        return [k - F32(lr) * gk, w - F32(lr) * gw]

    def traced(lax, grad):
        def loss(k, w, x, labels):
            z = lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
            h = lax.max(z, 0.0)
            pooled = lax.mul(lax.reduce_sum(h, (1, 2)), 1.0 / (hw * hw))
            return _log_softmax_ce(lax, lax.dot(pooled, w), labels)

        def step(x, labels, k, w):
            gk, gw = grad(loss, argnums=(0, 1))(k, w, x, labels)
            return [lax.sub(k, lax.mul(gk, lr)), lax.sub(w, lax.mul(gw, lr))]
        return step
    return np_fn, traced, [x, labels, k, w]


# --------------------------------------------------------------------------- scan, tiny


def make_rnn(steps, batch=32, din=64, hidden=128):
    """A 100-step tanh RNN over a sequence (lax.scan), returning the final hidden state."""
    rng = _rng(6)
    xs = rng.standard_normal((steps, batch, din)).astype(F32)
    wx = (rng.standard_normal((din, hidden)) / np.sqrt(din)).astype(F32)
    wh = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(F32)
    h0 = np.zeros((batch, hidden), F32)

    def np_fn(xs, wx, wh, h0):
        h = h0
        for t in range(steps):
            h = np.tanh(xs[t] @ wx + h @ wh)
        return h

    def traced(lax, grad):
        def f(xs, wx, wh, h0):
            def body(h, x):
                h = lax.tanh(lax.add(lax.dot(x, wx), lax.dot(h, wh)))
                return h, None
            return lax.scan(body, h0, xs)[0]
        return f
    return np_fn, traced, [xs, wx, wh, h0]


def make_tiny(n):
    """x * 2 + 1 on n elements: measures the dispatch cost of a cached jit call."""
    def traced(lax, grad):
        return lambda x: lax.add(lax.mul(x, 2.0), 1.0)
    return (lambda x: x * F32(2) + F32(1)), traced, [np.arange(n, dtype=F32)]
