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


def named(fn, qualname: str, doc: str):
    """`fn` given the public name `qualname` ("norm.cdf": minijax.scipy.stats.norm.cdf) and
    docstring `doc`, for the distribution functions the helpers below build."""
    dist, fn.__name__ = qualname.split(".")
    fn.__qualname__ = fn.__name__
    fn.__module__ = f"minijax.scipy.stats.{dist}"
    fn.__doc__ = doc
    return fn


def of_z(qualname: str, g, doc: str):
    """The function f(x, loc=0, scale=1) = g((x - loc) / scale) of a location-scale family
    (its cdf, sf and their logs in terms of the standardized z), named `qualname`."""
    def fn(x, loc=0, scale=1):
        z, _ = standardize(qualname, x, loc, scale)
        return g(z)
    return named(fn, qualname, doc)


def neg_inf_like(x):
    return jnp.full_like(x, -np.inf)


def is_integer(k):
    return k == jnp.round(k)
