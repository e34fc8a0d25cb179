"""minijax.scipy.optimize (JAX's ``jax.scipy.optimize``): ``minimize`` with BFGS."""

from minijax.scipy.optimize.minimizer import OptimizeResults, minimize

__all__ = ["OptimizeResults", "minimize"]
