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




# --------------------------------------------------------------------------- schur


def _givens(x, y):
    """(c, s) with [[c, s], [-conj(s), c]] @ [x, y] = [r, 0], c real (zlartg-like)."""
    r = np.hypot(np.abs(x), np.abs(y))
    if r == 0:
        return 1.0, 0.0
    if np.abs(x) == 0:
        return 0.0, np.conj(y) / np.abs(y)
    c = np.abs(x) / r
    s = (x / np.abs(x)) * np.conj(y) / r
    return c, s


def _complex_schur(h, z):
    """Complex Schur form of an upper Hessenberg h (in place) by single-shift QR with
    Wilkinson shifts; accumulates the unitary z."""
    n = h.shape[0]
    eps = np.finfo(h.real.dtype).eps
    hi, its = n - 1, 0
    while hi > 0:
        lo = hi
        while lo > 0 and np.abs(h[lo, lo - 1]) > eps * (np.abs(h[lo, lo]) +
                                                         np.abs(h[lo - 1, lo - 1])):
            lo -= 1
        if lo == hi:
            h[hi, hi - 1] = 0
            hi, its = hi - 1, 0
            continue
        if lo > 0:
            h[lo, lo - 1] = 0
        its += 1
        if its > 100 * n:
            raise np.linalg.LinAlgError("schur: QR iteration did not converge")
        a, b, c, d = h[hi - 1, hi - 1], h[hi - 1, hi], h[hi, hi - 1], h[hi, hi]
        if its % 11 == 10:   # exceptional shift against cycling
            mu = d + np.abs(c)
        else:   # the eigenvalue of the trailing 2x2 block nearer d (Wilkinson)
            tr, det = a + d, a * d - b * c
            disc = np.sqrt(tr * tr / 4 - det + 0j)
            l1, l2 = tr / 2 + disc, tr / 2 - disc
            mu = l1 if np.abs(l1 - d) < np.abs(l2 - d) else l2
        x, y = h[lo, lo] - mu, h[lo + 1, lo]
        for k in range(lo, hi):
            if k > lo:
                x, y = h[k, k - 1], h[k + 1, k - 1]
            cs, sn = _givens(x, y)
            g = np.array([[cs, sn], [-np.conj(sn), cs]])
            cols = slice(max(k - 1, 0), n)
            h[k:k + 2, cols] = g @ h[k:k + 2, cols]
            h[:min(k + 3, n), k:k + 2] = h[:min(k + 3, n), k:k + 2] @ np.conj(g.T)
            z[:, k:k + 2] = z[:, k:k + 2] @ np.conj(g.T)
            if k > lo:
                h[k + 1, k - 1] = 0
    return h, z


def _reflect3(x):
    """(v, beta) of a real Householder reflector P = I - beta v v^T with P x = (+-|x|, 0..)."""
    alpha = np.linalg.norm(x)
    if alpha == 0:
        return np.zeros_like(x), 0.0
    v = x.copy()
    v[0] += np.copysign(alpha, x[0])
    return v, 2.0 / (v @ v)


def _standardize_2x2(a, b, c, d):
    """LAPACK dlanv2: the rotation (cs, sn) and standardized block (a, b, c, d) of a real
    2x2 block: upper triangular for real eigenvalues, else a == d and b * c < 0."""
    eps = np.finfo(np.float64).eps
    if c == 0:
        return 1.0, 0.0, a, b, c, d
    if b == 0:
        return 0.0, 1.0, d, -c, 0.0, a
    if a - d == 0 and np.sign(b) != np.sign(c):
        return 1.0, 0.0, a, b, c, d
    temp = a - d
    p = 0.5 * temp
    bcmax = max(abs(b), abs(c))
    bcmis = min(abs(b), abs(c)) * np.sign(b) * np.sign(c)
    scale = max(abs(p), bcmax)
    z = p / scale * p + bcmax / scale * bcmis
    if z >= 4 * eps:   # real eigenvalues
        z = p + np.copysign(np.sqrt(scale) * np.sqrt(z), p)
        a = d + z
        d = d - bcmax / z * bcmis
        tau = np.hypot(c, z)
        cs, sn = z / tau, c / tau
        return cs, sn, a, b - c, 0.0, d
    sigma = b + c
    tau = np.hypot(sigma, temp)
    cs = np.sqrt(0.5 * (1 + abs(sigma) / tau))
    sn = -(p / (tau * cs)) * np.copysign(1.0, sigma)
    aa, bb = a * cs + b * sn, -a * sn + b * cs
    cc, dd = c * cs + d * sn, -c * sn + d * cs
    a, b = aa * cs + cc * sn, bb * cs + dd * sn
    c, d = -aa * sn + cc * cs, -bb * sn + dd * cs
    temp = 0.5 * (a + d)
    a = d = temp
    if c != 0:
        if b != 0:
            if np.sign(b) == np.sign(c):   # real eigenvalues after all
                sab, sac = np.sqrt(abs(b)), np.sqrt(abs(c))
                p = np.copysign(sab * sac, c)
                tau = 1 / np.sqrt(abs(b + c))
                a, d = temp + p, temp - p
                b, c = b - c, 0.0
                cs1, sn1 = sab * tau, sac * tau
                cs, sn = cs * cs1 - sn * sn1, cs * sn1 + sn * cs1
        else:
            b, c = -c, 0.0
            cs, sn = -sn, cs
    return cs, sn, a, b, c, d


