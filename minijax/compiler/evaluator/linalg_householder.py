"""Host routines behind lax.linalg's eig, hessenberg, tridiagonal and householder_product
custom-calls (NumPy only), in LAPACK's conventions so results match JAX's CPU backend:

- eig: geev (numpy.linalg.eig) for eigenvalues and right eigenvectors; left eigenvectors
  are the rows of the inverse of the right ones, normalized as geev does (unit 2-norm,
  largest component real).
- hessenberg: gehrd's packed form: H on and above the first subdiagonal, the Householder
  vectors below it, and their scalar factors tau.
- tridiagonal: sytrd/hetrd's packed form (the upper or lower triangle), with the diagonal d,
  off-diagonal e and taus.
- householder_product: orgqr/ungqr: the first n columns of H_0 H_1 ... H_{k-1}.

Householder reflectors follow larfg: H = I - tau v v^H with v[0] = 1 and beta = -sign(
Re(alpha)) * ||(alpha, x)||, so H^H (alpha, x) = (beta, 0).
"""

from __future__ import annotations

import numpy as np


def _batched(fn, *arrays, n_out):
    """Apply fn to each matrix of a batch; stack each of its n_out results."""
    batch = arrays[0].shape[:-2]
    outs = [fn(*(a[idx] for a in arrays)) for idx in np.ndindex(*batch)]
    if not outs:   # an empty batch: run once on zeros for the result shapes
        probe = fn(*(np.zeros(a.shape[-2:], a.dtype) for a in arrays))
        return [np.zeros(batch + p.shape, p.dtype) for p in probe]
    return [np.stack([o[i] for o in outs]).reshape(batch + outs[0][i].shape)
            for i in range(n_out)]


def larfg(alpha, x):
    """(beta, tau, v_tail) of the reflector H with H^H [alpha; x] = [beta; 0]."""
    xnorm = np.linalg.norm(x) if x.size else 0.0
    if xnorm == 0 and np.imag(alpha) == 0:
        return alpha, np.zeros((), np.result_type(alpha)), np.zeros_like(x)
    beta = -np.copysign(np.hypot(np.abs(alpha), xnorm), np.real(alpha))
    tau = (beta - alpha) / beta
    return beta, tau, x / (alpha - beta)


# --------------------------------------------------------------------------- eig


def _normalize_like_geev(v):
    v = v / np.linalg.norm(v, axis=0, keepdims=True)
    # the largest component of each vector becomes real (positive)
    big = np.argmax(np.abs(v), axis=0)
    phase = v[big, np.arange(v.shape[1])]
    return v * (np.abs(phase) / np.where(phase == 0, 1, phase))


def _eig_one(x, left, right):
    w, vr = np.linalg.eig(x)
    cdt = np.result_type(x.dtype, np.complex64)
    outs = [w.astype(cdt)]
    if left:
        try:
            vl = np.conj(np.linalg.inv(vr)).T
        except np.linalg.LinAlgError:   # defective: left vectors of the transposed problem
            wl, vl = np.linalg.eig(np.conj(x).T)
            vl = vl[:, [int(np.argmin(np.abs(np.conj(wl) - wi))) for wi in w]]
        outs.append(_normalize_like_geev(vl).astype(cdt))
    if right:
        outs.append(vr.astype(cdt))
    return outs


def eig(x, *, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs=False):
    x = np.asarray(x)
    n_out = 1 + compute_left_eigenvectors + compute_right_eigenvectors
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    outs = _batched(lambda m: _eig_one(m, compute_left_eigenvectors,
                                       compute_right_eigenvectors), wide, n_out=n_out)
    cdt = np.result_type(x.dtype, np.complex64)
    return [o.astype(cdt) for o in outs]


# --------------------------------------------------------------------------- hessenberg


def _hessenberg_one(a):
    a = np.array(a, copy=True)
    n = a.shape[0]
    taus = np.zeros(max(n - 1, 0), a.dtype)
    for i in range(n - 1):   # the last one only makes a complex subdiagonal entry real
        beta, tau, tail = larfg(a[i + 1, i], a[i + 2:, i])
        v = np.concatenate([[1], tail]).astype(a.dtype)
        a[i + 1, i] = beta
        # A := H^H A H on the trailing part (H from the right, then H^H from the left)
        a[:, i + 1:] -= tau * np.outer(a[:, i + 1:] @ v, np.conj(v))
        a[i + 1:, i + 1:] -= np.conj(tau) * np.outer(v, np.conj(v) @ a[i + 1:, i + 1:])
        a[i + 2:, i] = tail
        taus[i] = tau
    return [a, taus]


