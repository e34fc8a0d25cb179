"""minijax.pure_callback and minijax.experimental.io_callback (eager, jit, vmap methods,
control flow, errors as JAX 0.10.2), plus the small public names of issue 13: jacobian,
__version_info__, typing, config.config_with_absl, stax.logsoftmax,
nn.initializers.Initializer."""

import inspect
import typing

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.experimental import io_callback

SD = minijax.ShapeDtypeStruct


def _sin_cb(calls):
    def cb(x):
        calls.append(np.asarray(x).shape)
        assert isinstance(x, minijax.Array)  # as JAX 0.10: callbacks receive Arrays
        return np.sin(np.asarray(x))
    return cb


@pytest.mark.parametrize("wrap", ["eager", "jit"])
def test_pure_callback_values(wrap):
    calls = []
    x = jnp.arange(4.0)

    def f(v):
        return minijax.pure_callback(_sin_cb(calls), SD(v.shape, v.dtype), v) * 2
    g = minijax.jit(f) if wrap == "jit" else f
    np.testing.assert_allclose(g(x), 2 * np.sin(np.arange(4.0)), rtol=1e-6)
    np.testing.assert_allclose(g(x + 1), 2 * np.sin(np.arange(4.0) + 1), rtol=1e-6)
    assert calls == [(4,), (4,)]  # the callback runs on every call, also under jit


def test_pure_callback_pytrees_kwargs_scalars_and_dtypes():
    x = jnp.ones(3)
    a, b = minijax.pure_callback(lambda v: (v, 2 * np.asarray(v)), (SD((3,), jnp.float32),
                                                                    SD((3,), jnp.float32)), x)
    np.testing.assert_array_equal(b, [2, 2, 2])
    out = minijax.pure_callback(lambda v, k=1: {"y": np.asarray(v) + k},
                                {"y": SD((3,), jnp.float32)}, x, k=5)
    np.testing.assert_array_equal(out["y"], [6, 6, 6])
    s = minijax.jit(lambda: minijax.pure_callback(lambda: np.float64(3.5), SD((), jnp.float32)))()
    assert s.dtype == np.float32 and float(s) == 3.5  # converted to the declared dtype
    i = minijax.pure_callback(lambda v: np.asarray(v), SD((3,), jnp.int32), np.arange(3))
    assert i.dtype == np.int32


def test_pure_callback_wrong_result_shape_raises():
    bad = lambda v: minijax.pure_callback(lambda u: np.ones(2), SD((3,), jnp.float32), v)  # noqa: E731
    with pytest.raises(RuntimeError, match=r"shape \(2,\).*declared shape is \(3,\)"):
        bad(jnp.ones(3))
    with pytest.raises(Exception, match=r"declared shape is \(3,\)"):
        minijax.jit(bad)(jnp.ones(3))
    with pytest.raises(TypeError, match="structure"):
        minijax.pure_callback(lambda u: (u, u), SD((3,), jnp.float32), jnp.ones(3))


def test_pure_callback_vmap_methods():
    xs = jnp.arange(6.0).reshape(2, 3)
    y = jnp.ones(3)
    seen = []

    def add(a, b):
        seen.append((np.shape(a), np.shape(b)))
        return np.asarray(a) + np.asarray(b)

    def f(method):
        def g(a, b):
            shape = jnp.broadcast_shapes(a.shape, b.shape)
            return minijax.pure_callback(add, SD(shape, jnp.float32), a, b,
                                         vmap_method=method)
        return g
    want = np.arange(6.0).reshape(2, 3) + 1
    for method, shapes in [("sequential", [((3,), (3,))] * 2),
                           ("sequential_unrolled", [((3,), (3,))] * 2),
                           ("expand_dims", [((2, 3), (1, 3))]),
                           ("legacy_vectorized", [((2, 3), (1, 3))]),
                           ("broadcast_all", [((2, 3), (2, 3))])]:
        for wrap in (lambda h: h, minijax.jit):
            seen.clear()
            got = wrap(minijax.vmap(f(method), in_axes=(0, None)))(xs, y)
            np.testing.assert_array_equal(got, want, err_msg=method)
            assert seen == shapes, method
    # batch axis not first: moved to the front for the callback
    got = minijax.vmap(f("expand_dims"), in_axes=(1, None))(xs.T, y)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(NotImplementedError, match="vmap_method=None"):
        minijax.vmap(f(None), in_axes=(0, None))(xs, y)
    with pytest.raises(ValueError, match="vmap_method"):
        minijax.pure_callback(add, SD((3,), jnp.float32), y, y, vmap_method="bogus")


