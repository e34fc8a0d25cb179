"""minijax.experimental: the parts of ``jax.experimental`` minijax has (``checkify``)."""

from minijax.experimental import checkify

__all__ = ["checkify"]
