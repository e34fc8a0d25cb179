"""Shared helpers of the distributions in minijax.scipy.stats."""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special.basic import _inexact


def promote(name: str, *args):
    """The arguments as arrays of one common inexact dtype, broadcast together."""
    return _inexact(name, *args)


def standardize(name: str, x, loc, scale):
    """(z, scale) with z = (x - loc) / scale, all promoted to one inexact dtype."""
    x, loc, scale = promote(name, x, loc, scale)
    return (x - loc) / scale, scale


def neg_inf_like(x):
    return jnp.full_like(x, -np.inf)


def is_integer(k):
    return k == jnp.round(k)
