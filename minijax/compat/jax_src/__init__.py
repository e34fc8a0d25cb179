"""``jax._src`` for the import hook: the few internal modules that published libraries import
(``jax._src.core``, ``jax._src.compiler``, ``jax._src.dtypes``), with the names they use, on
minijax's own parts; ``jax._src.dispatch`` and ``jax._src.traceback_util`` are minijax's
modules of those names (see ``minijax.compat.ALIASES``)."""

import importlib


def __getattr__(name: str):
    # `from jax._src import traceback_util`: this package's own name is minijax.compat.jax_src.
    try:
        return importlib.import_module(f"jax._src.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module 'jax._src' (minijax) has no attribute {name!r}") from None
