"""Side-by-side benchmarks: NumPy, minijax and (when importable) real JAX, in one process.

    python benchmarks/run.py [--quick] [--only NAME[,NAME]]

Each workload reports the median of repeated runs after warm-up (every result blocked on),
and the ratios minijax/JAX (lower is better for minijax) and NumPy/minijax (higher is
better). Workloads are float32, from issue 5.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/benchmarks/", 1)[0])

import minijax  # noqa: E402

try:
    import jax as real_jax
    import jax.numpy as real_jnp
    real_jax.config.update("jax_platforms", "cpu")
except Exception:  # noqa: BLE001 - JAX is optional
    real_jax = real_jnp = None


def median_time(fn, *args, repeat=10, warmup=2, block=None) -> float:
    block = block or (lambda r: r)
    for _ in range(warmup):
        block(fn(*args))
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        block(fn(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _block_mj(r):
    return minijax.block_until_ready(r)


def _block_jax(r):
    return real_jax.block_until_ready(r)


# --------------------------------------------------------------------------- workloads


def w_fused_sum(lib, n):
    def f(x, y, z):
        return lib.sum(x + y * z)
    rng = np.random.default_rng(0)
    return f, [rng.standard_normal(n).astype(np.float32) for _ in range(3)]


def w_gelu(lib, n):
    def f(x):
        return 0.5 * x * (1 + lib.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    return f, [np.random.default_rng(1).standard_normal(n).astype(np.float32)]


def w_softmax(lib, rows_cols):
    rows, cols = rows_cols

    def f(x):
        e = lib.exp(x - lib.max(x, axis=1, keepdims=True))
        return e / lib.sum(e, axis=1, keepdims=True)
    return f, [np.random.default_rng(2).standard_normal((rows, cols)).astype(np.float32)]


def w_matmul(lib, n):
    rng = np.random.default_rng(3)
    return (lambda a, b: a @ b), [rng.standard_normal((n, n)).astype(np.float32)
                                  for _ in range(2)]


def w_tiny(lib, n):
    return (lambda x: x * 2.0 + 1.0), [np.arange(n, dtype=np.float32)]


WORKLOADS = {
    "sum(x+y*z) 2^24": (w_fused_sum, 1 << 24, 1 << 20),
    "gelu 2^24": (w_gelu, 1 << 24, 1 << 20),
    "softmax 16384x1024": (w_softmax, (16384, 1024), (1024, 1024)),
    "matmul 1024^3": (w_matmul, 1024, 256),
    "tiny jit call (8 elems)": (w_tiny, 8, 8),
}


def run_workload(name, make, size, repeat):
    results = {}
    f_np, args = make(np, size)
    results["numpy"] = median_time(f_np, *args, repeat=repeat)
    import minijax.numpy as mjnp
    f_mj, _ = make(mjnp, size)
    mj_args = [minijax.device_put(a) for a in args]
    jitted = minijax.jit(f_mj)
    results["minijax"] = median_time(jitted, *mj_args, repeat=repeat, block=_block_mj)
    if real_jax is not None:
        f_jx, _ = make(real_jnp, size)
        jx_args = [real_jax.device_put(a) for a in args]
        results["jax"] = median_time(real_jax.jit(f_jx), *jx_args, repeat=repeat,
                                     block=_block_jax)
    return results


def eager_op_cost(repeat=2000):
    import minijax.numpy as mjnp
    x = mjnp.ones(8)
    y = mjnp.ones(8)
    out = {"minijax": median_time(lambda: x + y, repeat=repeat, warmup=50) }
    a = np.ones(8, np.float32)
    out["numpy"] = median_time(lambda: a + a, repeat=repeat, warmup=50)
    if real_jax is not None:
        jx = real_jnp.ones(8)
        out["jax"] = median_time(lambda: jx + jx, repeat=repeat, warmup=50,
                                 block=_block_jax)
    return out


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.1f} us"
    return f"{seconds * 1e3:8.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--repeat", type=int, default=10)
    opts = parser.parse_args()
    print(f"minijax {minijax.__version__} backend={minijax.default_backend()}; "
          f"jax {real_jax.__version__ if real_jax else 'not installed'}; "
          f"numpy {np.__version__}")
    header = f"{'workload':28} {'numpy':>11} {'minijax':>11} {'jax':>11} " \
             f"{'mj/jax':>7} {'np/mj':>7}"
    print(header)
    print("-" * len(header))
    rows = list(WORKLOADS.items())
    if opts.only:
        wanted = set(opts.only.split(","))
        rows = [r for r in rows if r[0] in wanted]
    for name, (make, size, quick_size) in rows:
        res = run_workload(name, make, quick_size if opts.quick else size, opts.repeat)
        _print_row(name, res)
    _print_row("eager add (8 elems)", eager_op_cost())


def _print_row(name, res):
    jx = res.get("jax")
    ratio_jax = f"{res['minijax'] / jx:7.2f}" if jx else "      -"
    print(f"{name:28} {fmt(res['numpy'])} {fmt(res['minijax'])} "
          f"{fmt(jx) if jx else '          -'} {ratio_jax} {res['numpy'] / res['minijax']:7.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
