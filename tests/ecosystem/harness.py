"""Run an ecosystem program (tests/ecosystem/programs/NAME.py) on minijax or on real JAX.

A program is plain JAX code that imports ``jax`` and a published library at module level and
defines ``run() -> dict`` of NumPy-convertible results (keys starting with ``_`` are
measurements, such as ``_step_seconds``, not compared). On minijax it runs under
:func:`minijax.compat.installed`; the library's modules are imported afresh each time and
dropped afterwards, so they never stay bound to the wrong ``jax``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import pathlib
import sys

import numpy as np

PROGRAMS = pathlib.Path(__file__).parent / "programs"
FIXTURES = pathlib.Path(__file__).parent / "fixtures"

# program -> the packages it needs (the first one names the library in skip messages)
REQUIRES = {
    "optax_mlp": ["optax"],
    "chex_asserts": ["chex"],
    "equinox_mlp": ["equinox", "jaxtyping"],
    "numpyro_svi": ["numpyro"],
    "numpyro_nuts": ["numpyro"],
    "flax_linen_mlp": ["flax", "msgpack", "yaml", "rich"],
    "flax_nnx_mlp": ["flax", "optax", "msgpack", "yaml", "rich", "treescope"],
}
# modules to drop before and after a run: libraries bind `jax` when they are imported
_LIBRARY_PREFIXES = ("optax", "chex", "equinox", "jaxtyping", "numpyro", "flax", "orbax",
                     "treescope", "_eco_")


def missing(program: str) -> str | None:
    """Why ``program`` cannot run here (a package is not installed), or None."""
    for pkg in REQUIRES[program]:
        if importlib.util.find_spec(pkg) is None:
            return (f"{pkg} is not installed (pip install -e '.[ecosystem]' or make test "
                    "installs it)")
    return None


def _drop_libraries() -> None:
    for name in [n for n in sys.modules if n.split(".")[0].startswith(_LIBRARY_PREFIXES)]:
        del sys.modules[name]


def run_program(program: str, backend: str = "minijax") -> dict:
    """``programs/<program>.py``'s ``run()`` on ``backend`` ("minijax" or "jax")."""
    if backend == "minijax":
        import minijax.compat
        context = minijax.compat.installed()
    else:
        context = contextlib.nullcontext()
    _drop_libraries()
    sys.path.insert(0, str(PROGRAMS))  # for helpers shared by programs (_eco_*.py)
    try:
        with context:
            spec = importlib.util.spec_from_file_location(f"_eco_{program}",
                                                          PROGRAMS / f"{program}.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            result = module.run()
            return {k: (v if k.startswith("_") else np.asarray(v)) for k, v in result.items()}
    finally:
        sys.path.remove(str(PROGRAMS))
        _drop_libraries()


def load_fixture(program: str) -> dict:
    """The values ``record_fixtures.py`` stored for ``program`` from real JAX."""
    with np.load(FIXTURES / f"{program}.npz") as data:
        return {k: data[k] for k in data.files}
