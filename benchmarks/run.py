"""Side-by-side benchmarks: NumPy, minijax and (when importable) real JAX, in one process.

    python benchmarks/run.py [--quick] [--only NAME[,NAME]] [--repeat N] [--list]

Each workload reports the median of repeated runs after warm-up (every result blocked on):
NumPy first, then minijax and JAX in interleaved rounds so that the host's load changes fall
on both alike (see timed_side_by_side), and the ratios minijax/JAX (lower is better for
minijax) and NumPy/minijax (higher is better). Workloads are float32, from issue 5; names
for --only are the short keys that `--list` prints. minijax and JAX run the same program
(benchmarks/workloads.py, written in `lax` terms, plus the MLP step written with jnp as
users write it); NumPy runs a hand- written equivalent (manual backward passes for
training). Each row also gives minor page faults per call and the achieved GB/s (memory-
bound rows) or GFLOP/s (dot-bound rows) against the copy bandwidth and FMA peak measured at
the start of the same run.

First-call workloads (mlp_compile, mlp_disk) run minijax in child processes; those children
drop PYTHONDONTWRITEBYTECODE from their environment so that, like a real install, they
import minijax from .pyc files instead of recompiling its sources every time, and they do
not import JAX (its objects would make every full garbage collection ~80 ms slower).
"""

from __future__ import annotations

import argparse
import os
import resource
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

# A first-call child runs minijax alone: JAX's ~70k extra Python objects would make each
# full garbage collection in it cost ~80 ms more than in a minijax-only process.
try:
    if "--child-first-call" in sys.argv:
        raise ImportError("not needed in a minijax first-call child")
    import jax as real_jax
    real_jax.config.update("jax_platforms", "cpu")
    import jax.lax as jax_lax
except Exception:  # noqa: BLE001 - JAX is optional
    real_jax = jax_lax = None

#: key -> (label, maker, full size, quick size, kind)
WORKLOADS = {
    "sum": ("sum(x+y*z) 2^24", W.make_fused_sum, 1 << 24, 1 << 16, "jit"),
    "gelu": ("tanh-GELU 2^24", W.make_gelu, 1 << 24, 1 << 16, "jit"),
    "softmax": ("row softmax 16384x1024", W.make_softmax, (16384, 1024), (64, 256), "jit"),
    "matmul": ("matmul 1024^3", W.make_matmul, 1024, 64, "jit"),
    "mlp": ("MLP train step b256 (lax)", W.make_mlp, 256, 8, "jit"),
    "mlp_jnp": ("MLP train step b256 (jnp)", W.make_mlp_jnp, 256, 8, "jit"),
    "mlp_compile": ("MLP step 1st-call compile", W.make_mlp, 256, 8, "compile"),
    "mlp_disk": ("MLP step compile, disk cache", W.make_mlp, 256, 8, "disk"),
    "cnn": ("CNN train step b32", W.make_cnn, 32, 2, "jit"),
    "rnn": ("scan RNN 100 steps", W.make_rnn, 100, 5, "jit"),
    "tiny": ("tiny jit call (8 elems)", W.make_tiny, 8, 8, "jit-tiny"),
    "eager": ("eager add (8 elems)", None, 8, 8, "eager"),
}


#: key -> (unit, amount of work per call at a size): bytes a memory-bound workload must move
#: at least (GB/s), or multiply-add flops of a dot-bound one (GFLOP/s).
WORK = {
    "sum": ("GB/s", lambda n: 3 * 4 * n),
    "gelu": ("GB/s", lambda n: 2 * 4 * n),
    "softmax": ("GB/s", lambda s: 2 * 4 * s[0] * s[1]),
    "matmul": ("GFLOP/s", lambda n: 2 * n ** 3),
    "mlp": ("GFLOP/s", W.mlp_flops),
    "mlp_jnp": ("GFLOP/s", W.mlp_flops),
    # forward convolution and the kernel gradient (the input needs none); dense is noise
    "cnn": ("GFLOP/s", lambda b: 2 * (2 * b * 28 * 28 * 9 * 32 * 64)),
    "rnn": ("GFLOP/s", lambda steps: 2 * steps * 32 * (64 + 128) * 128),
}


