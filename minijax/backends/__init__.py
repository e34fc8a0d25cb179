"""Backends, loaded lazily by name: "interpreter" (reference), "cpu" (llvmlite), "cuda".

`get_backend(name=None)` returns a cached Backend. With no name, the default comes from the
`minijax_backend` option (MINIJAX_BACKEND), else `jax_platforms`' first entry, else "cuda"
when a CUDA device is usable, else "cpu"; "cpu" falls back to "interpreter" (with a
one-time warning) when llvmlite or the CPU backend is missing. Importing this package
imports neither llvmlite nor cuda-python: a backend module (minijax/backends/<name>.py or
package, defining `create_backend() -> Backend`) is imported only when that backend is
first asked for. `register_backend(name, factory)` adds one at run time.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
import warnings

from minijax.backends.base import Backend, Buffer, Device, Executable
from minijax.config import config

__all__ = ["Backend", "Buffer", "Device", "Executable", "get_backend", "available_backends",
           "default_backend_name", "register_backend", "BACKEND_NAMES"]

#: Known backend names and the module that implements each.
BACKEND_NAMES = {
    "interpreter": "minijax.backends.interpreter",
    "cpu": "minijax.backends.cpu",
    "cuda": "minijax.backends.cuda",
}
# Python packages a backend needs, checked without importing them.
_REQUIREMENTS = {"cpu": ("llvmlite",), "cuda": ("cuda",)}

_lock = threading.RLock()
_instances: dict[str, Backend] = {}
# Backends registered at run time (plugins, tests): name -> factory.
_factories: dict = {}
_cuda_usable: bool | None = None
_warned_fallback = False


def _module_exists(module_name: str) -> bool:
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        return False


def _loadable(name: str) -> bool:
    return _module_exists(BACKEND_NAMES[name]) and all(
        _module_exists(req) for req in _REQUIREMENTS.get(name, ()))


def _create(name: str) -> Backend:
    module = importlib.import_module(BACKEND_NAMES[name])
    factory = getattr(module, "create_backend", None)
    if factory is None:
        classes = [v for v in vars(module).values() if isinstance(v, type)
                   and issubclass(v, Backend) and v is not Backend
                   and v.__module__ == module.__name__]
        if len(classes) != 1:
            raise ImportError(f"{module.__name__} defines no create_backend()")
        factory = classes[0]
    backend = factory()
    if not isinstance(backend, Backend):
        raise TypeError(f"{module.__name__}.create_backend() returned {backend!r}, "
                        f"not a Backend")
    return backend


def _is_cuda_usable() -> bool:
    global _cuda_usable
    if _cuda_usable is None:
        usable = False
        if _loadable("cuda"):
            try:
                usable = bool(get_backend("cuda").devices())
            except Exception:  # noqa: BLE001 - any failure means no usable GPU
                usable = False
        _cuda_usable = usable
    return _cuda_usable


def default_backend_name() -> str:
    """The backend used when none is named (see the module docstring)."""
    global _warned_fallback
    env = (config._values["minijax_backend"] or "").strip().lower()
    if not env:
        # JAX_PLATFORMS / jax_platforms: a comma-separated preference list.
        platforms = (config._values["jax_platforms"] or "").strip().lower()
        env = platforms.split(",")[0].strip() if platforms else ""
        env = {"gpu": "cuda", "host": "cpu"}.get(env, env)
    if env:
        if env not in BACKEND_NAMES and env not in _factories:
            raise ValueError(f"MINIJAX_BACKEND={env!r} is not a backend; choose one of "
                             f"{', '.join(list(BACKEND_NAMES) + list(_factories))}")
        return env
    if _is_cuda_usable():
        return "cuda"
    if _loadable("cpu"):
        return "cpu"
    with _lock:
        if not _warned_fallback:
            _warned_fallback = True
            missing = "llvmlite" if not _module_exists("llvmlite") else "the CPU backend"
            warnings.warn(f"{missing} is not available; minijax runs on the (slow) reference "
                          f"interpreter backend", RuntimeWarning, stacklevel=3)
    return "interpreter"


def get_backend(name: str | None = None) -> Backend:
    """The backend called `name` (created on first use), or the default one."""
    if name is None:
        name = default_backend_name()
    name = name.lower()
    if name == "gpu":
        name = "cuda"
    if name == "host":
        name = "cpu"
    if name in _factories:
        with _lock:
            backend = _instances.get(name)
            if backend is None:
                backend = _instances[name] = _factories[name]()
            return backend
    if name not in BACKEND_NAMES:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKEND_NAMES)}")
    with _lock:
        backend = _instances.get(name)
        if backend is None:
            if not _module_exists(BACKEND_NAMES[name]):
                raise RuntimeError(f"backend {name!r} is not installed in this minijax "
                                   f"({BACKEND_NAMES[name]} is missing)")
            for req in _REQUIREMENTS.get(name, ()):
                if not _module_exists(req):
                    raise RuntimeError(f"backend {name!r} needs the Python package {req!r}, "
                                       f"which is not installed")
            backend = _instances[name] = _create(name)
        return backend


def register_backend(name: str, factory) -> None:
    """Make `factory() -> Backend` the backend called `name` (plugins and tests); it is
    created on first use. Registering an existing name replaces it."""
    with _lock:
        _factories[name.lower()] = factory
        _instances.pop(name.lower(), None)


def unregister_backend(name: str) -> None:
    """Forget a backend registered with register_backend."""
    with _lock:
        _factories.pop(name.lower(), None)
        _instances.pop(name.lower(), None)


def available_backends() -> list[str]:
    """Names of the backends that load and have at least one device, reference first."""
    names = ["interpreter"]
    if _loadable("cpu"):
        try:
            if get_backend("cpu").devices():
                names.append("cpu")
        except Exception:  # noqa: BLE001 - a broken backend is simply not available
            pass
    if _is_cuda_usable():
        names.append("cuda")
    return names
