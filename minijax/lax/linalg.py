"""Linear-algebra primitives (JAX's `jax.lax.linalg`): cholesky, triangular_solve, lu, qr,
eigh, svd.

All of them act on the last two dimensions and treat leading dimensions as a batch.
Eagerly they run NumPy's LAPACK-backed routines; under jit they lower to an HLO
`custom-call` whose target (`minijax.linalg.<name>[params]`) is registered with the HLO
evaluator, so compiled programs run the same host routine (the CPU backend runs custom-calls
as evaluator thunks). JVP rules use the standard matrix-calculus identities (written out
next to each rule); triangular_solve is linear in `b` and has a transpose rule, so reverse
mode works for everything built on these (det, inv, solve, ...).
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.compiler.evaluator import linalg as host_linalg
from minijax.compiler.evaluator.linalg import custom_call_target
from minijax.compiler.hlo.ir import Shape
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.lax.elementwise import div, neg, sub
from minijax.lax.linalg_util import (
    add,
    broadcast_in_dim,
    cj,
    convert_element_type,
    diag_embed,
    diagonal,
    eq,
    eye_like,
    eye_mask,
    full,
    is_complex,
    matmul,
    matvec_cols,
    matvec_rows,
    mH,
    mT,
    mul,
    permutation_matrix,
    real_part,
    to_dtype,
    tril,
    triu,
)
from minijax.lax.structural import bdim_at_front, moveaxis
from minijax.lax.utils import standard_primitive

__all__ = ["cholesky", "eigh", "lu", "qr", "svd", "triangular_solve"]


def _check_float(name, aval):
    if dtypes.kind(aval.dtype) not in "fc":
        raise TypeError(f"{name} requires a floating or complex array, got {aval.str_short()}")


def _check_matrix(name, aval, square=False):
    _check_float(name, aval)
    if aval.ndim < 2 or (square and aval.shape[-1] != aval.shape[-2]):
        what = "square matrices (shape [..., n, n])" if square else \
            "matrices (shape [..., m, n])"
        raise ValueError(f"{name} requires a batch of {what}, got {aval.str_short()}")


def _real_dtype(dtype):
    return np.finfo(dtype).dtype if np.dtype(dtype).kind == "c" else np.dtype(dtype)


def _batch_front_rule(prim):
    """Batching for primitives on one operand whose leading dimensions are a batch."""
    def rule(trace, vals, dims, **params):
        x = moveaxis(vals[0], dims[0], 0)
        out = prim.bind(x, **params)
        return (out, [0] * len(out)) if prim.multiple_results else (out, 0)
    return rule


def _host_lowering(prim, numpy_impl):
    """Lower to a custom-call `minijax.linalg.<name>[params]`: the evaluator runs that
    target with the same NumPy routine (compiler/evaluator/linalg.py, registered there)."""
    def rule(ctx, *operands, **params):
        target = custom_call_target(prim.name, params)
        b = ctx.builder
        if prim.multiple_results:
            shape = Shape.tuple([ctx.shape_of(a) for a in ctx.avals_out])
            call = b.custom_call(operands, target, shape, metadata=ctx.metadata)
            return [b.get_tuple_element(call, i, metadata=ctx.metadata)
                    for i in range(len(ctx.avals_out))]
        out_aval = ctx.avals_out[0] if isinstance(ctx.avals_out, list) else ctx.avals_out
        return b.custom_call(operands, target, ctx.shape_of(out_aval), metadata=ctx.metadata)
    register_lowering(prim, rule)


def _per_matrix(fn, *arrays):
    """Apply fn to each matrix of a batch (NumPy routines that do not broadcast)."""
    batch = arrays[0].shape[:-2]
    results = [fn(*(a[idx] for a in arrays)) for idx in np.ndindex(*batch)]
    return results, batch


# --------------------------------------------------------------------------- cholesky


def cholesky(x, *, symmetrize_input: bool = True):
    """Lower Cholesky factor L of Hermitian positive-definite x (x = L L^H).

    Only the lower triangle is read (after symmetrizing when `symmetrize_input`). As JAX, the
    primitive's factor (full of NaNs for a matrix that is not positive definite) is cut to its
    lower triangle: NaNs on and below the diagonal, zeros above."""
    _check_matrix("cholesky", get_aval(x), square=True)
    if symmetrize_input:
        x = div(add(x, mH(x)), full((), 2, get_aval(x).dtype))
    return tril(cholesky_p.bind(x))


def _cholesky_abstract_eval(x):
    _check_matrix("cholesky", x, square=True)
    return ShapedArray(x.shape, x.dtype)




cholesky_p = standard_primitive("cholesky", _cholesky_abstract_eval, host_linalg.cholesky)


def _hermitian_from_lower(t):
    """The Hermitian matrix whose lower triangle is t's (what the primitive reads)."""
    return add(tril(t), mH(tril(t, -1)))


