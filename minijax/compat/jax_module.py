"""The module that ``import jax`` gives under :mod:`minijax.compat`'s hook.

Every attribute is minijax's (``jax.jit is minijax.jit``; ``jax.numpy is minijax.numpy``),
except two:

- ``jax.__version__`` is the JAX release whose API minijax follows, so that libraries'
  version checks pass. minijax's own version is ``jax.minijax_version``.
- ``jax.Array`` is an abstract type that both concrete arrays (``minijax.Array``) and
  tracers are instances of, as in JAX, where libraries test ``isinstance(x, jax.Array)`` to
  find the array leaves of a pytree inside transformed functions too. (``minijax.Array`` is
  the concrete class; minijax's internals rely on tracers not being instances of it.)
"""

import importlib

import minijax
from minijax import compat
from minijax.array_types import ArrayType
from minijax.compat.versions import JAX_API_VERSION, version_info

__version__ = JAX_API_VERSION
__version_info__ = version_info(JAX_API_VERSION)
minijax_version = minijax.__version__
__path__: list[str] = []  # a package: `import jax.numpy` is looked up by the hook
Array = ArrayType


def __getattr__(name: str):
    if f"jax.{name}" in compat.ALIASES or (f"jax.{name}" in compat.FALLBACKS
                                           and not hasattr(minijax, name)):
        return importlib.import_module("jax." + name)
    if hasattr(minijax, name):
        return getattr(minijax, name)
    if not name.startswith("_"):
        try:
            return importlib.import_module("jax." + name)
        except ModuleNotFoundError:
            pass
    raise AttributeError(f"module 'jax' (minijax) has no attribute {name!r}")


def __dir__():
    return sorted(set(dir(minijax)) | {"__version__", "__version_info__"})