def _minflt() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


#: Seconds to wait after timing NumPy: its BLAS's threads spin for a while after each call
#: (~0.1-0.2 s measured here), taking a core from whatever runs next.
BLAS_SPIN_PAUSE = 0.5

#: Rows whose calls take less than this many seconds are timed over SHORT_ROW_ROUNDS rounds
#: at least (see run_jit).
SHORT_CALL_S = 0.005
SHORT_ROW_ROUNDS = 25


def timed_side_by_side(contestants, repeat=10, warmup=2, inner=1) -> dict:
    """Times the contestants (name -> (fn, args, block)) in interleaved rounds, so that a
    change in the machine's load (this host's neighbours come and go within seconds) falls
    on all of them alike instead of on whichever ran during it. In each round every
    contestant, in an order rotating from round to round, makes one untimed call (which
    takes its data back into the caches and lets the previous contestant's threads go
    quiet) and then `inner` timed, blocked calls.

    Returns name -> (median time per call, minor page faults per call in the steady state:
    over the second half of the rounds, the first half being the last of the warm-up for
    caches that fill lazily)."""
    names = list(contestants)
    for name in names:
        fn, args, block = contestants[name]
        for _ in range(warmup):
            block(fn(*args))
    times = {name: [] for name in names}
    faults = dict.fromkeys(names, 0)
    half = repeat // 2
    for k in range(repeat):
        shift = k % len(names)
        for name in names[shift:] + names[:shift]:
            fn, args, block = contestants[name]
            block(fn(*args))
            f0 = _minflt()
            t0 = time.perf_counter()
            for _ in range(inner):
                r = fn(*args)
            block(r)
            times[name].append((time.perf_counter() - t0) / inner)
            if k >= half:
                faults[name] += _minflt() - f0
    calls = (repeat - half) * inner
    return {name: (statistics.median(times[name]), faults[name] / calls) for name in names}


def time_libraries(numpy_fn, libraries, repeat=10, inner=1) -> dict:
    """NumPy timed alone first, then (after BLAS_SPIN_PAUSE) minijax and JAX side by side:
    name -> (median time per call, minor page faults per call)."""
    timed = timed_side_by_side({"numpy": numpy_fn}, repeat, inner=inner)
    time.sleep(BLAS_SPIN_PAUSE)
    if libraries:
        timed.update(timed_side_by_side(libraries, repeat, inner=inner))
    return timed


def machine_peaks(quick: bool) -> dict:
    """This machine's copy bandwidth and FMA peak, measured now (same load as the rows):
    bandwidth is the best of 5 NumPy copies of a 128 MiB float32 array into a warm one
    (read + write bytes); the FMA peak is the best of 3 float32 matmuls of 2048^3 through
    NumPy's BLAS on all its threads (2*n^3 flops): the fastest multiply-add loop at hand."""
    n = 1 << (20 if quick else 25)
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    bandwidth = 2 * src.nbytes / best / 1e9
    m = 1024 if quick else 2048
    a = np.ones((m, m), np.float32)
    a @ a
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t0)
    time.sleep(BLAS_SPIN_PAUSE)
    return {"GB/s": bandwidth, "GFLOP/s": 2 * m ** 3 / best / 1e9,
            "text": f"copy bandwidth {bandwidth:.1f} GB/s (NumPy copy of {src.nbytes >> 20} "
                    f"MiB, read+write, best of 5); FMA peak {2 * m ** 3 / best / 1e9:.1f} "
                    f"GFLOP/s (float32 matmul {m}^3 via NumPy's BLAS, all threads, best of 3)"}


def _block_mj(r):
    return minijax.block_until_ready(r)


def _block_jax(r):
    return real_jax.block_until_ready(r)


def _libraries():
    libs = [("minijax", mj_lax, minijax.grad, minijax.jit, minijax.device_put, _block_mj)]
    if real_jax is not None:
        libs.append(("jax", jax_lax, real_jax.grad, real_jax.jit, real_jax.device_put,
                     _block_jax))
    return libs


