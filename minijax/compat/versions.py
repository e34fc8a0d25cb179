"""The JAX release whose public API minijax follows (reported as ``jax.__version__`` under
the import hook of :mod:`minijax.compat`; minijax's own version is ``minijax.__version__``)."""

JAX_API_VERSION = "0.10.2"
JAXLIB_API_VERSION = JAX_API_VERSION


def version_info(version: str) -> tuple[int, ...]:
    """``"0.10.2"`` -> ``(0, 10, 2)``, as ``jax.__version_info__``."""
    return tuple(int(p) for p in version.split(".") if p.isdigit())
