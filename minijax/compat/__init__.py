"""Run programs and libraries written for JAX on minijax, unchanged, through an import hook.

>>> import minijax.compat
>>> minijax.compat.install()       # from now on `import jax` gives minijax
>>> import optax                   # a published JAX library, unchanged

``install()`` puts a meta-path finder first on ``sys.meta_path``: ``jax`` and every
``jax.X`` (``jax.numpy``, ``jax.lax``, ``jax.tree_util``, ``jax.extend.core``,
``jax.interpreters.ad``, ``jax.experimental.X``, ...) and ``jaxlib`` resolve to minijax's
modules. ``jax.X`` is ``minijax.X`` when minijax has that module; the handful of JAX module
paths that minijax spells differently (``jax._src.*`` names that libraries reach for, such
as ``jax._src.traceback_util``) are listed in :data:`ALIASES`. Anything else is not found, as
an uninstalled module would be, so a library's ``try: import ...`` fallbacks still work.

``jax`` itself is a small module (:mod:`minijax.compat.jax_module`) that forwards every
attribute to ``minijax`` but reports :data:`JAX_API_VERSION` as ``__version__``: libraries
compare ``jax.__version__`` against the JAX releases they support, and minijax follows the
API of that JAX release. minijax's own version stays ``minijax.__version__``.

``uninstall()`` removes the finder and the ``jax*`` entries it put in ``sys.modules``;
``installed()`` is a context manager doing both (for tests). Modules imported while the hook
was on (``optax`` ...) keep the minijax modules they bound.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

from minijax.compat.versions import JAX_API_VERSION, JAXLIB_API_VERSION

__all__ = ["ALIASES", "JAX_API_VERSION", "JAXLIB_API_VERSION", "install", "installed",
           "is_installed", "uninstall"]

# JAX module paths whose minijax counterpart has another name (everything else: jax.X is
# minijax.X). Only modules that published libraries import are listed.
ALIASES: dict[str, str] = {
    "jax": "minijax.compat.jax_module",
    "jaxlib": "minijax.compat.jaxlib_module",
    "jax.core": "minijax.compat.jax_core",
    "jax.interpreters.batching": "minijax.compat.jax_batching",
    "jax.api_util": "minijax.compat.jax_api_util",
    "jax.interpreters.partial_eval": "minijax.compat.jax_partial_eval",
    "jax._src": "minijax.compat.jax_src",
    "jax._src.core": "minijax.compat.jax_src.core",
    "jax._src.compiler": "minijax.compat.jax_src.compiler",
    "jax._src.traceback_util": "minijax.traceback_util",
    "jax._src.dtypes": "minijax.compat.jax_src.dtypes",
    "jax._src.dispatch": "minijax.dispatch",
    "jax._src.tree_util": "minijax.compat.jax_src.tree_util",
    "jax._src.checkify": "minijax.compat.jax_src.checkify",
    "jax._src.state": "minijax.compat.jax_src.state",
    "jax._src.state.types": "minijax.compat.jax_src.state.types",
}


# Used only while minijax has no module of that name.
FALLBACKS: dict[str, str] = {
    "jax.experimental.sparse": "minijax.compat.fallback.sparse",
    "jax.experimental.layout": "minijax.compat.fallback.layout",
}


def _target(fullname: str) -> str | None:
    """The minijax module that stands for JAX module ``fullname``, or None."""
    if fullname in ALIASES:
        return ALIASES[fullname]
    if fullname.startswith("jax."):
        candidate = "minijax." + fullname[4:]
        if candidate.startswith("minijax.compat") or candidate.startswith("minijax._"):
            return None
        try:
            found = importlib.util.find_spec(candidate)
        except ModuleNotFoundError:
            return None
        if found is not None and found.origin is not None:  # not a stray namespace folder
            return candidate
    return FALLBACKS.get(fullname)


class _AliasLoader(importlib.abc.Loader):
    """Loads ``jax.X`` as the (already importable) minijax module it stands for."""

    def __init__(self, target: str):
        self.target = target
        self._spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module):
        # The import system set the alias's spec on the module; keep minijax's own.
        fullname = module.__spec__.name
        module.__spec__ = self._spec
        parent_name, _, child = fullname.rpartition(".")
        parent = sys.modules.get(parent_name)
        if parent is not None and not hasattr(parent, child):
            # The import system now sets parent.child; take it off minijax's module again
            # on uninstall().
            _added_attrs.append((parent, child))
        if fullname != "jax":
            # `from jax.scipy import linalg` looks for an attribute of minijax.scipy: import
            # the JAX-named children that minijax spells differently now.
            for name in list(ALIASES) + list(FALLBACKS):
                if name.rpartition(".")[0] == fullname and _target(name) == (
                        ALIASES.get(name) or FALLBACKS.get(name)):
                    importlib.import_module(name)


class JaxFinder(importlib.abc.MetaPathFinder):
    """Finds ``jax``, ``jax.*`` and ``jaxlib`` among minijax's modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "jax" and not fullname.startswith(("jax.", "jaxlib")):
            return None
        if fullname.startswith("jaxlib") and fullname not in ALIASES:
            return None
        name = _target(fullname)
        if name is None:
            return None
        found = importlib.util.find_spec(name)
        package = found is not None and found.submodule_search_locations is not None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(name), is_package=package)


_finder = JaxFinder()
_saved: dict[str, object] = {}
_added_attrs: list[tuple[object, str]] = []


def _is_jax_name(name: str) -> bool:
    return name in ("jax", "jaxlib") or name.startswith(("jax.", "jaxlib."))


def is_installed() -> bool:
    """Whether the hook is on."""
    return _finder in sys.meta_path


def install() -> None:
    """Make ``import jax`` (and ``jax.*``, ``jaxlib``) give minijax's modules from now on.

    A real JAX already imported in this process is set aside (restored by :func:`uninstall`).
    """
    if is_installed():
        return
    for name in [n for n in sys.modules if _is_jax_name(n)]:
        _saved[name] = sys.modules.pop(name)
    sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    """Undo :func:`install`: drop the hook and its ``jax*`` modules, restore what was there."""
    if not is_installed():
        return
    sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if _is_jax_name(n)]:
        del sys.modules[name]
    for parent, child in _added_attrs:
        if hasattr(parent, child):
            delattr(parent, child)
    _added_attrs.clear()
    sys.modules.update(_saved)
    _saved.clear()


@contextlib.contextmanager
def installed():
    """``with installed(): import jax`` gives minijax inside the block only."""
    was = is_installed()
    install()
    try:
        yield
    finally:
        if not was:
            uninstall()
