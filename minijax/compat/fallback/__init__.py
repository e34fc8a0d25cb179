"""JAX modules for the import hook that minijax does not have under ``minijax.*`` yet.

The hook uses ``minijax.X`` whenever it exists and one of these only otherwise (see
``minijax.compat.FALLBACKS``): each is the small part of the JAX module that published
libraries need at import time: ``jax.experimental.sparse`` (BCOO) and
``jax.experimental.layout``.
"""