def test_pure_callback_inside_control_flow_under_jit():
    calls = []

    @minijax.jit
    def f(x):
        def body(c, _):
            return minijax.pure_callback(_sin_cb(calls), SD((), jnp.float32), c), None
        y, _ = lax.scan(body, x, None, length=3)
        return lax.cond(y > 0, lambda v: v + 1, lambda v: v - 1, y)
    want = np.sin(np.sin(np.sin(np.float32(0.5))))
    np.testing.assert_allclose(f(jnp.float32(0.5)), want + 1, rtol=1e-6)
    assert len(calls) == 3


def test_callbacks_are_not_differentiable():
    f = lambda v: minijax.pure_callback(np.sin, SD((), jnp.float32), v)  # noqa: E731
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        minijax.grad(f)(1.0)
    g = lambda v: io_callback(np.sin, SD((), jnp.float32), v)  # noqa: E731
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
        minijax.grad(g)(1.0)


def test_io_callback_order_and_effects_under_jit():
    log = []

    def record(v):
        log.append(float(np.asarray(v)))
        return np.asarray(v)

    @minijax.jit
    def f(x):
        io_callback(record, SD((), jnp.float32), x, ordered=True)  # result unused: still runs
        y = io_callback(record, SD((), jnp.float32), x + 1, ordered=True)
        io_callback(record, SD((), jnp.float32), y * 10, ordered=True)
        return y
    assert float(f(jnp.float32(1.0))) == 2.0
    assert log == [1.0, 2.0, 20.0]
    log.clear()
    f(jnp.float32(3.0))
    assert log == [3.0, 4.0, 40.0]


def test_io_callback_vmap():
    log = []

    def record(v):
        log.append(np.asarray(v).tolist())
        return np.asarray(v) * 2

    out = minijax.vmap(lambda v: io_callback(record, SD((2,), jnp.float32), v))(
        jnp.arange(4.0).reshape(2, 2))
    np.testing.assert_array_equal(out, [[0, 2], [4, 6]])
    assert log == [[0.0, 1.0], [2.0, 3.0]]  # once per batch element, in order
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        minijax.vmap(lambda v: io_callback(record, SD((2,), jnp.float32), v, ordered=True))(
            jnp.ones((2, 2)))


def test_callback_signatures_follow_jax():
    # Recorded from JAX 0.10.2 (annotations dropped).
    def sig(f):
        params = inspect.signature(f).parameters.values()
        return str(inspect.Signature([p.replace(annotation=inspect.Parameter.empty)
                                      for p in params]))
    assert sig(minijax.pure_callback) == ("(callback, result_shape_dtypes, *args, "
                                          "sharding=None, vmap_method=None, **kwargs)")
    assert sig(io_callback) == ("(callback, result_shape_dtypes, *args, sharding=None, "
                                "ordered=False, **kwargs)")


def test_small_public_names():
    assert minijax.__version_info__ == tuple(int(p) for p in minijax.__version__.split("."))
    np.testing.assert_allclose(minijax.jacobian(jnp.sin)(0.5), np.cos(0.5), rtol=1e-6)
    jac = minijax.jacobian(lambda v: v ** 2)(jnp.arange(3.0))
    np.testing.assert_array_equal(jac, np.diag([0.0, 2.0, 4.0]))
    from minijax.typing import ArrayLike, DTypeLike
    assert isinstance(jnp.ones(2), ArrayLike) and isinstance(np.float32(1), ArrayLike)
    assert isinstance(3, ArrayLike) and not isinstance([1, 2], ArrayLike)
    assert np.dtype in typing.get_args(DTypeLike) and str in typing.get_args(DTypeLike)
    from minijax.example_libraries import stax
    np.testing.assert_allclose(stax.logsoftmax(jnp.array([1.0, 2.0])),
                               [-1.3132616, -0.31326166], rtol=1e-6)
    from minijax.nn.initializers import Initializer
    assert "__call__" in Initializer.__dict__
    assert list(inspect.signature(Initializer.__call__).parameters) == [
        "self", "key", "shape", "dtype", "out_sharding"]


def test_config_with_absl():
    flags = pytest.importorskip("absl.flags")
    fv = flags.FlagValues()
    old_threads = minijax.config.minijax_num_threads
    minijax.config.config_with_absl(fv)
    assert "jax_enable_x64" in fv and "minijax_num_threads" in fv
    fv(["prog", "--minijax_num_threads=3", "--nojax_log_compiles"])
    try:
        minijax.config.config_with_absl(fv)  # already parsed: applies what was given
        assert minijax.config.minijax_num_threads == 3
        assert minijax.config.jax_log_compiles is False
    finally:
        minijax.config.update("minijax_num_threads", old_threads)
