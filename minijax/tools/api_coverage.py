"""Which public names of an installed JAX minijax lacks, module by module.

    python -m minijax.tools.api_coverage [--modules jax.numpy,jax.lax] [--summary-only]

Walks JAX's public modules (jax, jax.numpy, jax.lax, jax.nn, jax.random, jax.scipy.*,
jax.tree, jax.tree_util, jax.typing, jax.sharding, jax.debug, ...), looks each name up in
the matching minijax module (`jax.X` -> `minijax.X`) and prints, per module, how many names
minijax has (count and percentage) and the missing ones. A module name ending in `.*` also
checks each public submodule of that module (`jax.scipy.stats.*` -> norm, gamma, ...).
Without JAX installed it says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap
import types
from dataclasses import dataclass, field

#: The JAX modules checked by default.
DEFAULT_MODULES = (
    "jax", "jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.lax", "jax.lax.linalg",
    "jax.nn", "jax.nn.initializers", "jax.random", "jax.scipy", "jax.scipy.special",
    "jax.scipy.linalg", "jax.scipy.stats", "jax.scipy.stats.*", "jax.scipy.signal",
    "jax.scipy.fft", "jax.scipy.integrate", "jax.scipy.ndimage", "jax.scipy.optimize",
    "jax.scipy.sparse.linalg", "jax.scipy.cluster.vq", "jax.scipy.interpolate",
    "jax.scipy.spatial.transform", "jax.tree", "jax.tree_util", "jax.flatten_util",
    "jax.typing", "jax.dtypes", "jax.errors", "jax.debug", "jax.sharding", "jax.experimental",
    "jax.custom_derivatives", "jax.ad_checkpoint", "jax.image", "jax.profiler",
    "jax.test_util", "jax.example_libraries.stax", "jax.example_libraries.optimizers",
    "jax.extend", "jax.stages", "jax.export", "jax.distributed", "jax.ops",
)

#: The first component that replaces `jax` in a module name.
OURS = "minijax"


def public_names(module) -> list[str]:
    """The public names of a module: every attribute not starting with an underscore
    (submodules included)."""
    return sorted(n for n in dir(module) if not n.startswith("_"))


#: Modules whose objects, re-exported by a JAX module, are its imports rather than its API.
_FOREIGN_MODULES = ("typing", "functools", "builtins", "collections", "itertools", "abc",
                    "operator", "types", "dataclasses", "warnings")


def api_names(module) -> list[str]:
    """`public_names` without what the module merely imported: other packages' modules and
    helpers from the standard library (typing.Any, functools.partial, ...)."""
    root = module.__name__.split(".")[0]
    out = []
    for name in public_names(module):
        value = getattr(module, name, None)
        if isinstance(value, types.ModuleType):
            if not value.__name__.startswith(root + "."):
                continue
        elif (str(getattr(value, "__module__", "")).split(".")[0] in _FOREIGN_MODULES
              and getattr(value, "__name__", None) == name):
            continue  # an imported helper (partial, Any, ...), not an alias like ArrayLike
        out.append(name)
    return out


def _has(module, name: str) -> bool:
    # minijax.numpy's __getattr__ raises NotImplementedError (with a hint) for missing names.
    try:
        getattr(module, name)
    except Exception:  # noqa: BLE001 (any failure means the name is not provided)
        return False
    return True


def our_name(jax_module_name: str) -> str:
    """`jax.X.Y` -> `minijax.X.Y`."""
    head, _, rest = jax_module_name.partition(".")
    return OURS + ("." + rest if rest else "") if head == "jax" else jax_module_name


@dataclass
class ModuleCoverage:
    """One module's result: the names JAX has and those minijax lacks (`ours_missing` when
    the whole minijax module is absent)."""
    name: str
    names: list[str]
    missing: list[str] = field(default_factory=list)
    ours_missing: bool = False

    @property
    def present(self) -> int:
        return len(self.names) - len(self.missing)

    @property
    def percent(self) -> float:
        return 100.0 * self.present / len(self.names) if self.names else 100.0


def compare(name: str, reference, ours) -> ModuleCoverage:
    """Coverage of module `reference` (JAX's) by `ours` (None: minijax lacks the module)."""
    names = api_names(reference)
    if ours is None:
        return ModuleCoverage(name, names, list(names), ours_missing=True)
    return ModuleCoverage(name, names, [n for n in names if not _has(ours, n)])


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
    except Exception:  # noqa: BLE001 (a module failing at import counts as absent)
        return None


def _expand(module_names, import_module):
    """Module names with `X.*` replaced by X's public submodules (as imported modules)."""
    out = []
    for name in module_names:
        if not name.endswith(".*"):
            out.append(name)
            continue
        parent = import_module(name[:-2])
        if parent is None:
            continue
        for attr in public_names(parent):
            value = getattr(parent, attr, None)
            if isinstance(value, types.ModuleType) and value.__name__.startswith(parent.__name__):
                out.append(f"{name[:-2]}.{attr}")
    return out


def coverage(module_names=DEFAULT_MODULES, import_module=_import) -> list[ModuleCoverage]:
    """Coverage of every JAX module in `module_names` that the installed JAX has."""
    results = []
    for name in _expand(module_names, import_module):
        reference = import_module(name)
        if reference is None:
            continue  # not part of this JAX version
        results.append(compare(name, reference, import_module(our_name(name))))
    return results


def render(results, summary_only: bool = False, width: int = 100) -> str:
    """Per-module lines (count, percentage, missing names) and a total."""
    lines = []
    for r in results:
        head = (f"{r.name}: {r.present}/{len(r.names)} ({r.percent:.1f}%)"
                + (f" -- {our_name(r.name)} does not exist" if r.ours_missing else ""))
        lines.append(head)
        if r.missing and not summary_only and not r.ours_missing:
            text = f"missing ({len(r.missing)}): " + ", ".join(r.missing)
            lines += textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="    ")
    total = sum(len(r.names) for r in results)
    present = sum(r.present for r in results)
    pct = 100.0 * present / total if total else 100.0
    lines.append(f"total: {present}/{total} public JAX names present ({pct:.1f}%), "
                 f"{total - present} missing, over {len(results)} modules")
    return "\n".join(lines)


def main(argv=None, import_module=_import) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", default=None,
                        help="comma-separated JAX modules to check (default: the usual "
                             "public ones; `X.*` adds X's submodules)")
    parser.add_argument("--summary-only", action="store_true",
                        help="print only the counts per module, not the missing names")
    args = parser.parse_args(argv)
    if import_module("jax") is None:
        sys.stderr.write("api_coverage compares minijax against an installed JAX, and JAX is "
                         "not importable here.\nInstall it (pip install jax) in this "
                         "environment, or run it with a Python that has JAX.\n")
        return 2
    modules = DEFAULT_MODULES if args.modules is None else tuple(
        m.strip() for m in args.modules.split(",") if m.strip())
    sys.stdout.write(render(coverage(modules, import_module), args.summary_only) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
