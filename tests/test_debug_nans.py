"""jax_debug_nans / jax_debug_infs: FloatingPointError naming the primitive and the line
(JAX raises "invalid value (nan) encountered in log" for the same programs)."""

import inspect
import warnings

import numpy as np
import pytest

import minijax as jax
import minijax.numpy as jnp


@pytest.fixture
def debug_nans():
    jax.config.update("jax_debug_nans", True)
    yield
    jax.config.update("jax_debug_nans", False)


@pytest.fixture
def debug_infs():
    jax.config.update("jax_debug_infs", True)
    yield
    jax.config.update("jax_debug_infs", False)


def _planted(x):
    y = jnp.exp(x) * 2.0 + 1.0
    z = jnp.log(x - 1.0)   # log(0) -> -inf; log(negative) -> nan
    return jnp.tanh(y * z)


_LOG_LINE = inspect.getsourcelines(_planted)[1] + 2


def _line_of(message: str) -> int:
    return int(message.split(f"{__file__}:")[1].split()[0])


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_jit_nan_names_primitive_and_line_inside_a_fusion(debug_nans, backend):
    f = jax.jit(_planted, backend=backend)
    x = jnp.array([0.5, 3.0])
    text = f.lower(x).compile().as_text()
    assert "fusion" in text and "log(" in text  # the log sits inside a fused kernel
    with pytest.warns(RuntimeWarning, match="de-optimized"):
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered "
                                                     r"in log at") as info:
            f(x)
    assert _line_of(str(info.value)) == _LOG_LINE
    assert "jit(_planted)" in str(info.value)


def test_jit_without_nan_returns_values(debug_nans):
    x = np.array([2.0, 3.0], np.float32)
    want = np.tanh((np.exp(x) * 2 + 1) * np.log(x - 1))
    for _ in range(2):  # also the cached (fast-path) call is checked
        np.testing.assert_allclose(np.asarray(jax.jit(_planted)(x)), want, rtol=1e-5)


def test_fast_path_is_checked_after_a_clean_call(debug_nans):
    f = jax.jit(_planted)
    f(jnp.array([2.0, 3.0]))
    f(jnp.array([2.0, 3.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(FloatingPointError, match="log"):
            f(jnp.array([0.5, 3.0]))


def test_eager_nan_names_primitive_and_line(debug_nans):
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in log") \
            as info:
        _planted(jnp.array([0.5, 3.0]))
    assert _line_of(str(info.value)) == _LOG_LINE


def test_infs_are_checked_only_with_debug_infs(debug_infs):
    def f(x):
        y = jnp.exp(x)
        return jnp.log(x - 1.0) * y  # log(0) = -inf
    x = jnp.array([1.0, 3.0])
    jax.config.update("jax_debug_infs", False)
    assert np.isneginf(np.asarray(jax.jit(f)(x))[0])
    jax.config.update("jax_debug_infs", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered "
                                                     r"in log") as info:
            jax.jit(f)(x)
    assert _line_of(str(info.value)) == inspect.getsourcelines(f)[1] + 2


def test_off_by_default_nans_flow_through():
    out = jax.jit(_planted)(jnp.array([0.5, 3.0]))
    assert np.isnan(np.asarray(out)[0])


def test_works_with_donated_arguments(debug_nans):
    def step(w, x):
        return w + jnp.log(x - 1.0)
    f = jax.jit(step, donate_argnums=0)
    w = jnp.ones(8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(FloatingPointError, match="log") as info:
            f(w, jnp.full(8, 0.5))
    line = inspect.getsourcelines(step)[1] + 1
    assert _line_of(str(info.value)) == line


def test_grad_of_nan_is_caught(debug_nans):
    def loss(x):
        return jnp.sum(jnp.sqrt(x))
    with pytest.raises(FloatingPointError, match="sqrt"):
        jax.grad(loss)(jnp.array([-1.0, 4.0]))
