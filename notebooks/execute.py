"""Execute the notebooks with nbclient and save them with their outputs (`make notebooks`).

    python notebooks/execute.py [--small] [--no-save] [NAME ...]

`--small` sets MINIJAX_NOTEBOOK_SMALL=1 (small sizes, as the test suite runs them);
without names, every `notebooks/0*.ipynb` runs. A cell error stops with the cell shown.
Each notebook runs in its own kernel with the repository root on PYTHONPATH and the
notebooks folder as working directory. Needs the `notebooks` extra (nbclient, nbformat,
ipykernel, matplotlib, scikit-learn).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


def notebook_paths(names=()) -> list[pathlib.Path]:
    paths = sorted(HERE.glob("0*.ipynb"))
    if names:
        paths = [p for p in paths if any(n in p.name for n in names)]
    return paths


def execute(path: pathlib.Path, small: bool = False, save: bool = True,
            timeout: int = 600) -> float:
    """Run every cell of `path` in a fresh kernel; returns the seconds it took."""
    nb = nbformat.read(path, as_version=4)
    env_before = dict(os.environ)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    if small:
        os.environ["MINIJAX_NOTEBOOK_SMALL"] = "1"
    else:
        os.environ.pop("MINIJAX_NOTEBOOK_SMALL", None)
    try:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(HERE)}})
        t0 = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - t0
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    if save:
        nbformat.write(nb, path)
    return seconds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    for path in notebook_paths(args.names):
        seconds = execute(path, small=args.small, save=not args.no_save)
        print(f"{path.name}: {seconds:.1f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
