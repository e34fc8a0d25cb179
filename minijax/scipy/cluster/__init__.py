"""minijax.scipy.cluster (JAX's ``jax.scipy.cluster``): vector quantization."""

from minijax.scipy.cluster import vq

__all__ = ["vq"]