def _cholesky_jvp(primals, tangents):
    # L' = L phi(L^-1 A' L^-H), phi = lower triangle with the diagonal halved. A' is used
    # whole, taken to be Hermitian as JAX does (not rebuilt from its lower triangle), so
    # gradients through symmetrize_input=False (scipy's cholesky, cho_factor) are JAX's.
    (x,), (t,) = primals, tangents
    lower = cholesky_p.bind(x)
    t = ad.instantiate_zeros(t)
    tmp = triangular_solve(lower, t, left_side=True, lower=True)
    sigma = triangular_solve(lower, tmp, left_side=False, lower=True, transpose_a=True,
                             conjugate_a=True)
    half = full((), 0.5, get_aval(x).dtype)
    phi = sub(tril(sigma), mul(mul(sigma, eye_like(sigma)), half))
    return lower, matmul(lower, phi)


ad.primitive_jvps[cholesky_p] = _cholesky_jvp
batching.primitive_batchers[cholesky_p] = _batch_front_rule(cholesky_p)
_host_lowering(cholesky_p, host_linalg.cholesky)

# --------------------------------------------------------------------------- triangular_solve


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solve op(a) @ x = b (left_side) or x @ op(a) = b for triangular a.

    op(a) is a, a^T, conj(a) or a^H by `transpose_a`/`conjugate_a`; only the triangle chosen
    by `lower` is read, and with `unit_diagonal` the diagonal is taken as ones."""
    conjugate_a = bool(conjugate_a) and is_complex(a)
    return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                   unit_diagonal=bool(unit_diagonal))


def _triangular_solve_abstract_eval(a, b, *, left_side, **_):
    _check_matrix("triangular_solve", a, square=True)
    _check_float("triangular_solve", b)
    shapes = f"a {a.str_short()}, b {b.str_short()}"
    if a.dtype != b.dtype:
        raise TypeError(f"triangular_solve requires a and b of the same dtype, got {shapes}")
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
        raise ValueError(f"triangular_solve requires a and b with equal batch dimensions, "
                         f"got {shapes}")
    n = a.shape[-1]
    if (b.shape[-2] if left_side else b.shape[-1]) != n:
        side = "rows" if left_side else "columns"
        raise ValueError(f"triangular_solve (left_side={left_side}) requires b to have {n} "
                         f"{side} to match a, got {shapes}")
    return ShapedArray(b.shape, b.dtype)




triangular_solve_p = standard_primitive(
    "triangular_solve", _triangular_solve_abstract_eval, host_linalg.triangular_solve)


def _apply_op(m, transpose_a, conjugate_a):
    if transpose_a:
        m = mT(m)
    return cj(m) if conjugate_a else m


def _triangular_solve_jvp(primals, tangents, **params):
    # Left: op(a) x = b  =>  x' = op(a)^-1 (b' - op(a') x); right: x' = (b' - x op(a')) op(a)^-1.
    a, b = primals
    ta, tb = tangents
    out = triangular_solve_p.bind(a, b, **params)
    rhs = ad.Zero.from_value(out)
    if type(tb) is not ad.Zero:
        rhs = tb
    if type(ta) is not ad.Zero:
        ta = tril(ta) if params["lower"] else triu(ta)
        if params["unit_diagonal"]:
            ta = sub(ta, mul(ta, eye_like(ta)))
        op_ta = _apply_op(ta, params["transpose_a"], params["conjugate_a"])
        prod = matmul(op_ta, out) if params["left_side"] else matmul(out, op_ta)
        rhs = neg(prod) if type(rhs) is ad.Zero else sub(rhs, prod)
    return out, triangular_solve_p.bind(a, rhs, **params)


def _triangular_solve_transpose(ct, a, b, **params):
    if ad.is_undefined_primal(a):
        raise NotImplementedError("triangular_solve is not linear in its matrix argument `a`")
    if type(ct) is ad.Zero:
        return [None, ad.Zero(b.aval)]
    # The transpose of b -> op(a)^-1 b is c -> op(a)^-T c: flip transpose_a only.
    flipped = dict(params, transpose_a=not params["transpose_a"])
    return [None, triangular_solve_p.bind(a, ct, **flipped)]


def _triangular_solve_batch(trace, vals, dims, **params):
    size = trace.axis_size
    a, b = (bdim_at_front(v, d, size) for v, d in zip(vals, dims, strict=True))
    return triangular_solve_p.bind(a, b, **params), 0


ad.primitive_jvps[triangular_solve_p] = _triangular_solve_jvp
ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose
batching.primitive_batchers[triangular_solve_p] = _triangular_solve_batch
_host_lowering(triangular_solve_p, host_linalg.triangular_solve)

# --------------------------------------------------------------------------- lu


def lu(x):
    """LU decomposition with partial pivoting: returns (lu, pivots, permutation) with
    x[..., permutation, :] == L @ U, L unit lower triangular (below lu's diagonal) and U
    upper triangular (lu's upper triangle); pivots are LAPACK-style row swaps (int32)."""
    return tuple(lu_p.bind(x))


def _lu_abstract_eval(x):
    _check_matrix("lu", x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), np.int32),
            ShapedArray(batch + (m,), np.int32)]




