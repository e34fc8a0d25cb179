"""``jax._src.dtypes``: minijax's dtypes module, plus :class:`TypePromotionError`."""

from minijax.dtypes import *  # noqa: F403 - this module stands for JAX's dtypes internals


class TypePromotionError(ValueError):
    """JAX raises it for promotions forbidden by ``jax_numpy_dtype_promotion='strict'``.

    minijax implements the standard promotion mode only, so it never raises this; libraries
    import the class to catch it.
    """
