"""minijax.numpy.linalg (as jax.numpy.linalg): decompositions on top of minijax.lax.linalg,
and det, slogdet, inv, solve, pinv, lstsq, norm, matrix_rank, matrix_power, multi_dot, ...

Everything acts on the last two dimensions and batches over leading ones. det, slogdet,
solve and inv are built from lu + triangular_solve, so they differentiate, vmap and jit.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.custom_derivatives import custom_jvp
from minijax.lax import linalg as lax_linalg
from minijax.lax import linalg_more as lax_linalg_more
from minijax.lax.linalg_util import diagonal as _diag
from minijax.lax.linalg_util import mH as _mH
from minijax.lax.linalg_util import permutation_matrix as _perm_matrix
from minijax.numpy import base as jnp
from minijax.numpy import util
from minijax.numpy.einsum_ops import cross as _cross
from minijax.numpy.einsum_ops import matmul, outer, tensordot, vecdot
from minijax.numpy.linalg_det import det_lu, det_small, lu_parts
from minijax.numpy.util import check_arraylike

__all__ = [
    "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cond", "cross",
    "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq", "matmul",
    "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm",
    "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv",
    "tensorsolve", "trace", "vecdot", "vector_norm",
]


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


def _inexact(name, *args):
    check_arraylike(name, *args)
    return util.promote_dtypes_inexact(*args)


def _square(name, a, min_ndim=2):
    shape = get_aval(a).shape
    if len(shape) < min_ndim or shape[-1] != shape[-2]:
        raise ValueError(f"{name}: argument must be a (batch of) square matrices, got shape "
                         f"{shape}")


def _matrix(name, a):
    if get_aval(a).ndim < 2:
        raise ValueError(f"{name}: argument must have at least 2 dimensions, got shape "
                         f"{get_aval(a).shape}")


# --------------------------------------------------------------------------- decompositions


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """Cholesky factor of a Hermitian positive-definite matrix (lower, or upper if `upper`).
    Matrices that are not positive definite give NaNs."""
    (a,) = _inexact("cholesky", a)
    _square("cholesky", a)
    lower = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _mH(lower) if upper else lower


def qr(a, mode: str = "reduced"):
    """QR decomposition; mode 'reduced' (default), 'complete' or 'r' (R only)."""
    (a,) = _inexact("qr", a)
    _matrix("qr", a)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: unsupported mode {mode!r}; expected 'reduced', 'complete' or "
                         "'r'")
    q, r = lax_linalg.qr(a, full_matrices=(mode == "complete"))
    return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO=None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix."""
    (a,) = _inexact("eigh", a)
    _square("eigh", a)
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    v, w = lax_linalg.eigh(a, lower=(UPLO != "U"), symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input: bool = True):
    """Eigenvalues (ascending) of a Hermitian matrix."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):
    """Singular value decomposition: SVDResult(U, S, Vh), or S alone if not compute_uv."""
    (a,) = _inexact("svd", a)
    _matrix("svd", a)
    if hermitian:
        return _svd_hermitian(a, compute_uv, subset_by_index)
    out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                         subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def _svd_hermitian(a, compute_uv, subset_by_index):
    """JAX's hermitian svd: eigh of the (symmetrized) input; singular values are |w| in
    descending order (ties: the higher eigenvalue index first), Vh = (U * sign(w))^H."""
    if subset_by_index is not None:
        raise NotImplementedError("svd: hermitian=True with subset_by_index is not supported")
    vectors, w = lax_linalg.eigh(a, lower=True, symmetrize_input=True)
    s = jnp.abs(w)
    if not compute_uv:
        return jnp.flip(lax.sort(s, dimension=-1), axis=-1)
    idxs = util.iota(np.int32, s.shape, s.ndim - 1)
    s, idxs, sign = (jnp.flip(t, axis=-1) for t in
                     lax.sort((s, idxs, jnp.sign(w)), dimension=-1, num_keys=1))
    u = jnp.take_along_axis(vectors, idxs[..., None, :], axis=-1)
    return SVDResult(u, s, _mH(u * sign[..., None, :].astype(u.dtype)))


def svdvals(x, /):
    """Singular values, descending."""
    return svd(x, compute_uv=False)


def eig(a):
    """Eigenvalues and right eigenvectors (unit norm, as columns) of a general square
    matrix, both complex: EigResult(eigenvalues, eigenvectors), as jnp.linalg.eig (which JAX
    provides on CPU only; minijax runs LAPACK-style host code on every backend)."""
    (a,) = _inexact("eig", a)
    _square("eig", a)
    w, v = lax_linalg_more.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """Eigenvalues (complex) of a general square matrix."""
    (a,) = _inexact("eigvals", a)
    _square("eigvals", a)
    return lax_linalg_more.eig(a, compute_left_eigenvectors=False,
                               compute_right_eigenvectors=False)[0]


# --------------------------------------------------------------------------- lu-based


def det(a):
    """Determinant of square matrices (through an LU factorization; its derivative is the
    adjugate, finite at singular matrices as in JAX)."""
    (a,) = _inexact("det", a)
    _square("det", a)
    small = det_small(a)
    return det_lu(a) if small is None else small


def slogdet(a, *, method=None):
    """Sign and natural log of the absolute determinant: SlogdetResult(sign, logabsdet)."""
    if method not in (None, "lu"):
        raise ValueError(f"slogdet: unknown method {method!r}; minijax supports 'lu'")
    (a,) = _inexact("slogdet", a)
    _square("slogdet", a)
    lu, _, parity = lu_parts(a)
    dtype = get_aval(a).dtype
    d = _diag(lu)
    axis = get_aval(d).ndim - 1
    absd = jnp.abs(d)
    logabs = lax.reduce_sum(jnp.log(absd), (axis,))
    if dtype.kind == "c":
        unit = jnp.where(absd == 0, jnp.zeros_like(d), d / jnp.where(absd == 0, 1, absd))
    else:
        unit = jnp.sign(d)
    sign = lax.convert_element_type(lax.sub(1, lax.mul(2, parity)), dtype)
    sign = lax.mul(sign, lax.reduce_prod(unit, (axis,)))
    return SlogdetResult(sign, logabs)


def _lu_solve(lu, perm, b):
    """Solve A x = b for matrices b given A's LU factors (batch dims already equal)."""
    pb = matmul(_perm_matrix(perm, get_aval(b).dtype), b)
    y = lax_linalg.triangular_solve(lu, pb, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)


