"""Device programs as one native call holding their collectives (backends/cpu/native_entry.py,
`CompileOptions.native_device_program`): the same bits as the step program, values against
NumPy, the path taken, and failures and timeouts raised through the native code."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")

import minijax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.backends import get_backend  # noqa: E402
from minijax.backends.cpu import CpuBackend, native_entry  # noqa: E402
from minijax.backends.cpu.thread_pool import default_num_threads  # noqa: E402
from minijax.backends.spmd import (  # noqa: E402
    CollectiveAbortedError,
    CollectiveTimeoutError,
    InProcessTransport,
    current_context,
    run_spmd,
)
from minijax.compiler.driver import compile_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.compiler.options import CompileOptions  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import data_parallel as dp  # noqa: E402

CALLED_BACK = "collective(s) called back"


def _force(monkeypatch, native: bool) -> None:
    """Compile device programs natively or not, whatever this machine's core count."""
    monkeypatch.setattr(CpuBackend, "device_program_options",
                        lambda self, count: {"native_device_program": native})


def _plan_text(mapped) -> str:
    (program, *_), = mapped._programs.values()
    return program.executable.as_text()


def _both(monkeypatch, make, *args):
    """Run a fresh pmap from `make()` compiled natively and as a step program."""
    out = {}
    for native in (True, False):
        _force(monkeypatch, native)
        mapped = make()
        out[native] = [np.asarray(v) for v in minijax.tree_util.tree_leaves(mapped(*args))]
        assert (CALLED_BACK in _plan_text(mapped)) == native
    return out[True], out[False]


@pytest.mark.parametrize("n", [2, 4])
def test_data_parallel_step_native_equals_step_program_bits_and_one_device(monkeypatch, n):
    params = dp.init_params()
    x, y = dp.make_data(256)

    def step(params, x, y):
        loss, grads = minijax.value_and_grad(dp.loss_fn)(params, x, y)
        grads, loss = lax.pmean((grads, loss), "batch")
        return dp.sgd(params, grads), loss

    def make():
        return minijax.pmap(step, axis_name="batch", in_axes=(None, 0, 0),
                            out_axes=(None, None))
    native, stepped = _both(monkeypatch, make, params, x.reshape(n, -1, dp.IN),
                            y.reshape(n, -1))
    for a, b in zip(native, stepped, strict=True):
        np.testing.assert_array_equal(a, b)
    ref_params, ref_loss = dp.single_device_step()(params, x, y)
    ref = [np.asarray(v) for v in minijax.tree_util.tree_leaves((ref_params, ref_loss))]
    for a, b in zip(native, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


_KINDS = ["psum", "pmax", "all_gather", "all_gather_tiled", "psum_scatter", "ppermute",
          "all_to_all", "axis_index"]


def _collective(kind, n):
    def f(v):
        w = jnp.tanh(v) * 2.0 + 1.0               # a kernel before the collective ...
        if kind == "psum":
            r = lax.psum(w, "i")
        elif kind == "pmax":
            r = lax.pmax(w, "i")
        elif kind == "all_gather":
            r = lax.all_gather(w, "i")
        elif kind == "all_gather_tiled":
            r = lax.all_gather(w, "i", tiled=True)
        elif kind == "psum_scatter":
            r = lax.psum_scatter(w, "i", tiled=True)
        elif kind == "ppermute":
            r = lax.ppermute(w, "i", [(i, (i + 1) % n) for i in range(n)])
        elif kind == "all_to_all":
            r = lax.all_to_all(w, "i", 0, 0, tiled=True)
        else:
            r = w + lax.axis_index("i").astype(w.dtype)
        return r * 0.5 - 1.0                       # ... and one after it
    return f


def _numpy_reference(kind, x):
    n = x.shape[0]
    w = np.tanh(x.astype(np.float64)) * 2.0 + 1.0
    if kind == "psum":
        r = np.broadcast_to(w.sum(0), w.shape)
    elif kind == "pmax":
        r = np.broadcast_to(w.max(0), w.shape)
    elif kind == "all_gather":
        r = np.broadcast_to(w, (n,) + w.shape)
    elif kind == "all_gather_tiled":
        r = np.broadcast_to(np.concatenate(list(w)), (n, n * w.shape[1]) + w.shape[2:])
    elif kind == "psum_scatter":
        r = w.sum(0).reshape((n, -1) + w.shape[2:])
    elif kind == "ppermute":
        r = np.roll(w, 1, axis=0)
    elif kind == "all_to_all":
        rows = w.shape[1] // n
        r = np.stack([np.concatenate([w[j][i * rows:(i + 1) * rows] for j in range(n)])
                      for i in range(n)])
    else:
        r = w + np.arange(n).reshape((n,) + (1,) * (w.ndim - 1))
    return r * 0.5 - 1.0


@given(kind=st.sampled_from(_KINDS), n=st.sampled_from([2, 4, 8]),
       rows=st.integers(1, 3), cols=st.integers(1, 70), seed=st.integers(0, 2**16))
@settings(max_examples=30)
def test_every_collective_native_against_numpy_and_the_step_program(kind, n, rows, cols, seed):
    x = np.random.default_rng(seed).standard_normal((n, rows * n, cols)).astype(np.float32)
    with pytest.MonkeyPatch.context() as monkeypatch:
        native, stepped = _both(monkeypatch, lambda: minijax.pmap(_collective(kind, n),
                                                                  axis_name="i"), x)
    np.testing.assert_array_equal(native[0], stepped[0])
    np.testing.assert_allclose(native[0], _numpy_reference(kind, x), rtol=2e-6, atol=2e-6)


def test_collective_reading_arguments_and_writing_results_follows_new_buffers(monkeypatch):
    # psum of the argument straight into the result: the callback's buffers are the call's
    # argument and output (new every call), not the temps block.
    _force(monkeypatch, True)
    f = minijax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
    for seed in range(4):
        x = np.random.default_rng(seed).standard_normal((2, 5)).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(f(x)), np.broadcast_to(x[0] + x[1], x.shape))
    assert CALLED_BACK in _plan_text(f)


