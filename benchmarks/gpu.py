"""GPU benchmarks: minijax's cuda backend side by side with real JAX on the same GPU.

    python benchmarks/gpu.py [--quick] [--only NAME[,NAME]] [--repeat N]

Workloads (float32 unless named): fused elementwise (GELU) and a fused full reduction
(sum(x + y*z)) at 2^26 elements, row softmax 65536x1024, matmul 4096^3 in float32 and
bfloat16, the MLP and CNN training steps at GPU batch sizes, the tiny jitted call (host
overhead), and the first call of the MLP step in a fresh process (compile included), then
again from the disk cache (MINIJAX_CACHE_DIR / JAX's compilation cache). Bandwidth-bound
rows report GB/s against a device-to-device copy measured in the same run. Every result
is blocked on; each figure is the median after warm-up.

Without a CUDA driver and GPU it prints why and exits with status 2.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import workloads as W  # noqa: E402

import minijax  # noqa: E402
import minijax.lax as mj_lax  # noqa: E402
from minijax.backends import get_backend  # noqa: E402
from minijax.backends.cuda.driver import cuda_devices  # noqa: E402


def _workloads(quick: bool):
    big = 1 << (22 if quick else 26)
    rows = 4096 if quick else 65536
    mm = 1024 if quick else 4096
    return {
        "gelu": ("fused elementwise GELU", lambda: W.make_gelu(big), True),
        "fused_sum": ("fused full reduction sum(x+y*z)", lambda: W.make_fused_sum(big), True),
        "softmax": (f"row softmax {rows}x1024", lambda: W.make_softmax((rows, 1024)), True),
        "matmul": (f"matmul {mm}^3 f32", lambda: W.make_matmul(mm), False),
        "matmul_bf16": (f"matmul {mm}^3 bf16", lambda: _bf16(W.make_matmul(mm)), False),
        "mlp": ("MLP training step, batch 4096", lambda: W.make_mlp(4096), False),
        "cnn": ("CNN training step, batch 256", lambda: W.make_cnn(256), False),
        "tiny": ("tiny jitted call (8 floats)", lambda: W.make_tiny(8), False),
    }


def _bf16(made):
    np_fn, traced, args = made
    try:
        import ml_dtypes
    except ImportError:
        return np_fn, traced, None
    return np_fn, traced, [a.astype(ml_dtypes.bfloat16) for a in args]


def _time(fn, args, repeat: int) -> float:
    out = fn(*args)
    minijax.block_until_ready(out)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        _block(out)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _block(out):
    for leaf in out if isinstance(out, (list, tuple)) else [out]:
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()


def _copy_gbps(repeat: int) -> float:
    """Device-to-device copy bandwidth (read + write bytes per second) on GPU 0."""
    rt = get_backend("cuda").runtime()
    n = 1 << 28
    src, dst = rt.allocate(n, "copy bench"), rt.allocate(n, "copy bench")
    rt.copy(dst, src, n)
    rt.synchronize()
    best = []
    for _ in range(repeat):
        start = rt.event()
        rt.copy(dst, src, n)
        end = rt.event()
        best.append(rt.elapsed_ms(start, end) / 1e3)
    src.release()
    dst.release()
    return 2 * n / statistics.median(best) / 1e9


_FIRST_CALL = """
import os, sys, time
sys.path.insert(0, {bench!r}); sys.path.insert(0, {root!r})
import workloads as W
if {use_jax}:
    import jax
    lib, lax, grad, dev = jax, jax.lax, jax.grad, jax.devices("gpu")[0]
    jax.config.update("jax_compilation_cache_dir", os.environ["CACHE"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
else:
    import minijax
    import minijax.lax as lax
    lib, grad, dev = minijax, minijax.grad, minijax.devices("cuda")[0]
_, traced, args = W.make_mlp(4096)
args = [lib.device_put(a, dev) for a in args]
t0 = time.perf_counter()
out = lib.jit(traced(lax, grad))(*args)
lib.block_until_ready(out)
print(time.perf_counter() - t0)
"""


def _first_call(use_jax: bool) -> tuple[float, float]:
    """Seconds of the MLP step's first call in a fresh process: cold, then from disk."""
    script = _FIRST_CALL.format(bench=os.path.dirname(os.path.abspath(__file__)), root=ROOT,
                                use_jax=use_jax)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, MINIJAX_CACHE_DIR=cache, CACHE=cache)
        times = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                 text=True, check=True)
            times.append(float(out.stdout.strip().splitlines()[-1]))
    return times[0], times[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", default="")
    p.add_argument("--repeat", type=int, default=10)
    opts = p.parse_args(argv)
    if not cuda_devices():
        print("benchmarks/gpu.py: no CUDA driver/GPU on this machine (minijax.devices('cuda') "
              "is empty); run it on a machine with an NVIDIA GPU and cuda-python installed.",
              file=sys.stderr)
        return 2
    gpu = minijax.devices("cuda")[0]
    try:
        import jax
        jgpu = jax.devices("gpu")[0]
    except Exception:  # noqa: BLE001 - JAX without CUDA: minijax column only
        jax, jgpu = None, None
    copy = _copy_gbps(opts.repeat)
    print(f"device: {gpu.device_kind}; device-to-device copy: {copy:.0f} GB/s")
    print(f"{'workload':40s} {'minijax ms':>11s} {'JAX ms':>9s} {'mj/JAX':>7s} {'GB/s':>7s} "
          f"{'% copy':>7s}")
    only = set(filter(None, opts.only.split(",")))
    for key, (label, make, bandwidth) in _workloads(opts.quick).items():
        if only and key not in only:
            continue
        _np_fn, traced, args = make()
        if args is None:
            print(f"{label:40s} {'n/a (no ml_dtypes)':>11s}")
            continue
        try:
            mj_args = [minijax.device_put(a, gpu) for a in args]
            t_mj = _time(minijax.jit(traced(mj_lax, minijax.grad)), mj_args, opts.repeat)
        except Exception as exc:  # noqa: BLE001 - report and go on with the next workload
            print(f"{label:40s} minijax failed: {type(exc).__name__}: {exc}")
            continue
        t_jax = float("nan")
        if jax is not None:
            j_args = [jax.device_put(a, jgpu) for a in args]
            t_jax = _time(jax.jit(traced(jax.lax, jax.grad)), j_args, opts.repeat)
        line = f"{label:40s} {t_mj * 1e3:11.3f} {t_jax * 1e3:9.3f} {t_mj / t_jax:7.2f}"
        if bandwidth:
            nbytes = sum(np.asarray(a).nbytes for a in args) * (1 if "sum" in key else 2)
            gbps = nbytes / t_mj / 1e9
            line += f" {gbps:7.0f} {100 * gbps / copy:6.0f}%"
        print(line)
    if not only or "compile" in only:
        cold, warm = _first_call(False)
        j_cold, j_warm = _first_call(True) if jax is not None else (float("nan"),) * 2
        print(f"{'MLP step first call (fresh process)':40s} {cold * 1e3:11.1f} "
              f"{j_cold * 1e3:9.1f} {cold / j_cold:7.2f}")
        print(f"{'MLP step first call (disk cache)':40s} {warm * 1e3:11.1f} "
              f"{j_warm * 1e3:9.1f} {warm / j_warm:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
