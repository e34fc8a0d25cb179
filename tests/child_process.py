"""Run a Python snippet in a fresh interpreter with this checkout on the path (tests that
need a new process: disk caches, first-call imports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_child(script: str, *, cwd=ROOT, input: str | None = None, timeout: int = 300,
              **env) -> subprocess.CompletedProcess:
    """Run `python -c script` with PYTHONPATH=ROOT, without the parent's MINIJAX_FLAGS and
    MINIJAX_DEBUG unless `env` sets them; `env` entries override the parent environment."""
    full = dict(os.environ)
    full.pop("MINIJAX_FLAGS", None)
    full.pop("MINIJAX_DEBUG", None)
    full.update(PYTHONPATH=str(ROOT), **{k: str(v) for k, v in env.items()})
    return subprocess.run([sys.executable, "-c", script], env=full, input=input,
                          capture_output=True, text=True, cwd=str(cwd), timeout=timeout)


def run_child_json(script: str, **kwargs):
    """`run_child`, asserting success; the JSON value on the child's last stdout line."""
    out = run_child(script, **kwargs)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])
