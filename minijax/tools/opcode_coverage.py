"""How each backend runs each HLO opcode of the opcode table (compiler/hlo/opcodes.py).

    python -m minijax.tools.opcode_coverage [--backends interpreter,cpu] [--format markdown|text]

Prints one row per opcode: its family, its shape rule, and per backend one of "kernel"
(generated code), "library" (BLAS-class call), "view" (no copy), "program" (nested programs
for control flow), "no-op", "thunk" (the HLO evaluator on the host) or "unsupported".
Backends that do not load on this machine are left out with a note, except cuda: without
cuda-python or a driver its column still shows what its code generator does (llvmlite only).
"""

from __future__ import annotations

import argparse
import sys

from minijax.backends import BACKEND_NAMES, get_backend
from minijax.backends.cuda.program import gpu_opcode_support
from minijax.compiler.hlo import opcodes


class _GeneratorOnly:
    """A backend that cannot start here, described by its code generator alone."""

    def __init__(self, name: str, support):
        self.name, self.opcode_support = name, support


#: Backends whose opcode support is known without loading them.
_WITHOUT_LOADING = {"cuda": gpu_opcode_support}


def coverage(backend_names: list[str]) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, notes): the table for the backends that load."""
    backends, notes = [], []
    for name in backend_names:
        try:
            backends.append(get_backend(name))
        except Exception as exc:  # noqa: BLE001 - a backend that does not load is reported
            if name in _WITHOUT_LOADING:
                backends.append(_GeneratorOnly(name, _WITHOUT_LOADING[name]))
                notes.append(f"{name}: not loaded here ({exc}); its column is what its code "
                             "generator does")
            else:
                notes.append(f"{name}: not available ({exc})")
    header = ["opcode", "family", "shape rule"] + [b.name for b in backends]
    rows = [[op.name, op.family, op.shape_rule] + [b.opcode_support(op.name) for b in backends]
            for op in sorted(opcodes.OPCODES.values(), key=lambda o: (o.family, o.name))]
    return header, rows, notes


def _render(header, rows, fmt: str) -> str:
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    return "\n".join("  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip()
                     for r in [header] + rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minijax.tools.opcode_coverage",
                                description=__doc__.split("\n")[0])
    p.add_argument("--backends", default=",".join(BACKEND_NAMES),
                   help="comma-separated backend names (default: all known)")
    p.add_argument("--format", choices=("text", "markdown"), default="text")
    ns = p.parse_args(argv)
    header, rows, notes = coverage([n for n in ns.backends.split(",") if n])
    print(_render(header, rows, ns.format))
    counts = {}
    for col, name in enumerate(header[3:], start=3):
        kinds: dict[str, int] = {}
        for r in rows:
            kinds[r[col]] = kinds.get(r[col], 0) + 1
        counts[name] = ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))
    print()
    for name, text in counts.items():
        print(f"{name}: {text}")
    for note in notes:
        print(note, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
