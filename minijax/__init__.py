"""minijax: a small, hackable JAX-like array library with its own XLA-style compiler.

Use it as JAX: `import minijax as jax, minijax.numpy as jnp`.
"""

__version__ = "0.1.0"

from minijax import lax
from minijax.api import (
    ShapeDtypeStruct,
    grad,
    jvp,
    linearize,
    make_jaxpr,
    value_and_grad,
    vjp,
    vmap,
)
from minijax.array import Array
from minijax.config import config
from minijax.dispatch import device_put

__all__ = [
    "Array", "ShapeDtypeStruct", "config", "device_put", "grad", "jvp", "lax", "linearize",
    "make_jaxpr", "value_and_grad", "vjp", "vmap",
]