def hessenberg(a):
    a = np.asarray(a)
    return _batched(_hessenberg_one, a, n_out=2)


# --------------------------------------------------------------------------- tridiagonal


def _her2_update(a22, v, tau):
    """A22 - v w^H - w v^H with x = tau A22 v and w = x - (tau / 2) (x^H v) v (sytd2)."""
    x = tau * (a22 @ v)
    w = x - 0.5 * tau * (np.vdot(x, v)) * v
    return a22 - np.outer(v, np.conj(w)) - np.outer(w, np.conj(v))


def _tridiagonal_one(a, lower):
    a = np.array(a, copy=True)
    n = a.shape[0]
    rdt = np.finfo(a.dtype).dtype if a.dtype.kind == "c" else a.dtype
    d, e = np.zeros(n, rdt), np.zeros(max(n - 1, 0), rdt)
    taus = np.zeros(max(n - 1, 0), a.dtype)
    if lower:
        for i in range(n - 1):
            beta, tau, tail = larfg(a[i + 1, i], a[i + 2:, i])
            v = np.concatenate([[1], tail]).astype(a.dtype)
            if tau != 0:
                sub = np.tril(a[i + 1:, i + 1:])
                full = sub + np.conj(np.tril(sub, -1)).T
                full[np.diag_indices_from(full)] = np.real(np.diag(full))
                new = _her2_update(full, v, tau)
                a[i + 1:, i + 1:] = np.where(np.tri(n - i - 1, dtype=bool), new,
                                             a[i + 1:, i + 1:])
            a[i + 1, i] = beta
            a[i + 2:, i] = tail
            e[i], taus[i] = np.real(beta), tau
            d[i] = np.real(a[i, i])
        if n:
            d[n - 1] = np.real(a[n - 1, n - 1])
    else:
        for i in range(n - 2, -1, -1):
            # reflector annihilating A[0:i, i+1]; its vector has v[i] = 1 and v[0:i] stored
            beta, tau, tail = larfg(a[i, i + 1], a[:i, i + 1][::-1])
            tail = tail[::-1]
            v = np.concatenate([tail, [1]]).astype(a.dtype)
            if tau != 0:
                sub = np.triu(a[:i + 1, :i + 1])
                full = sub + np.conj(np.triu(sub, 1)).T
                full[np.diag_indices_from(full)] = np.real(np.diag(full))
                new = _her2_update(full, v, tau)
                a[:i + 1, :i + 1] = np.where(np.tri(i + 1, dtype=bool).T, new, a[:i + 1, :i + 1])
            a[i, i + 1] = beta
            a[:i, i + 1] = tail
            e[i], taus[i] = np.real(beta), tau
            d[i + 1] = np.real(a[i + 1, i + 1])
        if n:
            d[0] = np.real(a[0, 0])
    if a.dtype.kind == "c" and n:
        a[np.diag_indices(n)] = d
    return [a, d, e, taus]


def tridiagonal(a, *, lower):
    a = np.asarray(a)
    return _batched(lambda m: _tridiagonal_one(m, lower), a, n_out=4)


# --------------------------------------------------------------------------- householder_product


def _householder_product_one(a, taus):
    m, n = a.shape
    q = np.eye(m, n, dtype=a.dtype)
    for i in range(len(taus) - 1, -1, -1):
        v = np.concatenate([[1], a[i + 1:, i]]).astype(a.dtype)
        q[i:, :] -= taus[i] * np.outer(v, np.conj(v) @ q[i:, :])
    return [q]


def householder_product(a, taus):
    a, taus = np.asarray(a), np.asarray(taus)
    batch = a.shape[:-2]
    taus2 = taus.reshape(batch + (1, taus.shape[-1]))
    (q,) = _batched(lambda m, t: _householder_product_one(m, t[0]), a, taus2, n_out=1)
    return q


ROUTINES = {"eig": eig, "hessenberg": hessenberg, "tridiagonal": tridiagonal,
            "householder_product": householder_product}
