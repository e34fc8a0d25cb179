"""``jax.image``: resizing images (any arrays) by resampling with a filter kernel.

:func:`scale_and_translate` maps output position ``o`` (a pixel centre, ``o + 0.5``) of each
resized dimension to the input position ``(o + 0.5 - translation) / scale - 0.5`` and takes a
weighted sum of the input samples around it, with the method's kernel (triangle for
``linear``, Keys cubic with a = -0.5 for ``cubic``, windowed sinc for ``lanczos3`` /
``lanczos5``). With ``antialias`` and a downscale (scale < 1) the kernel is stretched by
1/scale so that it low-pass filters. Weights are normalised to sum to 1 per output sample;
output samples that map outside the input are 0. Each dimension is a matrix product with its
weight matrix, so it differentiates and batches like any contraction.

:func:`resize` picks the dimensions whose size changes and applies
:func:`scale_and_translate` (scale = new size / old size, no translation), or for
``nearest`` takes the input sample at ``floor((o + 0.5) * old / new)``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

import numpy as np

from minijax import dtypes, lax
from minijax import numpy as jnp

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """Resampling methods of :func:`resize`."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4

    @staticmethod
    def from_string(s: str) -> ResizeMethod:
        """The method named ``s`` (``bilinear``/``trilinear`` are ``linear``, ``bicubic``/
        ``tricubic`` are ``cubic``)."""
        name = s.lower()
        aliases = {"nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
                   "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
                   "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
                   "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
                   "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC}
        if name not in aliases:
            raise ValueError(f"Unknown resize method: {s!r}; expected one of "
                             f"{sorted(aliases)}.")
        return aliases[name]


def _method(method) -> ResizeMethod:
    return method if isinstance(method, ResizeMethod) else ResizeMethod.from_string(method)


def _triangle(x):
    return jnp.maximum(0, 1 - jnp.abs(x))


def _keys_cubic(x):
    # Keys' cubic convolution kernel with a = -0.5
    x = jnp.abs(x)
    near = ((1.5 * x - 2.5) * x) * x + 1
    far = ((-0.5 * x + 2.5) * x - 4) * x + 2
    return jnp.where(x >= 1, jnp.where(x >= 2, 0.0, far), near)


def _lanczos(radius: int) -> Callable:
    def kernel(x):
        y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
        safe = jnp.where(x == 0, 1.0, x)
        out = jnp.where(x == 0, 1.0, y / (np.pi ** 2 * safe * safe))
        return jnp.where(jnp.abs(x) > radius, 0.0, out)
    return kernel


_KERNELS = {ResizeMethod.LINEAR: _triangle, ResizeMethod.CUBIC: _keys_cubic,
            ResizeMethod.LANCZOS3: _lanczos(3), ResizeMethod.LANCZOS5: _lanczos(5)}


def _weight_matrix(in_size: int, out_size: int, scale, translation, kernel, antialias: bool,
                   dtype):
    """The (in_size, out_size) matrix of each output sample's input weights."""
    inv_scale = 1.0 / scale
    kernel_scale = jnp.maximum(inv_scale, 1.0) if antialias else 1.0
    sample = (jnp.arange(out_size, dtype=dtype) + 0.5) * inv_scale \
        - translation * inv_scale - 0.5
    x = jnp.abs(sample[None, :] - jnp.arange(in_size, dtype=dtype)[:, None]) / kernel_scale
    weights = kernel(x)
    total = jnp.sum(weights, axis=0, keepdims=True)
    eps = float(dtypes.finfo(dtype).eps)
    weights = jnp.where(jnp.abs(total) > 1000 * eps,
                        weights / jnp.where(total != 0, total, 1), 0)
    inside = (sample >= -0.5) & (sample <= in_size - 0.5)
    return jnp.where(inside[None, :], weights, 0).astype(dtype)


def _compute_dtype(image):
    dt = jnp.result_type(image)
    return dt if dtypes.issubdtype(dt, np.inexact) else jnp.result_type(float)


def _scale_and_translate(x, shape, spatial_dims, scale, translation, kernel, antialias,
                         precision):
    dtype = _compute_dtype(x)
    real = dtypes.finfo(dtype).dtype if dtypes.issubdtype(dtype, np.complexfloating) else dtype
    out = x.astype(dtype)
    for i, d in enumerate(spatial_dims):
        d = int(d) % x.ndim
        w = _weight_matrix(x.shape[d], int(shape[d]), jnp.asarray(scale[i], real),
                           jnp.asarray(translation[i], real), kernel, antialias, real)
        out = jnp.moveaxis(jnp.tensordot(out, w.astype(dtype), axes=((d,), (0,)),
                                         precision=precision), -1, d)
    return out


def scale_and_translate(image, shape: Sequence[int], spatial_dims: Sequence[int], scale,
                        translation, method, antialias: bool = True,
                        precision=lax.Precision.HIGHEST):
    """Resample ``image`` along ``spatial_dims`` to ``shape``: output sample ``o`` of each
    such dimension reads input position ``(o + 0.5 - translation) / scale - 0.5``.
    ``method`` is ``linear``, ``cubic``, ``lanczos3`` or ``lanczos5`` (not ``nearest``)."""
    image = jnp.asarray(image)
    shape = tuple(int(s) for s in shape)
    if len(shape) != image.ndim:
        raise ValueError(f"scale_and_translate: shape {shape} must have one entry per "
                         f"dimension of the image (ndim {image.ndim}).")
    if len(spatial_dims) != len(jnp.atleast_1d(jnp.asarray(scale))) or len(
            spatial_dims) != len(jnp.atleast_1d(jnp.asarray(translation))):
        raise ValueError("scale_and_translate: spatial_dims, scale and translation must have "
                         "the same length.")
    for d in range(image.ndim):
        if d not in [int(s) % image.ndim for s in spatial_dims] and shape[d] != image.shape[d]:
            raise ValueError(f"scale_and_translate: dimension {d} is not in spatial_dims, so "
                             f"its size must stay {image.shape[d]}, got {shape[d]}.")
    m = _method(method)
    if m is ResizeMethod.NEAREST:
        raise ValueError("scale_and_translate does not support the 'nearest' method; use "
                         "resize(..., method='nearest').")
    scale = jnp.atleast_1d(jnp.asarray(scale))
    translation = jnp.atleast_1d(jnp.asarray(translation))
    return _scale_and_translate(image, shape, spatial_dims, scale, translation, _KERNELS[m],
                                antialias, precision)


def _resize_nearest(x, shape):
    for d, (old, new) in enumerate(zip(x.shape, shape)):
        if old == new:
            continue
        offsets = (np.arange(new, dtype=np.float32) + 0.5) * np.float32(old / new)
        idx = np.minimum(np.floor(offsets).astype(np.int32), old - 1)
        x = jnp.take(x, idx, axis=d)
    return x


def resize(image, shape: Sequence[int], method, antialias: bool = True,
           precision=lax.Precision.HIGHEST):
    """``image`` resampled to ``shape`` (one size per dimension) with ``method``:
    ``nearest``, ``linear`` (``bilinear``), ``cubic`` (``bicubic``), ``lanczos3`` or
    ``lanczos5``. Integer images give float results except with ``nearest``."""
    image = jnp.asarray(image)
    shape = tuple(int(s) for s in shape)
    if len(shape) != image.ndim:
        raise ValueError(f"resize: shape {shape} must have one entry per dimension of the "
                         f"image (ndim {image.ndim}).")
    m = _method(method)
    if m is ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    dims = [d for d in range(image.ndim) if image.shape[d] != shape[d]]
    if not dims:
        return image.astype(_compute_dtype(image))
    scale = [shape[d] / image.shape[d] for d in dims]
    return _scale_and_translate(image, shape, dims, scale, [0.0] * len(dims), _KERNELS[m],
                                antialias, precision)
