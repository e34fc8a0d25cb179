"""Multi-device runs prepared on one thread, the other devices' calls handed over through
mailboxes their threads serve in native code (backends/cpu/device_threads.py,
codegen/cpu/mailbox.py): results against NumPy and the per-thread path, the path taken,
and device threads that sleep between runs and are woken again."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")

import minijax  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.backends.cpu import CpuBackend, device_threads, native_entry  # noqa: E402
from minijax.compiler.codegen.cpu import mailbox  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import data_parallel as dp  # noqa: E402


@pytest.fixture
def prepared(monkeypatch):
    """Device programs compiled natively, all-reduces meeting natively whatever this
    machine's core count; returns the list of runs that went through run_prepared."""
    monkeypatch.setattr(CpuBackend, "device_program_options",
                        lambda self, count: {"native_device_program": True})
    monkeypatch.setattr(native_entry, "usable_cores", lambda: 64)
    runs = []
    original = device_threads.run_prepared

    def spy(*args):
        out = original(*args)
        runs.append(out is not None)
        return out
    monkeypatch.setattr("minijax.backends.cpu.backend.run_prepared", spy)
    return runs


def test_data_parallel_step_prepared_on_one_thread_equals_each_device_on_its_own(
        monkeypatch, prepared):
    params = dp.init_params()
    x, y = dp.make_data(128)
    out = [np.asarray(v) for v in minijax.tree_util.tree_leaves(
        dp.pmap_step(2)(params, x, y))]
    assert prepared == [True]
    monkeypatch.setattr(CpuBackend, "run_all_devices", lambda self, *args: None)
    ref = [np.asarray(v) for v in minijax.tree_util.tree_leaves(
        dp.pmap_step(2)(params, x, y))]
    for a, b in zip(out, ref, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n", [2, 4])
def test_device_threads_sleep_between_runs_and_wake_for_the_next(prepared, n):
    f = minijax.pmap(lambda v: lax.psum(v * 2.0, "i") + lax.axis_index("i"), axis_name="i")
    rng = np.random.default_rng(n)
    # Pauses around the idle limit: a device thread leaves its native wait just before,
    # during or after a call is posted, and must run that call in every case.
    pauses = [0.0, 0.0005, 0.0019, 0.0021, 0.004]
    for i in range(60):
        x = rng.standard_normal((n, 33)).astype(np.float32)
        want = np.broadcast_to((2 * x).sum(0, dtype=np.float32), x.shape) \
            + np.arange(n, dtype=np.float32)[:, None]
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6, atol=1e-5)
        time.sleep(pauses[i % len(pauses)])
    assert all(prepared) and len(prepared) == 60
    # ... and once idle long enough, every device thread has left its native wait.
    deadline = time.monotonic() + 5
    boxes = [device_threads._threads[r].box for r in range(1, n)]
    while time.monotonic() < deadline and any(b[mailbox.BOX_STATE] != mailbox.AWAY
                                              for b in boxes):
        time.sleep(0.01)
    assert all(b[mailbox.BOX_STATE] == mailbox.AWAY for b in boxes)
    assert all(b[mailbox.BOX_DONE] == b[mailbox.BOX_GO] for b in boxes)


def test_programs_with_collectives_that_call_back_run_each_device_on_its_thread(prepared):
    f = minijax.pmap(lambda v: lax.all_gather(v, "i"), axis_name="i")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(f(x)), np.broadcast_to(x, (2, 2, 3)))
    assert prepared == []          # all-gather calls back: not prepared on one thread


def test_prepared_run_converts_arguments_like_execute(prepared):
    # Arguments needing conversion (a Python float, a float64 array) stay alive until
    # the device threads have read them.
    f = minijax.pmap(lambda v, s: lax.psum(v * s, "i"), axis_name="i", in_axes=(0, None))
    x = np.arange(8, dtype=np.float64).reshape(2, 4)
    for _ in range(20):
        np.testing.assert_array_equal(np.asarray(f(x, 3.0)),
                                      np.broadcast_to(3 * (x[0] + x[1]), (2, 4)))
    assert prepared and all(prepared)
