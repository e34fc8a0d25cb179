"""minijax.scipy: the parts of `jax.scipy` minijax has (`special`, `stats`, `linalg`)."""

from minijax.scipy import linalg, special, stats

__all__ = ["linalg", "special", "stats"]
