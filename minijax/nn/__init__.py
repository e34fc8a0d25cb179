"""minijax.nn: JAX's `jax.nn` activation functions, softmax family, one_hot and
standardize, and `minijax.nn.initializers`."""

from minijax.nn import initializers
from minijax.nn.attention import dot_product_attention
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
    log1mexp,
    log_sigmoid,
    log_softmax,
    logmeanexp,
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
    sparse_sigmoid,
    squareplus,
    standardize,
    swish,
)

__all__ = ["celu", "dot_product_attention", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu",
           "hard_swish", "hard_tanh", "initializers", "leaky_relu", "log1mexp", "log_sigmoid",
           "log_softmax", "logmeanexp", "logsumexp", "mish", "one_hot", "relu", "relu6",
           "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus", "sparse_plus",
           "sparse_sigmoid", "squareplus", "standardize", "swish", "tanh", "identity"]

# jax.nn re-exports these two.
from minijax.numpy import asarray as identity  # noqa: E402
from minijax.numpy import tanh  # noqa: E402