def _real_schur(h, z):
    """Real Schur form (quasi-triangular, standardized 2x2 blocks) of a real upper
    Hessenberg h by Francis double-shift QR; accumulates the orthogonal z."""
    n = h.shape[0]
    eps = np.finfo(h.dtype).eps
    hi, its = n - 1, 0
    while hi > 0:
        lo = hi
        while lo > 0 and abs(h[lo, lo - 1]) > eps * (abs(h[lo, lo]) + abs(h[lo - 1, lo - 1])):
            lo -= 1
        if lo > 0:
            h[lo, lo - 1] = 0
        if lo == hi:
            hi, its = hi - 1, 0
            continue
        if lo == hi - 1:   # a 2x2 block: standardize it and deflate
            k = hi - 1
            cs, sn, *block = _standardize_2x2(h[k, k], h[k, k + 1], h[k + 1, k], h[k + 1, k + 1])
            rot = np.array([[cs, sn], [-sn, cs]])
            h[k:k + 2, k + 2:] = rot @ h[k:k + 2, k + 2:]
            h[:k, k:k + 2] = h[:k, k:k + 2] @ rot.T
            z[:, k:k + 2] = z[:, k:k + 2] @ rot.T
            h[k, k], h[k, k + 1], h[k + 1, k], h[k + 1, k + 1] = block
            hi, its = hi - 2, 0
            continue
        its += 1
        if its > 100 * n:
            raise np.linalg.LinAlgError("schur: QR iteration did not converge")
        if its % 11 == 10:   # exceptional shift against cycling
            sh = abs(h[hi, hi - 1]) + abs(h[hi - 1, hi - 2])
            s, t = 1.5 * sh + h[hi, hi], sh * sh
        else:
            s = h[hi - 1, hi - 1] + h[hi, hi]
            t = h[hi - 1, hi - 1] * h[hi, hi] - h[hi - 1, hi] * h[hi, hi - 1]
        x = h[lo, lo] ** 2 + h[lo, lo + 1] * h[lo + 1, lo] - s * h[lo, lo] + t
        y = h[lo + 1, lo] * (h[lo, lo] + h[lo + 1, lo + 1] - s)
        w = h[lo + 1, lo] * h[lo + 2, lo + 1]
        for k in range(lo, hi - 1):
            v, beta = _reflect3(np.array([x, y, w]))
            r = max(lo, k - 1)
            blk = h[k:k + 3, r:]
            h[k:k + 3, r:] = blk - beta * np.outer(v, v @ blk)
            top = min(k + 4, hi + 1)
            blk = h[:top, k:k + 3]
            h[:top, k:k + 3] = blk - beta * np.outer(blk @ v, v)
            z[:, k:k + 3] = z[:, k:k + 3] - beta * np.outer(z[:, k:k + 3] @ v, v)
            if k > lo:
                h[k + 1, k - 1] = h[k + 2, k - 1] = 0
            x, y = h[k + 1, k], h[k + 2, k]
            if k < hi - 2:
                w = h[k + 3, k]
        v, beta = _reflect3(np.array([x, y]))
        k = hi - 1
        blk = h[k:k + 2, k - 1:]
        h[k:k + 2, k - 1:] = blk - beta * np.outer(v, v @ blk)
        blk = h[:hi + 1, k:k + 2]
        h[:hi + 1, k:k + 2] = blk - beta * np.outer(blk @ v, v)
        z[:, k:k + 2] = z[:, k:k + 2] - beta * np.outer(z[:, k:k + 2] @ v, v)
        h[hi, hi - 2] = 0
    return h, z


def _schur_one(a, compute_schur_vectors):
    n = a.shape[0]
    if n == 0:
        return [a.copy(), a.copy()] if compute_schur_vectors else [a.copy()]
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    packed, taus = _hessenberg_one(a.astype(wide))
    (q,) = _householder_product_one(packed[1:, :-1], taus)
    z = np.eye(n, dtype=wide)
    z[1:, 1:] = q
    h = np.triu(packed, -1)
    h, z = (_complex_schur if a.dtype.kind == "c" else _real_schur)(h, z)
    h = np.triu(h, -1)
    if a.dtype.kind == "c":
        h = np.triu(h)
    out = [h.astype(a.dtype)]
    return out + [z.astype(a.dtype)] if compute_schur_vectors else out


def schur(a, *, compute_schur_vectors):
    a = np.asarray(a)
    return _batched(lambda m: _schur_one(m, compute_schur_vectors), a,
                    n_out=1 + compute_schur_vectors)


ROUTINES = {"eig": eig, "hessenberg": hessenberg, "tridiagonal": tridiagonal,
            "householder_product": householder_product, "schur": schur}
