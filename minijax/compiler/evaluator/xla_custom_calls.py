"""NumPy meanings of the custom-call targets XLA:CPU and JAX emit in real modules.

- `TopK` (XLA:CPU's rewrite of `topk`): operand [..., n] -> (values, s32 indices) [..., k];
  the comparator in `called_computations` says largest (a > b) or smallest first.
- `lapack_{s,d,c,z}potrf_ffi`: Cholesky, `backend_config={uplo = 76 : ui8}` ('L' or 'U').
  Result (factor, s32 info): the named triangle holds the factor, the other is the input's;
  info is 0, or the order of the first leading minor that is not positive definite.
- `lapack_{s,d,c,z}trsm_ffi`: triangular solve with `side`, `uplo`, `trans_x` ('N', 'T' or
  'C') and `diag` ('N' or 'U': unit diagonal); op(a) x = b (side 'L') or x op(a) = b.
Both LAPACK targets act on leading batch dimensions (`num_batch_dims`). Targets not here
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


TARGETS = {"TopK": _top_k}
for _p in "sdcz":
    TARGETS[f"lapack_{_p}potrf_ffi"] = _potrf
    TARGETS[f"lapack_{_p}trsm_ffi"] = _trsm
