"""minijax.experimental: the parts of jax.experimental minijax has (`io_callback`; the
`multihost_utils` submodule is imported by name, as in JAX)."""

from minijax.callback import io_callback

__all__ = ["io_callback"]
