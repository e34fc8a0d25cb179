"""Several CPU devices in one process: the device count setting, device queries,
placement on device i, jit on the committed device, each device's share of the threads.

The suite runs with MINIJAX_NUM_CPU_DEVICES=8 (tests/conftest.py); the ways of setting the
count (and the error for changing it after first use) are checked in fresh processes."""

import numpy as np
import pytest
from child_process import run_child_json

import minijax
import minijax.numpy as jnp
from minijax.backends import get_backend
from minijax.backends.cpu import thread_pool

_COUNT = "import json, minijax; print(json.dumps([minijax.device_count(), " \
         "minijax.local_device_count(), [repr(d) for d in minijax.devices()]]))"


@pytest.mark.parametrize("env, want", [
    ({"MINIJAX_NUM_CPU_DEVICES": "3", "XLA_FLAGS": ""}, 3),
    ({"MINIJAX_NUM_CPU_DEVICES": "", "XLA_FLAGS": "--xla_force_host_platform_device_count=5"},
     5),
    ({"MINIJAX_NUM_CPU_DEVICES": "", "XLA_FLAGS": "", "JAX_NUM_CPU_DEVICES": "2"}, 2),
    ({"MINIJAX_NUM_CPU_DEVICES": "", "XLA_FLAGS": ""}, 1),
])
def test_device_count_from_the_environment(env, want):
    count, local, names = run_child_json(_COUNT, **env)
    assert count == local == want
    assert names == [f"CpuDevice(id={i})" for i in range(want)]


def test_config_update_before_first_use_and_error_after():
    out = run_child_json(
        "import json, minijax\n"
        "minijax.config.update('jax_num_cpu_devices', 4)\n"
        "n = minijax.device_count()\n"
        "try:\n"
        "    minijax.config.update('jax_num_cpu_devices', 2)\n"
        "    err = None\n"
        "except RuntimeError as e:\n"
        "    err = str(e)\n"
        "minijax.config.update('jax_num_cpu_devices', 4)  # same value: fine\n"
        "print(json.dumps([n, err]))", MINIJAX_NUM_CPU_DEVICES="", XLA_FLAGS="")
    assert out[0] == 4
    assert "before the CPU backend is initialized" in out[1]


def test_device_queries_follow_jax():
    devs = minijax.devices()
    assert len(devs) == minijax.device_count() == minijax.local_device_count() == 8
    assert [d.id for d in devs] == list(range(8))
    assert minijax.local_devices() == devs
    with pytest.raises(ValueError, match="Unknown process_index 1"):  # as JAX
        minijax.local_devices(process_index=1)
    assert minijax.process_index() == 0 and minijax.process_count() == 1
    assert all(d.process_index == 0 and d.platform == "cpu" for d in devs)
    assert str(devs[3]) == "TFRT_CPU_3"


def test_device_put_commits_to_device_i_and_jit_runs_there():
    devs = minijax.devices()
    x = minijax.device_put(np.arange(4.0, dtype=np.float32), devs[2])
    assert x.device == devs[2] and x.committed
    y = minijax.jit(lambda a: a * 2 + 1)(x)
    assert y.device == devs[2] and y.committed
    np.testing.assert_array_equal(np.asarray(y), np.arange(4.0) * 2 + 1)
    z = x + jnp.ones(4)                      # uncommitted operand follows the committed one
    assert z.device == devs[2]
    moved = minijax.device_put(x, devs[5])
    assert moved.device == devs[5]
    np.testing.assert_array_equal(np.asarray(moved), np.asarray(x))


def test_mixed_committed_devices_raise_as_jax():
    devs = minijax.devices()
    a = minijax.device_put(jnp.ones(3), devs[0])
    b = minijax.device_put(jnp.ones(3), devs[1])
    with pytest.raises(ValueError, match="Received incompatible devices for jitted "
                                         "computation"):
        minijax.jit(lambda u, v: u + v)(a, b)
    with pytest.raises(ValueError, match="incompatible devices"):
        a + b


def test_each_device_gets_its_share_of_the_threads():
    total = thread_pool.default_num_threads()
    sizes = [thread_pool.device_share(i, 2).num_threads for i in range(2)]
    assert sum(sizes) == max(total, 2) and min(sizes) >= 1
    assert all(thread_pool.device_share(i, 8).num_threads >= 1 for i in range(8))
    backend = get_backend("cpu")
    seen = backend.run_on_device(minijax.devices()[1], 2, lambda: thread_pool.get_pool())
    assert seen is thread_pool.device_share(1, 2)
    assert thread_pool.get_pool() is not seen      # restored after the device's part
