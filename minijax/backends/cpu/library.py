"""CPU backend steps that are not generated kernels: dot via BLAS gemm, convolution as
im2col + gemm (control flow is the shared planner's, backends/planner.py)."""

from __future__ import annotations

import math

import numpy as np

from minijax import dtypes as dtypes_mod
from minijax.backends.cpu import blas as cpu_blas
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
    # Mixed dtypes (e.g. int8 x int8 -> int32, f16 x f16 -> f32: preferred_element_type)
    # multiply and accumulate in the output's type, not wrapping or rounding in the inputs'.
    cdt = np.dtype(np.float32) if dtypes_mod.is_16bit_float(out_dtype) else np.dtype(out_dtype)
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
            out.reshape(oshape)[...] = matmul(x.astype(cdt, copy=False), y.astype(cdt, copy=False))
        env[s] = out
    return step


def _gemm_step(instr, ops, s):
    """The dot as a direct gemm call, or None (no BLAS found, an integer or mixed dtype, or
    operands that are not one matrix product as stored)."""
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


def _im2col(x, ksize, stride, rdil, spans, groups):
    """The im2col copy of x ([b, spatial.., f]) as [b, out.., groups, k.., f // groups]:
    one strided copy per kernel offset, or per output position when there are fewer of
    those. Returns it and the output's spatial dims."""
    b, f = x.shape[0], x.shape[-1]
    nsp = len(ksize)
    osp = [(n - span) // st + 1 for n, span, st in zip(x.shape[1:-1], spans, stride)]
    cols = host_memory().empty((b, *osp, groups, *ksize, f // groups), x.dtype)
    view = np.moveaxis(cols, nsp + 1, -2)             # b, out.., k.., groups, f // groups
    xg = x.reshape(*x.shape[:-1], groups, f // groups)
    every = (slice(None),)
    if math.prod(osp) <= math.prod(ksize):
        for pos in np.ndindex(*osp):
            win = tuple(slice(p * st, p * st + span, d)
                        for p, st, span, d in zip(pos, stride, spans, rdil))
            view[every + pos] = xg[every + win]
    else:
        for off in np.ndindex(*ksize):
            win = tuple(slice(k * d, k * d + (n - 1) * st + 1, st)
                        for k, d, n, st in zip(off, rdil, osp, stride))
            view[every * (nsp + 1) + off] = xg[every + win]
    return cols, osp


def _im2col_contract(x, w, ksize, stride, rdil, spans, out, gemms, groups=1, batch_groups=1):
    """sum over k.., i of x[b, o*stride + k*rdil, g*I + i] * w[k.., i, g*O + o] per group g
    (feature groups: x's features and w's outputs split in `groups` blocks; batch groups:
    x's batch and w's outputs split in `batch_groups` blocks) as one gemm per group over
    an explicit im2col copy. Writes into `out` ([b / batch_groups, out.., o],
    C-contiguous) when given; returns the result."""
    cols, osp = _im2col(x, ksize, stride, rdil, spans, groups)
    dtype, o = x.dtype, w.shape[-1]
    ng = groups * batch_groups
    og = o // ng
    rows = cols.shape[0] // batch_groups * math.prod(osp)
    inner = math.prod(ksize) * (x.shape[-1] // groups)
    wm = np.ascontiguousarray(w).reshape(inner, o)
    if out is None:
        out = host_memory().empty((rows // math.prod(osp), *osp, o), dtype)
    res = out
    cm = res.reshape(rows, o)
    if batch_groups > 1:        # group g: rows g*rows.. of the copy
        a_view = cols.reshape(ng, rows, inner)
        lda, sa = inner, rows * inner
    else:                       # group g: columns g*inner.. of the copy
        a_view = cols.reshape(rows, ng, inner).transpose(1, 0, 2)
        lda, sa = ng * inner, inner
    blas = cpu_blas.find_blas()
    if blas is None or rows * og * inner == 0:
        for g in range(ng):
            cm[:, g * og:(g + 1) * og] = a_view[g] @ wm[:, g * og:(g + 1) * og]
        return res
    key = (ng, rows, og, inner, lda, sa, o)
    call = gemms.get(key)
    if call is None:
        call = gemms[key] = cpu_blas.GemmCall(
            blas, (ng, rows, og, inner, False, False), dtype,
            strides=(lda, o, o, sa, og, og)).call
    call(cols, wm, cm)
    return res


def _compute_dtype(*dtypes):
    """float64 if any operand or the result is float64, else float32 (16-bit floats are
    computed in float32 and rounded once, as the evaluator and XLA:CPU do)."""
    return np.dtype(np.float64) if np.dtype(np.float64) in dtypes else np.dtype(np.float32)


def conv_step(instr, ops, s):
    """convolution (with feature or batch groups) as im2col (an explicit strided copy) +
    one BLAS gemm per group, in float32 for 16-bit floats, or None when the instruction
    needs something this path does not do (non-float dtypes): the caller then runs the
    evaluator's convolution."""
    lhs_shape, rhs_shape = (o.shape for o in instr.operands)
    out_dtype = instr.shape.dtype
    a = instr.attrs
    groups = int(a.get("feature_group_count", 1) or 1)
    batch_groups = int(a.get("batch_group_count", 1) or 1)
    dtypes = (out_dtype, lhs_shape.dtype, rhs_shape.dtype)
    if not all(dtypes_mod.is_float(d) for d in dtypes) or (groups > 1 and batch_groups > 1):
        return None
    cd = _compute_dtype(*dtypes)
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
    identity = operm == list(range(nsp + 2)) and cd == out_dtype

    def step(env):
        x = np.transpose(env[l_src], lperm).astype(cd, copy=False)      # b, spatial.., f
        w = np.transpose(env[r_src], rperm).astype(cd, copy=False)      # spatial.., i, o
        b, f = x.shape[0], x.shape[-1]
        sp = x.shape[1:-1]
        if any(lo or hi for lo, hi in pad) or any(d != 1 for d in ldil):
            x = _pad_dilate(x, pad, ldil, sp, b, f, cd)
        spans = [(k - 1) * d + 1 for k, d in zip(ksize, rdil)]
        out = host_memory().empty(out_dims, out_dtype)
        if 0 in out.shape or any(n < sp_ for n, sp_ in zip(x.shape[1:-1], spans)):
            out[...] = 0
            env[s] = out
            return
        res = _im2col_contract(x, w, ksize, stride, rdil, spans, out if identity else None,
                               gemms, groups, batch_groups)
        if not identity:
            out[...] = np.transpose(res, operm)
        env[s] = out
    return step


def _pad_dilate(x, pad, ldil, sp, b, f, dtype):
    """x ([b, spatial.., f]) with its spatial dims dilated by `ldil` and padded by `pad`
    (negative padding crops)."""
    dil = [(n - 1) * d + 1 if n else 0 for n, d in zip(sp, ldil)]
    full = [max(0, lo + n + hi) for (lo, hi), n in zip(pad, dil)]
    xp = host_memory().zeros((b, *full, f), dtype)
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
    return xp