def solve(a, b):
    """Solve a @ x = b. b is a vector if it is 1-D, otherwise a (batch of) matrices; batch
    dimensions broadcast."""
    a, b = _inexact("solve", a, b)
    _square("solve", a)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    vec = len(sb) == 1
    if vec:
        b = lax.reshape(b, sb + (1,))
        sb = get_aval(b).shape
    if sb[-2] != sa[-1]:
        raise ValueError(f"solve: a with shape {sa} and b with shape "
                         f"{get_aval(b).shape if not vec else sb[:-1]} are incompatible")
    batch = util.broadcast_shapes(sa[:-2], sb[:-2])
    a = util.broadcast_to(a, batch + sa[-2:])
    b = util.broadcast_to(b, batch + sb[-2:])
    lu, _, perm = lax_linalg.lu(a)
    x = _lu_solve(lu, perm, b)
    return lax.reshape(x, get_aval(x).shape[:-1]) if vec else x


def inv(a):
    """Inverse of square matrices (NaN/inf for singular ones, as in JAX)."""
    (a,) = _inexact("inv", a)
    _square("inv", a)
    shape = get_aval(a).shape
    eye = util.broadcast_to(jnp.eye(shape[-1], dtype=get_aval(a).dtype), shape)
    lu, _, perm = lax_linalg.lu(a)
    return _lu_solve(lu, perm, eye)


