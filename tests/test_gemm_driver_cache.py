"""The CPU gemm driver's object code on disk: a second process with the same
MINIJAX_CACHE_DIR loads it without building its IR, and a corrupt entry is rejected and
rewritten. Values are checked against NumPy's matmul in every process."""

from __future__ import annotations

from pathlib import Path

import pytest
from child_process import run_child, run_child_json

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
from minijax.backends.cpu import blas as cpu_blas  # noqa: E402

SCRIPT = r"""
import json, os, sys
import numpy as np
import minijax
minijax.config.update("jax_enable_x64", True)
from minijax.backends.cpu import blas as cpu_blas
from minijax.backends.cpu.runtime import get_jit

if os.environ.get("FORBID_DRIVER_IR"):
    def _no_ir(*a, **k):
        raise AssertionError("the gemm driver's IR was built despite a warm cache")
    cpu_blas._driver_ir = _no_ir

rng = np.random.RandomState(0)
errors = []
for dt, (m, k, n) in [(np.float32, (3, 5, 7)), (np.float64, (1, 17, 2)),
                      (np.float32, (0, 4, 3)), (np.float32, (300, 200, 150))]:
    a = rng.randn(m, k).astype(dt)
    b = rng.randn(k, n).astype(dt)
    got = np.asarray(minijax.jit(lambda x, y: x @ y.T)(a, b.T.copy()))
    want = a @ b
    tol = 1e-4 if dt == np.float32 else 1e-12
    errors.append(got.dtype == dt and got.shape == want.shape
                  and bool(np.allclose(got, want, rtol=tol, atol=tol * k)))
blas = cpu_blas.find_blas()
path = get_jit()._cache_path(cpu_blas.driver_key(blas)) if blas else None
print(json.dumps({"ok": errors, "path": path, "blas": blas is not None}))
"""


def run(cache_dir, **env):
    return run_child_json(SCRIPT, MINIJAX_CACHE_DIR=cache_dir, MINIJAX_BACKEND="cpu", **env)


@pytest.fixture(scope="module")
def has_blas():
    if cpu_blas.find_blas() is None:
        pytest.skip("NumPy ships no CBLAS gemm here: dots use np.matmul, no driver")


def test_second_process_loads_the_driver_without_building_ir(tmp_path, has_blas):
    first = run(tmp_path)
    assert all(first["ok"]), first
    assert Path(first["path"]).is_file()
    second = run(tmp_path, FORBID_DRIVER_IR="1")
    assert all(second["ok"]), second
    assert second["path"] == first["path"]


def test_without_a_cache_the_driver_ir_is_built(tmp_path, has_blas):
    # The forbidding hook must really bite when nothing is cached (else the test above
    # would pass without any cache).
    out = run_child(SCRIPT, MINIJAX_BACKEND="cpu", FORBID_DRIVER_IR="1",
                    MINIJAX_CACHE_DIR=tmp_path / "empty")
    assert out.returncode != 0
    assert "IR was built despite a warm cache" in out.stderr


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_corrupt_driver_entry_is_rejected_and_rewritten(tmp_path, has_blas, damage):
    first = run(tmp_path)
    path = Path(first["path"])
    data = path.read_bytes()
    if damage == "flip":
        pos = len(data) // 2
        path.write_bytes(data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1:])
    elif damage == "truncate":
        path.write_bytes(data[: len(data) - 17])
    else:
        path.write_bytes(b"")
    again = run(tmp_path)
    assert all(again["ok"]), again
    assert path.read_bytes() == data
    # The rewritten entry serves a third process without building IR.
    third = run(tmp_path, FORBID_DRIVER_IR="1")
    assert all(third["ok"]), third


def test_driver_key_follows_its_inputs(has_blas):
    blas = cpu_blas.find_blas()
    key = cpu_blas.driver_key(blas)
    assert key == cpu_blas.driver_key(blas)
    other = cpu_blas.Blas(**{**blas.__dict__, "int_bits": 96 - blas.int_bits})
    assert cpu_blas.driver_key(other) != key
