"""minijax.scipy: JAX's ``jax.scipy`` (``special``, ``stats``, ``linalg``, ``fft``,
``optimize``, ``signal``, ``integrate``, ``ndimage``, ``sparse``, ``cluster``,
``interpolate``, ``spatial``)."""

from minijax.scipy import (
    cluster,
    fft,
    integrate,
    interpolate,
    linalg,
    ndimage,
    optimize,
    signal,
    sparse,
    spatial,
    special,
    stats,
)

__all__ = ["cluster", "fft", "integrate", "interpolate", "linalg", "ndimage", "optimize",
           "signal", "sparse", "spatial", "special", "stats"]