def run_jit(maker, size, repeat, tiny=False):
    """NumPy's and each library's jitted time, timed side by side (exceptions in building a
    library's function are reported per library). `tiny` workloads time batches of 200
    calls (per-call cost in microseconds); rows whose calls take under SHORT_CALL_S get at
    least SHORT_ROW_ROUNDS rounds, as a few milliseconds' calls on this shared host scatter
    by +-30% from one to the next and a median of 9 moves with them."""
    np_fn, traced, args = maker(size)
    inner = 200 if tiny else 1
    reps = max(repeat, SHORT_ROW_ROUNDS) if tiny else repeat
    res = {"faults": {}}
    libraries = {}
    for name, lax, grad, jit, put, block in _libraries():
        try:
            fn = jit(traced(lax, grad))
            dev = [put(a) for a in args]
            block(fn(*dev))
            t0 = time.perf_counter()
            block(fn(*dev))
            if time.perf_counter() - t0 < SHORT_CALL_S:
                reps = max(reps, SHORT_ROW_ROUNDS)
        except Exception as e:  # noqa: BLE001 - reported in the table's notes
            res[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:90]}"
            continue
        libraries[name] = (fn, dev, block)
    timed = time_libraries((np_fn, args, lambda r: r), libraries, reps, inner)
    for name, (t, flt) in timed.items():
        res[name] = t
        if name != "numpy":
            res["faults"][name] = flt
    return res


def _first_call(lib_name, maker, size) -> float:
    for name, lax, grad, jit, put, block in _libraries():
        if name == lib_name:
            _, traced, args = maker(size)
            dev = [put(a) for a in args]
            fn = jit(traced(lax, grad))
            if name == "minijax":
                minijax.clear_caches()
                from minijax.backends import get_backend
                get_backend().devices()  # backend start-up is not compilation
            t0 = time.perf_counter()
            block(fn(*dev))
            return time.perf_counter() - t0
    raise KeyError(lib_name)


def run_compile(key, maker, size, quick, repeat):
    """First-call time (trace + compile + one run) of a fresh jitted function: minijax in
    new processes without a disk cache (its in-memory object cache would hit otherwise),
    JAX in this process on fresh closures."""
    res = {"numpy": None}
    times = []
    for _ in range(max(1, min(repeat, 3))):
        t = _child_first_call(key, quick, {"MINIJAX_CACHE_DIR": ""})
        if isinstance(t, str):
            return dict(res, minijax=t)
        times.append(t)
    res["minijax"] = statistics.median(times)
    if real_jax is not None:
        res["jax"] = statistics.median([_first_call("jax", maker, size)
                                        for _ in range(max(1, min(repeat, 3)))])
    return res


def _child_first_call(key, quick, env_update):
    cmd = [sys.executable, os.path.abspath(__file__), "--child-first-call", key]
    if quick:
        cmd.append("--quick")
    env = dict(os.environ, **env_update)
    # Real installs have .pyc files; without them every child recompiles minijax's sources.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return "child failed: " + out.stderr[-200:]
    return float(out.stdout.strip().splitlines()[-1])


def run_disk(key, size, quick):
    """minijax's first-call time in a new process whose MINIJAX_CACHE_DIR is warm."""
    with tempfile.TemporaryDirectory(prefix="mj-bench-cache-") as d:
        times = []
        for k in range(3):
            t = _child_first_call(key, quick, {"MINIJAX_CACHE_DIR": d})
            if isinstance(t, str):
                return {"numpy": None, "minijax": t}
            if k:
                times.append(t)
    return {"numpy": None, "minijax": min(times), "jax": None}


def run_eager(repeat):
    """One eager elementwise add on 8-element arrays, timed side by side."""
    a = np.ones(8, np.float32)
    x = minijax.device_put(a)
    libraries = {"minijax": (lambda: mj_lax.add(x, x), (), _block_mj)}
    if real_jax is not None:
        jx = real_jax.device_put(a)
        libraries["jax"] = (lambda: jx + jx, (), _block_jax)
    timed = time_libraries((lambda: a + a, (), lambda r: r), libraries, max(repeat, 25), 500)
    return {name: t for name, (t, _) in timed.items()}


