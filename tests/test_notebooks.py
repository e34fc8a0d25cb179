"""Every notebook in notebooks/ executes without a cell error (at small sizes).

Needs the `notebooks` extra (nbclient, nbformat, ipykernel, matplotlib, scikit-learn);
without it the module is skipped and says so.
"""

import importlib.util
import json
import pathlib
import sys

import pytest

_MISSING = [m for m in ("nbclient", "nbformat", "ipykernel", "matplotlib", "sklearn")
            if importlib.util.find_spec(m) is None]
if _MISSING:
    pytest.skip(f"the notebooks extra is not installed (missing: {', '.join(_MISSING)}); "
                "pip install -e '.[notebooks]'", allow_module_level=True)

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "notebooks"))
import execute  # noqa: E402  (notebooks/execute.py)

NOTEBOOKS = execute.notebook_paths()


def test_the_six_notebooks_are_there_with_saved_outputs():
    names = [p.name for p in NOTEBOOKS]
    assert names == ["01_quickstart.ipynb", "02_transformations.ipynb",
                     "03_inside_the_compiler.ipynb", "04_training.ipynb",
                     "05_performance.ipynb", "06_gpu.ipynb"]
    for path in NOTEBOOKS:
        cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        assert all(c["execution_count"] for c in cells), f"{path.name} was saved unexecuted"
        assert not any(o.get("output_type") == "error" for c in cells for o in c["outputs"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path):
    seconds = execute.execute(path, small=True, save=False, timeout=300)
    assert seconds > 0
