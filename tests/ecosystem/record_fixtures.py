"""Record the ecosystem programs' results under real JAX into fixtures/NAME.npz.

Run with a Python that has JAX and the libraries installed (CI does not need to):

    PYTHONPATH=. python tests/ecosystem/record_fixtures.py [PROGRAM ...]

Each program runs in its own process so that libraries bind real JAX only.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402


def record(program: str) -> None:
    result = harness.run_program(program, backend="jax")
    import jax
    values = {k: v for k, v in result.items() if not k.startswith("_")}
    values["_jax_version"] = np.array(jax.__version__)
    np.savez(harness.FIXTURES / f"{program}.npz", **values)
    print(f"recorded {program}: {sorted(values)}")


def main(argv: list[str]) -> None:
    if len(argv) == 1:
        record(argv[0])
        return
    for program in argv or list(harness.REQUIRES):
        if harness.missing(program):
            print(f"skip {program}: {harness.missing(program)}")
            continue
        subprocess.run([sys.executable, __file__, program], check=True)


if __name__ == "__main__":
    main(sys.argv[1:])
