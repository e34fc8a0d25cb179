"""minijax.experimental: the parts of jax.experimental minijax has (`io_callback`)."""

from minijax.callback import io_callback

__all__ = ["io_callback"]
