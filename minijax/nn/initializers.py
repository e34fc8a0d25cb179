"""minijax.nn.initializers (JAX's `jax.nn.initializers`): functions returning
`init(key, shape, dtype) -> array` for parameter initialization."""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

import numpy as np

from minijax import dtypes, random
from minijax import numpy as jnp

__all__ = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
           "he_normal", "he_uniform",
           "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal",
           "ones", "orthogonal", "truncated_normal", "uniform", "variance_scaling",
           "xavier_normal", "xavier_uniform", "zeros"]


@runtime_checkable
class Initializer(Protocol):
    """What the initializer factories return (JAX's protocol): a callable
    `init(key, shape, dtype=None, out_sharding=None) -> Array`."""

    def __call__(self, key: Any, shape: Any, dtype: Any = None,
                 out_sharding: Any = None) -> Any:
        ...


def _dtype(dtype):
    return dtypes.default_float_dtype() if dtype is None else dtype


def zeros(key, shape, dtype=None):
    """An initializer of zeros (`key` is ignored)."""
    return jnp.zeros(shape, _dtype(dtype))


def ones(key, shape, dtype=None):
    """An initializer of ones (`key` is ignored)."""
    return jnp.ones(shape, _dtype(dtype))


def constant(value, dtype=None):
    """An initializer filling arrays with `value`."""
    def init(key, shape, dtype=dtype):
        return jnp.full(shape, value, dtype=_dtype(dtype))
    return init


def uniform(scale=1e-2, dtype=None):
    """An initializer of uniform samples in [0, scale)."""
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.uniform(key, shape, dtype) * jnp.array(scale, dtype)
    return init


def normal(stddev=1e-2, dtype=None):
    """An initializer of normal samples with standard deviation `stddev`."""
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.normal(key, shape, dtype) * jnp.array(stddev, dtype)
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """An initializer of normal samples truncated to (lower, upper), times stddev."""
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, shape, dtype) * \
            jnp.array(stddev, dtype)
    return init


def _axis_size(shape, axes):
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """(fan_in, fan_out) of a weight shape; the other axes form the receptive field."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         "weights tensor with default in_axis. Must be at least 2D or specify "
                         "in_axis explicitly.")
    in_size = _axis_size(shape, in_axis)
    out_size = _axis_size(shape, out_axis)
    batch_size = _axis_size(shape, batch_axis)
    receptive = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive, out_size * receptive


# Standard deviation of a standard normal truncated to (-2, 2).
_TRUNC_STD = 0.87962566103423978


def variance_scaling(scale, mode: str, distribution: str, in_axis=-2, out_axis=-1,
                     batch_axis=(), dtype=None):
    """An initializer whose samples have variance scale / n, where n is the fan-in, fan-out,
    their average ('fan_avg') or geometric mean ('fan_geo_avg'); distribution is
    'truncated_normal', 'normal' or 'uniform'."""
    def init(key, shape, dtype=dtype):
        shape = tuple(int(d) for d in shape)
        dtype = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            denominator = (fan_in * fan_out) ** 0.5
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = jnp.array(scale / denominator, dtype=dtype)
        if distribution == "truncated_normal":
            stddev = jnp.sqrt(variance) / jnp.array(_TRUNC_STD, dtype)
            return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * jnp.sqrt(variance)
        if distribution == "uniform":
            return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: "
                         f"{distribution}")
    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """variance_scaling(1, 'fan_avg', 'uniform')."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """variance_scaling(1, 'fan_avg', 'truncated_normal')."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis,
                            batch_axis, dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """variance_scaling(1, 'fan_in', 'uniform')."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """variance_scaling(1, 'fan_in', 'truncated_normal')."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis,
                            batch_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """variance_scaling(2, 'fan_in', 'uniform')."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """variance_scaling(2, 'fan_in', 'truncated_normal')."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis,
                            batch_axis, dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """An initializer of (semi-)orthogonal matrices along `column_axis` vs the rest."""
    def init(key, shape, dtype=dtype):
        dtype = _dtype(dtype)
        shape = tuple(int(d) for d in shape)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shape):
            return jnp.zeros(shape, dtype=dtype)
        n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
        q = random.orthogonal(key, n_rows, (), dtype, n_cols)
        q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
        q = jnp.moveaxis(q, -1, column_axis)
        return jnp.array(scale, dtype) * q
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """Convolution kernels (3-d to 5-d, ``(*window, in, out)``) that are an orthogonal
    ``in x out`` matrix at the window's centre and zero elsewhere."""
    def init(key, shape, dtype=dtype):
        shape = tuple(shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, matrix.dtype).at[centre].set(matrix)
    return init
