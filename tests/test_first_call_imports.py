"""What a first jit call loads: modules it does not need stay unimported (each costs import
time, a lot where Python cannot cache bytecode), and the dump machinery still works when
MINIJAX_FLAGS or config asks for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from child_process import run_child_json

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, sys
import numpy as np
import minijax as jax
import minijax.numpy as jnp
before = set(sys.modules)
f = jax.jit(lambda x, w: jnp.tanh(x @ w).sum(axis=1))
x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
w = np.linspace(0, 2, 20, dtype=np.float32).reshape(4, 5)
out = np.asarray(f(x, w))
want = np.tanh(x @ w).sum(axis=1)
assert np.allclose(out, want, rtol=1e-5), (out, want)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def loaded(tmp_path, **env):
    env.setdefault("MINIJAX_CACHE_DIR", os.environ.get("MINIJAX_CACHE_DIR", ""))
    return set(run_child_json(SCRIPT, cwd=tmp_path, **env))


def test_first_call_loads_no_dump_or_printing_code(tmp_path):
    mods = loaded(tmp_path)
    assert "minijax.compiler.pipeline" in mods  # it did compile in this process
    assert not {"minijax.compiler.dumps", "shlex"} & mods


def test_warm_disk_cache_loads_no_passes(tmp_path):
    cache = tmp_path / "cache"
    loaded(tmp_path, MINIJAX_CACHE_DIR=str(cache))
    mods = loaded(tmp_path, MINIJAX_CACHE_DIR=str(cache))
    passes = {m for m in mods if m.startswith("minijax.compiler.passes.")}
    assert passes <= {"minijax.compiler.passes.buffer_assignment",
                      "minijax.compiler.passes.base"}
    assert not {"minijax.compiler.dumps", "minijax.compiler.hlo.printer",
                "minijax.compiler.pipeline"} & mods
    from minijax.compiler import options, pipeline
    assert pipeline.CompileOptions is options.CompileOptions


def test_dump_flags_still_dump(tmp_path):
    dump = tmp_path / "dump"
    mods = loaded(tmp_path, MINIJAX_FLAGS=f"--dump_to={dump}")
    assert "minijax.compiler.dumps" in mods
    assert any(p.name.endswith("after_optimizations.hlo") for p in dump.iterdir())
    script = SCRIPT.replace("before = set(sys.modules)", "before = set(sys.modules)\n"
                            f"jax.config.update('minijax_flags', '--dump_to={dump}2')")
    full = dict(os.environ, PYTHONPATH=str(ROOT), MINIJAX_CACHE_DIR="")
    full.pop("MINIJAX_FLAGS", None)
    subprocess.run([sys.executable, "-c", script], env=full, check=True, timeout=300,
                   capture_output=True, cwd=str(tmp_path))
    assert any(p.name.endswith("after_optimizations.hlo") for p in (tmp_path / "dump2").iterdir())
