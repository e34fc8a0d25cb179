"""Helpful errors for common NumPy names that minijax.numpy does not provide.

`minijax.numpy.__getattr__` calls `missing_attribute(name)`: names listed here raise a
NotImplementedError (that is also an AttributeError, so `hasattr` stays False) naming an
alternative; other names raise a plain AttributeError.
"""

from __future__ import annotations

_IMMUTABLE = ("arrays are immutable in minijax (as in JAX); use the functional update "
              "x.at[index].set(values)")

ALTERNATIVES = {
    "apply_along_axis": "use minijax.vmap over the other axes",
    "apply_over_axes": "apply the reduction with its axis= argument (or minijax.vmap)",
    "block": "use jnp.concatenate / jnp.stack",
    "choose": "use jnp.select or jnp.take_along_axis",
    "compress": "use a boolean mask eagerly, or jnp.where(cond, size=N) under jit",
    "copyto": _IMMUTABLE,
    "delete": "use jnp.concatenate of slices, or boolean masks eagerly",
    "extract": "use a boolean mask eagerly, or jnp.where(cond, size=N) under jit",
    "fabs": "use jnp.abs",
    "fft": "minijax has no FFT yet; use numpy.fft on the host (outside jit)",
    "fill_diagonal": _IMMUTABLE + " at the indices (jnp.arange(n), jnp.arange(n))",
    "frexp": "use jnp.log2 and jnp.floor (exponent) and a division (mantissa)",
    "gcd": "write it with lax.while_loop (Euclid's algorithm)",
    "gradient": "use jnp.diff, or central differences (f[2:] - f[:-2]) / (2 * dx)",
    "histogram2d": "use jnp.digitize per coordinate and jnp.bincount(..., length=)",
    "histogramdd": "use jnp.digitize per coordinate and jnp.bincount(..., length=)",
    "i0": "use the series or numpy.i0 on the host (outside jit)",
    "insert": "use jnp.concatenate of slices and the inserted values",
    "ix_": "use jnp.meshgrid(*arrays, indexing='ij', sparse=True)",
    "lcm": "use x * y // gcd(x, y) with a lax.while_loop gcd",
    "ldexp": "use x * 2.0 ** e",
    "mgrid": "use jnp.meshgrid(jnp.arange(...), ..., indexing='ij')",
    "ogrid": "use jnp.meshgrid(jnp.arange(...), ..., indexing='ij', sparse=True)",
    "place": _IMMUTABLE,
    "poly": "use numpy.poly on the host (outside jit)",
    "polyadd": "pad the shorter coefficient array with jnp.pad and add",
    "polyder": "multiply by jnp.arange(n - 1, 0, -1) and drop the last coefficient",
    "polyfit": "use jnp.linalg.lstsq(jnp.vander(x, deg + 1), y)",
    "polyint": "divide by jnp.arange(n, 0, -1) and append the constant",
    "polymul": "use jnp.convolve(p1, p2)",
    "polysub": "pad the shorter coefficient array with jnp.pad and subtract",
    "put": _IMMUTABLE,
    "put_along_axis": _IMMUTABLE + " (or scatter with lax.scatter)",
    "putmask": _IMMUTABLE + " or jnp.where(mask, values, x)",
    "ravel_multi_index": "compute the flat index with * and + from the array's strides",
    "resize": "use jnp.tile (or jnp.resize-like jnp.ravel + slicing) and jnp.reshape",
    "roots": "use numpy.roots on the host, or eigenvalues of the companion matrix",
    "rollaxis": "use jnp.moveaxis",
    "spacing": "use jnp.nextafter(x, jnp.inf) - x",
    "tril_indices": "use numpy.tril_indices (shapes are static) and index with the result",
    "triu_indices": "use numpy.triu_indices (shapes are static) and index with the result",
    "trim_zeros": "its size depends on values: slice eagerly, or use jnp.nonzero(size=)",
    "unravel_index": "use // and % with the array's shape",
    "unstack": "use [x[i] for i in range(x.shape[0])]",
    "vectorize": "use minijax.vmap (nest it for several axes)",
}


class NotImplementedAttributeError(NotImplementedError, AttributeError):
    """A NumPy name minijax.numpy lacks; the message names an alternative."""


def missing_attribute(name: str):
    """Raise the error for `minijax.numpy.<name>` (an unknown attribute)."""
    hint = ALTERNATIVES.get(name)
    if hint is not None:
        raise NotImplementedAttributeError(
            f"minijax.numpy.{name} is not implemented: {hint}.")
    raise AttributeError(f"module 'minijax.numpy' has no attribute '{name}'")
