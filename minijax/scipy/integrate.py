"""minijax.scipy.integrate (JAX's ``jax.scipy.integrate``): the trapezoidal rule."""

from __future__ import annotations

from minijax import numpy as jnp

__all__ = ["trapezoid"]


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """Integrate ``y`` along ``axis`` by the trapezoidal rule, at sample points ``x`` (1-d
    or shaped like ``y``) or with spacing ``dx``."""
    y = jnp.asarray(y)
    if not jnp.issubdtype(y.dtype, jnp.inexact):
        y = y.astype(jnp.result_type(y, 1.0))
    y = jnp.moveaxis(y, axis, -1)
    if x is None:
        widths = jnp.asarray(dx)
    else:
        x = jnp.asarray(x)
        if x.ndim == 1:
            widths = jnp.diff(x)
        else:
            widths = jnp.diff(jnp.moveaxis(x, axis, -1), axis=-1)
    return 0.5 * jnp.sum(widths * (y[..., 1:] + y[..., :-1]), axis=-1)
