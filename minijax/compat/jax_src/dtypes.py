"""``jax._src.dtypes``: minijax's dtypes module, plus :class:`TypePromotionError`."""

import numpy as np

from minijax.dtypes import *  # noqa: F403 - this module stands for JAX's dtypes internals
from minijax.dtypes import TypePromotionError  # noqa: F401 - JAX's name here


class ExtendedDType:
    """Base of dtypes that are not NumPy's (JAX's ``jax._src.dtypes.ExtendedDType``): a
    subclass names its scalar ``type`` (a subclass of ``dtypes.extended``) and ``name``.
    minijax's own key dtype follows the same shape; libraries subclass this for their own
    dtypes (flax's fp8 metadata wrapper)."""

    type: type = extended  # noqa: F405 - from minijax.dtypes
    name: str = "extended"

    @property
    def _rules(self):
        raise NotImplementedError("minijax has no rules for user-defined extended dtypes")


DType = np.dtype  # JAX's annotation type for dtypes
