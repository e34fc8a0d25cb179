"""minijax.scipy: the parts of `jax.scipy` minijax has (`special`)."""

from minijax.scipy import special

__all__ = ["special"]