def fmt(v) -> str:
    if v is None:
        return f"{'-':>11}"
    if isinstance(v, str):
        return f"{'n/a':>11}"
    if v < 1e-3:
        return f"{v * 1e6:8.1f} us"
    if v < 1.0:
        return f"{v * 1e3:8.2f} ms"
    return f"{v:8.3f} s "


def _ratio(a, b) -> str:
    if isinstance(a, float) and isinstance(b, float) and b > 0:
        return f"{a / b:7.2f}"
    return f"{'-':>7}"


def _faults(v) -> str:
    return f"{'-':>7}" if v is None else f"{v:7.1f}"


def _rate(t, amount, unit, peaks) -> str:
    if amount is None or not isinstance(t, float) or t <= 0:
        return f"{'-':>15}"
    rate = amount / t / 1e9
    return f"{rate:7.1f} ({rate / peaks[unit] * 100:3.0f}%)".rjust(15)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--only", default="", help="comma-separated workload keys")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--list", action="store_true", help="list workload keys and exit")
    parser.add_argument("--child-first-call", default="", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.list:
        for key, (label, *_rest) in WORKLOADS.items():
            print(f"{key:12} {label}")
        return
    if opts.child_first_call:
        _, maker, size, quick_size, _ = WORKLOADS[opts.child_first_call]
        print(_first_call("minijax", maker, quick_size if opts.quick else size))
        return
    keys = list(WORKLOADS)
    if opts.only:
        keys = [k.strip() for k in opts.only.split(",")]
        unknown = [k for k in keys if k not in WORKLOADS]
        if unknown:
            parser.error(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
    print(f"minijax backend={minijax.default_backend()}; "
          f"jax {real_jax.__version__ if real_jax else 'not installed'}; "
          f"numpy {np.__version__}; {os.cpu_count()} cpus")
    peaks = machine_peaks(opts.quick)
    print(f"machine: {peaks['text']}; load average {os.getloadavg()[0]:.2f}")
    header = (f"{'workload':30} {'numpy':>11} {'minijax':>11} {'jax':>11} "
              f"{'mj/jax':>7} {'np/mj':>7} {'flt mj':>7} {'flt jax':>7} "
              f"{'rate mj (%peak)':>15} {'rate jax':>15}")
    print(header)
    print("-" * len(header))
    notes = []
    for key in keys:
        label, maker, size, quick_size, kind = WORKLOADS[key]
        size = quick_size if opts.quick else size
        if kind in ("jit", "jit-tiny"):
            res = run_jit(maker, size, opts.repeat, tiny=kind == "jit-tiny")
        elif kind == "compile":
            res = run_compile(key, maker, size, opts.quick, opts.repeat)
        elif kind == "disk":
            res = run_disk(key, size, opts.quick)
        else:
            res = run_eager(opts.repeat)
        notes += [f"{label} [{lib}]: {v}" for lib, v in res.items() if isinstance(v, str)]
        mj, jx, npv = res.get("minijax"), res.get("jax"), res.get("numpy")
        faults = res.get("faults", {})
        unit, work = WORK.get(key, ("GB/s", None))
        amount = work(size) if work is not None else None
        print(f"{label:30} {fmt(npv)} {fmt(mj)} {fmt(jx)} {_ratio(mj, jx)} {_ratio(npv, mj)} "
              f"{_faults(faults.get('minijax'))} {_faults(faults.get('jax'))} "
              f"{_rate(mj, amount, unit, peaks)} {_rate(jx, amount, unit, peaks)}")
        sys.stdout.flush()
    for n in notes:
        print("note:", n)
    print("flt: minor page faults per call (second half of the timed rounds); rate: GB/s "
          "(bytes the workload must move) or GFLOP/s (its dots' flops), in % of the machine "
          "line's copy bandwidth or FMA peak")


if __name__ == "__main__":
    main()
