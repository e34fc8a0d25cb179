"""minijax.scipy: JAX's ``jax.scipy`` (``special``, ``stats``, ``linalg``, ``fft``,
``optimize``, ``signal``, ``integrate``, ``ndimage``, ``sparse``, ``cluster``,
``interpolate``, ``spatial``)."""

from minijax.scipy import fft, linalg, optimize, special, stats

__all__ = ["fft", "linalg", "optimize", "special", "stats"]