_TWO_ALL_REDUCES = """HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  p = f32[4]{0} parameter(0)
  r = f32[4]{0} all-reduce(p), channel_id=1, replica_groups={{0,1}}, to_apply=add
  q = f32[4]{0} multiply(r, r)
  s = f32[4]{0} all-reduce(q), channel_id=2, replica_groups={{0,1}}, to_apply=add
  ROOT t = (f32[4]{0}) tuple(s)
}
"""


def _native_executable():
    backend = get_backend("cpu")
    exe, _ = compile_module(parse_module(_TWO_ALL_REDUCES), backend,
                            CompileOptions(backend="cpu", native_device_program=True))
    assert exe._native is not None and len(exe._native.plan.collectives) == 2
    return backend, exe


class _Ranks:
    """Runs the executable only on the ranks in `run`; `fail` raises on its rank."""

    def __init__(self, exe, run=(0, 1), fail=None):
        self.exe, self.run, self.fail = exe, run, fail

    def execute(self, args):
        rank = current_context().rank
        if rank == self.fail:
            raise FloatingPointError(f"device {rank} failed")
        if rank not in self.run:
            return []
        return self.exe.execute(args)


def test_native_two_collectives_values():
    backend, exe = _native_executable()
    a = np.arange(4, dtype=np.float32)
    b = np.full(4, 3, np.float32)
    outs = run_spmd(backend, exe, minijax.devices()[:2], [[a], [b]],
                    InProcessTransport(2, timeout=60))
    want = 2 * (a + b) ** 2
    for out in outs:
        np.testing.assert_array_equal(np.asarray(out[0]), want)


