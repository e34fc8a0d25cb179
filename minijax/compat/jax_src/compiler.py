"""``jax._src.compiler``: minijax compiles through ``minijax.compiler.driver``; it has no
``backend_compile`` hook to patch, so libraries that look for one (chex's backend
restriction, through ``hasattr``) find none."""