lu_p = standard_primitive("lu", _lu_abstract_eval, host_linalg.lu, multiple_results=True)


def _lu_jvp(primals, tangents):
    # P a = L U  =>  X = L^-1 P a' U^-1 = L^-1 L' + U' U^-1, split into the strictly lower
    # part (L^-1 L') and the upper part (U' U^-1).
    (x,), (t,) = primals, tangents
    lu_mat, pivots, perm = lu_p.bind(x)
    m, n = get_aval(x).shape[-2:]
    if m != n:
        raise NotImplementedError(f"The derivative of lu is implemented for square matrices "
                                  f"only, got {get_aval(x).str_short()}")
    dtype = get_aval(x).dtype
    lower = add(tril(lu_mat, -1), eye_like(lu_mat))
    upper = triu(lu_mat)
    pt = matmul(permutation_matrix(perm, dtype), ad.instantiate_zeros(t))
    y = triangular_solve(lower, pt, left_side=True, lower=True, unit_diagonal=True)
    xm = triangular_solve(upper, y, left_side=False, lower=False)
    d_lu = add(matmul(lower, tril(xm, -1)), matmul(triu(xm), upper))
    return [lu_mat, pivots, perm], [d_lu, ad.Zero.from_value(pivots),
                                    ad.Zero.from_value(perm)]


ad.primitive_jvps[lu_p] = _lu_jvp
batching.primitive_batchers[lu_p] = _batch_front_rule(lu_p)
_host_lowering(lu_p, host_linalg.lu)

# --------------------------------------------------------------------------- qr


def qr(x, *, pivoting: bool = False, full_matrices: bool = True):
    """QR decomposition: returns (q, r) with x = q @ r, q with orthonormal columns and r
    upper triangular. `full_matrices=False` gives the reduced factors."""
    if pivoting:
        raise NotImplementedError("lax.linalg.qr(pivoting=True) is not implemented in minijax")
    return tuple(qr_p.bind(x, full_matrices=bool(full_matrices)))


