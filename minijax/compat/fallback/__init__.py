"""JAX modules for the import hook that minijax does not have under ``minijax.*`` yet.

The hook uses ``minijax.X`` whenever it exists and one of these only otherwise (see
``minijax.compat.FALLBACKS``), so each is the small part of the JAX module that published
libraries need at import time and in the tested programs: ``jax.sharding`` (single-device
types), ``jax.typing``, ``jax.scipy.stats.norm`` and ``jax.scipy.linalg``'s triangular and
Cholesky solves.
"""
