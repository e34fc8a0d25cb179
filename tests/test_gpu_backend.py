"""The CUDA backend without a GPU: the caching allocator, discovery without a driver, the
PTX/cubin disk cache, dumps, and whole programs through the frontend on the emulated
device runtime. Tests that need a real GPU skip with "no CUDA driver/GPU"."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
from child_process import run_child_json

import minijax
import minijax.numpy as jnp
from minijax.backends import get_backend, register_backend, unregister_backend
from minijax.backends.cuda import NO_GPU, CudaBackend
from minijax.backends.cuda.allocator import CachingAllocator, DeviceOutOfMemory, size_class
from minijax.backends.cuda.driver import cuda_devices
from minijax.backends.cuda.loops import counted_loop
from minijax.config import config
from minijax.tools.opcode_coverage import coverage

pytest.importorskip("llvmlite", reason="GPU code generation needs llvmlite")

from minijax.backends.cuda.emulated import EmulatedRuntime  # noqa: E402
from minijax.compiler.codegen.gpu import ptx as ptxmod  # noqa: E402
from minijax.compiler.options import CompileOptions  # noqa: E402
from minijax.compiler.pipeline import optimize  # noqa: E402

# ------------------------------------------------------------------ allocator


class _FakeDevice:
    def __init__(self, capacity):
        self.capacity, self.used, self.next, self.live = capacity, 0, 0x1000, {}

    def alloc(self, n):
        if self.used + n > self.capacity:
            raise MemoryError("full")
        self.used += n
        self.next += n
        self.live[self.next] = n
        return self.next

    def free(self, p):
        self.used -= self.live.pop(p)


def test_size_classes():
    assert size_class(1) == 512 and size_class(512) == 512 and size_class(513) == 1024
    assert size_class(1 << 20) == 1 << 20
    assert size_class((1 << 20) + 1) == 2 << 20 and size_class(5 << 20) == 6 << 20


def test_allocator_reuses_freed_blocks_by_class_and_grows_on_demand():
    dev = _FakeDevice(1 << 30)
    a = CachingAllocator(dev.alloc, dev.free)
    assert dev.used == 0                     # nothing reserved up front
    b1 = a.allocate(1000, "x")
    a.free(b1)
    b2 = a.allocate(900, "y")                # same 1024-byte class: reused
    assert b2.ptr == b1.ptr and a.stats["reused"] == 1 and a.stats["raw_allocs"] == 1
    b3 = a.allocate(3000)                    # another class: a new raw allocation
    assert b3.ptr != b2.ptr and dev.used == 1024 + 3072
    a.free(b2)
    a.free(b3)
    assert a.stats["bytes_in_use"] == 0 and dev.used == 1024 + 3072   # cached
    a.empty_cache()
    assert dev.used == 0


def test_out_of_memory_releases_cache_then_names_largest_live_buffers():
    dev = _FakeDevice(9 << 20)
    a = CachingAllocator(dev.alloc, dev.free, device="cuda:0 (test)")
    cached = a.allocate(4 << 20, "old")
    a.free(cached)                           # cached, 4 MiB still reserved on the device
    big = a.allocate(6 << 20, "weights f32[1536,1024] at model.py:12")   # fits after release
    assert a.stats["raw_frees"] == 1
    small = a.allocate(1000, "bias at model.py:13")
    with pytest.raises(DeviceOutOfMemory) as err:
        a.allocate(8 << 20, "activations")
    msg = str(err.value)
    assert "out of memory on cuda:0 (test) allocating 8.0 MiB" in msg
    assert msg.index("weights f32[1536,1024] at model.py:12") < msg.index("bias at model.py:13")
    a.free(big)
    a.free(small)


# ------------------------------------------------------------------ discovery


@pytest.mark.skipif(bool(cuda_devices()), reason="a CUDA GPU is present")
def test_no_driver_means_no_gpu_device_silently():
    if importlib.util.find_spec("cuda") is not None:     # cuda-python installed, no driver
        assert get_backend("cuda").devices() == []
    assert "cuda" not in minijax.default_backend()
    with pytest.raises(RuntimeError, match=NO_GPU):
        CudaBackend().compile(None)


def test_import_minijax_never_imports_cuda_python():
    out = run_child_json(
        "import sys, json, minijax\n"
        "minijax.devices()\n"
        "print(json.dumps([m for m in sys.modules if m == 'cuda' or m.startswith('cuda.')]))")
    assert out == []


@pytest.mark.skipif(bool(cuda_devices()), reason="a CUDA GPU is present")
def test_gpu_benchmarks_fail_cleanly_without_a_gpu():
    script = os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks", "gpu.py")
    out = subprocess.run([sys.executable, script, "--quick"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2 and "no CUDA driver/GPU" in out.stderr


@pytest.mark.skipif(not cuda_devices(), reason=f"needs a real NVIDIA GPU ({NO_GPU})")
def test_real_gpu_runs_a_fused_kernel():
    dev = get_backend("cuda").devices()[0]
    x = minijax.device_put(np.arange(1 << 20, dtype=np.float32), dev)
    y = minijax.jit(lambda a: jnp.sin(a) * 2 + 1)(x)
    np.testing.assert_allclose(np.asarray(y), np.sin(np.arange(1 << 20, dtype=np.float32))
                               * 2 + 1, rtol=2e-6, atol=1e-6)


# ------------------------------------------------------------------ PTX cache and dumps


def test_ptx_cache_per_arch(tmp_path, monkeypatch):
    cache = ptxmod.PtxCache(str(tmp_path))
    module = CudaBackend(EmulatedRuntime()).compile(
        minijax.jit(lambda a: a * 2).lower(np.ones(5, np.float32)).module)
    key, text = cache.ptx(module.ir_text, "sm_90")
    assert os.path.exists(tmp_path / "gpu" / "sm_90" / f"{key}.ptx")
    monkeypatch.setattr(ptxmod, "compile_ptx", lambda *a: pytest.fail("not cached"))
    assert cache.ptx(module.ir_text, "sm_90") == (key, text)
    assert cache.key(module.ir_text, "sm_80") != key
    if ptxmod.ptxas_path() is not None:
        assert cache.cubin(key, text, "sm_90")
        assert os.path.exists(tmp_path / "gpu" / "sm_90" / f"{key}.cubin")


def test_dumps_write_ptx_beside_ll(tmp_path):
    lowered = minijax.jit(lambda a: jnp.exp(a).sum()).lower(np.ones((4, 8), np.float32))
    CudaBackend(EmulatedRuntime()).compile(lowered.module, CompileOptions(dump_to=str(tmp_path)))
    name = lowered.module.name
    assert "define void" in (tmp_path / f"{name}.ll").read_text()
    assert ".entry" in (tmp_path / f"{name}.ptx").read_text()


# ------------------------------------------------------------------ through the frontend


@pytest.fixture
def gpu():
    register_backend("gpuemu", lambda: CudaBackend(EmulatedRuntime(max_blocks=2),
                                                   name="gpuemu"))
    yield get_backend("gpuemu").devices()[0]
    unregister_backend("gpuemu")


def test_jit_eager_and_transfers_on_the_emulated_gpu(gpu):
    x = np.linspace(-2, 2, 60, dtype=np.float32).reshape(6, 10)
    a = minijax.device_put(x, gpu)
    assert repr(a.device) == "CudaDevice(id=0)" and a.device.platform == "gpu"
    scalar = minijax.device_put(np.float32(3), gpu)       # rank 0 stays rank 0
    assert scalar.shape == () and float(scalar) == 3.0

    @minijax.jit
    def f(v):
        return minijax.nn.softmax(v, axis=-1), jnp.tanh(v).sum(axis=0)

    s, t = f(a)
    assert s.device == gpu and t.device == gpu
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(s), e / e.sum(-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(t), np.tanh(x).sum(0), rtol=1e-5)
    b = (a * 2 + 1).block_until_ready()      # eager ops run as one-op GPU programs
    assert b.device == gpu
    np.testing.assert_array_equal(np.asarray(b), x * 2 + 1)
    g = minijax.grad(lambda v: (v * v).sum())(a)
    np.testing.assert_allclose(np.asarray(g), 2 * x, rtol=1e-6)


def test_dot_runs_as_gemm_sort_as_a_kernel_and_fft_on_the_host(gpu):
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(7, 5)).astype(np.float32), rng.normal(size=(9, 5)).astype(np.float32)
    f = minijax.jit(lambda a, b: (jnp.sort(a @ b.T, axis=1), a.T @ a,
                                  jnp.abs(jnp.fft.fft(a[0]))))
    module = optimize(f.lower(x, w).module, CompileOptions())
    text = get_backend("gpuemu").compile(module).as_text()
    assert "as a GEMM" in text and "sort (bitonic" in text and "HOST evaluator (fft)" in text
    s, g, h = f(minijax.device_put(x, gpu), minijax.device_put(w, gpu))
    np.testing.assert_allclose(np.asarray(s), np.sort(x @ w.T, axis=1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(g), x.T @ x, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(h), np.abs(np.fft.fft(x[0])), rtol=1e-5, atol=1e-6)


def test_executables_run_on_the_gpu_of_their_inputs():
    """Two emulated GPUs: a jitted call on GPU 1's arrays compiles for GPU 1's runtime
    (its allocator holds the results), GPU 0 stays untouched."""
    rts = [EmulatedRuntime(max_blocks=2), EmulatedRuntime(max_blocks=2)]
    register_backend("gpuemu2", lambda: CudaBackend(rts, name="gpuemu2"))
    try:
        d0, d1 = get_backend("gpuemu2").devices()
        assert (d0.id, d1.id) == (0, 1)
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        a = minijax.device_put(x, d1)
        in_use0 = rts[0].allocator.stats["bytes_in_use"]
        y = minijax.jit(lambda v: jnp.sort(-v, axis=1) * 2)(a)
        assert y.device == d1
        np.testing.assert_array_equal(np.asarray(y), np.sort(-x, axis=1) * 2)
        assert rts[0].allocator.stats["bytes_in_use"] == in_use0
        assert rts[1].allocator.stats["bytes_in_use"] >= y.nbytes
        b = minijax.device_put(x, d0)
        z = minijax.jit(lambda v: jnp.sort(-v, axis=1) * 2)(b)
        assert z.device == d0
        np.testing.assert_array_equal(np.asarray(z), np.asarray(y))
    finally:
        unregister_backend("gpuemu2")


def test_debug_two_prints_kernel_times_with_host_timers_when_emulated(gpu, capsys):
    old = config.read("minijax_debug")
    config.update("minijax_debug", 2)
    try:
        y = minijax.jit(lambda v: jnp.exp(v) + 1)(minijax.device_put(np.ones(64, np.float32),
                                                                     gpu))
        np.testing.assert_allclose(np.asarray(y), np.e + 1, rtol=1e-6)
    finally:
        config.update("minijax_debug", old)
    err = capsys.readouterr().err
    assert " us, " in err and "GB/s (host timer)" in err


def test_opcode_coverage_reports_the_gpu_program_without_a_driver():
    header, rows, _ = coverage(["cuda"])
    cell = {r[0]: r[3] for r in rows}
    for op in ("gather", "scatter", "sort", "topk", "reduce-window", "select-and-scatter",
               "convolution", "add", "reduce", "transpose", "fusion"):
        assert cell[op] == "kernel", op
    assert cell["dot"] == "library" and cell["while"] == "program"
    assert cell["reshape"] == "view" and cell["tuple"] == "no-op"
    assert cell["fft"] == "thunk" and cell["cholesky"] == "thunk"
    assert "unsupported" not in set(cell.values()) - {cell.get("stochastic-convert")}


def test_intermediates_go_back_to_the_allocator(gpu):
    rt = get_backend("gpuemu").runtime()
    x = minijax.device_put(np.ones((64, 64), np.float32), gpu)
    f = minijax.jit(lambda v: jnp.exp(v @ v).sum(axis=1) + jnp.sort(v, axis=0).sum(axis=0))
    y = f(x)
    y = f(x).block_until_ready()
    before = rt.allocator.stats["raw_allocs"]
    for _ in range(3):
        y = f(x)
    np.testing.assert_allclose(np.asarray(y), np.exp(64.0) * 64 + 64, rtol=1e-5)
    assert rt.allocator.stats["raw_allocs"] == before      # every call reused cached blocks
    live = rt.allocator.stats["bytes_in_use"]
    del y
    assert rt.allocator.stats["bytes_in_use"] < live


def test_while_and_cond_run_as_device_programs(gpu):
    """Loops and branches run their bodies as device steps; only the predicate (one scalar
    per iteration) is read on the host."""
    def f(x, n):
        def body(i, v):
            return jnp.where(v > 1.0, v * 0.5, v + 1.0)
        y = minijax.lax.fori_loop(0, n, body, x)
        return minijax.lax.cond(n > 3, lambda v: v.sum(), lambda v: v.max(), y)

    x = np.linspace(0, 3, 10, dtype=np.float32)
    module = optimize(minijax.jit(f).lower(x, np.int32(5)).module, CompileOptions())
    text = get_backend("gpuemu").compile(module).as_text()
    assert "while (nested programs" in text and "HOST" not in text
    ref = x.copy()
    for _ in range(5):
        ref = np.where(ref > 1.0, ref * 0.5, ref + 1.0)
    got = minijax.jit(f)(minijax.device_put(x, gpu), minijax.device_put(np.int32(5), gpu))
    np.testing.assert_allclose(np.asarray(got), ref.sum(), rtol=1e-6)
    got2 = minijax.jit(f)(minijax.device_put(x, gpu), minijax.device_put(np.int32(2), gpu))
    ref2 = x.copy()
    for _ in range(2):
        ref2 = np.where(ref2 > 1.0, ref2 * 0.5, ref2 + 1.0)
    np.testing.assert_allclose(np.asarray(got2), ref2.max(), rtol=1e-6)


def test_jit_backend_argument_cost_and_memory_analysis(gpu):
    f = minijax.jit(lambda x: jnp.exp(x).sum(), backend="gpuemu")
    x = np.full((8, 8), 0.5, np.float32)
    compiled = f.lower(x).compile()
    assert compiled.cost_analysis()["transcendentals"] == 64.0
    assert "arguments 256 B" in str(compiled.memory_analysis())
    y = f(x)
    assert y.device == gpu
    np.testing.assert_allclose(float(y), 64 * np.exp(0.5), rtol=1e-6)


def test_counted_loops_read_no_scalar_per_iteration(gpu):
    """fori_loop/scan: counter, limit and step are read once, not once per iteration; a
    data-dependent while loop still reads its predicate every iteration."""
    rt = get_backend("gpuemu").runtime()
    reads = []
    download = rt.download

    def counting(buf, shape, dtype):
        if tuple(shape) == ():
            reads.append(1)
        return download(buf, shape, dtype)
    rt.download = counting
    try:
        x = np.linspace(0, 3, 10, dtype=np.float32)
        f = minijax.jit(lambda v, n: minijax.lax.fori_loop(
            0, n, lambda i, u: jnp.where(u > 1.0, u * 0.5, u + i.astype(u.dtype)), v))
        text = get_backend("gpuemu").compile(optimize(
            f.lower(x, np.int32(3)).module, CompileOptions())).as_text()
        assert "counted loop" in text
        got = f(minijax.device_put(x, gpu), minijax.device_put(np.int32(40), gpu))
        got.block_until_ready()
        assert len(reads) <= 3
        ref = x.copy()
        for i in range(40):
            ref = np.where(ref > 1.0, ref * 0.5, ref + np.float32(i))
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-6)
        reads.clear()
        g = minijax.jit(lambda v: minijax.lax.while_loop(lambda u: u.sum() < 100.0,
                                                         lambda u: u * 2 + 1, v))
        ref = x.copy()
        while ref.sum() < 100.0:
            ref = ref * 2 + 1
        np.testing.assert_allclose(np.asarray(g(minijax.device_put(x, gpu))), ref, rtol=1e-6)
        assert len(reads) >= 3          # one predicate per iteration
    finally:
        rt.download = download


def test_loops_whose_limit_changes_are_not_counted(gpu):
    def f(x):
        return minijax.lax.while_loop(lambda s: s[0] < s[1],
                                      lambda s: (s[0] + 1, s[1] - 1, s[2] * 2), (0, 9, x))[2]
    x = np.ones(4, np.float32)
    module = optimize(minijax.jit(f).lower(x).module, CompileOptions())
    whiles = [i for c in module.computations for i in c.instructions if i.opcode == "while"]
    assert whiles and all(counted_loop(w) is None for w in whiles)
    np.testing.assert_array_equal(np.asarray(minijax.jit(f)(minijax.device_put(x, gpu))),
                                  x * 2 ** 5)
    scan = minijax.jit(lambda v: minijax.lax.scan(lambda c, u: (c + u, c * u), 0.0, v)[1])
    module = optimize(scan.lower(x).module, CompileOptions())
    whiles = [i for c in module.computations for i in c.instructions if i.opcode == "while"]
    assert whiles and all(counted_loop(w) is not None for w in whiles)
    v = np.arange(1, 6, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(scan(minijax.device_put(v, gpu))),
                                  np.concatenate([[0], np.cumsum(v)[:-1]]) * v)
