"""NumPy meanings of the custom-call targets XLA:CPU and JAX emit in real modules.

- `TopK` (XLA:CPU's rewrite of `topk`): operand [..., n] -> (values, s32 indices) [..., k];
  the comparator in `called_computations` says largest (a > b) or smallest first.
- `lapack_{s,d,c,z}potrf_ffi`: Cholesky, `backend_config={uplo = 76 : ui8}` ('L' or 'U').
  Result (factor, s32 info): the named triangle holds the factor, the other is the input's;
  info is 0, or the order of the first leading minor that is not positive definite.
- `lapack_{s,d,c,z}trsm_ffi`: triangular solve with `side`, `uplo`, `trans_x` ('N', 'T' or
  'C') and `diag` ('N' or 'U': unit diagonal); op(a) x = b (side 'L') or x op(a) = b.
- `lapack_?getrf_ffi`: LU with partial pivoting -> (lu, s32 ipiv (1-based), s32 info).
- `lapack_?geqrf_ffi` -> (R above Householder vectors, tau); `lapack_?orgqr_ffi`(a, tau)
  -> Q: LAPACK's reflector conventions (beta = -sign(alpha) * norm).
- `lapack_?syevd_ffi` (`mode`, `uplo`) -> (eigenvectors, ascending eigenvalues, info);
  `lapack_?gesdd_ffi` (`mode` 'A', 'S' or 'N') -> (a, s, u, vt, info).
- `lapack_{s,d}geev_ffi` -> (wr, wi, vl, vr, info), `lapack_{c,z}geev_ffi` -> (w, vl, vr,
  info) with `compute_left`/`compute_right` ('V' or 'N'): unit-norm eigenvectors whose
  largest component is real (LAPACK's normalization; left vectors' signs may differ).
The LAPACK targets act on leading batch dimensions (`num_batch_dims`). Targets not here
fail with an error that names them (core._custom_call).
"""

from __future__ import annotations

import re

import numpy as np

from minijax.compiler.evaluator.core import evaluate_computation
from minijax.compiler.evaluator.sort import top_k_rows

_CONFIG_ENTRY = re.compile(r"(\w+)\s*=\s*(-?\d+)")


def backend_config(instr) -> dict[str, str]:
    """The `backend_config={key = 76 : ui8, ...}` of a LAPACK custom-call as characters."""
    raw = str(instr.attrs.get("backend_config", ""))
    return {k: chr(int(v)) for k, v in _CONFIG_ENTRY.findall(raw)}


def _top_k(ops, instr):
    values_shape = instr.shape.tuple_shapes[0]
    k = values_shape.dims[-1] if values_shape.dims else 1
    comparators = instr.called_computations()
    x = np.asarray(ops[0])
    largest = True
    if comparators:     # compare(a, b, [index_a, index_b]): is a ordered before b?
        args = [np.zeros((), p.shape.dtype) for p in comparators[0].parameters]
        args[0] = np.ones((), x.dtype)
        largest = bool(np.asarray(evaluate_computation(comparators[0], args)))
    return top_k_rows(x, k, largest)