def _qr_abstract_eval(x, *, full_matrices):
    _check_matrix("qr", x)
    q_shape, r_shape = host_linalg.qr_shapes(x.shape, full_matrices)
    return [ShapedArray(q_shape, x.dtype), ShapedArray(r_shape, x.dtype)]




qr_p = standard_primitive("qr", _qr_abstract_eval, host_linalg.qr, multiple_results=True)


def _qr_jvp(primals, tangents, *, full_matrices):
    # With X = Q^H x' R^-1 and W the skew-Hermitian part built from X's strictly lower
    # triangle: Q' = Q W + (x' - Q Q^H x') R^-1 and R' = (X - W) R.
    (x,), (t,) = primals, tangents
    q, r = qr_p.bind(x, full_matrices=full_matrices)
    m, n = get_aval(x).shape[-2:]
    if m < n or (full_matrices and m > n):
        raise NotImplementedError(
            "The derivative of qr is implemented for m >= n with full_matrices=False (or "
            f"square matrices), got {get_aval(x).str_short()} with "
            f"full_matrices={full_matrices}")
    t = ad.instantiate_zeros(t)
    qh_t = matmul(mH(q), t)
    xm = triangular_solve(r, qh_t, left_side=False, lower=False)
    low = tril(xm, -1)
    w = sub(low, mH(low))
    if is_complex(x):
        im = diagonal(sub(xm, to_dtype(real_part(xm), get_aval(xm).dtype)))
        w = add(w, diag_embed(im))
    resid = sub(t, matmul(q, qh_t))
    dq = add(matmul(q, w), triangular_solve(r, resid, left_side=False, lower=False))
    dr = matmul(sub(xm, w), r)
    return [q, r], [dq, dr]


ad.primitive_jvps[qr_p] = _qr_jvp
batching.primitive_batchers[qr_p] = _batch_front_rule(qr_p)
_host_lowering(qr_p, host_linalg.qr)

# --------------------------------------------------------------------------- eigh


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None):
    """Eigendecomposition of Hermitian matrices: returns (v, w) with x @ v == v * w, the
    eigenvalues w real and ascending. Only the `lower` (or upper) triangle is read."""
    if subset_by_index is not None:
        raise NotImplementedError("lax.linalg.eigh(subset_by_index=...) is not implemented")
    _check_matrix("eigh", get_aval(x), square=True)
    if symmetrize_input:
        x = div(add(x, mH(x)), full((), 2, get_aval(x).dtype))
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues))
    return v, w


def _eigh_abstract_eval(x, *, lower, sort_eigenvalues):
    _check_matrix("eigh", x, square=True)
    return [ShapedArray(x.shape, x.dtype),
            ShapedArray(x.shape[:-1], _real_dtype(x.dtype))]




eigh_p = standard_primitive("eigh", _eigh_abstract_eval, host_linalg.eigh, multiple_results=True)


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues):
    # With S = V^H A' V: w' = real(diag(S)) and V' = V (F o S), F_ij = 1 / (w_j - w_i)
    # off the diagonal and 0 on it (eigenvalues must be distinct).
    (x,), (t,) = primals, tangents
    v, w = eigh_p.bind(x, lower=lower, sort_eigenvalues=sort_eigenvalues)
    t = ad.instantiate_zeros(t)
    t = _hermitian_from_lower(t) if lower else mH(_hermitian_from_lower(mH(t)))
    s = matmul(mH(v), matmul(t, v))
    dw = real_part(diagonal(s))
    shape = get_aval(v).shape
    nd = len(shape)
    wj = broadcast_in_dim(w, shape, tuple(range(nd - 2)) + (nd - 1,))
    wi = broadcast_in_dim(w, shape, tuple(range(nd - 1)))
    eye = convert_element_type(eye_mask(shape), get_aval(w).dtype)
    f = sub(div(full((), 1, get_aval(w).dtype), add(sub(wj, wi), eye)), eye)
    dv = matmul(v, mul(to_dtype(f, get_aval(v).dtype), s))
    return [v, w], [dv, dw]