# --------------------------------------------------------------------------- svd-based


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """Moore-Penrose pseudo-inverse; singular values at or below rtol * max(s) are dropped
    (default rtol: 10 * max(M, N) * eps, as JAX). Differentiated as JAX, by the closed form
    of Golub and Pereyra (finite where the SVD's derivative is not, e.g. at 0)."""
    (a,) = _inexact("pinv", a)
    _matrix("pinv", a)
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    return _pinv(a, rtol, hermitian)


def _pinv_value(a, rtol, hermitian):
    m, n = get_aval(a).shape[-2:]
    if m == 0 or n == 0:
        return jnp.zeros(get_aval(a).shape[:-2] + (n, m), get_aval(a).dtype)
    arr = jnp.conj(a)
    if rtol is None:
        rtol = 10.0 * max(m, n) * float(dtypes.finfo(arr.dtype).eps)
    u, s, vh = svd(arr, full_matrices=False, hermitian=hermitian)
    rtol = jnp.asarray(rtol)
    rtol = rtol.reshape((1,) * max(0, s.ndim - rtol.ndim - 1) + rtol.shape + (1,))
    cutoff = rtol * s[..., 0:1]
    s = jnp.where(s > cutoff, s, np.inf).astype(u.dtype)
    res = matmul(matrix_transpose(vh), matrix_transpose(u) / s[..., None])
    return res.astype(arr.dtype)


_pinv = custom_jvp(_pinv_value, nondiff_argnums=(1, 2))


def _pinv_jvp(rtol, hermitian, primals, tangents):
    # dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P, grouped to avoid forming
    # the identity (Golub & Pereyra 1973).
    (a,), (da,) = primals, tangents
    p = _pinv(a, rtol, hermitian)
    if hermitian:  # the hermitian svd symmetrizes its input, and so does the derivative
        a, da = (a + _mH(a)) / 2, (da + _mH(da)) / 2
    dah = _mH(da)
    s = matmul(matmul(p, _mH(p)), dah)
    t = matmul(matmul(dah, _mH(p)), p)
    pa = matmul(p, a)
    dp = (-matmul(matmul(p, da), p) + s - matmul(matmul(s, a), p) + t - matmul(pa, t))
    return p, dp


