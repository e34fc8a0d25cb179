"""minijax.experimental: the parts of jax.experimental minijax has (`checkify`,
`io_callback`, the supported subset of `hijax`; mutable array references are `minijax.ref`;
the `multihost_utils` submodule is imported by name, as in JAX)."""

from minijax.callback import io_callback
from minijax.experimental import checkify, hijax
from minijax.experimental.hijax import cur_qdd

__all__ = ["checkify", "cur_qdd", "hijax", "io_callback"]