def _conj_t(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _potrf(ops, instr):
    a = np.array(ops[0], copy=True)
    upper = backend_config(instr).get("uplo", "L") == "U"
    work = _conj_t(a) if upper else a.copy()   # factor the lower triangle of A (or A^H)
    n = a.shape[-1]
    batch = a.shape[:-2]
    info = np.zeros(batch, np.int32)
    alive = np.ones(batch, bool)
    with np.errstate(all="ignore"):
        for j in range(n):
            row = work[..., j, :j]
            d = (work[..., j, j] - np.sum(row * np.conj(row), axis=-1)).real
            bad = alive & ~(d > 0)
            info = np.where(bad, j + 1, info)
            alive &= ~bad
            pivot = np.sqrt(np.where(alive, d, 1.0))
            col = (work[..., j + 1:, j] - np.einsum("...ik,...k->...i", work[..., j + 1:, :j],
                                                    np.conj(row))) / pivot[..., None]
            keep = alive[..., None]
            work[..., j, j] = np.where(alive, pivot, np.where(bad, d, work[..., j, j]))
            work[..., j + 1:, j] = np.where(keep, col, work[..., j + 1:, j])
    factor = _conj_t(work) if upper else work
    mask = np.triu(np.ones((n, n), bool)) if upper else np.tril(np.ones((n, n), bool))
    out = np.where(mask, factor, a).astype(a.dtype)
    return (out, info)


def _substitute(m, b, lower: bool):
    """Solve m x = b for a triangular m (..., n, n) by substitution: inf/NaN when singular."""
    n = m.shape[-1]
    x = np.zeros(np.broadcast_shapes(m.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                 np.result_type(m, b))
    order = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            done = slice(0, i) if lower else slice(i + 1, n)
            acc = b[..., i, :] - np.einsum("...k,...kr->...r", m[..., i, done], x[..., done, :])
            x[..., i, :] = acc / m[..., i, i][..., None]
    return x


def _trsm(ops, instr):
    a, b = np.asarray(ops[0]), np.asarray(ops[1])
    cfg = backend_config(instr)
    lower = cfg.get("uplo", "L") == "L"
    n = a.shape[-1]
    tri = np.tril(a) if lower else np.triu(a)
    if cfg.get("diag", "N") == "U":
        tri = np.where(np.eye(n, dtype=bool), np.ones((), a.dtype), tri)
    trans = cfg.get("trans_x", "N")
    if trans in ("T", "C"):
        tri = np.swapaxes(tri, -1, -2)
        tri = np.conj(tri) if trans == "C" else tri
        lower = not lower
    if cfg.get("side", "L") == "L":
        x = _substitute(tri, b, lower)
    else:                                  # x op(a) = b  <=>  op(a)^T x^T = b^T
        x = np.swapaxes(_substitute(np.swapaxes(tri, -1, -2), np.swapaxes(b, -1, -2),
                                    not lower), -1, -2)
    return x.astype(b.dtype)


def _per_matrix(a, fn):
    """Apply fn(2-D matrix) -> tuple of arrays to every matrix of a batch; stack results."""
    batch = a.shape[:-2]
    results = [fn(a[idx]) for idx in np.ndindex(*batch)]
    if not results:
        results = [fn(np.zeros(a.shape[-2:], a.dtype))]
        return tuple(np.zeros(batch + np.shape(r), np.asarray(r).dtype) for r in results[0])
    return tuple(np.stack([np.asarray(r[i]) for r in results]).reshape(batch + np.shape(
        results[0][i])) for i in range(len(results[0])))


def _magnitude(x):
    return np.abs(x.real) + np.abs(x.imag) if x.dtype.kind == "c" else np.abs(x)


def _getrf_one(x):
    x = x.copy()
    m, n = x.shape
    k = min(m, n)
    piv, info = np.zeros(k, np.int32), 0
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + int(np.argmax(_magnitude(x[j:, j])))
            piv[j] = p + 1
            if x[p, j] != 0:
                if p != j:
                    x[[j, p]] = x[[p, j]]
                x[j + 1:, j] *= np.ones((), x.dtype) / x[j, j]
            elif info == 0:
                info = j + 1
            x[j + 1:, j + 1:] -= np.outer(x[j + 1:, j], x[j, j + 1:])
    return x, piv, np.int32(info)


def _getrf(ops, instr):
    return _per_matrix(np.asarray(ops[0]), _getrf_one)


def _reflector(x):
    """LAPACK's ?larfg: (beta, tau, v) with (I - tau v v^H)^H x = beta e1, v[0] = 1."""
    alpha, rest = x[0], x[1:]
    xnorm = np.sqrt(np.sum(_abs2(rest)))
    if xnorm == 0 and np.imag(alpha) == 0:
        return alpha, np.zeros((), x.dtype), np.concatenate([[1], np.zeros_like(rest)])
    beta = -np.copysign(np.sqrt(np.abs(alpha) ** 2 + xnorm ** 2), np.real(alpha))
    tau = (beta - alpha) / beta
    if x.dtype.kind == "c":
        tau = (beta - np.real(alpha)) / beta - 1j * np.imag(alpha) / beta
    v = np.concatenate([[1], rest / (alpha - beta)]).astype(x.dtype)
    return beta, np.asarray(tau, x.dtype), v


def _abs2(x):
    return (x * np.conj(x)).real


def _geqrf_one(x):
    x = x.copy()
    m, n = x.shape
    taus = np.zeros(min(m, n), x.dtype)
    with np.errstate(all="ignore"):
        for j in range(min(m, n)):
            beta, tau, v = _reflector(x[j:, j])
            x[j, j], x[j + 1:, j], taus[j] = beta, v[1:], tau
            block = x[j:, j + 1:]
            block -= np.conj(tau) * np.outer(v, np.conj(v) @ block)
    return x, taus


def _geqrf(ops, instr):
    return _per_matrix(np.asarray(ops[0]), _geqrf_one)


def _orgqr(ops, instr):
    a, tau = np.asarray(ops[0]), np.asarray(ops[1])
    m, n = a.shape[-2:]
    out = np.zeros(a.shape, a.dtype)
    with np.errstate(all="ignore"):
        for idx in np.ndindex(*a.shape[:-2]):
            q = np.eye(m, n, dtype=a.dtype)
            for i in reversed(range(tau.shape[-1])):
                v = np.concatenate([[1], a[idx][i + 1:, i]]).astype(a.dtype)
                q[i:] -= tau[idx][i] * np.outer(v, np.conj(v) @ q[i:])
            out[idx] = q
    return out


def _syevd(ops, instr):
    a = np.asarray(ops[0])
    cfg = backend_config(instr)
    w, v = np.linalg.eigh(a, UPLO="U" if cfg.get("uplo", "L") == "U" else "L")
    if cfg.get("mode", "V") != "V":
        v = a
    info = np.zeros(a.shape[:-2], np.int32)
    return (v.astype(a.dtype), w.astype(instr.shape.tuple_shapes[1].dtype), info)


def _gesdd(ops, instr):
    a = np.asarray(ops[0])
    mode = backend_config(instr).get("mode", "A")
    shapes = instr.shape.tuple_shapes
    if mode == "N":
        s = np.linalg.svd(a, compute_uv=False)
        u, vt = (np.zeros(sh.dims, sh.dtype) for sh in (shapes[2], shapes[3]))
    else:
        u, s, vt = np.linalg.svd(a, full_matrices=mode == "A")
    info = np.zeros(a.shape[:-2], np.int32)
    return (a, s.astype(shapes[1].dtype), u.astype(shapes[2].dtype),
            vt.astype(shapes[3].dtype), info)


def _unit_vectors(v):
    """Columns scaled to norm 1 with their largest-modulus component real and positive."""
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    return v * (np.abs(big) / np.where(big == 0, 1, big))


def _geev(ops, instr):
    a = np.asarray(ops[0])
    cfg = backend_config(instr)
    shapes = instr.shape.tuple_shapes
    w, vr = np.linalg.eig(a)
    vl = _unit_vectors(np.conj(np.swapaxes(np.linalg.inv(vr), -1, -2)))
    vectors = []
    for flag, v, shape in (("compute_left", vl, shapes[-3]), ("compute_right", vr, shapes[-2])):
        keep = cfg.get(flag, "N") == "V"
        vectors.append(v.astype(shape.dtype) if keep else np.zeros(shape.dims, shape.dtype))
    info = np.zeros(a.shape[:-2], np.int32)
    if a.dtype.kind == "c":
        return (w.astype(shapes[0].dtype), *vectors, info)
    w = w.astype(np.complex128)
    return (w.real.astype(shapes[0].dtype), w.imag.astype(shapes[1].dtype), *vectors, info)


TARGETS = {"TopK": _top_k}
for _p in "sdcz":
    for _name, _fn in (("potrf", _potrf), ("trsm", _trsm), ("getrf", _getrf),
                       ("geqrf", _geqrf), ("orgqr", _orgqr), ("ungqr", _orgqr),
                       ("syevd", _syevd), ("heevd", _syevd), ("gesdd", _gesdd),
                       ("geev", _geev)):
        TARGETS[f"lapack_{_p}{_name}_ffi"] = _fn
