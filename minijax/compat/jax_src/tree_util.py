"""``jax._src.tree_util``: the pytree registry's set of node types (``_registry``; flax.nnx
tests ``type(x) in _registry``), live: registrations made later show up in it."""

from minijax.tree_util.registry import _registered as _registry

__all__ = ["_registry"]
