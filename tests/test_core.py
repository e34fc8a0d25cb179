"""Core tracing machinery: make_jaxpr, the printer, check_jaxpr, tracer errors."""

import numpy as np
import pytest

import minijax as jax
from minijax import core, lax
from minijax.errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)


def test_make_jaxpr_prints_in_jax_style():
    jaxpr = jax.make_jaxpr(lambda x: lax.sin(x))(np.ones(3, np.float32))
    text = str(jaxpr)
    assert text.startswith("{ lambda ; a:f32[3]. let")
    assert "b:f32[3] = sin a" in text
    assert text.rstrip().endswith("in (b,) }")


def test_make_jaxpr_hoists_constants_and_records_source_lines():
    c = np.arange(3, dtype=np.float32)

    def f(x):
        return lax.mul(x, c)
    closed = jax.make_jaxpr(f)(np.ones(3, np.float32))
    assert len(closed.jaxpr.constvars) == 1
    np.testing.assert_array_equal(np.asarray(closed.consts[0]), c)
    eqn = closed.jaxpr.eqns[0]
    assert eqn.source_info.file == __file__
    assert eqn.source_info.function == "f"
    assert "test_core.py" in closed.pretty_print(source_info=True)


def test_make_jaxpr_scalar_literals_and_static_argnums():
    def f(x, n):
        return lax.mul(x, float(n))
    closed = jax.make_jaxpr(f, static_argnums=1)(np.ones(2, np.float32), 3)
    assert "mul a 3.0" in str(closed)
    assert len(closed.jaxpr.invars) == 1


def test_eval_jaxpr_matches_direct_call():
    def f(x, y):
        return lax.add(lax.sin(x), lax.mul(x, y))
    x = np.linspace(-1, 1, 5).astype(np.float32)
    y = np.float32(2.0)
    closed = jax.make_jaxpr(f)(x, y)
    (out,) = core.eval_jaxpr(closed.jaxpr, closed.consts, x, y)
    np.testing.assert_allclose(np.asarray(out), np.sin(x) + x * y, rtol=1e-6)
    core.check_jaxpr(closed.jaxpr)


def test_check_jaxpr_rejects_use_before_definition():
    closed = jax.make_jaxpr(lambda x: lax.sin(lax.cos(x)))(np.ones(2, np.float32))
    jaxpr = closed.jaxpr
    broken = core.Jaxpr([], jaxpr.invars, jaxpr.outvars, list(reversed(jaxpr.eqns)))
    with pytest.raises(core.JaxprTypeError, match="used before definition"):
        core.check_jaxpr(broken)


def test_bool_of_tracer_names_argument_and_fixes():
    def f(x, y):
        if lax.reduce_sum(x, (0,)) > 0:
            return x
        return y
    with pytest.raises(TracerBoolConversionError) as info:
        jax.make_jaxpr(f)(np.ones(3, np.float32), np.ones(3, np.float32))
    message = str(info.value)
    assert "argument(s) x" in message
    assert "lax.cond" in message and "where" in message and "static_argnums" in message
    assert isinstance(info.value, ConcretizationTypeError)


def test_int_and_array_conversion_errors():
    with pytest.raises(TracerIntegerConversionError, match="static"):
        jax.make_jaxpr(lambda x: int(x))(np.float32(1))
    with pytest.raises(TracerArrayConversionError, match="numpy"):
        jax.make_jaxpr(lambda x: np.asarray(x))(np.ones(2, np.float32))


def test_tracer_repr_is_short():
    seen = {}

    def f(x):
        seen["repr"] = repr(x)
        return x
    jax.make_jaxpr(f)(np.zeros((1000, 1000), np.float32))
    assert seen["repr"].startswith("Traced<f32[1000,1000]>")
    assert len(seen["repr"]) < 80


def test_leaked_tracer_raises_unexpected_tracer_error():
    leaked = []

    def f(x):
        leaked.append(x)
        return x
    jax.make_jaxpr(f)(np.ones(2, np.float32))
    with pytest.raises(UnexpectedTracerError, match="escaped"):
        lax.sin(leaked[0])


def test_grad_allows_python_control_flow_on_concrete_primal():
    def f(x):
        return lax.sin(x) if x > 0 else lax.cos(x)
    assert float(jax.grad(f)(1.0)) == pytest.approx(np.cos(1.0), rel=1e-6)
    assert float(jax.grad(f)(-1.0)) == pytest.approx(-np.sin(-1.0), rel=1e-6)