def test_a_missing_participant_times_out_through_the_native_call():
    backend, exe = _native_executable()
    start = time.monotonic()
    with pytest.raises(CollectiveTimeoutError, match=r"participants \[1\].*did not arrive"):
        run_spmd(backend, _Ranks(exe, run=(0,)), minijax.devices()[:2],
                 [[np.ones(4, np.float32)]] * 2, InProcessTransport(2, timeout=0.3))
    # The second all-reduce is skipped once the first failed: one timeout, not two.
    assert time.monotonic() - start < 5


def test_a_failing_participant_wakes_the_native_one():
    backend, exe = _native_executable()
    with pytest.raises(FloatingPointError, match="device 1 failed"):
        run_spmd(backend, _Ranks(exe, fail=1), minijax.devices()[:2],
                 [[np.ones(4, np.float32)]] * 2, InProcessTransport(2, timeout=60))
    # ... and device 0 saw CollectiveAbortedError inside its native call, then ran again.
    outs = run_spmd(backend, exe, minijax.devices()[:2], [[np.ones(4, np.float32)]] * 2,
                    InProcessTransport(2, timeout=60))
    np.testing.assert_array_equal(np.asarray(outs[0][0]), np.full(4, 8, np.float32))


def test_aborted_error_reaches_the_caller_of_the_native_call():
    backend, exe = _native_executable()
    transport = InProcessTransport(2, timeout=60)
    transport.abort(RuntimeError("boom"), 1)
    with pytest.raises(CollectiveAbortedError, match="participant 1 failed"):
        run_spmd(backend, _Ranks(exe, run=(0,)), minijax.devices()[:2],
                 [[np.ones(4, np.float32)]] * 2, transport)


def test_more_threads_than_devices_keep_the_step_program():
    backend = get_backend("cpu")
    threads = backend.device_program_options(1)
    # One device with the whole pool: its kernels split over the threads (step program),
    # unless the pool has one thread.
    assert threads == {"native_device_program": default_num_threads() <= 1}
    assert backend.device_program_options(max(default_num_threads(), 1)) == {
        "native_device_program": True}


# ---------------------------------------------------------------- all-reduces met natively
_HLO_TYPES = {"f32": np.float32, "f64": np.float64, "s32": np.int32, "u32": np.uint32,
              "s64": np.int64}
_UFUNC = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
          "minimum": np.minimum}


def _all_reduce_module(op, types, groups, size):
    params = "\n".join(f"  p{k} = {t}[{size}]{{0}} parameter({k})" for k, t in enumerate(types))
    comps = "\n".join(f"r{t} {{ a = {t}[] parameter(0)  b = {t}[] parameter(1)  "
                      f"ROOT c = {t}[] {op}(a, b) }}" for t in sorted(set(types)))
    leaves = [f"{t}[{size}]{{0}}" for t in types]
    if len(types) == 1:
        body = (f"  r = {leaves[0]} all-reduce(p0), channel_id=1, replica_groups={groups}, "
                f"to_apply=r{types[0]}\n  ROOT t = ({leaves[0]}) tuple(r)")
    else:
        # A combined all-reduce: one instruction, several operands, one computation.
        operands = ", ".join(f"p{k}" for k in range(len(types)))
        body = (f"  r = ({', '.join(leaves)}) all-reduce({operands}), channel_id=1, "
                f"replica_groups={groups}, to_apply=r{types[0]}\n" + "\n".join(
                    f"  g{k} = {leaf} get-tuple-element(r), index={k}"
                    for k, leaf in enumerate(leaves))
                + f"\n  ROOT t = ({', '.join(leaves)}) tuple("
                + ", ".join(f"g{k}" for k in range(len(types))) + ")")
    return f"HloModule m\n{comps}\nENTRY e {{\n{params}\n{body}\n}}\n"


