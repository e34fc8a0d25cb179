"""``jax._src.state.types``: the type of mutable array references (flax.nnx imports it)."""

from minijax.ref import AbstractRef

__all__ = ["AbstractRef"]
