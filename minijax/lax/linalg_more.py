"""More of jax.lax.linalg: eig, hessenberg, tridiagonal, householder_product,
lu_pivots_to_permutation and tridiagonal_solve.

eig, hessenberg, tridiagonal and householder_product are host routines in LAPACK's
conventions (compiler/evaluator/linalg_householder.py), bound and lowered like the
primitives of linalg.py (eagerly NumPy; under jit a `minijax.linalg.<name>` custom-call that
the evaluator runs). lu_pivots_to_permutation and tridiagonal_solve are written in lax terms
(loops), so they compile, batch and differentiate like any lax code. minijax.lax.linalg
re-exports all of them.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.evaluator import linalg_householder as host
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.lax import linalg as base
from minijax.lax.control_flow_loops import fori_loop
from minijax.lax.control_flow_scan import scan
from minijax.lax.elementwise import div, neg, sub
from minijax.lax.elementwise_complex import complex as make_complex
from minijax.lax.elementwise_complex import imag
from minijax.lax.elementwise_int import eq
from minijax.lax.linalg_util import (
    add,
    broadcast_in_dim,
    cj,
    convert_element_type,
    diagonal,
    eye_like,
    full,
    matmul,
    mH,
    mT,
    mul,
    permutation_matrix,
    real_part,
    to_dtype,
)
from minijax.lax.reductions import argmax, reduce_sum
from minijax.lax.slicing import dynamic_index_in_dim, dynamic_update_index_in_dim
from minijax.lax.structural import broadcasted_iota, concatenate, reshape
from minijax.lax.utils import standard_primitive
from minijax.lax.vmap import vmap

__all__ = ["EigImplementation", "eig", "eig_p", "hessenberg", "hessenberg_p",
           "householder_product", "householder_product_p", "lu_pivots_to_permutation",
           "schur", "schur_p", "tridiagonal", "tridiagonal_p", "tridiagonal_solve"]


class EigImplementation:
    """Which eig implementation to use (JAX: LAPACK, MAGMA, ...); minijax has one."""
    LAPACK = "lapack"


def _complex_dtype(dtype):
    return np.result_type(dtype, np.complex64)


# --------------------------------------------------------------------------- eig


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """Eigendecomposition of a general (non-Hermitian) matrix: [w, vl, vr] as requested
    (w always; vl and vr with compute_left/right_eigenvectors), complex, eigenvectors of
    unit 2-norm, as JAX's CPU (LAPACK geev) version. Derivatives of eigenvalues are always
    available; of eigenvectors only with enable_eigvec_derivs (valid for distinct
    eigenvalues)."""
    return list(eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors),
                           enable_eigvec_derivs=bool(enable_eigvec_derivs)))


def _eig_abstract_eval(x, *, compute_left_eigenvectors, compute_right_eigenvectors, **_):
    base._check_matrix("eig", x, square=True)
    cdt = _complex_dtype(x.dtype)
    outs = [ShapedArray(x.shape[:-1], cdt)]
    outs += [ShapedArray(x.shape, cdt)] * (compute_left_eigenvectors + compute_right_eigenvectors)
    return outs


def _eig_impl(x, *, compute_left_eigenvectors, compute_right_eigenvectors, **_):
    return host.eig(x, compute_left_eigenvectors=compute_left_eigenvectors,
                    compute_right_eigenvectors=compute_right_eigenvectors)


eig_p = standard_primitive("eig", _eig_abstract_eval, _eig_impl, multiple_results=True)


def _solve(a, b):
    """a^-1 b by LU (batched square a)."""
    lu, _, perm = base.lu(a)
    pb = matmul(permutation_matrix(perm, get_aval(b).dtype), b)
    y = base.triangular_solve(lu, pb, left_side=True, lower=True, unit_diagonal=True)
    return base.triangular_solve(lu, y, left_side=True, lower=False)


def _eigvec_jvp(w, v, da):
    """(dw, dv) for eigenvectors v (columns) of unit norm whose largest component is real:
    with P = V^-1 dA V, dw = diag(P) and dv_j = u_j + c_j v_j where U = V (F o P),
    F_ij = 1 / (w_j - w_i) off the diagonal (distinct eigenvalues), and c_j is fixed by
    Re(v_j^H dv_j) = 0 (unit norm) and Im(dv_kj) = 0 at the largest component k."""
    shape = get_aval(v).shape
    nd = len(shape)
    eye = eye_like(v)
    wi = broadcast_in_dim(w, shape, tuple(range(nd - 2)) + (nd - 2,))
    wj = broadcast_in_dim(w, shape, tuple(range(nd - 2)) + (nd - 1,))
    one = full((), 1, get_aval(v).dtype)
    f = sub(div(one, add(eye, sub(wj, wi))), eye)
    p = matmul(_solve(v, da), v)
    dw = diagonal(p)
    u = matmul(v, mul(f, p))
    k = argmax(real_part(mul(v, cj(v))), nd - 2, np.int32)
    rows = broadcasted_iota(np.int32, shape, nd - 2)
    mask = convert_element_type(eq(rows, broadcast_in_dim(k, shape, tuple(range(nd - 2)) +
                                                           (nd - 1,))), get_aval(v).dtype)
    c_re = neg(reduce_sum(real_part(mul(cj(v), u)), (nd - 2,)))
    c_im = neg(div(imag(reduce_sum(mul(mask, u), (nd - 2,))),
                   real_part(reduce_sum(mul(mask, v), (nd - 2,)))))
    c = broadcast_in_dim(make_complex(c_re, c_im), shape, tuple(range(nd - 2)) + (nd - 1,))
    return dw, add(u, mul(v, c))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs):
    (a,), (da,) = primals, tangents
    vectors = compute_left_eigenvectors or compute_right_eigenvectors
    if vectors and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on "
            "the input that JAX cannot check (see the enable_eigvec_derivs argument to "
            "jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to jax.lax.linalg.eig to "
            "opt in. See https://github.com/jax-ml/jax/issues/2748 for discussion.")
    outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=True, enable_eigvec_derivs=True)
    w, vr = outs[0], outs[-1]
    cdt = get_aval(vr).dtype
    da = to_dtype(ad.instantiate_zeros(da), cdt)
    if not vectors:
        # dw_i = (V^-1 dA V)_ii
        return [w], [reduce_sum(mul(_solve(vr, da), mT(vr)), (get_aval(vr).ndim - 1,))]
    dw, dvr = _eigvec_jvp(w, vr, da)
    primal, tangent = [w], [dw]
    if compute_left_eigenvectors:
        _, dvl = _eigvec_jvp(cj(w), outs[1], mH(da))
        primal.append(outs[1])
        tangent.append(dvl)
    if compute_right_eigenvectors:
        primal.append(vr)
        tangent.append(dvr)
    return primal, tangent


ad.primitive_jvps[eig_p] = _eig_jvp
batching.primitive_batchers[eig_p] = base._batch_front_rule(eig_p)
base._host_lowering(eig_p, _eig_impl)


# --------------------------------------------------------------------------- hessenberg


def hessenberg(a):
    """Hessenberg reduction in LAPACK's packed form (gehrd): returns (a', taus) with the
    Hessenberg matrix on and above a''s first subdiagonal, the Householder vectors below it
    and their factors taus (..., n - 1). jax.scipy.linalg.hessenberg unpacks it."""
    return tuple(hessenberg_p.bind(a))


def _hessenberg_abstract_eval(a):
    base._check_matrix("hessenberg", a, square=True)
    n = a.shape[-1]
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (max(n - 1, 0),),
                                                       a.dtype)]


hessenberg_p = standard_primitive("hessenberg", _hessenberg_abstract_eval, host.hessenberg,
                                  multiple_results=True)
batching.primitive_batchers[hessenberg_p] = base._batch_front_rule(hessenberg_p)
base._host_lowering(hessenberg_p, host.hessenberg)

# --------------------------------------------------------------------------- tridiagonal


def tridiagonal(a, *, lower: bool = True):
    """Reduce a Hermitian matrix to real symmetric tridiagonal form (LAPACK sytrd/hetrd,
    reading the `lower` or upper triangle): returns (a', d, e, taus): the diagonal d, the
    off-diagonal e (both real) and the Householder vectors packed in a' with factors taus."""
    return tuple(tridiagonal_p.bind(a, lower=bool(lower)))


def _tridiagonal_abstract_eval(a, *, lower):
    base._check_matrix("tridiagonal", a, square=True)
    n, batch = a.shape[-1], a.shape[:-2]
    rdt = base._real_dtype(a.dtype)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(batch + (n,), rdt),
            ShapedArray(batch + (max(n - 1, 0),), rdt),
            ShapedArray(batch + (max(n - 1, 0),), a.dtype)]


