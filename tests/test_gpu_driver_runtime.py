"""The CUDA driver runtime (backends/cuda/driver_runtime.py) against a fake driver module:
the real runtime code (discovery, context, stream, caching allocator over cuMemAlloc,
pinned staging copies, PTX/cubin loading, kernel-argument packing for cuLaunchKernel,
the GEMM fallback without cuBLAS, the OOM report) runs on a machine without a GPU, the fake
driver executing each launched kernel with the GPU emulator."""

from __future__ import annotations

import numpy as np
import pytest
from fake_cuda_driver import FakeDriver

import minijax
import minijax.numpy as jnp
from minijax.backends import get_backend, register_backend, unregister_backend
from minijax.backends.cuda import CudaBackend
from minijax.backends.cuda import driver as drv
from minijax.backends.cuda.allocator import DeviceOutOfMemory
from minijax.config import config

pytest.importorskip("llvmlite", reason="GPU code generation needs llvmlite")

from minijax.backends.cuda import driver_runtime as drt  # noqa: E402
from minijax.compiler.codegen.gpu import ptx as ptxmod  # noqa: E402


@pytest.fixture
def fake(monkeypatch):
    fake = FakeDriver(capacity=64 << 20)
    monkeypatch.setattr(drv, "driver", lambda: fake)
    monkeypatch.setattr(drt, "driver", lambda: fake)
    monkeypatch.setattr(drv, "driver_present", lambda: True)
    monkeypatch.setattr(drv, "_device_list", None)
    original = ptxmod.PtxCache.ptx

    def ptx(self, ir_text, arch):
        fake.last_ir = ir_text          # the fake driver runs this module's kernels
        return original(self, ir_text, arch)
    monkeypatch.setattr(ptxmod.PtxCache, "ptx", ptx)
    monkeypatch.setattr(drt.Cublas, "create", classmethod(lambda cls, stream: False))
    register_backend("cudafake", lambda: CudaBackend(name="cudafake"))
    yield fake, get_backend("cudafake").devices()[0]
    unregister_backend("cudafake")


def test_discovery_and_runtime(fake):
    drv_, dev = fake
    assert repr(dev) == "CudaDevice(id=0)" and dev.device_kind == "Fake H100 (emulated)"
    rt = get_backend("cudafake").runtime()
    assert rt.arch == "sm_90"
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    a = minijax.device_put(x, dev)               # staged through pinned memory
    np.testing.assert_array_equal(np.asarray(a), x)
    assert a.shape == (2, 5) and a.device == dev


def test_jit_kernels_and_gemm_fallback_through_the_driver(fake):
    drv_, dev = fake
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 40)).astype(np.float32)
    w = rng.normal(size=(40, 7)).astype(np.float32)

    @minijax.jit
    def f(a, b):
        h = a @ b
        return minijax.nn.softmax(h, axis=-1), jnp.tanh(h).sum()

    s, t = f(minijax.device_put(x, dev), minijax.device_put(w, dev))
    h = x.astype(np.float64) @ w
    e = np.exp(h - h.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(s), e / e.sum(-1, keepdims=True), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(float(t), np.tanh(h).sum(), rtol=1e-4)
    assert drv_.launches >= 3                     # gemm kernel, row fusion, reduction
    if ptxmod.ptxas_path() is not None:
        assert all(img.startswith(b"\x7fELF") for img in drv_.images)   # cubins


def test_out_of_memory_names_the_largest_live_buffers(fake):
    drv_, dev = fake
    keep = minijax.device_put(np.zeros((4096, 2048), np.float32), dev)     # 32 MiB
    with pytest.raises(DeviceOutOfMemory, match=r"(?s)allocating 40\.0 MiB.*32\.0 MiB  "
                                                r"device_put"):
        minijax.device_put(np.zeros((5120, 2048), np.float32), dev)
    del keep


def test_debug_two_times_kernels_with_cuda_events(fake, capsys):
    drv_, dev = fake
    old = config.read("minijax_debug")
    config.update("minijax_debug", 2)
    try:
        y = minijax.jit(lambda v: jnp.sort(v) + 1)(minijax.device_put(
            np.arange(8, 0, -1, dtype=np.float32), dev))
        np.testing.assert_array_equal(np.asarray(y), np.arange(1, 9) + 1)
    finally:
        config.update("minijax_debug", old)
    err = capsys.readouterr().err
    assert "500.0 us" in err and "(CUDA events)" in err       # the fake's 0.5 ms
    assert drv_.destroyed_events >= 2 and drv_.destroyed_events % 2 == 0
