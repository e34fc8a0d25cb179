"""Smoke test: benchmarks/run.py runs a cheap workload in --quick mode and prints its table."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "run.py")


def _run(*args, timeout=240):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_quick_tiny_prints_table():
    out = _run("--quick", "--only", "tiny,sum", "--repeat", "3")
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    header = next(line for line in lines if line.startswith("workload"))
    for col in ("numpy", "minijax", "jax", "mj/jax", "np/mj", "flt mj", "rate mj (%peak)"):
        assert col in header
    machine = next(line for line in lines if line.startswith("machine:"))
    assert "GB/s" in machine and "GFLOP/s" in machine and "load average" in machine
    for label in ("tiny jit call (8 elems)", "sum(x+y*z) 2^24"):
        row = next(line for line in lines if line.startswith(label))
        assert "us" in row or "ms" in row
    # sum is memory-bound: its row gives the achieved GB/s and its share of the bandwidth
    assert "%)" in next(line for line in lines if line.startswith("sum(x+y*z)"))


def test_list_and_unknown_workload():
    out = _run("--list")
    assert out.returncode == 0 and "softmax" in out.stdout and "mlp_disk" in out.stdout
    bad = _run("--only", "nope")
    assert bad.returncode != 0 and "unknown workload" in bad.stderr