def _run_all_reduce(monkeypatch, text, args, cores):
    """Run the module natively compiled over len(args) devices; `cores` is what the native
    entry believes it has (all-reduces meet natively only when every device has one)."""
    monkeypatch.setattr(native_entry, "usable_cores", lambda: cores)
    backend = get_backend("cpu")
    exe, _ = compile_module(parse_module(text), backend,
                            CompileOptions(backend="cpu", native_device_program=True))
    transport = InProcessTransport(len(args), timeout=60)
    outs = run_spmd(backend, exe, minijax.devices()[:len(args)], args, transport)
    met = hasattr(transport, "_native_collectives")
    return [[np.asarray(o) for o in out] for out in outs], met


@given(op=st.sampled_from(sorted(_UFUNC)), types=st.lists(st.sampled_from(sorted(_HLO_TYPES)),
                                                           min_size=1, max_size=3),
       n=st.sampled_from([2, 4]), pairs=st.booleans(), size=st.integers(1, 300),
       seed=st.integers(0, 2**16))
@settings(max_examples=25, deadline=None)
def test_all_reduce_met_natively_equals_numpy_and_the_callback(op, types, n, pairs, size,
                                                               seed):
    if len(set(types)) > 1:
        types = [types[0]] * len(types)          # one to_apply: one element type
    rng = np.random.default_rng(seed)
    groups = [[i, i + 1] for i in range(0, n, 2)] if pairs else [list(range(n))]
    text = _all_reduce_module(op, types, "{" + ",".join(
        "{" + ",".join(map(str, g)) + "}" for g in groups) + "}", size)
    args = []
    for _ in range(n):
        leaves = []
        for t in types:
            dtype = _HLO_TYPES[t]
            v = (rng.standard_normal(size) * 4).astype(dtype)
            if dtype in (np.float32, np.float64) and size > 2:
                v[rng.integers(size)] = np.nan        # NaN propagates through max/min too
            leaves.append(v)
        args.append(leaves)
    with pytest.MonkeyPatch.context() as monkeypatch:
        native, met = _run_all_reduce(monkeypatch, text, args, cores=64)
        called_back, met_back = _run_all_reduce(monkeypatch, text, args, cores=1)
    assert met and not met_back
    for rank in range(n):
        group = next(g for g in groups if rank in g)
        for k in range(len(types)):
            want = args[group[0]][k].copy()
            for member in group[1:]:
                _UFUNC[op](want, args[member][k], out=want)
            np.testing.assert_array_equal(native[rank][k], want)
            np.testing.assert_array_equal(native[rank][k].view(np.uint8),
                                          called_back[rank][k].view(np.uint8))


def test_data_parallel_gradients_meet_natively_and_equal_the_callback(monkeypatch):
    _force(monkeypatch, True)
    params = dp.init_params()
    x, y = dp.make_data(128)
    transports = []
    init = InProcessTransport.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        transports.append(self)
    monkeypatch.setattr(InProcessTransport, "__init__", recording_init)
    outs = {}
    for cores in (64, 1):
        monkeypatch.setattr(native_entry, "usable_cores", lambda cores=cores: cores)
        outs[cores] = [np.asarray(v) for v in minijax.tree_util.tree_leaves(
            dp.pmap_step(2)(params, x, y))]
        assert hasattr(transports[-1], "_native_collectives") == (cores == 64)
    for a, b in zip(outs[64], outs[1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_missing_participant_times_out_at_a_native_all_reduce(monkeypatch):
    monkeypatch.setattr(native_entry, "usable_cores", lambda: 64)
    backend, exe = _native_executable()
    transport = InProcessTransport(2, timeout=0.3)
    with pytest.raises(CollectiveTimeoutError, match=r"native.*participants \[1\].*did not"):
        run_spmd(backend, _Ranks(exe, run=(0,)), minijax.devices()[:2],
                 [[np.ones(4, np.float32)]] * 2, transport)
    assert hasattr(transport, "_native_collectives")