tridiagonal_p = standard_primitive("tridiagonal", _tridiagonal_abstract_eval,
                                   host.tridiagonal, multiple_results=True)
batching.primitive_batchers[tridiagonal_p] = base._batch_front_rule(tridiagonal_p)
base._host_lowering(tridiagonal_p, host.tridiagonal)

# --------------------------------------------------------------------------- householder_product


def householder_product(a, taus):
    """The first n columns of Q = H_0 ... H_{k-1} (LAPACK orgqr/ungqr), H_i = I - taus[i]
    v_i v_i^H with v_i = (0, ..., 0, 1, a[i+1:, i]): Q of a packed QR or Hessenberg form."""
    return householder_product_p.bind(a, taus)


def _householder_product_abstract_eval(a, taus):
    base._check_matrix("householder_product", a)
    m, n = a.shape[-2:]
    if m < n:
        raise ValueError(f"householder_product: a must have at least as many rows as columns, "
                         f"got {a.str_short()}")
    if taus.shape[:-1] != a.shape[:-2] or taus.shape[-1] > n or taus.dtype != a.dtype:
        raise ValueError(f"householder_product: taus must have shape {a.shape[:-2]} + (k,) with "
                         f"k <= {n} and a's dtype, got {taus.str_short()} for a "
                         f"{a.str_short()}")
    return ShapedArray(a.shape, a.dtype)


