"""minijax.experimental: the parts of jax.experimental minijax has (`checkify`,
`io_callback`; the `multihost_utils` submodule is imported by name, as in JAX)."""

from minijax.callback import io_callback
from minijax.experimental import checkify

__all__ = ["checkify", "io_callback"]
