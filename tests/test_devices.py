"""Device buffers and placement: device_put/device_get, committed devices, eager and jit on
the arguments' device, and a device backend whose buffers are not host memory.

Two host devices (the interpreter's and the CPU's) stand in for several devices; the
"fakedev" backend registered here keeps its memory in Buffer objects (as a GPU backend
does) and counts every copy to the host, so that tests can check that eager ops and jit
calls on it never round-trip through the host.
"""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import eager_compiled, lax
from minijax.backends import (
    Backend,
    Buffer,
    Device,
    Executable,
    get_backend,
    register_backend,
    unregister_backend,
)
from minijax.config import config

CPU = minijax.devices("cpu")[0]
INTERP = minijax.devices("interpreter")[0]


class FakeBuffer(Buffer):
    """Device memory simulated by a private NumPy array; counts host copies."""

    __slots__ = ("_data", "_deleted")
    to_host_calls = 0
    from_host_calls = 0

    def __init__(self, device, data):
        super().__init__(device, data.shape, data.dtype)
        self._data = data
        self._deleted = False

    def to_host(self):
        FakeBuffer.to_host_calls += 1
        if self._deleted:
            raise RuntimeError("buffer was deleted")
        return self._data.copy()

    def delete(self):
        self._deleted = True

    def is_deleted(self):
        return self._deleted


class FakeExecutable(Executable):
    """Runs the module on the interpreter, reading device memory directly (no host copy
    is counted: a real device backend would launch kernels on it)."""

    def __init__(self, inner, device):
        self.inner = inner
        self.device = device
        self.kernel_count = inner.kernel_count

    def execute(self, args):
        for a in args:
            assert isinstance(a, FakeBuffer) and a.device == self.device, a
        outs = self.inner.execute([a._data for a in args])
        return [FakeBuffer(self.device, np.array(o)) for o in outs]

    def as_text(self):
        return self.inner.as_text()


class FakeDeviceBackend(Backend):
    name = "fakedev"
    platform = "fakedev"
    host_memory = False

    def __init__(self):
        self.compiled = 0

    def devices(self):
        return [Device("fakedev", i, "simulated device", backend="fakedev") for i in (0, 1)]

    def compile(self, module, options=None):
        self.compiled += 1
        return FakeExecutable(get_backend("interpreter").compile(module, options),
                              self.devices()[0])

    def buffer_from_host(self, value, device):
        FakeBuffer.from_host_calls += 1
        return FakeBuffer(device, np.array(value))


@pytest.fixture
def fakedev():
    register_backend("fakedev", FakeDeviceBackend)
    FakeBuffer.to_host_calls = FakeBuffer.from_host_calls = 0
    yield get_backend("fakedev").devices()[0]
    unregister_backend("fakedev")


# ---------------------------------------------------------------- host devices


@pytest.mark.parametrize("device", [CPU, INTERP], ids=["cpu", "interpreter"])
def test_device_put_get_round_trip(device):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = minijax.device_put(x, device)
    assert a.device == device and a.devices() == {device} and a.committed
    np.testing.assert_array_equal(minijax.device_get(a), x)
    assert type(minijax.device_get(a)) is np.ndarray
    tree = minijax.device_get({"a": a, "b": [a, 1.0]})
    np.testing.assert_array_equal(tree["b"][0], x)
    x[0, 0] = 99  # device_put copied
    assert float(a[0, 0]) == 0.0
    # device_put with no device keeps an Array where it is; an uncommitted host value
    # goes to the default device, uncommitted (as in JAX).
    assert minijax.device_put(a) is a
    u = minijax.device_put(x)
    assert not u.committed and u.device == minijax.devices()[0]
    assert minijax.device_put(a, device) is a


def test_device_put_moves_between_devices_and_commits():
    a = minijax.device_put(jnp.arange(4.0), CPU)
    b = minijax.device_put(a, INTERP)
    assert b.device == INTERP and b.committed and a.device == CPU
    np.testing.assert_array_equal(b, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="only accepts"):
        minijax.device_put(a, "cpu")


def test_uncommitted_arrays_are_not_committed():
    x = jnp.ones(3)
    assert not x.committed and not (x + 1).committed
    assert x.device == minijax.devices()[0]


def test_mixing_committed_devices_raises_jax_error():
    x = minijax.device_put(jnp.ones(3), CPU)
    y = minijax.device_put(jnp.ones(3), INTERP)
    # JAX 0.10.2 (two CPU devices): "Received incompatible devices for jitted computation.
    # Got argument x of add with shape float32[3] and with device ids [0] on platform CPU
    # and argument y of add with shape float32[3] and with device ids [1] on platform CPU"
    with pytest.raises(ValueError, match=r"Received incompatible devices for jitted "
                       r"computation. Got argument x of add with shape float32\[3\] and "
                       r"with device ids \[0\] on platform CPU and argument y of add"):
        lax.add(x, y)
    with pytest.raises(ValueError, match=r"incompatible devices .* of mul_fn .*"
                       r"platform INTERPRETER"):
        minijax.jit(_mul_fn)(x, y)


