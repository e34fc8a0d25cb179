"""Global configuration, with JAX's names: `minijax.config.update("jax_enable_x64", True)`.

Environment variables give the initial values: JAX_ENABLE_X64, MINIJAX_DEBUG,
MINIJAX_BACKEND, MINIJAX_CACHE_DIR, MINIJAX_NUM_THREADS, MINIJAX_FLAGS,
MINIJAX_TRACEBACK_FILTERING (or JAX_TRACEBACK_FILTERING: "off" shows minijax's frames).
"""

from __future__ import annotations

import os


def _env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


class Config:
    """A small settings object. Read attributes directly (`config.jax_enable_x64`)."""

    def __init__(self):
        self._values = {
            "jax_enable_x64": _env_bool("JAX_ENABLE_X64"),
            "jax_disable_jit": _env_bool("JAX_DISABLE_JIT"),
            "jax_log_compiles": _env_bool("JAX_LOG_COMPILES"),
            "jax_explain_cache_misses": _env_bool("JAX_EXPLAIN_CACHE_MISSES"),
            "jax_debug_nans": _env_bool("JAX_DEBUG_NANS"),
            "jax_debug_infs": _env_bool("JAX_DEBUG_INFS"),
            "jax_platforms": os.environ.get("JAX_PLATFORMS", ""),
            "minijax_debug": int(os.environ.get("MINIJAX_DEBUG", "0") or 0),
            "minijax_backend": os.environ.get("MINIJAX_BACKEND", ""),
            "minijax_cache_dir": os.environ.get("MINIJAX_CACHE_DIR", ""),
            "minijax_flags": os.environ.get("MINIJAX_FLAGS", ""),
            # "off" shows minijax's internal frames in tracebacks ("auto" hides them).
            "jax_traceback_filtering": os.environ.get(
                "MINIJAX_TRACEBACK_FILTERING",
                os.environ.get("JAX_TRACEBACK_FILTERING", "auto")).strip().lower() or "auto",
        }
        self._listeners: dict[str, list] = {}

    def update(self, name: str, value) -> None:
        """Set option `name` (JAX's spelling) to `value`."""
        if name not in self._values:
            known = ", ".join(sorted(self._values))
            raise AttributeError(f"Unrecognized config option: {name!r}. Known options: {known}")
        if value and name in _NOT_SUPPORTED:
            raise NotImplementedError(f"minijax does not support {name!r} yet: "
                                      f"{_NOT_SUPPORTED[name]}")
        self._values[name] = value
        for listener in self._listeners.get(name, ()):
            listener(value)

    def on_change(self, name: str, listener) -> None:
        """Call `listener(value)` whenever option `name` changes."""
        self._listeners.setdefault(name, []).append(listener)

    def read(self, name: str):
        return self._values[name]

    def __getattr__(self, name: str):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def values(self) -> dict:
        """A copy of all current settings (written into dumps for reproduction)."""
        return dict(self._values)


#: Options that exist in JAX but are not implemented: setting one raises rather than being
#: silently ignored.
_NOT_SUPPORTED: dict[str, str] = {}

config = Config()


def debug_level() -> int:
    """MINIJAX_DEBUG level: 1 compiles, 2 kernels and timings, 3 HLO per pass, 4 LLVM/PTX."""
    return config._values["minijax_debug"]