_pinv.defjvp(_pinv_jvp)


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
    """Number of singular values above the tolerance. As JAX: a given `rtol` (or its alias
    `tol`) is compared with the singular values directly; the default is
    max(s) * max(M, N) * eps. The count has the default integer dtype."""
    (M,) = _inexact("matrix_rank", M)
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    if M.ndim < 2:
        return jnp.any(M != 0).astype(np.int32)
    s = svd(M, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        eps = float(dtypes.finfo(s.dtype).eps)
        rtol = jnp.max(s, axis=-1) * np.asarray(max(M.shape[-2:]) * eps, s.dtype)
    rtol = jnp.asarray(rtol)
    return jnp.sum(s > rtol[..., None], axis=-1)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least-squares solution of a @ x = b: (x, residuals, rank, singular values). As JAX:
    singular values below rcond * max(s) are dropped (default rcond: eps * max(M, N); a
    negative rcond means eps)."""
    a, b = _inexact("lstsq", a, b)
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise ValueError(f"lstsq: a must be 2-D and b 1-D or 2-D, got {a.shape} and {b.shape}")
    m, n = a.shape
    if b.shape[0] != m:
        raise ValueError(f"lstsq: leading dimensions of a {a.shape} and b {b.shape} differ")
    vec = b.ndim == 1
    b2 = b[:, None] if vec else b
    dtype = a.dtype
    if a.size == 0:
        s = jnp.zeros((0,), dtypes.real_dtype(dtype))
        rank = jnp.asarray(0, dtypes.default_int_dtype())
        x = jnp.zeros((n,) + b2.shape[1:], dtype)
    else:
        eps = float(dtypes.finfo(dtype).eps)
        if rcond is None:
            rcond = eps * max(n, m)
        else:
            rcond = jnp.where(jnp.asarray(rcond) < 0, eps, rcond)
        u, s, vt = svd(a, full_matrices=False)
        mask = (s > 0) & (s >= jnp.asarray(rcond, s.dtype) * s[0])
        rank = mask.sum()
        safe_s = jnp.where(mask, s, 1).astype(dtype)
        s_inv = jnp.where(mask, 1 / safe_s, 0)[:, None]
        x = matmul(_mH(vt), s_inv * matmul(_mH(u), b2))
    if numpy_resid and (int(rank) < n or m <= n):
        resid = jnp.zeros((0,), dtypes.real_dtype(dtype))
    else:
        resid = norm(b2 - matmul(a, x), axis=0) ** 2
    if vec:
        x = x.ravel()
    return x, resid, rank, s


def cond(x, p=None):
    """Condition number: ratio of extreme singular values (p None/2/-2), else
    norm(x, p) * norm(inv(x), p)."""
    (x,) = _inexact("cond", x)
    _matrix("cond", x)
    if p in (None, 2, -2):
        s = svdvals(x)
        big, small = s[..., 0], s[..., -1]
        return small / big if p == -2 else big / small
    _square("cond", x)
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


# --------------------------------------------------------------------------- norms


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """p-norm over `axis` (all axes if None): ord 2, 1, inf, -inf, 0 or any real p."""
    (x,) = _inexact("vector_norm", x)
    axes = util.canonicalize_axes(axis, x.ndim)
    absx = jnp.abs(x)
    if ord is None or ord == 2:
        if x.dtype.kind == "c":
            sq = jnp.real(x) ** 2 + jnp.imag(x) ** 2
        else:
            sq = x * x
        return jnp.sqrt(jnp.sum(sq, axis=axes, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order {ord!r} for vectors")
    if ord == np.inf:
        # initial=0 as JAX: at x == 0 the gradient splits with the initial value.
        return jnp.max(absx, axis=axes, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return jnp.min(absx, axis=axes, keepdims=keepdims)
    if ord == 0:
        return jnp.sum(absx != 0, axis=axes, keepdims=keepdims).astype(absx.dtype)
    if ord == 1:
        return jnp.sum(absx, axis=axes, keepdims=keepdims)
    p = jnp.asarray(ord, absx.dtype)
    return jnp.sum(absx ** p, axis=axes, keepdims=keepdims) ** (1 / p)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """Matrix norm over the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector or matrix norm (NumPy's ord/axis rules): with a pair of axes, ord None/'fro',
    'nuc', 1, -1, 2, -2, inf, -inf; with one axis any vector order."""
    (x,) = _inexact("norm", x)
    nd = x.ndim
    if axis is None:
        if ord is None:
            return vector_norm(x, axis=None, keepdims=keepdims)
        if nd not in (1, 2):
            raise ValueError("Improper number of dimensions to norm: give axis= for arrays "
                             f"with {nd} dimensions and ord={ord!r}")
        axis = tuple(range(nd))
    elif isinstance(axis, (int, np.integer)):
        axis = (operator.index(axis),)
    axis = tuple(axis)
    if len(axis) == 1:
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order {ord!r} for vectors")
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise ValueError(f"Improper number of axes for norm: {axis}")
    r, c = (util.canonicalize_axis(a, nd) for a in axis)
    if r == c:
        raise ValueError(f"norm: duplicate axes {axis}")
    if ord in (None, "fro", "f"):
        out = vector_norm(x, axis=(r, c), keepdims=keepdims)
    elif ord in (1, -1):
        col_sums = jnp.sum(jnp.abs(x), axis=r, keepdims=True)
        out = (jnp.max(col_sums, axis=c, keepdims=True, initial=0) if ord == 1
               else jnp.min(col_sums, axis=c, keepdims=True))
        out = out if keepdims else jnp.squeeze(out, axis=(r, c))
    elif ord in (np.inf, -np.inf):
        row_sums = jnp.sum(jnp.abs(x), axis=c, keepdims=True)
        out = (jnp.max(row_sums, axis=r, keepdims=True, initial=0) if ord == np.inf
               else jnp.min(row_sums, axis=r, keepdims=True))
        out = out if keepdims else jnp.squeeze(out, axis=(r, c))
    elif ord in (2, -2, "nuc"):
        moved = jnp.moveaxis(x, (r, c), (-2, -1))
        s = svdvals(moved)
        if ord == "nuc":
            out = jnp.sum(s, axis=-1)
        else:
            # A reduction, not s[..., 0], so that tied singular values share the
            # gradient as in JAX (and the max starts from 0 as there).
            out = (jnp.max(s, axis=-1, initial=0) if ord == 2
                   else jnp.min(s, axis=-1))
        if keepdims:
            out = jnp.expand_dims(out, tuple(sorted((r, c))))
    else:
        raise ValueError(f"Invalid norm order {ord!r} for matrices")
    return out


# --------------------------------------------------------------------------- products & misc


def matrix_power(a, n):
    """a raised to the integer power n (by repeated squaring; n < 0 inverts first)."""
    (a,) = util.promote_dtypes(a)
    _square("matrix_power", a)
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"matrix_power: exponent must be an integer, got {n!r}") from err
    if n == 0:
        return util.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if n < 0:
        a = inv(a)
        n = -n
    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def multi_dot(arrays, *, precision=None):
    """Product of a chain of matrices in the cheapest order (1-D ends are vectors)."""
    arrays = [jnp.asarray(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError("multi_dot: expecting at least two arrays")
    first_vec, last_vec = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first_vec:
        arrays[0] = arrays[0][None, :]
    if last_vec:
        arrays[-1] = arrays[-1][:, None]
    for k, a in enumerate(arrays):
        if a.ndim != 2:
            raise ValueError(f"multi_dot: array {k} must be 2-D (1-D only at the ends), got "
                             f"shape {a.shape}")
    dims = [arrays[0].shape[0]] + [a.shape[1] for a in arrays]
    order = _chain_order(dims)

    def build(i, j):
        if i == j:
            return arrays[i]
        k = order[i][j]
        return matmul(build(i, k), build(k + 1, j), precision=precision)
    out = build(0, len(arrays) - 1)
    if first_vec:
        out = out[0]
    if last_vec:
        out = out[..., 0]
    return out


def _chain_order(dims):
    """Classic matrix-chain dynamic program: split[i][j] of the cheapest parenthesization."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-element vectors along `axis` (linalg.cross's stricter form)."""
    for x in (x1, x2):
        if jnp.shape(x)[axis] != 3:
            raise ValueError(f"linalg.cross: both inputs must have size 3 along axis {axis}, "
                             f"got shapes {jnp.shape(x1)} and {jnp.shape(x2)}")
    return _cross(x1, x2, axis=axis)


def matrix_transpose(x, /):
    """Swap the last two axes."""
    if jnp.ndim(x) < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions, got shape "
                         f"{jnp.shape(x)}")
    return jnp.swapaxes(x, -1, -2)


def diagonal(x, /, *, offset: int = 0):
    """Diagonals of the matrices formed by the last two axes."""
    return jnp.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset: int = 0, dtype=None):
    """Traces of the matrices formed by the last two axes."""
    return jnp.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def tensorinv(a, ind: int = 2):
    """Inverse of a tensor seen as a matrix of its first `ind` and remaining axes."""
    a = jnp.asarray(a)
    head, tail = a.shape[:ind], a.shape[ind:]
    rows = int(np.prod(head))
    if rows != int(np.prod(tail)):
        raise ValueError(f"tensorinv: a.shape[:ind] {head} and a.shape[ind:] {tail} must "
                         "have equal products")
    return inv(a.reshape(rows, -1)).reshape(tail + head)


def tensorsolve(a, b, axes=None):
    """Solve tensordot(a, x, x.ndim) = b for x."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    if axes is not None:
        axes = [util.canonicalize_axis(ax, a.ndim) for ax in axes]
        rest = [i for i in range(a.ndim) if i not in axes]
        a = jnp.transpose(a, rest + axes)
    out_shape = a.shape[b.ndim:]
    n = int(np.prod(out_shape))
    x = solve(a.reshape(-1, n), b.reshape(-1))
    return x.reshape(out_shape)
