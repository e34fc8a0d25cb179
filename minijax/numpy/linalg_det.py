"""Determinants as JAX computes them: 2x2 and 3x3 by their polynomials, larger ones through an
LU factorization differentiated through the adjugate, d det(A) = tr(adj(A) dA), which stays
finite at singular matrices where tr(det(A) A^-1 dA) is 0 * inf. Used by
minijax.numpy.linalg.det."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import get_aval
from minijax.custom_derivatives import custom_jvp
from minijax.lax import linalg as lax_linalg
from minijax.lax.linalg_util import diagonal as _diag
from minijax.lax.linalg_util import permutation_matrix as _perm_matrix
from minijax.numpy import base as jnp
from minijax.numpy import util
from minijax.numpy.einsum_ops import matmul


def lu_parts(a):
    """(lu, perm, parity of the row permutation) of square matrices a."""
    lu, pivots, perm = lax_linalg.lu(a)
    pshape = get_aval(pivots).shape
    swaps = lax.ne(pivots, util.iota(np.int32, pshape, len(pshape) - 1))
    parity = lax.rem(lax.reduce_sum(lax.convert_element_type(swaps, np.int32),
                                    (get_aval(swaps).ndim - 1,)), 2)
    return lu, perm, parity


def _sign(parity, dtype):
    return lax.convert_element_type(lax.sub(1, lax.mul(2, parity)), dtype)


def _det_value(a):
    lu, _, parity = lu_parts(a)
    return lax.mul(_sign(parity, get_aval(a).dtype),
                   lax.reduce_prod(_diag(lu), (get_aval(lu).ndim - 2,)))


det_lu = custom_jvp(_det_value)


def det_small(a):
    """2x2 and 3x3 determinants as their polynomials (as JAX: exact adjugate derivatives at
    any rank); None for other sizes."""
    n = get_aval(a).shape[-1]

    def e(i, j):
        return a[..., i, j]
    if n == 2:
        return e(0, 0) * e(1, 1) - e(0, 1) * e(1, 0)
    if n == 3:
        return (e(0, 0) * e(1, 1) * e(2, 2) + e(0, 1) * e(1, 2) * e(2, 0)
                + e(0, 2) * e(1, 0) * e(2, 1) - e(0, 2) * e(1, 1) * e(2, 0)
                - e(0, 0) * e(1, 2) * e(2, 1) - e(0, 1) * e(1, 0) * e(2, 2))
    return None


def _det_jvp(primals, tangents):
    # With P A = L U and U = D U1 (U1: U with its last pivot set to 1, D = diag(1, .., u_nn)):
    # adj(A) = det(A) A^-1 = U1^-1 diag(s p_n, .., s p_n, s p_{n-1}) L^-1 P, p_k the product
    # of the first k pivots and s the permutation's sign. Where U1 itself is singular (rank
    # deficiency above one, as JAX detects it) the adjugate is taken as 0, as in JAX.
    (a,), (g,) = primals, tangents
    shape, dtype = get_aval(a).shape, get_aval(a).dtype
    n = shape[-1]
    lu, perm, parity = lu_parts(a)
    sign = _sign(parity, dtype)
    det = lax.mul(sign, lax.reduce_prod(_diag(lu), (len(shape) - 2,)))
    if n == 0:
        return det, lax.reduce_sum(g, (len(shape) - 2, len(shape) - 1))  # zeros, linear in g
    partial = jnp.cumprod(_diag(lu), axis=-1)
    last = partial[..., -2:-1] if n > 1 else jnp.ones_like(partial[..., :1])
    scale = jnp.concatenate([jnp.repeat(partial[..., -1:], n - 1, axis=-1), last], axis=-1)
    scale = scale * sign[..., None]
    rows = util.iota(np.int32, shape, len(shape) - 2)
    cols = util.iota(np.int32, shape, len(shape) - 1)
    corner = lax.bitwise_and(lax.eq(rows, n - 1), lax.eq(cols, n - 1))
    u1 = jnp.where(corner, jnp.ones_like(lu), lu)
    probe = lax_linalg.triangular_solve(u1, jnp.ones(shape[:-2] + (1, n), dtype),
                                        left_side=False, lower=False)
    bad = jnp.any(~jnp.isfinite(probe), axis=(-2, -1))
    # Filtering the tangent too keeps reverse mode finite: the transposed solves meet zeros.
    x = jnp.where(bad[..., None, None], jnp.zeros_like(g), g)
    x = matmul(_perm_matrix(perm, dtype), x)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    x = x * scale[..., None]
    x = lax_linalg.triangular_solve(u1, x, left_side=True, lower=False)
    t = jnp.trace(x, axis1=-2, axis2=-1)
    return det, jnp.where(bad, jnp.zeros_like(t), t)


det_lu.defjvp(_det_jvp)
