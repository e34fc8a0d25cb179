"""minijax.profiler: the Chrome trace-event JSON parses and holds the expected spans."""

import json
import os

import numpy as np
import pytest

import minijax as jax
import minijax.numpy as jnp
import minijax.profiler as profiler


def _step(x, w):
    h = jnp.tanh(x @ w)          # the dot and the tanh-reduce fusion come from here
    return jnp.sum(h * h)


def _events(path):
    with open(path) as f:
        data = json.load(f)
    return [e for e in data["traceEvents"] if e.get("ph") == "X"]


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_trace_holds_compile_pass_and_kernel_spans_in_order(tmp_path, backend):
    jax.clear_caches()  # the compile must happen inside the trace
    x, w = jnp.ones((16, 8)), jnp.ones((8, 4))
    f = jax.jit(lambda x, w: _step(x, w) * 2.0, backend=backend)
    with profiler.trace(tmp_path):
        with profiler.TraceAnnotation("train step", step=0):
            f(x, w)
        f(x, w)
    (run,) = os.listdir(tmp_path / "plugins" / "profile")
    (name,) = os.listdir(tmp_path / "plugins" / "profile" / run)
    assert name.endswith(".trace.json")
    events = _events(tmp_path / "plugins" / "profile" / run / name)
    assert all(e["dur"] > 0 and e["ts"] >= 0 for e in events)
    names = [e["name"] for e in events]
    # compile stages in order, each pass inside optimize, the user span around them
    stage = [n.split()[0] for n in names if n.split()[0] in ("trace", "lower", "optimize",
                                                             "codegen")]
    assert stage == ["trace", "lower", "optimize", "codegen"]
    by = {n: e for n, e in zip(names, events)}
    opt = by["optimize <lambda>"]
    passes = [e for e in events if e["cat"] == "pass"]
    assert {"pass fusion", "pass dce", "pass buffer-assignment"} <= {e["name"] for e in passes}
    assert all(opt["ts"] <= e["ts"] and e["ts"] + e["dur"] <= opt["ts"] + opt["dur"] + 1
               for e in passes)
    user = by["train step"]
    assert user["args"] == {"step": "0"}
    assert user["ts"] <= by["jit compile <lambda>"]["ts"]
    executes = [e for e in events if e["cat"] == "execute"]
    assert len(executes) == 2
    if backend == "cpu":
        assert any(e["cat"] == "codegen" and e["name"] == "LLVM compile" for e in events)
        kernels = [e for e in events if e["cat"] == "kernel"]
        assert len(kernels) >= 4  # dot + fusion, twice
        line = _step.__code__.co_firstlineno + 1
        assert any(e["name"].endswith(f"test_profiler.py:{line}") and e["args"]["opcode"]
                   == "dot" for e in kernels)
        for e in kernels:
            assert e["args"]["bytes"] > 0 and e["args"]["GB/s"] > 0
            assert e["args"]["source"].startswith(__file__)
            ex = [x for x in executes if x["ts"] <= e["ts"] <= x["ts"] + x["dur"]]
            assert len(ex) == 1  # every kernel sits inside one execution


def test_start_stop_trace_and_errors(tmp_path):
    with pytest.raises(RuntimeError, match="No profile"):
        profiler.stop_trace()
    profiler.start_trace(str(tmp_path))
    with pytest.raises(RuntimeError, match="already"):
        profiler.start_trace(str(tmp_path))

    @profiler.annotate_function
    def load():
        return np.ones(3)
    load()
    path = profiler.stop_trace()
    assert [e["name"] for e in _events(path)] == [load.__qualname__]


def test_nothing_recorded_outside_a_trace(tmp_path):
    jax.jit(lambda x: x + 1)(jnp.ones(3))
    with profiler.trace(tmp_path):
        pass
    (run,) = os.listdir(tmp_path / "plugins" / "profile")
    (name,) = os.listdir(tmp_path / "plugins" / "profile" / run)
    assert _events(tmp_path / "plugins" / "profile" / run / name) == []


def test_device_memory_profile_counts_live_arrays(tmp_path):
    keep = [jnp.zeros((123, 7)) for _ in range(3)]
    path = tmp_path / "memory.prof"
    profiler.save_device_memory_profile(path)
    profile = json.loads(path.read_text())
    entry = [b for b in profile["buffers"] if b["shape"] == [123, 7]]
    assert entry and entry[0]["count"] >= 3 and entry[0]["bytes"] >= 3 * 123 * 7 * 4
    assert profile["total_bytes"] >= entry[0]["bytes"]
    del keep
