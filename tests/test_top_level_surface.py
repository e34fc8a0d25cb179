"""Top-level jax surface added for issue 13: config context managers, default_device,
named_scope, named_call, linear_transpose, custom_gradient, closure_convert,
make_array_from_*, host/process helpers, print_environment_info, profiler/stages."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.config import config
from minijax.sharding import SingleDeviceSharding


def test_enable_x64_is_scoped():
    before = config.jax_enable_x64
    with minijax.enable_x64():
        assert jnp.arange(3).dtype == np.int64
        assert jnp.ones(2).dtype == np.float64
    assert config.jax_enable_x64 == before
    with minijax.enable_x64(False):
        assert jnp.arange(3).dtype == np.int32


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_debug_nans_context_raises_inside_only():
    with minijax.debug_nans(True):
        with pytest.raises(FloatingPointError):
            minijax.jit(lambda x: jnp.log(x))(jnp.float32(-1.0)).block_until_ready()
    assert np.isnan(float(minijax.jit(lambda x: jnp.log(x))(jnp.float32(-1.0))))


def test_boolean_option_contexts_restore():
    for ctx, name in [(minijax.debug_infs, "jax_debug_infs"),
                      (minijax.log_compiles, "jax_log_compiles"),
                      (minijax.explain_cache_misses, "jax_explain_cache_misses")]:
        before = config.read(name)
        with ctx(True):
            assert config.read(name) is True
        assert config.read(name) == before


def test_unsupported_modes_raise_not_silently_ignored():
    with minijax.default_matmul_precision("highest"), minijax.numpy_dtype_promotion(
            "standard"), minijax.numpy_rank_promotion("allow"), minijax.transfer_guard(
            "allow"), minijax.enable_checks(False):
        assert float(jnp.dot(jnp.ones(3), jnp.ones(3))) == 3.0
    for ctx, value in [(minijax.default_matmul_precision, "bfloat16"),
                       (minijax.numpy_dtype_promotion, "strict"),
                       (minijax.numpy_rank_promotion, "raise"),
                       (minijax.transfer_guard, "disallow"),
                       (minijax.transfer_guard_host_to_device, "log"),
                       (minijax.transfer_guard_device_to_host, "disallow"),
                       (minijax.transfer_guard_device_to_device, "disallow"),
                       (minijax.enable_checks, True)]:
        with pytest.raises(NotImplementedError, match="minijax"):
            with ctx(value):
                pass


def test_default_device_named_scope_compile_time_eval():
    dev = minijax.devices()[0]
    with minijax.default_device(dev):
        assert jnp.ones(2).devices() == {dev}
    with minijax.default_device("cpu"), minijax.default_device(None):
        assert float(jnp.sum(jnp.ones(4))) == 4.0
    with pytest.raises(TypeError):
        with minijax.default_device(3):
            pass
    with minijax.named_scope("layer1"):
        assert float(minijax.jit(lambda x: x + 1)(1.0)) == 2.0
    with pytest.raises(TypeError, match="string"):
        with minijax.named_scope(3):
            pass
    with minijax.ensure_compile_time_eval():
        assert int(jnp.sum(jnp.arange(4))) == 6


def test_named_call():
    f = minijax.named_call(lambda x: x * 3.0, name="triple")
    assert f.__name__ == "triple"
    assert float(minijax.grad(f)(2.0)) == 3.0


def test_linear_transpose():
    def f(x, y):
        return {"a": 2.0 * x + jnp.sum(y), "b": y[::-1]}
    ft = minijax.linear_transpose(f, 1.0, jnp.ones(3))
    cx, cy = ft({"a": jnp.float32(1.0), "b": jnp.array([1.0, 2.0, 3.0])})
    assert float(cx) == 2.0
    np.testing.assert_allclose(cy, [4.0, 3.0, 2.0])  # 1 + reversed(1, 2, 3)
    # transpose of a matrix product is the product with the transpose
    m = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    mt = minijax.linear_transpose(lambda v: jnp.asarray(m) @ v, jnp.zeros(3))
    np.testing.assert_allclose(mt(jnp.array([1.0, -1.0]))[0], m.T @ [1.0, -1.0])
    with pytest.raises(TypeError):
        minijax.linear_transpose(lambda i: i * 2, jnp.arange(3))


def test_custom_gradient():
    @minijax.custom_gradient
    def f(x):
        return jnp.sin(x), lambda ct: ct * 100.0 * x
    assert abs(float(f(1.0)) - np.sin(1.0)) < 1e-6
    assert float(minijax.grad(f)(2.0)) == 200.0
    assert float(minijax.jit(minijax.grad(f))(2.0)) == 200.0
    np.testing.assert_allclose(minijax.vmap(minijax.grad(f))(jnp.arange(3.0)),
                               [0.0, 100.0, 200.0])

    @minijax.custom_gradient
    def g(x, y):
        return x * y, lambda ct: (ct * y, ct * x * 10.0)
    gx, gy = minijax.grad(g, argnums=(0, 1))(2.0, 3.0)
    assert float(gx) == 3.0 and float(gy) == 20.0



def test_custom_gradient_calls_in_one_trace_keep_their_own_vjp():
    # Two calls of one custom_gradient function in one grad, with different shapes and
    # different closed-over Python values: each backward pass uses its own call's vjp.
    @minijax.custom_gradient
    def f(x):
        scale = float(x.shape[0])
        return jnp.sin(x), lambda ct: ct * jnp.cos(x) * scale

    x = np.linspace(0.1, 1, 3).astype(np.float32)
    y = np.linspace(0.2, 2, 5).astype(np.float32)
    gx, gy = minijax.grad(lambda a, b: f(a).sum() + f(b).sum(), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, np.cos(x) * 3, rtol=1e-6)
    np.testing.assert_allclose(gy, np.cos(y) * 5, rtol=1e-6)

def test_closure_convert_top_level():
    conv, consts = minijax.closure_convert(lambda x: x * 2.0, jnp.ones(2))
    assert consts == []
    np.testing.assert_array_equal(conv(jnp.ones(2)), [2.0, 2.0])


def test_make_array_from_callback_and_single_device_arrays():
    s = SingleDeviceSharding(minijax.devices()[0])
    full = np.arange(6.0).reshape(2, 3)
    seen = []

    def cb(index):
        seen.append(index)
        return full[index]
    a = minijax.make_array_from_callback((2, 3), s, cb)
    np.testing.assert_array_equal(a, full)
    assert len(seen) == 1
    b = minijax.make_array_from_single_device_arrays((2, 3), s, [np.ones((2, 3))])
    np.testing.assert_array_equal(b, np.ones((2, 3)))
    with pytest.raises(ValueError, match="shape"):
        minijax.make_array_from_callback((2, 3), s, lambda idx: np.ones((3, 2)))
    with pytest.raises(ValueError, match="2 arrays"):
        minijax.make_array_from_single_device_arrays((2, 3), s, [full, full])


def test_make_array_from_callback_over_a_mesh():
    if minijax.device_count() < 2:
        pytest.skip("needs two devices")
    mesh = minijax.make_mesh((2,), ("x",))
    s = minijax.NamedSharding(mesh, minijax.P("x"))
    full = np.arange(8.0).reshape(4, 2)
    a = minijax.make_array_from_callback((4, 2), s, lambda idx: full[idx])
    np.testing.assert_array_equal(a, full)


def test_process_helpers_environment_and_submodules():
    assert minijax.host_count() == minijax.process_count() == 1
    assert minijax.host_id() == minijax.process_index() == 0
    assert minijax.host_ids() == minijax.process_indices() == [0]
    text = minijax.print_environment_info(return_string=True)
    assert "minijax" in text and "numpy" in text and "python" in text
    assert minijax.profiler.__name__ == "minijax.profiler"
    assert minijax.stages.__name__ == "minijax.stages"
