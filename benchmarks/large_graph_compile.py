"""Compile time of a large graph of data movement: `n` rounds of slices, transposes and
concatenates of a few arrays (the shape of code that splits, permutes and reassembles
tensors in a loop), jitted.

    python benchmarks/large_graph_compile.py [--n 100] [--repeat 3] [--profile]

Prints the first-call time split by MINIJAX_DEBUG=1's phases (trace, lower, optimize,
codegen) and the compiled function's run time; --profile adds the top of a cProfile of one
compile.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import minijax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402


def make_program(n: int = 100):
    """f(a, b, c) built from n rounds of slice / transpose / concatenate / add."""
    def f(a, b, c):
        outs = []
        x, y = a, b
        for i in range(n):
            k = 1 + i % 7
            s = x[k:k + 24, :]                       # [24, 32]
            t = jnp.transpose(y[:, i % 8:i % 8 + 24])  # [24, 32]
            u = jnp.concatenate([s, t, c[i % 5:i % 5 + 24]], axis=1)  # [24, 96]
            v = jnp.transpose(u)[:32] * 0.5 + s.T[:, :24].sum() * 1e-3  # [32, 24]
            x = jnp.concatenate([x[8:], v.T[:8]], axis=0)               # [32, 32]
            y = jnp.concatenate([y[:, 1:], v[:, :1]], axis=1)          # [32, 32]
            outs.append(u[:, ::3])
        return jnp.concatenate(outs, axis=0), x, y
    return f


def inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((32, 32)).astype(np.float32) for _ in range(3)]


def compile_once(n: int):
    """(seconds for trace + compile + first run, the jitted function)."""
    minijax.clear_caches()
    fn = minijax.jit(make_program(n))
    args = inputs()
    t0 = time.perf_counter()
    minijax.block_until_ready(fn(*args))
    return time.perf_counter() - t0, fn


def run_time(fn, repeat: int = 50) -> float:
    args = [minijax.device_put(a) for a in inputs()]
    minijax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        minijax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    from minijax.backends import get_backend
    get_backend().devices()  # backend start-up is not compilation
    firsts = []
    for _ in range(args.repeat):
        t, fn = compile_once(args.n)
        firsts.append(t)
    print(f"large graph (n={args.n}): first call {min(firsts):.2f} s (best of "
          f"{args.repeat}), run {run_time(fn) * 1e6:.0f} us")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        compile_once(args.n)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
