"""run_hlo end to end (subprocess) and the backend registry."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from minijax.backends import available_backends, get_backend
from minijax.backends.base import Device

HLO = textwrap.dedent("""\
    HloModule fused_sum

    add {
      a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT s = f32[] add(a, b)
    }

    ENTRY main {
      x = f32[4,3] parameter(0)
      y = f32[4,3] parameter(1)
      m = f32[4,3] multiply(x, y)
      z = f32[] constant(0)
      r = f32[4] reduce(m, z), dimensions={1}, to_apply=add
      ROOT t = (f32[4], f32[4,3]) tuple(r, m)
    }
    """)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_tool(*argv, cwd):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "minijax.tools.run_hlo", *argv], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def files(tmp_path):
    hlo = tmp_path / "m.hlo"
    hlo.write_text(HLO)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.full((4, 3), 0.5, np.float32)
    np.savez(tmp_path / "in.npz", arg0=x, arg1=y)
    return tmp_path, x, y


def test_run_hlo_end_to_end(files):
    tmp, x, y = files
    proc = run_tool("m.hlo", "--args", "in.npz", "--out", "out.npz", "--backend", "interpreter",
                    "--repeat", "3", "--compare", "interpreter", "--fail-on-mismatch", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    assert "run time: median" in proc.stdout and "over 3 run(s)" in proc.stdout
    assert "out0: max abs diff 0.000e+00" in proc.stdout
    out = np.load(tmp / "out.npz")
    assert sorted(out.files) == ["out0", "out1"]
    np.testing.assert_allclose(out["out0"], (x * y).sum(axis=1))
    np.testing.assert_array_equal(out["out1"], x * y)
    assert out["out0"].dtype == np.float32


def test_run_hlo_reports_bad_arguments(files):
    tmp, x, _ = files
    np.savez(tmp / "missing.npz", arg0=x)
    proc = run_tool("m.hlo", "--args", "missing.npz", "--backend", "interpreter", cwd=tmp)
    assert proc.returncode == 2
    assert "lacks arg1" in proc.stderr and "Traceback" not in proc.stderr
    np.savez(tmp / "shape.npz", arg0=x, arg1=np.zeros((3, 4), np.float32))
    proc = run_tool("m.hlo", "--args", "shape.npz", "--backend", "interpreter", cwd=tmp)
    assert proc.returncode == 2
    assert "arg1 has shape (3, 4)" in proc.stderr
    proc = run_tool("m.hlo", "--backend", "interpreter", cwd=tmp)
    assert proc.returncode == 2 and "--args" in proc.stderr
    proc = run_tool("nope.hlo", "--args", "in.npz", "--backend", "interpreter", cwd=tmp)
    assert proc.returncode == 2 and "cannot read" in proc.stderr


def test_interpreter_backend_and_devices(monkeypatch):
    backend = get_backend("interpreter")
    assert backend is get_backend("interpreter")
    assert backend.name == "interpreter"
    assert "interpreter" in available_backends()
    assert repr(Device("cpu", 0)) == "CpuDevice(id=0)"
    assert repr(Device("cuda", 1)) == "CudaDevice(id=1)"
    from minijax.compiler.hlo.parser import parse_module
    exe = backend.compile(parse_module(HLO), None)
    assert exe.kernel_count == 2  # multiply, reduce
    assert "reduce" in exe.as_text()
    x = np.ones((4, 3), np.float32)
    r, m = exe.execute([x, x])
    np.testing.assert_array_equal(r, [3, 3, 3, 3])
    from minijax.config import config
    old = config.minijax_backend
    try:
        config.update("minijax_backend", "interpreter")
        assert get_backend() is backend
        config.update("minijax_backend", "tpu")
        with pytest.raises(ValueError, match="MINIJAX_BACKEND"):
            get_backend()
    finally:
        config.update("minijax_backend", old)
    with pytest.raises(ValueError, match="unknown backend"):
        get_backend("tpu")


def test_backends_import_is_lazy():
    code = ("import sys, minijax.backends as b; b.get_backend('interpreter'); "
            "print('llvmlite' in sys.modules, 'cuda' in sys.modules)")
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("stage", ["before_optimizations", "after_optimizations"])
def test_dumped_linalg_module_replays_in_a_fresh_process(tmp_path, stage):
    """Custom-call targets (minijax.linalg.*) are registered statically: a module dumped
    from jit(jnp.linalg.cholesky) and friends runs with run_hlo in a new process."""
    dump = tmp_path / "dump"
    script = textwrap.dedent("""\
        import numpy as np, minijax, minijax.numpy as jnp
        a = np.array([[4.0, 2.0, 0.6], [2.0, 5.0, 1.5], [0.6, 1.5, 3.0]], np.float32)
        f = minijax.jit(lambda m: (jnp.linalg.cholesky(m), jnp.linalg.qr(m)[1],
                                   jnp.linalg.eigh(m)[0]))
        f(a)
        np.savez("in.npz", arg0=a)
        """)
    env = dict(os.environ, PYTHONPATH=REPO, MINIJAX_FLAGS=f"--dump_to={dump}")
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, check=True,
                   capture_output=True, text=True)
    (hlo,) = [p for p in os.listdir(dump) if p.endswith(f"{stage}.hlo")]
    assert "minijax.linalg.cholesky" in (dump / hlo).read_text()
    for backend in ("interpreter", "cpu"):
        result = run_tool(str(dump / hlo), "--args", "in.npz", "--out", "out.npz",
                          "--backend", backend, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        out = np.load(tmp_path / "out.npz")
        a = np.load(tmp_path / "in.npz")["arg0"].astype(np.float64)
        np.testing.assert_allclose(out["out0"], np.linalg.cholesky(a), rtol=1e-5)
        np.testing.assert_allclose(np.abs(out["out1"]), np.abs(np.linalg.qr(a)[1]),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out["out2"], np.linalg.eigvalsh(a), rtol=1e-5)
