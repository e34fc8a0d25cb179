"""Host linear-algebra routines (NumPy/LAPACK) behind the `minijax.linalg.*` custom-calls.

lax.linalg's primitives run these eagerly and lower to
`custom-call(custom_call_target="minijax.linalg.<name>[k=0,...]")`; the HLO evaluator (and so
the CPU backend's evaluator thunks) runs the same routine for that target. The targets are
registered statically (the evaluator imports this module), so a dumped module using them
replays in a fresh process with `python -m minijax.tools.run_hlo`.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.evaluator import linalg_householder

#: Custom-call target prefix of these routines.
PREFIX = "minijax.linalg."


def custom_call_target(name: str, params: dict) -> str:
    """`minijax.linalg.<name>[k=v,...]`: the routine and its (boolean) parameters."""
    flags = ",".join(f"{k}={int(v)}" for k, v in sorted(params.items()))
    return f"{PREFIX}{name}[{flags}]"


def parse_target(target: str) -> tuple[str, dict]:
    """The routine name and parameters of a `minijax.linalg.<name>[...]` target."""
    rest = target[len(PREFIX):]
    name, _, flags = rest.partition("[")
    params = {}
    for item in flags.rstrip("]").split(","):
        if item:
            key, _, value = item.partition("=")
            params[key] = bool(int(value))
    return name, params


def qr_shapes(shape, full_matrices):
    """The shapes of qr's Q and R for an operand of `shape`."""
    m, n = shape[-2:]
    k = m if full_matrices else min(m, n)
    return shape[:-2] + (m, k), shape[:-2] + (k, n)


def _real_dtype(dtype):
    return np.finfo(dtype).dtype if np.dtype(dtype).kind == "c" else np.dtype(dtype)


def cholesky(x):
    x = np.asarray(x)
    lower = np.tril(x)
    herm = lower + np.conj(np.swapaxes(np.tril(x, -1), -1, -2))
    out = np.full(x.shape, np.nan, dtype=x.dtype)
    for idx in np.ndindex(*x.shape[:-2]):
        try:
            out[idx] = np.linalg.cholesky(herm[idx])
        except np.linalg.LinAlgError:
            pass
    return out


def solve_triangular_left(tri, b, lower: bool):
    """Solve tri @ x = b for triangular `tri` (batched NumPy arrays). A singular `tri` gives
    inf/NaN as LAPACK's trsm (no error): substitution, row by row, in that case."""
    try:
        return np.linalg.solve(tri, b)
    except np.linalg.LinAlgError:
        pass
    batch = np.broadcast_shapes(tri.shape[:-2], b.shape[:-2])
    tri = np.broadcast_to(tri, batch + tri.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    n = tri.shape[-1]
    x = np.zeros(b.shape, np.result_type(tri, b))
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in rows:
            done = slice(0, i) if lower else slice(i + 1, n)
            acc = b[..., i, :] - np.einsum("...j,...jk->...k", tri[..., i, done],
                                           x[..., done, :])
            x[..., i, :] = acc / tri[..., i, i][..., None]
    return x


def _op_a(a, lower, transpose_a, conjugate_a, unit_diagonal):
    """op(a) with the unused triangle zeroed (NumPy arrays)."""
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        n = a.shape[-1]
        tri = tri * (1 - np.eye(n, dtype=a.dtype)) + np.eye(n, dtype=a.dtype)
    if transpose_a:
        tri = np.swapaxes(tri, -1, -2)
    if conjugate_a:
        tri = np.conj(tri)
    return tri


def triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a,
                           unit_diagonal):
    a, b = np.asarray(a), np.asarray(b)
    op = _op_a(a, lower, transpose_a, conjugate_a, unit_diagonal)
    if b.size == 0 or a.shape[-1] == 0:
        return np.zeros(b.shape, b.dtype)
    op_lower = lower != transpose_a
    if left_side:
        out = solve_triangular_left(op, b, op_lower)
    else:
        out = np.swapaxes(solve_triangular_left(np.swapaxes(op, -1, -2),
                                                np.swapaxes(b, -1, -2), not op_lower), -1, -2)
    return out.astype(b.dtype)


def lu(x):
    x = np.asarray(x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    a = np.array(x, copy=True).reshape((int(np.prod(batch, dtype=np.int64)), m, n))
    nb = a.shape[0]
    rows = np.arange(nb)
    pivots = np.zeros((nb, min(m, n)), np.int32)
    perm = np.tile(np.arange(m, dtype=np.int32), (nb, 1))
    for j in range(min(m, n)):
        p = j + np.argmax(np.abs(a[:, j:, j]), axis=1)
        pivots[:, j] = p
        a[rows, j], a[rows, p] = a[rows, p].copy(), a[rows, j].copy()
        perm[rows, j], perm[rows, p] = perm[rows, p].copy(), perm[rows, j].copy()
        piv = a[:, j, j]
        safe = np.where(piv == 0, 1, piv)
        a[:, j + 1:, j] = np.where((piv != 0)[:, None], a[:, j + 1:, j] / safe[:, None],
                                   a[:, j + 1:, j])
        a[:, j + 1:, j + 1:] -= a[:, j + 1:, j, None] * a[:, j, None, j + 1:]
    k = min(m, n)
    return [a.reshape(x.shape), pivots.reshape(batch + (k,)), perm.reshape(batch + (m,))]


def qr(x, *, full_matrices):
    x = np.asarray(x)
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    q_shape, r_shape = qr_shapes(x.shape, full_matrices)
    return [np.reshape(q, q_shape).astype(x.dtype), np.reshape(r, r_shape).astype(x.dtype)]


def eigh(x, *, lower, sort_eigenvalues):
    x = np.asarray(x)
    w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
    return [v.astype(x.dtype), w.astype(_real_dtype(x.dtype))]


def svd(x, *, full_matrices, compute_uv):
    x = np.asarray(x)
    m, n = x.shape[-2:]
    k = min(m, n)
    rd = _real_dtype(x.dtype)
    if x.size == 0:
        batch = x.shape[:-2]
        s = np.zeros(batch + (k,), rd)
        if not compute_uv:
            return [s]
        ku, kv = (m, n) if full_matrices else (k, k)
        u = np.broadcast_to(np.eye(m, ku, dtype=x.dtype), batch + (m, ku))
        vh = np.broadcast_to(np.eye(kv, n, dtype=x.dtype), batch + (kv, n))
        return [s, u, vh]
    if not compute_uv:
        return [np.linalg.svd(x, compute_uv=False).astype(rd)]
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    return [s.astype(rd), u.astype(x.dtype), vh.astype(x.dtype)]


ROUTINES = {"cholesky": cholesky, "triangular_solve": triangular_solve, "lu": lu, "qr": qr,
            "eigh": eigh, "svd": svd, **linalg_householder.ROUTINES}


def evaluate_custom_call(ops, instr):
    """The evaluator's implementation of every `minijax.linalg.*` custom-call target."""
    target = instr.attrs.get("custom_call_target", "")
    name, params = parse_target(target)
    routine = ROUTINES.get(name)
    if routine is None:
        raise ValueError(f"{instr.name}: unknown linalg custom-call target {target!r}; "
                         f"known routines: {', '.join(sorted(ROUTINES))}")
    outs = routine(*[np.asarray(o) for o in ops], **params)
    if instr.shape.is_tuple:
        return tuple(np.asarray(o, s.dtype)
                     for o, s in zip(outs, instr.shape.tuple_shapes, strict=True))
    return np.asarray(outs, instr.shape.dtype)
