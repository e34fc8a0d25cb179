"""minijax.scipy.spatial (JAX's ``jax.scipy.spatial``): 3-d rotations."""

from minijax.scipy.spatial import transform

__all__ = ["transform"]