def _mul_fn(a, b):
    return a * b


_mul_fn.__name__ = "mul_fn"


def test_committed_wins_over_uncommitted_eager_and_jit():
    x = minijax.device_put(jnp.arange(3.0), INTERP)
    u = jnp.ones(3)
    for out in (x + u, u * x, jnp.sin(x), minijax.jit(_mul_fn)(u, x)):
        assert out.device == INTERP and out.committed
    np.testing.assert_allclose(minijax.jit(_mul_fn)(u, x), [0, 1, 2])
    # A committed call compiles for the interpreter backend (no CPU kernels).
    f = minijax.jit(lambda a: a * 2 + 1)
    out = f(x)
    assert out.device == INTERP and out.committed
    (key,) = f._cache.entries.keys()
    assert type(f._cache.entries.get(key).executable).__name__ == "InterpreterExecutable"
    np.testing.assert_array_equal(f(x), [1, 3, 5])  # fast path keeps the device
    assert f(x).device == INTERP and f(jnp.arange(3.0)).device == CPU


def test_block_until_ready_and_copy_to_host_async():
    x = jnp.arange(4.0) * 2
    assert x.block_until_ready() is x
    assert x.copy_to_host_async() is None
    assert minijax.block_until_ready({"a": x})["a"] is x


def test_config_update_backend_changes_default_device():
    old = config.minijax_backend
    try:
        config.update("minijax_backend", "interpreter")
        assert minijax.devices()[0] == INTERP
        x = jnp.ones(3) + 1
        assert x.device == INTERP and not x.committed
        f = minijax.jit(lambda a: a + 1)
        assert f(x).device == INTERP
    finally:
        config.update("minijax_backend", old)
    assert jnp.ones(2).device == minijax.devices()[0]


# ---------------------------------------------------------------- a device backend


def test_device_backend_eager_ops_stay_on_device(fakedev):
    x = minijax.device_put(np.arange(6, dtype=np.float32).reshape(2, 3), fakedev)
    assert isinstance(x._buf, FakeBuffer) and x.device == fakedev and x.committed
    before = eager_compiled.compiles
    y = jnp.sin(x) * 2 + x
    z = jnp.sum(y, axis=1)
    assert isinstance(z._buf, FakeBuffer) and z.device == fakedev and z.committed
    assert FakeBuffer.to_host_calls == 0  # nothing went through the host
    ref = np.sin(np.arange(6, dtype=np.float32).reshape(2, 3)) * 2 + np.arange(6).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(z), ref.sum(1), rtol=1e-6)
    assert FakeBuffer.to_host_calls == 1
    compiled = eager_compiled.compiles - before
    assert compiled >= 4  # sin, mul, add, reduce_sum (and scalar conversions)
    # The same ops again: served from the one-op program cache (until clear_caches).
    jnp.sum(jnp.sin(x) * 2 + x, axis=1)
    assert eager_compiled.compiles - before == compiled
    minijax.clear_caches()
    jnp.sin(x)
    assert eager_compiled.compiles - before == compiled + 1


def test_device_backend_jit_and_mixing(fakedev):
    x = minijax.device_put(jnp.arange(4.0), fakedev)
    f = minijax.jit(lambda a, b: a * b + 1.0)
    out = f(x, jnp.ones(4))  # the uncommitted host argument moves to the device
    assert isinstance(out._buf, FakeBuffer) and out.device == fakedev
    np.testing.assert_array_equal(out, [1, 2, 3, 4])
    out2 = f(x, x)
    out2 = f(x, x)  # fast path
    assert isinstance(out2._buf, FakeBuffer)
    np.testing.assert_array_equal(out2, [1, 2, 5, 10])
    c = minijax.device_put(jnp.arange(4.0), CPU)
    with pytest.raises(ValueError, match="incompatible devices"):
        x + c
    with pytest.raises(ValueError, match="incompatible devices"):
        f(x, c)
    other = get_backend("fakedev").devices()[1]
    with pytest.raises(ValueError, match=r"device ids \[0\] on platform FAKEDEV and "
                       r"argument y .* device ids \[1\]"):
        x + minijax.device_put(jnp.ones(4), other)


def test_device_backend_buffers_methods(fakedev):
    x = minijax.device_put(jnp.arange(3, dtype=jnp.int32), fakedev)
    assert x.block_until_ready() is x
    x.copy_to_host_async()
    assert x.tolist() == [0, 1, 2] and int(x[1]) == 1
    assert "Array([0, 1, 2], dtype=int32)" == repr(x)
    back = minijax.device_put(x, CPU)
    assert type(back._buf) is np.ndarray and back.device == CPU
    x.delete()
    assert x.is_deleted()
    assert repr(Device("fakedev", 1, backend="fakedev")) == "FakedevDevice(id=1)"
