"""Activation functions and friends of minijax.nn (JAX's `jax.nn`), in numerically stable
forms with JAX's gradient conventions (relu' = 0 at 0; softmax and log_softmax subtract the
max so large inputs stay finite)."""

from __future__ import annotations

import numpy as np

from minijax import dtypes, lax
from minijax import numpy as jnp
from minijax.custom_derivatives import custom_jvp
from minijax.scipy.special import logsumexp

__all__ = ["celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish",
           "hard_tanh", "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp",
           "logsumexp", "mish", "one_hot", "relu", "relu6", "selu", "sigmoid", "silu",
           "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus",
           "standardize", "swish"]


def _inexact(x):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(dtypes.default_float_dtype())
    return x


@custom_jvp
def relu(x):
    """max(x, 0); its derivative at 0 is 0 (as JAX)."""
    return jnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: jnp.where(x > 0, g, jnp.zeros_like(g)))


@custom_jvp
def relu6(x):
    """min(max(x, 0), 6); derivative 0 at 0 and 6."""
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


relu6.defjvps(lambda g, ans, x: jnp.where((x > 0) & (x < 6), g, jnp.zeros_like(g)))


def sigmoid(x):
    """The logistic function 1 / (1 + exp(-x))."""
    return lax.logistic(_inexact(x))


def softplus(x):
    """log(1 + exp(x)), computed as logaddexp(x, 0)."""
    return jnp.logaddexp(x, 0)


def sparse_plus(x):
    """0 for x <= -1, x for x >= 1, (x + 1)^2 / 4 between."""
    x = jnp.asarray(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def soft_sign(x):
    """x / (|x| + 1)."""
    x = jnp.asarray(x)
    return x / (jnp.abs(x) + 1)


def silu(x):
    """x * sigmoid(x) (also called swish)."""
    x = jnp.asarray(x)
    return x * sigmoid(x)


swish = silu


def mish(x):
    """x * tanh(softplus(x))."""
    x = jnp.asarray(x)
    return x * jnp.tanh(softplus(x))


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x)."""
    return -softplus(-jnp.asarray(x))


def elu(x, alpha=1.0):
    """x for x > 0, alpha (exp(x) - 1) otherwise (expm1 of a clamped input, so no inf)."""
    x = jnp.asarray(x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0.0, x)))


def celu(x, alpha=1.0):
    """max(x, 0) + alpha expm1(min(x, 0) / alpha)."""
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


def selu(x):
    """scale * elu(x, alpha) with the self-normalizing constants."""
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def leaky_relu(x, negative_slope=0.01):
    """x for x >= 0, negative_slope * x otherwise."""
    x = jnp.asarray(x)
    return jnp.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
    """x clipped to [-1, 1]."""
    x = jnp.asarray(x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


def hard_sigmoid(x):
    """relu6(x + 3) / 6."""
    return relu6(jnp.asarray(x) + 3.0) / 6.0


def hard_silu(x):
    """x * hard_sigmoid(x)."""
    x = jnp.asarray(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def gelu(x, approximate: bool = True):
    """The Gaussian error linear unit: x Phi(x), by default with the tanh approximation
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    x = _inexact(x)
    if approximate:
        c = np.sqrt(2 / np.pi).astype(x.dtype)
        return x * (0.5 * (1.0 + jnp.tanh(c * (x + 0.044715 * x ** 3))))
    return (0.5 * x * lax.erfc(-x * np.sqrt(0.5).astype(x.dtype))).astype(x.dtype)


def glu(x, axis: int = -1):
    """Gated linear unit: the first half of x along `axis` times sigmoid of the second."""
    x = jnp.asarray(x)
    if x.shape[axis] % 2:
        raise ValueError(f"glu: axis size must be divisible by 2, got {x.shape[axis]} "
                         f"(shape {x.shape}, axis {axis})")
    x1, x2 = jnp.split(x, 2, axis)
    return x1 * sigmoid(x2)


def log_softmax(x, axis=-1, where=None):
    """x - logsumexp(x, axis), shifted by the (gradient-stopped) max."""
    x = _inexact(x)
    x_max = jnp.max(x, axis, where=where, initial=-jnp.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -jnp.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    shifted_lse = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
    result = shifted - shifted_lse
    if where is not None:
        return jnp.where(where, result, -jnp.inf)
    return result


def softmax(x, axis=-1, where=None):
    """exp(x) / sum(exp(x), axis), shifted by the (gradient-stopped) max; masked-out
    elements give 0.

    Differentiated as written, as JAX 0.10 does by default (its custom-JVP variant is off
    unless `jax_softmax_custom_jvp` is set), so gradients at -inf inputs and masked
    elements match JAX's, signed zeros included."""
    x = _inexact(x)
    # initial=-inf: a zero-size axis gives an empty result, as JAX's.
    x_max = jnp.max(x, axis, where=where, initial=-jnp.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -jnp.inf)
    unnormalized = jnp.exp(x_safe - lax.stop_gradient(x_max))
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    if where is not None:
        result = jnp.where(where, result, 0)
    return result


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    """(x - mean) / sqrt(variance + epsilon), the statistics over `axis` by default."""
    x = jnp.asarray(x)
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - \
            jnp.square(mean)
        variance = jnp.clip(variance, 0)
    return jnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
    """One-hot encoding of integer x along a new axis of size num_classes (out-of-range
    values give all zeros)."""
    try:
        num_classes = int(num_classes)
    except Exception as e:
        raise TypeError("one_hot: num_classes must be a concrete integer; "
                        f"got {num_classes!r}") from e
    x = jnp.asarray(x)
    dtype = dtypes.default_float_dtype() if dtype is None else dtype
    out_axis = axis if axis >= 0 else axis + x.ndim + 1
    if not 0 <= out_axis <= x.ndim:
        raise ValueError(f"one_hot: axis {axis} is out of bounds for output of rank "
                         f"{x.ndim + 1}")
    lhs = jnp.expand_dims(x, out_axis)
    rhs_shape = [1] * x.ndim
    rhs_shape.insert(out_axis, num_classes)
    rhs = lax.broadcasted_iota(x.dtype, tuple(rhs_shape), out_axis)
    return (lhs == rhs).astype(dtype)




def squareplus(x, b=4):
    """(x + sqrt(x^2 + b)) / 2, a smooth ReLU (https://arxiv.org/abs/2112.11687)."""
    x, b = jnp.asarray(x), jnp.asarray(b)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


def sparse_sigmoid(x):
    """0 for x <= -1, (x + 1) / 2 between, 1 for x >= 1 (the derivative of sparse_plus)."""
    return 0.5 * jnp.clip(jnp.asarray(x) + 1.0, 0.0, 2.0)


@custom_jvp
def log1mexp(x):
    """log(1 - exp(-x)), accurate for small and large x >= 0 (nan for x < 0)."""
    x = _inexact(x)
    # Machler's switch at log 2: expm1 is accurate for small x, log1p for large.
    return jnp.where(x < np.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))

log1mexp.defjvps(lambda g, ans, x: g / jnp.expm1(x))


def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """log(mean(exp(x))) over `axis` (the elements selected by `where`):
    logsumexp(x) - log(n)."""
    x = jnp.asarray(x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    selected = jnp.ones(x.shape, bool) if where is None else \
        jnp.broadcast_to(jnp.asarray(where), x.shape)
    count = jnp.sum(selected, axis=axis, keepdims=keepdims, dtype=lse.dtype)
    return lse - jnp.log(count)
