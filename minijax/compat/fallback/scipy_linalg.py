"""``jax.scipy.linalg``'s triangular and Cholesky solves and ``toeplitz`` (JAX semantics:
``b`` with one dimension fewer than ``a`` is a vector; batch dimensions must match)."""

from __future__ import annotations

from minijax import numpy as jnp
from minijax.lax import linalg as lax_linalg

__all__ = ["cho_factor", "cho_solve", "cholesky", "solve_triangular", "toeplitz"]


def _inexact(*args):
    dtype = jnp.result_type(*args, 1.0)
    return [jnp.asarray(a, dtype) for a in args]


def _solve(a, b, lower, transpose_a, conjugate_a, unit_diagonal):
    vector = a.ndim == b.ndim + 1
    if vector:
        b = b[..., None]
    out = lax_linalg.triangular_solve(a, b, left_side=True, lower=lower,
                                      transpose_a=transpose_a, conjugate_a=conjugate_a,
                                      unit_diagonal=unit_diagonal)
    return out[..., 0] if vector else out


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """Solve ``op(a) x = b`` for triangular ``a``; ``trans`` 0/'N', 1/'T' or 2/'C'."""
    del overwrite_b, debug, check_finite
    a, b = _inexact(a, b)
    modes = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
             2: (True, True), "C": (True, True)}
    if trans not in modes:
        raise ValueError(f"Invalid 'trans' value {trans!r}: use 0, 1, 2, 'N', 'T' or 'C'.")
    transpose_a, conjugate_a = modes[trans]
    return _solve(a, b, lower, transpose_a, conjugate_a, unit_diagonal)


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of ``a`` (upper by default, as SciPy)."""
    del overwrite_a, check_finite
    (a,) = _inexact(a)
    factor = lax_linalg.cholesky(a)
    return factor if lower else jnp.conj(jnp.swapaxes(factor, -1, -2))


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(c, lower)`` for :func:`cho_solve`."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """Solve ``a x = b`` given ``cho_factor(a)``."""
    del overwrite_b, check_finite
    c, lower = c_and_lower
    c, b = _inexact(c, b)
    y = _solve(c, b, lower, not lower, not lower, False)
    return _solve(c, y, lower, lower, lower, False)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (``conj(c)`` if None);
    leading dimensions are batch dimensions."""
    c = jnp.asarray(c)
    r = jnp.conj(c) if r is None else jnp.asarray(r)
    m, n = c.shape[-1], r.shape[-1]
    values = jnp.concatenate([jnp.flip(r[..., 1:], -1), c], axis=-1)
    index = jnp.arange(m)[:, None] - jnp.arange(n)[None, :] + (n - 1)
    return jnp.take(values, index, axis=-1)
