"""minijax.Array (and tracer) operators and methods: NumPy values, reflected operators,
repr, immutability error, __array__ interop, iteration, and methods under jit."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

A = np.arange(1, 13, dtype=np.float32).reshape(3, 4)


def _eq(got, want, dtype=None):
    got = np.asarray(got)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("op", ["__add__", "__sub__", "__mul__", "__truediv__",
                                "__floordiv__", "__mod__", "__pow__", "__radd__", "__rsub__",
                                "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__",
                                "__rpow__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__",
                                "__ne__"])
def test_arithmetic_operators(op):
    x = jnp.asarray(A)
    for other in (2.0, 3, np.float32(1.5), A[::-1].copy(), np.arange(4, dtype=np.float32) + 1):
        want = getattr(A, op)(other)
        got = getattr(x, op)(other)
        _eq(got, want, want.dtype)


def test_bitwise_matmul_unary():
    i = jnp.arange(6, dtype=jnp.int32)
    n = np.arange(6, dtype=np.int32)
    for op in ("__and__", "__or__", "__xor__", "__lshift__", "__rshift__", "__rand__",
               "__ror__", "__rxor__"):
        _eq(getattr(i, op)(3), getattr(n, op)(3))
    _eq(~i, ~n)
    _eq(-i, -n)
    _eq(+i, n)
    _eq(abs(-i), n)
    x = jnp.asarray(A)
    _eq(x @ A.T, A @ A.T)
    _eq(A.T @ x, A.T @ A)
    _eq(np.ones(3, np.float32) @ x, np.ones(3) @ A)
    q, r = divmod(x, 5.0)
    _eq(q, A // 5)
    _eq(r, A % 5)
    _eq(round(jnp.float32(2.5)), 2.0)


def test_numpy_lhs_defers_to_array():
    x = jnp.asarray(A)
    out = A + x
    assert isinstance(out, minijax.Array)
    out = np.float32(2) * x
    assert isinstance(out, minijax.Array) and out.dtype == np.float32


def test_methods():
    x = jnp.asarray(A)
    _eq(x.sum(axis=0), A.sum(axis=0))
    _eq(x.mean(), A.mean())
    _eq(x.max(1), A.max(1))
    _eq(x.min(), A.min())
    _eq(x.prod(0), A.prod(0))
    _eq(x.argmax(1), A.argmax(1))
    _eq(x.argmin(), A.argmin())
    _eq(x.std(ddof=1), A.std(ddof=1))
    _eq(x.var(0), A.var(0))
    _eq(x.reshape(4, 3), A.reshape(4, 3))
    _eq(x.reshape((2, -1)), A.reshape((2, -1)))
    _eq(x.reshape(-1, order="F"), A.reshape(-1, order="F"))
    _eq(x.transpose(), A.transpose())
    _eq(x.transpose(1, 0), A.transpose(1, 0))
    _eq(x.transpose((1, 0)), A.transpose((1, 0)))
    _eq(x.T, A.T)
    _eq(x[None].mT, np.swapaxes(A[None], -1, -2))
    assert x.astype(jnp.int32).dtype == np.int32
    _eq(x.ravel(), A.ravel())
    _eq(x.flatten(), A.flatten())
    _eq(x[None].squeeze(0), A)
    _eq(x.swapaxes(0, 1), A.swapaxes(0, 1))
    _eq(x.clip(3, 7), A.clip(3, 7))
    _eq((x / 7).round(2), (A / 7).round(2))
    _eq(x.cumsum(1), A.cumsum(1))
    _eq(x.cumprod(), A.cumprod(), np.float32)
    _eq(x.dot(A.T), A.dot(A.T))
    _eq((x > 5).all(1), (A > 5).all(1))
    _eq((x > 5).any(), (A > 5).any())
    _eq(x.nonzero()[1], A.nonzero()[1])
    _eq(x[::-1].sort(0), np.sort(A[::-1], 0))
    _eq((-x).argsort(axis=1), np.argsort(-A, axis=1))
    _eq(x.argsort(axis=None, descending=True), np.argsort(-A, axis=None))
    _eq(x.take(np.array([0, 5])), A.take(np.array([0, 5])))
    _eq(x.repeat(2, axis=1), A.repeat(2, axis=1))
    _eq(x.ptp(0), np.ptp(A, 0))
    _eq(x.diagonal(), A.diagonal())
    _eq(x.trace(), A.trace())
    z = jnp.asarray(A + 1j * A).astype(jnp.complex64)
    _eq(z.real, A)
    _eq(z.imag, A)
    _eq(z.conj(), A - 1j * A)
    assert x.item(0, 1) == 2.0 and jnp.float32(3).item() == 3.0
    assert x.tolist() == A.tolist()


def test_repr_and_weak_type_repr():
    assert repr(jnp.array([1.0, 2.0])) == "Array([1., 2.], dtype=float32)"
    assert repr(jnp.array(1.0)) == "Array(1., dtype=float32, weak_type=True)"
    assert repr(jnp.arange(3)) == "Array([0, 1, 2], dtype=int32)"
    assert repr(jnp.zeros((0, 2))) == "Array([], shape=(0, 2), dtype=float32)"
    assert str(jnp.array([1, 2])) == "[1 2]"


def test_immutability_error_shows_at_rewrite():
    x = jnp.zeros(3)
    with pytest.raises(TypeError, match=r"x = x\.at\[0\]\.set\(y\)"):
        x[0] = 1.0
    with pytest.raises(TypeError, match=r"x\.at\[1:2, \.\.\.\]\.set"):
        x[1:2, ...] = 1.0

    def f(a):
        a[0] = 2.0
        return a
    with pytest.raises(TypeError, match="immutable"):
        minijax.jit(f)(np.zeros(3, np.float32))


def test_array_interop_and_iteration():
    x = jnp.asarray(A)
    assert np.asarray(x).dtype == np.float32
    assert np.array(x, dtype=np.float64).dtype == np.float64
    rows = list(x)
    assert len(rows) == 3 and all(isinstance(r, minijax.Array) for r in rows)
    _eq(rows[2], A[2])
    with pytest.raises(TypeError, match="0-d"):
        iter(jnp.float32(1.0))
    assert len(x) == 3
    assert float(x[0, 0]) == 1.0 and int(jnp.int32(4)) == 4
    assert x.__array_namespace__() is jnp
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)


def test_tracer_methods_under_jit_and_vmap():
    f = minijax.jit(lambda a: (a.T @ a).sum(0) + a.mean(0) * 2 - a[1] + a.at[0, 0].set(0.0)[0]
                    + a.reshape(4, 3).max(1).sum())
    want = (A.T @ A).sum(0) + A.mean(0) * 2 - A[1] + np.r_[0.0, A[0, 1:]] + \
        A.reshape(4, 3).max(1).sum()
    np.testing.assert_allclose(np.asarray(f(A)), want, rtol=1e-5)
    g = minijax.vmap(lambda r: (r ** 2).sum() + r.std() + (r > 2).sum())
    _eq(g(A), (A ** 2).sum(1) + A.std(1) + (A > 2).sum(1))
    h = minijax.jit(lambda a: [r.sum() for r in a])
    out = h(A)
    _eq(np.array(out), A.sum(1))
    traced = []
    minijax.jit(lambda a: traced.append((a.T.shape, a.real.dtype, a.itemsize)) or a)(A)
    assert traced[0] == ((4, 3), np.dtype(np.float32), 4)
