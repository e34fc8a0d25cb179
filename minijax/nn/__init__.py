"""minijax.nn: JAX's `jax.nn` activation functions, softmax family, one_hot and
standardize, and `minijax.nn.initializers`."""

from minijax.nn import initializers
from minijax.nn.functions import (
    celu,
    elu,
    gelu,
    glu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    hard_tanh,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    logsumexp,
    mish,
    one_hot,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    soft_sign,
    softmax,
    softplus,
    sparse_plus,
    standardize,
    swish,
)

__all__ = ["celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish",
           "hard_tanh", "initializers", "leaky_relu", "log_sigmoid", "log_softmax",
           "logsumexp", "mish", "one_hot", "relu", "relu6", "selu", "sigmoid", "silu",
           "soft_sign", "softmax", "softplus", "sparse_plus", "standardize", "swish", "tanh",
           "identity"]

# jax.nn re-exports these two.
from minijax.numpy import asarray as identity  # noqa: E402
from minijax.numpy import tanh  # noqa: E402
