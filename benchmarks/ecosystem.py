"""Step time of the ecosystem programs (tests/ecosystem/programs) on minijax and on JAX.

    PYTHONPATH=. python benchmarks/ecosystem.py [PROGRAM ...] [--jit-svi]

Each (program, backend) runs in its own process; a program reports the median time of its
steps after the first (``_step_seconds``: one optimizer / SVI step, or one NUTS sample for
``numpyro_nuts``, whose whole chain runs inside one compiled loop, so its figure includes
compilation). ``--jit-svi`` jits numpyro's SVI update (ECO_JIT=1) instead of running it op
by op. JAX's column is empty where JAX or the library is not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
ECO = ROOT / "tests" / "ecosystem"
sys.path.insert(0, str(ECO))

import harness  # noqa: E402

_CHILD = """
import json, sys
sys.path.insert(0, {eco!r})
import harness
result = harness.run_program({program!r}, {backend!r})
print("RESULT " + json.dumps(result.get("_step_seconds")))
"""


def step_seconds(program: str, backend: str, env: dict) -> float | None:
    """The program's step time on ``backend`` (None if it cannot run there)."""
    code = _CHILD.format(eco=str(ECO), program=program, backend=backend)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=ROOT)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    sys.stderr.write(f"{program} on {backend} failed:\n{out.stderr[-1500:]}\n")
    return None


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.0f} us"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", nargs="*", default=list(harness.REQUIRES))
    parser.add_argument("--jit-svi", action="store_true", help="jit numpyro's SVI update")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    if args.jit_svi:
        env["ECO_JIT"] = "1"
    print(f"{'program':<16}{'minijax':>12}{'jax':>12}{'mj/jax':>9}")
    for program in args.programs:
        if harness.missing(program):
            print(f"{program:<16}  skipped: {harness.missing(program)}")
            continue
        mj = step_seconds(program, "minijax", env)
        jx = step_seconds(program, "jax", env)
        ratio = f"{mj / jx:.2f}" if mj and jx else "-"
        print(f"{program:<16}{_fmt(mj):>12}{_fmt(jx):>12}{ratio:>9}", flush=True)


if __name__ == "__main__":
    main()
