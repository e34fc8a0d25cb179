"""``jax._src.state.types``: the type of mutable array references (flax.nnx imports it)."""

from minijax.experimental.mutable_array import AbstractRef

__all__ = ["AbstractRef"]
