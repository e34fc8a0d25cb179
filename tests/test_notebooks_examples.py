"""The tour notebook's code cells and the demo run without errors."""

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_tour_notebook_cells_run(capsys):
    nb = json.loads((ROOT / "notebooks" / "tour.ipynb").read_text())
    source = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    namespace: dict = {}
    exec(compile(source, "tour.ipynb", "exec"), namespace)
    assert namespace["per_example"].shape == (4, 3, 2)
    assert len(namespace["f"].cache_stats.history) == 2
    assert "fusion(" in capsys.readouterr().out


def test_demo_runs():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py")],
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr
    assert "same answer: True" in result.stdout
