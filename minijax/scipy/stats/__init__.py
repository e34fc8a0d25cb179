"""minijax.scipy.stats: distributions as ``jax.scipy.stats`` (``norm``)."""

from minijax.scipy.stats import norm

__all__ = ["norm"]
