"""``jax._src`` for the import hook: the few internal modules that published libraries import
(``jax._src.core``, ``jax._src.compiler``), with the names they use, on minijax's own parts.
Other ``jax._src`` modules resolve to minijax's module of the same name when there is one
(``jax._src.dispatch``, ``jax._src.dtypes``, ``jax._src.traceback_util``)."""
