"""minijax.scipy.sparse (JAX's ``jax.scipy.sparse``): iterative linear solvers."""

from minijax.scipy.sparse import linalg

__all__ = ["linalg"]