ad.primitive_jvps[eigh_p] = _eigh_jvp
batching.primitive_batchers[eigh_p] = _batch_front_rule(eigh_p)
_host_lowering(eigh_p, host_linalg.eigh)

# --------------------------------------------------------------------------- svd


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None):
    """Singular value decomposition: (u, s, vh) with x = u @ diag(s) @ vh and s descending,
    or just s when `compute_uv=False`."""
    if subset_by_index is not None:
        raise NotImplementedError("lax.linalg.svd(subset_by_index=...) is not implemented")
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if not compute_uv:
        return outs[0]
    s, u, vh = outs
    return u, s, vh


def _svd_abstract_eval(x, *, full_matrices, compute_uv):
    _check_matrix("svd", x)
    m, n = x.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    s = ShapedArray(batch + (k,), _real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray(batch + (m, ku), x.dtype), ShapedArray(batch + (kv, n), x.dtype)]




svd_p = standard_primitive("svd", _svd_abstract_eval, host_linalg.svd, multiple_results=True)


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    # With S' = U^H A' V: s' = real(diag(S')); U' = U (F o (S' s + (S' s)^H)) and
    # V' = V (F o (s S' + (s S')^H)), F_ij = 1 / (s_j^2 - s_i^2) off the diagonal; plus the
    # components outside the span of U (m > n) or V (n > m).
    (x,), (t,) = primals, tangents
    m, n = get_aval(x).shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "The derivative of svd with full_matrices=True is not defined for non-square "
            f"matrices ({get_aval(x).str_short()}); use full_matrices=False")
    outs = svd_p.bind(x, full_matrices=full_matrices, compute_uv=compute_uv)
    s, u, vh = outs if compute_uv else svd_p.bind(x, full_matrices=False, compute_uv=True)
    t = ad.instantiate_zeros(t)
    v = mH(vh)
    ds_mat = matmul(mH(u), matmul(t, v))
    ds = real_part(diagonal(ds_mat))
    if not compute_uv:
        return outs, [ds]
    rdt = get_aval(s).dtype
    dtype = get_aval(x).dtype
    shape = get_aval(ds_mat).shape
    nd = len(shape)
    sj = broadcast_in_dim(s, shape, tuple(range(nd - 2)) + (nd - 1,))
    si = broadcast_in_dim(s, shape, tuple(range(nd - 1)))
    eye = convert_element_type(eye_mask(shape), rdt)
    diffs = mul(add(sj, si), sub(sj, si))
    f = to_dtype(sub(div(full((), 1, rdt), add(diffs, eye)), eye), dtype)
    dss = matvec_cols(ds_mat, s)
    sds = matvec_rows(ds_mat, s)
    zero_s = convert_element_type(_eq_zero(s), rdt)
    s_inv = sub(div(full((), 1, rdt), add(s, zero_s)), zero_s)
    du_inner = mul(f, add(dss, mH(dss)))
    if is_complex(x):
        half = full((), 0.5, dtype)
        im = mul(mul(sub(ds_mat, mH(ds_mat)), half), diag_embed(s_inv, dtype))
        du_inner = add(du_inner, mul(im, eye_like(im)))
    du = matmul(u, du_inner)
    dv = matmul(v, mul(f, add(sds, mH(sds))))
    if m > n:
        tv = matmul(t, v)
        du = add(du, matvec_cols(sub(tv, matmul(u, matmul(mH(u), tv))), s_inv))
    if n > m:
        thu = matmul(mH(t), u)
        dv = add(dv, matvec_cols(sub(thu, matmul(v, matmul(vh, thu))), s_inv))
    return outs, [ds, du, mH(dv)]


def _eq_zero(s):
    return eq(s, full((), 0, get_aval(s).dtype))


ad.primitive_jvps[svd_p] = _svd_jvp
batching.primitive_batchers[svd_p] = _batch_front_rule(svd_p)
_host_lowering(svd_p, host_linalg.svd)
