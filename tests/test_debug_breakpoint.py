"""minijax.debug.breakpoint: the debugger sees the concrete values of the calling frames'
locals eagerly, under jit (cpu and interpreter), vmap (one stop per element), grad (primals)
and scan; its commands; quitting raises SystemExit(0). Expected transcripts are what
jax.debug.breakpoint's CLI debugger prints for the same programs (JAX 0.10.2)."""

import io
import sys

import numpy as np
import pytest

import minijax as jax
import minijax.numpy as jnp
from minijax import debugger, lax
from minijax.debugger import CliDebugger, DebuggerFrame


def _f(x):
    y = x * 2.0
    n = 3
    jax.debug.breakpoint()
    return y + n


_F_BREAK_LINE = _f.__code__.co_firstlineno + 3


def _answers(monkeypatch, commands: str):
    monkeypatch.setattr(sys, "stdin", io.StringIO(commands))


def _out(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


_MODES = {"eager": _f, "jit": jax.jit(_f), "jit-interpreter": jax.jit(_f, backend="interpreter")}


@pytest.mark.parametrize("mode", list(_MODES))
def test_locals_hold_concrete_values(mode, monkeypatch, capsys):
    fn = _MODES[mode]
    for _ in range(2):  # stops on every call, not only while tracing
        _answers(monkeypatch, "p y\npp n\np float(y.sum()) + n\nc\n")
        np.testing.assert_array_equal(np.asarray(fn(jnp.arange(3.0))), [3.0, 5.0, 7.0])
        # JAX: Entering jdb: / (jdb) Array([0., 2., 4.], dtype=float32) / (jdb) 3 / ...
        assert _out(capsys) == ["Entering jdb:",
                                "(jdb) Array([0., 2., 4.], dtype=float32)",
                                "(jdb) 3",
                                "(jdb) 9.0",
                                "(jdb) "]


@pytest.mark.parametrize("jit", [False, True])
def test_vmap_stops_once_per_batch_element(jit, monkeypatch, capsys):
    fn = jax.vmap(_f)
    fn = jax.jit(fn) if jit else fn
    _answers(monkeypatch, "p (x, y)\nc\np (x, y)\nc\n")
    np.testing.assert_array_equal(np.asarray(fn(jnp.array([1.0, 5.0]))), [5.0, 13.0])
    out = _out(capsys)
    assert out == ["Entering jdb:",
                   "(jdb) (Array(1., dtype=float32), Array(2., dtype=float32))",
                   "(jdb) Entering jdb:",
                   "(jdb) (Array(5., dtype=float32), Array(10., dtype=float32))",
                   "(jdb) "]


@pytest.mark.parametrize("jit", [False, True])
def test_grad_sees_primal_values_once(jit, monkeypatch, capsys):
    fn = jax.grad(lambda x: _f(x).sum())
    fn = jax.jit(fn) if jit else fn
    _answers(monkeypatch, "p y\nc\n")
    np.testing.assert_array_equal(np.asarray(fn(jnp.arange(2.0))), [2.0, 2.0])
    # JAX: (jdb) Array([0., 2.], dtype=float32)
    assert _out(capsys)[1] == "(jdb) Array([0., 2.], dtype=float32)"


def test_scan_stops_every_iteration_with_outer_frames(monkeypatch, capsys):
    def body(c, x):
        z = c + x
        jax.debug.breakpoint()
        return z, z

    def run(xs):
        scale = xs * 10.0
        return lax.scan(body, 0.0, xs + scale - scale)

    # In the second stop, go up to `run`'s frame: its traced local has its runtime value.
    _answers(monkeypatch, "p (c, x, z)\nc\np (c, x, z)\nup\np scale\nc\np z\nc\n")
    carry, _ = jax.jit(run)(jnp.arange(3.0))
    assert float(carry) == 3.0
    out = [line for line in _out(capsys) if line.startswith("(jdb) ")]
    f32 = "dtype=float32"
    assert out[0] == f"(jdb) (Array(0., {f32}), Array(0., {f32}), Array(0., {f32}))"
    assert out[1] == "(jdb) Entering jdb:"
    assert out[2] == f"(jdb) (Array(0., {f32}), Array(1., {f32}), Array(1., {f32}))"
    assert out[3].startswith("(jdb) > ") and out[3].endswith(")run()")
    assert out[4] == f"(jdb) Array([ 0., 10., 20.], {f32})"
    assert out[-2] == f"(jdb) Array(3., {f32})"


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("commands", ["p y\nq\n", "quit\n", "exit\n", ""])
def test_quit_and_end_of_input_raise_system_exit(mode, commands, monkeypatch, capsys):
    # As JAX's CLI debugger: `q` (and EOF) call sys.exit(0). (JAX under jit wraps it in a
    # JaxRuntimeError from the XLA runtime; minijax lets the SystemExit through.)
    _answers(monkeypatch, commands)
    with pytest.raises(SystemExit) as info:
        _MODES[mode](jnp.arange(3.0))
    assert info.value.code == 0


def test_list_where_up_down_and_errors(monkeypatch, capsys):
    def outer(v):
        w = v + 1.0
        return _f(w)

    _answers(monkeypatch, "l\nw\nd\nu\np v\nv * 3\nu\np nope\np\n1/0\nv * 3\nc\n")
    jax.jit(outer)(jnp.ones(2))
    out = _out(capsys)
    text = "\n".join(out)
    # l: five lines of context either side, the current line marked with ->
    assert f"> {__file__}({_F_BREAK_LINE})_f()" in text
    assert f"{_F_BREAK_LINE:4d} ->     jax.debug.breakpoint()" in out
    assert f"{_F_BREAK_LINE - 2:4d}        y = x * 2.0" in out
    # w: outermost first, this test function, `outer`, then `_f`
    where = out.index("(jdb) Traceback:")
    end = next(i for i in range(where + 1, len(out)) if out[i].startswith("(jdb)"))
    stack = out[where + 1:end]
    assert stack[-6].endswith("in test_list_where_up_down_and_errors")
    assert stack[-5].strip() == "jax.jit(outer)(jnp.ones(2))"
    assert stack[-4].endswith("in outer") and stack[-3].strip() == "return _f(w)"
    assert stack[-2] == f'  File "{__file__}", line {_F_BREAK_LINE}, in _f'
    assert stack[-1].strip() == "jax.debug.breakpoint()"
    assert "(jdb) At bottommost frame." in out
    assert "(jdb) Array([1., 1.], dtype=float32)" in out  # `p v` in outer's frame
    assert "*** NameError: name 'nope' is not defined" in text
    assert "*** expected an expression" in text
    assert "*** ZeroDivisionError: division by zero" in text
    # a bare expression is evaluated in the current frame: `v` is outer's, unknown one up
    assert "(jdb) Array([3., 3.], dtype=float32)" in out
    assert "*** NameError: name 'v' is not defined" in text


def test_num_frames_filter_frames_and_explicit_streams(capsys):
    seen = {}

    def record(frames, thread_id, **kwargs):
        seen["frames"], seen["thread"], seen["kwargs"] = frames, thread_id, kwargs

    if "test-record" not in debugger._registry:
        debugger.register_debugger("test-record", record, -10)

    def g(x):
        k = {"a": x + 1, "s": "text"}  # noqa: F841 - read by the debugger
        jax.debug.breakpoint(backend="test-record", num_frames=1, flag=7)
        return x

    jax.jit(g)(jnp.float32(2.0))
    frames = seen["frames"]
    assert len(frames) == 1 and frames[0].function == "g"
    assert seen["kwargs"] == {"flag": 7}
    k = frames[0].locals["k"]
    assert k["s"] == "text" and float(k["a"]) == 3.0  # a pytree local: traced leaf replaced

    def h(x):
        jax.debug.breakpoint(backend="test-record", filter_frames=False, num_frames=3)
        return x
    jax.jit(h)(jnp.float32(2.0))
    assert [f.function for f in seen["frames"]][:1] == ["h"]

    # The cli backend with explicit streams (no prompt echo through input()).
    stdout = io.StringIO()
    frame = DebuggerFrame(__file__, "fake", 1, {"a": np.arange(3)}, {"np": np})
    CliDebugger([frame], None, stdin=io.StringIO("p np.sum(a)\npp a.tolist()\nc\n"),
                stdout=stdout).run()
    assert stdout.getvalue().splitlines() == ["Entering jdb:", "(jdb) np.int64(3)",
                                              "(jdb) [0, 1, 2]", "(jdb) "]


def test_token_is_returned_and_exclusive_with_ordered(monkeypatch, capsys):
    def g(x):
        y = jnp.sin(x)
        y = jax.debug.breakpoint(token=y)
        return y * 2.0

    _answers(monkeypatch, "p y\nc\n")
    out = jax.jit(g)(jnp.float32(0.5))
    np.testing.assert_allclose(float(out), 2 * np.sin(np.float32(0.5)), rtol=1e-6)
    assert _out(capsys)[1] == "(jdb) Array(0.47942555, dtype=float32)"  # JAX's line
    with pytest.raises(ValueError, match="mutually exclusive"):
        jax.debug.breakpoint(token=jnp.ones(2), ordered=True)
