"""minijax.debug.print / callback: values and order eagerly, under jit (cpu and interpreter),
vmap, grad, scan, while_loop and cond. Expected lines are what jax.debug.print prints for
the same programs (JAX 0.10.2)."""

import numpy as np
import pytest

import minijax as jax
import minijax.numpy as jnp
from minijax import lax


def _f(x):
    jax.debug.print("x={x}", x=x)
    y = x * 2.0
    jax.debug.print("y={} {}", y, 3)
    return y.sum()


def _lines(capsys):
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("mode", ["eager", "jit", "jit-interpreter"])
def test_print_values_and_order(mode, capsys):
    fn = {"eager": _f, "jit": jax.jit(_f),
          "jit-interpreter": jax.jit(_f, backend="interpreter")}[mode]
    for _ in range(2):  # printed on every call, not only while tracing
        assert float(fn(jnp.arange(3.0))) == 6.0
    assert _lines(capsys) == ["x=[0. 1. 2.]", "y=[0. 2. 4.] 3"] * 2


@pytest.mark.parametrize("jit", [False, True])
def test_print_under_vmap_prints_every_batch_element(jit, capsys):
    fn = jax.vmap(_f)
    fn = jax.jit(fn) if jit else fn
    out = fn(jnp.arange(4.0).reshape(2, 2))
    np.testing.assert_allclose(np.asarray(out), [2.0, 10.0])
    # JAX: x=[0. 1.] / x=[2. 3.] / y=[0. 2.] 3 / y=[4. 6.] 3
    assert _lines(capsys) == ["x=[0. 1.]", "x=[2. 3.]", "y=[0. 2.] 3", "y=[4. 6.] 3"]


def test_print_under_vmap_with_unbatched_argument(capsys):
    def g(x, w):
        jax.debug.print("{} {}", x, w)
        return x * w
    jax.vmap(g, in_axes=(0, None))(jnp.arange(3), 7)
    assert _lines(capsys) == ["0 7", "1 7", "2 7"]


@pytest.mark.parametrize("jit", [False, True])
def test_print_under_grad_sees_primals_once(jit, capsys):
    fn = jax.grad(_f)
    fn = jax.jit(fn) if jit else fn
    np.testing.assert_allclose(np.asarray(fn(jnp.arange(2.0))), [2.0, 2.0])
    assert _lines(capsys) == ["x=[0. 1.]", "y=[0. 2.] 3"]


def _body(c, x):
    jax.debug.print("c={c} x={x}", c=c, x=x)
    return c + x, c


@pytest.mark.parametrize("how", ["eager", "jit", "grad", "jit-grad"])
def test_print_in_scan_runs_each_iteration(how, capsys):
    xs = jnp.arange(3.0)
    if how == "eager":
        lax.scan(_body, 0.0, xs)
    elif how == "jit":
        jax.jit(lambda c: lax.scan(_body, c, xs))(0.0)
    else:
        g = jax.grad(lambda c: lax.scan(_body, c, xs)[0])
        g = jax.jit(g) if how == "jit-grad" else g
        assert float(g(0.0)) == 1.0
    # JAX prints these three lines (once, also under grad)
    assert _lines(capsys) == ["c=0.0 x=0.0", "c=0.0 x=1.0", "c=1.0 x=2.0"]


def test_print_in_while_loop_and_cond(capsys):
    def body(i):
        jax.debug.print("i={}", i)
        return i + 1

    @jax.jit
    def f(n, x):
        lax.while_loop(lambda i: i < n, body, 0)
        return lax.cond(x > 0, lambda v: (jax.debug.print("pos {}", v), v)[1],
                        lambda v: (jax.debug.print("neg {}", v), -v)[1], x)
    assert float(f(3, 2.0)) == 2.0
    assert float(f(1, -1.5)) == 1.5
    assert _lines(capsys) == ["i=0", "i=1", "i=2", "pos 2.0", "i=0", "neg -1.5"]


def test_callback_receives_arrays_and_pytrees():
    seen = []

    def record(tree, scale=None):
        seen.append((type(tree["a"]).__name__, np.asarray(tree["a"]).tolist(),
                     float(tree["b"]), int(scale)))

    @jax.jit
    def f(x):
        jax.debug.callback(record, {"a": x + 1, "b": x.sum()}, scale=5, ordered=True)
        return x
    f(jnp.arange(2.0))
    assert seen == [("Array", [1.0, 2.0], 1.0, 5)]


def test_callback_is_kept_by_dce_and_staged_in_jaxpr():
    jaxpr = jax.make_jaxpr(lambda x: (jax.debug.print("{}", x), x + 1)[1])(1.0)
    assert "debug_callback" in str(jaxpr)
    compiled = jax.jit(lambda x: (jax.debug.print("{}", x), x + 1)[1]).lower(1.0).compile()
    assert "minijax.debug_callback." in compiled.as_text()


def test_bad_arguments_raise():
    with pytest.raises(TypeError, match="callable"):
        jax.debug.callback(3)
    with pytest.raises(TypeError, match="format string"):
        jax.debug.print(3)
