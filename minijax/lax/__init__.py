"""minijax.lax: the primitive layer (JAX's `jax.lax`)."""

from minijax.lax.elementwise import add, cos, exp, mul, neg, sin, sub
from minijax.lax.reductions import reduce_sum
from minijax.lax.structural import (
    broadcast,
    broadcast_in_dim,
    convert_element_type,
    reshape,
    transpose,
)

__all__ = [
    "add", "broadcast", "broadcast_in_dim", "convert_element_type", "cos", "exp", "mul",
    "neg", "reduce_sum", "reshape", "sin", "sub", "transpose",
]
