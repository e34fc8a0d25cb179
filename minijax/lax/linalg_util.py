"""Batched-matrix helpers for the linear-algebra primitives (minijax/lax/linalg.py).

Every helper works on arrays whose last two dimensions are matrix rows and columns and whose
leading dimensions are a batch; they bind lax primitives, so they trace, differentiate and
batch like any other lax code.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.core import get_aval
from minijax.lax.dot_conv import dot_general
from minijax.lax.elementwise import add, mul
from minijax.lax.elementwise_complex import conj, imag, real
from minijax.lax.elementwise_int import eq, ge, le, select_n
from minijax.lax.reductions import reduce_sum
from minijax.lax.structural import (
    broadcast_in_dim,
    broadcasted_iota,
    convert_element_type,
    full,
    transpose,
)


def is_complex(x) -> bool:
    return dtypes.kind(get_aval(x).dtype) == "c"


def mT(x):
    """Swap the last two dimensions."""
    nd = get_aval(x).ndim
    perm = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    return transpose(x, perm)


def cj(x):
    """Complex conjugate; the identity on real arrays (lax.conj would make them complex)."""
    return conj(x) if is_complex(x) else x


def mH(x):
    """Conjugate transpose of the last two dimensions."""
    return cj(mT(x))


def matmul(a, b):
    """a @ b for arrays of equal rank whose leading (batch) dimensions agree."""
    nd = get_aval(a).ndim
    batch = tuple(range(nd - 2))
    return dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def matvec_cols(a, s):
    """a * s[..., None, :]: scale the columns of a by the vector s."""
    shape = get_aval(a).shape
    nd = len(shape)
    s = convert_element_type(s, get_aval(a).dtype)
    return mul(a, broadcast_in_dim(s, shape, tuple(range(nd - 2)) + (nd - 1,)))


def matvec_rows(a, s):
    """s[..., :, None] * a: scale the rows of a by the vector s."""
    shape = get_aval(a).shape
    nd = len(shape)
    s = convert_element_type(s, get_aval(a).dtype)
    return mul(a, broadcast_in_dim(s, shape, tuple(range(nd - 1))))


def _index_masks(shape):
    nd = len(shape)
    rows = broadcasted_iota(np.int32, shape, nd - 2)
    cols = broadcasted_iota(np.int32, shape, nd - 1)
    return rows, cols


def tri_mask(shape, k: int = 0, lower: bool = True):
    """Boolean mask of the lower (col <= row + k) or upper (col >= row + k) triangle."""
    rows, cols = _index_masks(shape)
    shifted = add(rows, k) if k else rows
    return ge(shifted, cols) if lower else le(shifted, cols)


def _zeros(x):
    aval = get_aval(x)
    return full(aval.shape, 0, aval.dtype)


def tril(x, k: int = 0):
    """Lower triangle (col <= row + k) of the matrices in x; the rest is zero."""
    return select_n(tri_mask(get_aval(x).shape, k, True), _zeros(x), x)


def triu(x, k: int = 0):
    """Upper triangle (col >= row + k) of the matrices in x; the rest is zero."""
    return select_n(tri_mask(get_aval(x).shape, k, False), _zeros(x), x)


def eye_mask(shape):
    rows, cols = _index_masks(shape)
    return eq(rows, cols)


def eye_like(x):
    """Identity matrices of x's (square) shape and dtype."""
    aval = get_aval(x)
    return convert_element_type(eye_mask(aval.shape), aval.dtype)


def diagonal(x):
    """The main diagonals of square matrices: [..., n, n] -> [..., n]."""
    aval = get_aval(x)
    masked = select_n(eye_mask(aval.shape), _zeros(x), x)
    return reduce_sum(masked, (aval.ndim - 1,))


def diag_embed(d, dtype=None):
    """Square matrices with diagonals d: [..., n] -> [..., n, n]."""
    aval = get_aval(d)
    shape = aval.shape + aval.shape[-1:]
    dtype = aval.dtype if dtype is None else dtype
    d = convert_element_type(d, dtype)
    wide = broadcast_in_dim(d, shape, tuple(range(aval.ndim)))
    return select_n(eye_mask(shape), full(shape, 0, dtype), wide)


def real_part(x):
    return real(x) if is_complex(x) else x


def imag_part(x):
    return imag(x)


def to_dtype(x, dtype):
    return convert_element_type(x, dtype)


def permutation_matrix(perm, dtype):
    """One-hot matrices P with P[..., i, perm[i]] = 1 (so P @ a == a[perm])."""
    aval = get_aval(perm)
    m = aval.shape[-1]
    shape = aval.shape + (m,)
    wide = broadcast_in_dim(perm, shape, tuple(range(aval.ndim)))
    cols = broadcasted_iota(aval.dtype, shape, aval.ndim)
    return convert_element_type(eq(wide, cols), dtype)
