"""CPU backend steps that are not generated kernels: dot via BLAS gemm, convolution as
im2col + gemm (control flow is the shared planner's, backends/planner.py)."""

from __future__ import annotations

import math

import numpy as np

from minijax.backends.cpu.memory import host_memory


def dot_step(instr, ops, s):
    """dot_general as one BLAS gemm per batch element (cpu/blas.py) reading the operands as
    stored, or else np.matmul on [batch, M, K] x [batch, K, N] into a preallocated output."""
    step = _gemm_step(instr, ops, s)
    if step is not None:
        return step
    lhs, rhs = instr.operands
    a = instr.attrs
    lb, rb = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ()))
    lc, rc = tuple(a.get("lhs_contracting_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
    lfree = [d for d in range(lhs.shape.rank) if d not in lb + lc]
    rfree = [d for d in range(rhs.shape.rank) if d not in rb + rc]
    ld, rd = lhs.shape.dims, rhs.shape.dims
    prod = np.prod
    batch = int(prod([ld[d] for d in lb])) if lb else 1
    m = int(prod([ld[d] for d in lfree])) if lfree else 1
    k = int(prod([ld[d] for d in lc])) if lc else 1
    n = int(prod([rd[d] for d in rfree])) if rfree else 1
    lperm = tuple(lb) + tuple(lfree) + tuple(lc)
    rperm = tuple(rb) + tuple(rc) + tuple(rfree)
    lid = lperm == tuple(range(len(ld)))
    rid = rperm == tuple(range(len(rd)))
    out_dims, out_dtype = instr.shape.dims, instr.shape.dtype
    same = lhs.shape.dtype == out_dtype == rhs.shape.dtype
    l_src, r_src = ops
    if batch == 1:
        lshape, rshape, oshape = (m, k), (k, n), (m, n)
    else:
        lshape, rshape, oshape = (batch, m, k), (batch, k, n), (batch, m, n)
    matmul, empty = np.matmul, host_memory().planned(out_dims, out_dtype)

    def step(env):
        x = env[l_src]
        y = env[r_src]
        x = (x if lid else x.transpose(lperm)).reshape(lshape)
        y = (y if rid else y.transpose(rperm)).reshape(rshape)
        out = empty()
        if same:
            matmul(x, y, out=out.reshape(oshape))
        else:
            out.reshape(oshape)[...] = matmul(x, y)
        env[s] = out
    return step


def _gemm_step(instr, ops, s):
    """The dot as a direct gemm call, or None (no BLAS found, an integer or mixed dtype, or
    operands that are not one matrix product as stored)."""
    from minijax.backends.cpu import blas as cpu_blas
    dtype = instr.shape.dtype
    if (dtype not in (np.float32, np.float64) or any(
            o.shape.dtype != dtype for o in instr.operands)):
        return None
    form = cpu_blas.gemm_form(instr)
    blas = cpu_blas.find_blas() if form is not None else None
    if blas is None:
        return None
    dims, (l_src, r_src) = instr.shape.dims, ops
    batch, m, n, k = form[:4]
    zeros = np.zeros
    if batch * m * n == 0 or k == 0:
        def step(env):
            env[s] = zeros(dims, dtype)
        return step
    call = cpu_blas.GemmCall(blas, form, dtype).call
    empty = host_memory().planned(dims, dtype)

    def step(env):
        out = empty()
        call(env[l_src], env[r_src], out)
        env[s] = out
    return step


def _conv_labels(labels: str, nsp: int):
    """(lhs perm to b,0..,f), (rhs perm to 0..,i,o), and the out-label positions."""
    lhs, rest = labels.split("_", 1)
    rhs, out = rest.split("->")
    spatial = [str(k) for k in range(nsp)]
    lperm = [lhs.index("b")] + [lhs.index(c) for c in spatial] + [lhs.index("f")]
    rperm = [rhs.index(c) for c in spatial] + [rhs.index("i"), rhs.index("o")]
    # Our result is laid out b, 0.., o ("f" in the output labels); move to `out`'s order.
    source = {"b": 0, **{c: 1 + k for k, c in enumerate(spatial)}, "f": nsp + 1}
    operm = [source[c] for c in out]
    return lperm, rperm, operm


def _im2col_contract(x, w, ksize, stride, rdil, spans, out, gemms):
    """sum over k.., i of x[b, o*stride + k*rdil, i] * w[k.., i, o] as one gemm over an
    explicit im2col copy [b, out.., k.., i] (filled by one strided copy per kernel offset,
    or per output position when there are fewer of those). Writes into `out` ([b, out..,
    o], C-contiguous) when given; returns the result."""
    b, f = x.shape[0], x.shape[-1]
    nsp = len(ksize)
    osp = [(n - span) // st + 1 for n, span, st in zip(x.shape[1:-1], spans, stride)]
    cols = host_memory().empty((b, *osp, *ksize, f), x.dtype)
    every = (slice(None),)
    if math.prod(osp) <= math.prod(ksize):
        for pos in np.ndindex(*osp):
            win = tuple(slice(p * st, p * st + span, d)
                        for p, st, span, d in zip(pos, stride, spans, rdil))
            cols[every + pos] = x[every + win]
    else:
        for off in np.ndindex(*ksize):
            win = tuple(slice(k * d, k * d + (n - 1) * st + 1, st)
                        for k, d, n, st in zip(off, rdil, osp, stride))
            cols[every * (nsp + 1) + off] = x[every + win]
    rows, inner, o = b * math.prod(osp), math.prod(ksize) * f, w.shape[-1]
    a = cols.reshape(rows, inner)
    wm = np.ascontiguousarray(w).reshape(inner, o)
    res = out if out is not None else host_memory().empty((b, *osp, o), x.dtype)
    from minijax.backends.cpu import blas as cpu_blas
    blas = cpu_blas.find_blas()
    if blas is None:
        np.matmul(a, wm, out=res.reshape(rows, o))
        return res
    key = (rows, o, inner)
    call = gemms.get(key)
    if call is None:
        call = gemms[key] = cpu_blas.GemmCall(blas, (1, rows, o, inner, False, False),
                                              x.dtype).call
    call(a, wm, res.reshape(rows, o))
    return res


def conv_step(instr, ops, s):
    """convolution as im2col (an explicit strided copy) + one BLAS gemm, or None when
    the instruction needs something this path does not do (feature/batch groups, mixed or
    non-float dtypes): the caller then runs the evaluator's convolution."""
    lhs_shape, rhs_shape = (o.shape for o in instr.operands)
    out_dtype = instr.shape.dtype
    a = instr.attrs
    if (int(a.get("feature_group_count", 1) or 1) != 1
            or int(a.get("batch_group_count", 1) or 1) != 1
            or out_dtype not in (np.float32, np.float64)
            or lhs_shape.dtype != out_dtype or rhs_shape.dtype != out_dtype):
        return None
    nsp = lhs_shape.rank - 2
    digits = "".join(map(str, range(nsp)))
    labels = a.get("dim_labels") or f"bf{digits}_oi{digits}->bf{digits}"
    lperm, rperm, operm = _conv_labels(labels, nsp)
    window = dict(a.get("window") or {})
    ksize = [rhs_shape.dims[rperm[k]] for k in range(nsp)]
    stride = tuple(window.get("stride", (1,) * nsp))
    pad = [tuple(p) for p in window.get("pad", ((0, 0),) * nsp)]
    ldil = tuple(window.get("lhs_dilate", (1,) * nsp))
    rdil = tuple(window.get("rhs_dilate", (1,) * nsp))
    out_dims = instr.shape.dims
    l_src, r_src = ops
    gemms: dict = {}

    def step(env):
        x = np.transpose(env[l_src], lperm)          # b, spatial.., f
        w = np.transpose(env[r_src], rperm)          # spatial.., i, o
        b, f = x.shape[0], x.shape[-1]
        sp = x.shape[1:-1]
        if any(lo or hi for lo, hi in pad) or any(d != 1 for d in ldil):
            dil = [(n - 1) * d + 1 if n else 0 for n, d in zip(sp, ldil)]
            full = [max(0, lo + n + hi) for (lo, hi), n in zip(pad, dil)]
            xp = host_memory().zeros((b, *full, f), out_dtype)
            dst, src = [slice(None)], [slice(None)]
            for (lo, hi), n, d in zip(pad, dil, ldil):
                # Interior positions (stride d) of the dilated input that survive the padding.
                start = -(-max(0, -lo) // d) * d
                stop = n + min(hi, 0)
                if stop <= start:
                    dst.append(slice(0, 0))
                    src.append(slice(0, 0))
                    continue
                dst.append(slice(start + lo, stop + lo, d))
                src.append(slice(start // d, (stop + d - 1) // d))
            dst.append(slice(None))
            src.append(slice(None))
            xp[tuple(dst)] = x[tuple(src)]
            x = xp
        spans = [(k - 1) * d + 1 for k, d in zip(ksize, rdil)]
        out = host_memory().empty(out_dims, out_dtype)
        if 0 in out.shape or any(n < sp_ for n, sp_ in zip(x.shape[1:-1], spans)):
            out[...] = 0
            env[s] = out
            return
        identity = operm == list(range(nsp + 2))
        res = _im2col_contract(x, w, ksize, stride, rdil, spans, out if identity else None,
                               gemms)
        if not identity:
            out[...] = np.transpose(res, operm)
        env[s] = out
    return step
