"""Every option in minijax.config is honored when changed with config.update at run time,
and config.py is the only module reading MINIJAX_*/JAX_* environment variables."""

import ast
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import config, random
from minijax.compiler.persistent_cache import get_disk_cache

ROOT = pathlib.Path(minijax.__file__).parent


@pytest.fixture
def option():
    """set(name, value): config.update that is undone after the test."""
    saved = {}

    def set_option(name, value):
        saved.setdefault(name, config.read(name))
        config.update(name, value)
    yield set_option
    for name, value in saved.items():
        config.update(name, value)


def test_every_environment_read_is_in_config_py():
    offenders = []
    for path in ROOT.rglob("*.py"):
        if path.name == "config.py" and path.parent == ROOT:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_unknown_option_is_an_error():
    with pytest.raises(AttributeError, match="Unrecognized config option"):
        config.update("minijax_no_such_option", 1)


def test_enable_x64(option):
    option("jax_enable_x64", True)
    assert jnp.ones(2).dtype == np.float64
    option("jax_enable_x64", False)
    assert jnp.ones(2).dtype == np.float32


def test_disable_jit(option):
    calls = []
    f = minijax.jit(lambda x: calls.append(1) or x + 1)
    f(jnp.ones(2))
    f(jnp.ones(2))
    assert len(calls) == 1
    option("jax_disable_jit", True)
    f(jnp.ones(2))
    assert len(calls) == 2


@pytest.mark.parametrize("name", ["jax_log_compiles", "jax_explain_cache_misses",
                                  "minijax_debug"])
def test_compile_logging(option, capfd, name):
    option(name, 1)
    minijax.jit(lambda x: x * 3 + 1)(jnp.ones(3))
    err = capfd.readouterr().err
    assert "compiled <lambda>" in err and "Reason" in err


def test_debug_nans(option):
    option("jax_debug_nans", True)
    with pytest.raises(FloatingPointError, match="invalid value \\(nan\\) encountered in log"):
        jnp.log(jnp.array(-1.0))
    f = minijax.jit(lambda x: jnp.sqrt(x))
    with pytest.raises(FloatingPointError, match="jit"):
        f(jnp.array([-1.0]))
    with pytest.raises(FloatingPointError):
        f(jnp.array([-1.0]))  # no fast path bypasses the check
    option("jax_debug_nans", False)
    assert np.isnan(np.asarray(f(jnp.array([-1.0])))).all()


def test_debug_infs(option):
    option("jax_debug_infs", True)
    with pytest.raises(FloatingPointError, match="invalid value \\(inf\\) encountered in div"):
        jnp.array(1.0) / jnp.array(0.0)
    option("jax_debug_infs", False)
    assert np.isinf(np.asarray(jnp.array(1.0) / jnp.array(0.0)))


@pytest.mark.parametrize("name", ["minijax_backend", "jax_platforms"])
def test_backend_options(option, name):
    option(name, "interpreter")
    assert minijax.devices()[0].platform == "interpreter"
    assert minijax.default_backend() == "interpreter"
    assert (jnp.arange(3.0) * 2).device.platform == "interpreter"
    option(name, "cpu")
    assert minijax.devices()[0].platform == "cpu"


def test_threefry_partitionable(option):
    key = random.PRNGKey(0)
    a = np.asarray(random.bits(key, (4,)))
    option("jax_threefry_partitionable", False)
    b = np.asarray(random.bits(key, (4,)))
    # JAX 0.10.2 random.bits(PRNGKey(0), (4,)), uint32, per scheme:
    assert a.tolist() == [4070199207, 4202968722, 1427181096, 2012915765]
    assert b.tolist() == [4146024105, 967050713, 2718843009, 1272950319]


def test_cache_dir(option, tmp_path):
    option("minijax_cache_dir", str(tmp_path))
    assert get_disk_cache().root == str(tmp_path)
    minijax.jit(lambda x: x - 7.5)(jnp.ones(5))
    assert any(tmp_path.glob("jit-*.bin"))
    option("minijax_cache_dir", "")
    assert get_disk_cache() is None


def test_flags_dump(option, tmp_path):
    option("minijax_flags", f"--dump_to={tmp_path}")
    minijax.jit(lambda x: x * 2 - 1)(jnp.ones(4))
    assert any(n.name.endswith(".after_optimizations.hlo") for n in tmp_path.iterdir())


def test_num_threads(option):
    from minijax.backends.cpu import thread_pool
    option("minijax_num_threads", 3)
    assert thread_pool.get_pool().num_threads == 3
    option("minijax_num_threads", 1)
    assert thread_pool.get_pool().num_threads == 1
    x = np.arange(1 << 18, dtype=np.float32)
    np.testing.assert_allclose(minijax.jit(lambda v: jnp.sin(v) * 2)(x), np.sin(x) * 2,
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["minijax_dot_blas", "minijax_dot_split"])
def test_dot_options(option, name):
    from minijax.backends.cpu import blas as cpu_blas
    a = np.random.RandomState(0).randn(64, 48).astype(np.float32)
    f = minijax.jit(lambda x, y: x @ y)
    want = np.asarray(f(a, a.T))
    option(name, False)
    if name == "minijax_dot_blas":
        assert cpu_blas.find_blas() is None
    np.testing.assert_allclose(f(a, a.T), want, rtol=1e-5, atol=1e-4)
    option(name, True)


def test_environment_gives_initial_values():
    env = dict(os.environ, MINIJAX_BACKEND="interpreter", MINIJAX_NUM_THREADS="2",
               MINIJAX_DOT_BLAS="0", JAX_ENABLE_X64="1",
               PYTHONPATH=str(ROOT.parent))
    out = subprocess.run(
        [sys.executable, "-c", "import minijax; c = minijax.config; print(c.minijax_backend, "
         "c.minijax_num_threads, c.minijax_dot_blas, c.jax_enable_x64, minijax.devices())"],
        env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["interpreter", "2", "False", "True", "[InterpreterDevice(id=0)]"]
