"""The devices of a multi-device program run at the same time (backends/spmd.py with the
CPU backend): each device's gemms are split over its own share of the thread pool (not the
process pool the executable was compiled next to), BLAS runs one thread per call while
devices run, kernels and gemms above a few microseconds release the GIL, processes on one
machine split its cores, and the data-parallel step gives the same bits on every run."""

import ctypes
import os
import sys
import threading

import numpy as np
import pytest

import minijax
from minijax import distributed, lax
from minijax.backends import get_backend
from minijax.backends.cpu import blas as cpu_blas
from minijax.backends.cpu import kernel as cpu_kernel
from minijax.backends.cpu import thread_pool
from minijax.backends.spmd import run_spmd
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.pipeline import CompileOptions, optimize

DOT = """HloModule dot
ENTRY e {
  a = f32[512,256]{1,0} parameter(0)
  b = f32[256,192]{1,0} parameter(1)
  ROOT d = f32[512,192]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def _blas_threads():
    blas = cpu_blas.find_blas()
    if blas is None or not blas.get_threads:
        pytest.skip("no BLAS thread-count control in this NumPy")
    return ctypes.CFUNCTYPE(ctypes.c_int)(blas.get_threads)


def _compile(text):
    backend = get_backend("cpu")
    return backend, backend.compile(optimize(parse_module(text), CompileOptions(backend="cpu")))


def test_gemm_splits_over_the_calling_devices_share_not_the_process_pool(monkeypatch):
    if cpu_blas.find_blas() is None:
        pytest.skip("no BLAS gemm found in this NumPy")
    backend, exe = _compile(DOT)     # compiled on this thread: next to the process pool
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 256)).astype(np.float32)
    b = rng.standard_normal((256, 192)).astype(np.float32)
    used = []
    original = thread_pool.ThreadPool.parallel_for

    def spy(self, fn, arg, total, chunks):
        used.append((threading.current_thread().name, self))
        return original(self, fn, arg, total, chunks)
    monkeypatch.setattr(thread_pool.ThreadPool, "parallel_for", spy)
    devices = minijax.devices()[:2]
    outs = run_spmd(backend, exe, devices, [[a, b], [a, b]])
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for out in outs:
        np.testing.assert_allclose(out[0], ref, rtol=1e-4, atol=1e-3)
    process_pool = thread_pool.get_pool()
    assert all(pool is not process_pool for _, pool in used), used
    shares = {thread_pool.device_share(i, 2) for i in range(2)}
    assert all(pool in shares for _, pool in used if pool.num_threads > 1)
    # Outside a multi-device run the same executable splits over the process pool again.
    used.clear()
    np.testing.assert_allclose(exe.execute([a, b])[0], ref, rtol=1e-4, atol=1e-3)
    if process_pool.num_threads > 1:
        assert used and all(pool is process_pool for _, pool in used)


def test_blas_runs_one_thread_while_devices_run_and_gets_its_count_back():
    get = _blas_threads()
    before = get()
    backend = get_backend("cpu")
    seen = []
    dev = minijax.devices()[0]
    seen.append(backend.run_on_device(dev, 2, get))
    assert seen == [1] and get() == before
    # Holds from several threads at once: the count comes back only after the last.
    cpu_blas.hold_one_blas_thread()
    cpu_blas.hold_one_blas_thread()
    cpu_blas.release_blas_threads()
    assert get() == 1
    cpu_blas.release_blas_threads()
    assert get() == before


def test_kernels_and_gemms_above_a_few_microseconds_release_the_gil():
    small, large = 64, 1 << 17           # elements: below / above GIL_HOLD_MAX
    assert small < cpu_kernel.GIL_HOLD_MAX <= large < cpu_kernel.PARALLEL_THRESHOLD

    def kernels_of(n):
        text = (f"HloModule k\nENTRY e {{\n  x = f32[{n}]{{0}} parameter(0)\n"
                f"  ROOT t = f32[{n}]{{0}} tanh(x)\n}}\n")
        return _compile(text)[1].kernels
    assert all(k.fast is not None for k in kernels_of(small))
    assert all(k.fast is None and k.threads == 1 for k in kernels_of(large))
    blas = cpu_blas.find_blas()
    if blas is not None:
        tiny = cpu_blas.GemmCall(blas, (1, 8, 8, 8, False, False), np.float32)
        medium = cpu_blas.GemmCall(blas, (1, 128, 128, 64, False, False), np.float32)
        assert 128 * 128 * 64 >= cpu_blas.GIL_GEMM_MNK
        fast = cpu_blas._entries(blas).by_dtype[np.dtype(np.float32)][2]
        assert tiny.holds_gil == (fast is not None) and not medium.holds_gil
        a = np.arange(128 * 64, dtype=np.float32).reshape(128, 64) / 1000
        b = np.arange(64 * 128, dtype=np.float32).reshape(64, 128) / 1000
        out = np.empty((128, 128), np.float32)
        medium.call(a, b, out)
        np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5)


def test_gemm_driver_is_built_once_when_devices_first_need_it_together(monkeypatch):
    """Convolutions make their gemms as they run, on every device's thread at once: they
    must share one gemm driver (a second one, dropped, left a builtin entry pointing at
    freed memory: shard_map of a convolution crashed the process)."""
    blas = cpu_blas.find_blas()
    if blas is None:
        pytest.skip("no BLAS")
    monkeypatch.setattr(cpu_blas, "_entries_made", {})
    barrier, got = threading.Barrier(8), []

    def first_gemm():
        barrier.wait()
        call = cpu_blas.GemmCall(blas, (1, 8, 8, 8, False, False), np.float32)
        got.append(cpu_blas._entries(blas))
        a = np.ones((8, 8), np.float32)
        out = np.empty((8, 8), np.float32)
        call.call(a, a, out)
        np.testing.assert_array_equal(out, np.full((8, 8), 8, np.float32))
    threads = [threading.Thread(target=first_gemm) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(e is got[0] for e in got)


def test_data_parallel_step_same_bits_every_run_and_equal_to_one_device():
    sys.path.insert(0, "examples")
    import data_parallel as dp
    params = dp.init_params()
    x, y = dp.make_data(512)
    step = dp.pmap_step(2)
    runs = [step(params, x, y) for _ in range(3)]
    for new, loss in runs[1:]:
        assert float(loss) == float(runs[0][1])
        for k in new:
            np.testing.assert_array_equal(np.asarray(new[k]), np.asarray(runs[0][0][k]))
    ref, ref_loss = dp.single_device_step()(params, x, y)
    np.testing.assert_allclose(float(runs[0][1]), float(ref_loss), rtol=1e-6)
    for k in ref:
        np.testing.assert_allclose(np.asarray(runs[0][0][k]), np.asarray(ref[k]), rtol=1e-5,
                                   atol=1e-6)


def test_psum_over_devices_same_bits_every_run():
    n = len(minijax.devices())
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((n, 1000)) * 10.0 ** rng.integers(-6, 6, (n, 1000))).astype(
        np.float32)
    f = minijax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
    first = np.asarray(f(x))
    want = x[0].copy()
    for row in x[1:]:
        want = want + row             # device order, float32 at every step
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(x)), first)
    np.testing.assert_array_equal(first[0], want)


class _FakeRun:
    def __init__(self, local):
        self.local_process_count = local


def test_processes_on_one_machine_split_its_cores(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    changed = []
    monkeypatch.setattr(minijax.config, "update",
                        lambda name, value: changed.append((name, value)))
    monkeypatch.setitem(minijax.config._values, "minijax_num_threads", 0)
    distributed._share_cores(_FakeRun(1))
    assert changed == []
    distributed._share_cores(_FakeRun(2))
    assert changed == [("minijax_num_threads", max(1, cores // 2))]
    changed.clear()
    monkeypatch.setitem(minijax.config._values, "minijax_num_threads", 3)  # the user's
    distributed._share_cores(_FakeRun(2))
    assert changed == []
