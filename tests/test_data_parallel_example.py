"""examples/data_parallel.py trains the same loss curve on 1 and N devices (pmap and
shard_map), and benchmarks/data_parallel.py prints its table in --quick mode."""

import os
import subprocess
import sys

from child_process import ROOT, run_child


def test_example_same_loss_curve_over_devices():
    out = run_child("import sys; sys.path.insert(0, 'examples'); import data_parallel as dp; "
                    "r = dp.main(['--steps', '15', '--batch', '64']); "
                    "print(len(r))", MINIJAX_NUM_CPU_DEVICES="4", XLA_FLAGS="")
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert "4 CPU devices" in lines[0]
    curve = [line for line in lines if "max |loss - 1-device loss|" in line]
    assert len(curve) == 4
    for line in curve:
        assert float(line.rsplit("=", 1)[1]) < 1e-4, line
    first = [line for line in lines if "loss" in line and "->" in line]
    start, end = first[1].split("loss ")[1].split(" in ")[0].split(" -> ")
    assert float(end) < float(start)              # it learns


def test_benchmark_quick_prints_its_rows():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "data_parallel.py"),
                          "--quick"], capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    for label in ("minijax jit, 1 device, 1 thread", "minijax pmap, 2 devices"):
        row = next(line for line in out.stdout.splitlines() if line.startswith(label))
        assert "ms" in row and "failed" not in row