def _householder_product_batch(trace, vals, dims):
    size = trace.axis_size
    a, taus = (base.bdim_at_front(v, d, size) for v, d in zip(vals, dims, strict=True))
    return householder_product_p.bind(a, taus), 0


householder_product_p = standard_primitive(
    "householder_product", _householder_product_abstract_eval, host.householder_product)
batching.primitive_batchers[householder_product_p] = _householder_product_batch
base._host_lowering(householder_product_p, host.householder_product)

# --------------------------------------------------------------------------- permutations


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation (int32, (..., permutation_size)) that LAPACK-style row swaps
    `pivots` (..., k) apply: swap rows i and pivots[i] for i = 0, ..., k - 1."""
    aval = get_aval(pivots)
    if aval.ndim < 1 or aval.dtype.kind not in "iu":
        raise TypeError("lu_pivots_to_permutation: pivots must be an integer array of shape "
                        f"(..., k), got {aval.str_short()}")
    k, m = aval.shape[-1], int(permutation_size)
    if m < k:
        raise ValueError(f"lu_pivots_to_permutation: permutation_size {m} must be at least "
                         f"the number of pivots {k}")

    def one(swaps):
        def step(i, perm):
            j = dynamic_index_in_dim(swaps, i, 0, False)
            pi = dynamic_index_in_dim(perm, i, 0, False)
            pj = dynamic_index_in_dim(perm, j, 0, False)
            perm = dynamic_update_index_in_dim(perm, reshape(pj, (1,)), i, 0)
            return dynamic_update_index_in_dim(perm, reshape(pi, (1,)), j, 0)
        return fori_loop(0, k, step, broadcasted_iota(np.int32, (m,), 0))

    fn = one
    for _ in range(aval.ndim - 1):
        fn = vmap(fn)
    return fn(convert_element_type(pivots, np.int32))

# --------------------------------------------------------------------------- tridiagonal_solve


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solve the tridiagonal systems A x = b, A with sub-diagonal dl (dl[..., 0] unused),
    diagonal d and super-diagonal du (du[..., -1] unused), all (..., m); b is (..., m, n).

    Thomas' algorithm (no pivoting: for diagonally dominant or otherwise well-conditioned
    systems), written with lax.scan so it batches and differentiates with respect to every
    argument."""
    if perturb_singular:
        raise NotImplementedError("tridiagonal_solve: perturb_singular=True is not supported "
                                  "in minijax")
    avals = [get_aval(v) for v in (dl, d, du, b)]
    shape = avals[1].shape
    if any(a.shape != shape for a in avals[:3]) or avals[3].ndim != len(shape) + 1 or \
            avals[3].shape[:-1] != shape:
        raise ValueError("tridiagonal_solve: dl, d and du must have the same shape (..., m) "
                         "and b the shape (..., m, n); got "
                         + ", ".join(a.str_short() for a in avals))
    if len({a.dtype for a in avals}) != 1 or avals[0].dtype.kind not in "fc":
        raise TypeError("tridiagonal_solve: dl, d, du and b must have one floating-point "
                        "dtype, got " + ", ".join(a.str_short() for a in avals))
    if shape[-1] == 0:
        return b

    def one(dl, d, du, b):
        def forward(carry, row):
            cp, dp = carry
            a_i, b_i, c_i, r_i = row
            denom = sub(b_i, mul(a_i, cp))
            nxt = (div(c_i, denom), div(sub(r_i, mul(a_i, dp)), denom))
            return nxt, nxt

        first = (div(du[0], d[0]), div(b[0], d[0]))
        _, (cps, dps) = scan(forward, first, (dl[1:], d[1:], du[1:], b[1:]))
        cps = concatenate([reshape(first[0], (1,)), cps], 0)
        dps = concatenate([reshape(first[1], (1,) + get_aval(b).shape[1:]), dps], 0)

        def backward(x_next, row):
            cp, dp = row
            x = sub(dp, mul(cp, x_next))
            return x, x

        last = dps[-1]
        _, xs = scan(backward, last, (cps[:-1], dps[:-1]), reverse=True)
        return concatenate([xs, reshape(last, (1,) + get_aval(b).shape[1:])], 0)

    fn = one
    for _ in range(len(shape) - 1):
        fn = vmap(fn)
    return fn(dl, d, du, b)

# --------------------------------------------------------------------------- schur


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
    """Schur decomposition x = Z T Z^H: (T, Z), or (T,) without compute_schur_vectors. Real
    input gives the real Schur form (quasi-triangular, 2x2 blocks with equal diagonal entries
    for complex-conjugate eigenvalue pairs, as LAPACK gees); complex input a triangular T."""
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("schur: sorting eigenvalues (sort_eig_vals / "
                                  "select_callable) is not implemented in minijax")
    return tuple(schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors)))


def _schur_abstract_eval(x, *, compute_schur_vectors):
    base._check_matrix("schur", x, square=True)
    return [ShapedArray(x.shape, x.dtype)] * (1 + compute_schur_vectors)


schur_p = standard_primitive("schur", _schur_abstract_eval, host.schur, multiple_results=True)
batching.primitive_batchers[schur_p] = base._batch_front_rule(schur_p)
base._host_lowering(schur_p, host.schur)
