"""``jax._src.state``: JAX's mutable-state internals, as far as libraries import them."""
