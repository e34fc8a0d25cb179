"""The tour notebook's code cells run, and the demo trains its MLP to a real accuracy."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_tour_notebook_cells_run(capsys):
    nb = json.loads((ROOT / "notebooks" / "tour.ipynb").read_text())
    source = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    namespace: dict = {}
    exec(compile(source, "tour.ipynb", "exec"), namespace)
    assert namespace["per_example"].shape == (4, 3, 2)
    assert len(namespace["f"].cache_stats.history) == 2
    assert "fusion(" in capsys.readouterr().out


def test_demo_trains_the_mlp_on_digits():
    pytest.importorskip("sklearn", reason="the demo's data set comes with scikit-learn")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py")],
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr
    accuracy = float(result.stdout.split("test accuracy:")[1].split()[0])
    # ~0.98 with correct gradients; chance is 0.1, and a wrong gradient stays far below 0.9
    assert accuracy > 0.9, result.stdout
    assert "eager" in result.stdout and "NumPy" in result.stdout
