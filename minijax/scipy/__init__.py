"""minijax.scipy: the parts of `jax.scipy` minijax has (`special`, `stats`)."""

from minijax.scipy import special, stats

__all__ = ["special", "stats"]
