"""GPU kernels for windowed ops: reduce-window, select-and-scatter, convolution. Each is a
direct kernel with one thread per output element (grid-stride), so every output is
computed by one thread in a fixed order: deterministic, no atomics.

- reduce-window (variadic too): acc = init, then acc = to_apply(acc, v) for every window
  offset in row-major order, v being the element under the window, or init over padding and
  base-dilation holes (XLA pads with the init value), the order the evaluator uses;
- select-and-scatter: the thread of operand element t visits, in row-major order, the
  windows that contain t (at most ceil(size/stride) per dim); for each it replays the
  window's selection (the first valid element, then `select(current, candidate)` false
  takes the candidate; padding is never selected) and, when t was selected, combines the
  window's source value with `scatter`, starting from init;
- convolution (any dim_labels, padding, strides, lhs/rhs dilation, feature and batch
  groups): the output element sums lhs * rhs over its group's input features and the kernel
  window, in the output's type (float16 in float32).
"""

from __future__ import annotations

from minijax.compiler.codegen.elemental import Index
from minijax.compiler.codegen.gpu.function import delinearize, stride_loop
from minijax.compiler.codegen.gpu.op_kernel import OpKernel, all_row_major
from minijax.compiler.codegen.gpu.spec import BLOCK, GpuKernel, Launch, grid_for
from minijax.compiler.codegen.llvm_types import F16, F32, I1, I64, const, is_float
from minijax.compiler.hlo.ir import Instruction


def window_config(window, rank: int):
    """(size, stride, pad, lhs_dilate, rhs_dilate) of a window attribute."""
    window = dict(window or {})
    size = tuple(int(v) for v in window.get("size", (1,) * rank))
    stride = tuple(int(v) for v in window.get("stride", (1,) * rank))
    pad = tuple((int(lo), int(hi)) for lo, hi in window.get("pad", ((0, 0),) * rank))
    lhs_dilate = tuple(int(v) for v in window.get("lhs_dilate", (1,) * rank))
    rhs_dilate = tuple(int(v) for v in window.get("rhs_dilate", (1,) * rank))
    return size, stride, pad, lhs_dilate, rhs_dilate


def _source_position(k: OpKernel, padded_pos, lo: int, dilate: int, n: int):
    """(index into the operand dim, valid) of a position in the padded, dilated dim."""
    b = k.b
    q = b.sub(padded_pos, const(I64, lo))
    ok = k.in_range(q, 0, (n - 1) * dilate + 1 if n else 0)
    if dilate == 1:
        return q, ok
    ok = b.and_(ok, b.icmp_signed("==", b.srem(q, const(I64, dilate)), const(I64, 0)))
    return b.sdiv(q, const(I64, dilate)), ok


def _layout_reason(instr: Instruction) -> str | None:
    if not all_row_major(instr):
        return "a non-row-major layout"
    return None


def reduce_window_reason(instr: Instruction) -> str | None:
    return _layout_reason(instr)


def emit_reduce_window(module, name: str, instr: Instruction) -> GpuKernel:
    k = OpKernel(module, name, instr)
    b, f = k.b, k.f
    n = len(instr.operands) // 2
    dims = instr.operands[0].shape.dims
    size, stride, pad, lhs_dil, rhs_dil = window_config(instr.attrs.get("window"), len(dims))
    out = k.outs[0]
    n_window = 1
    for s in size:
        n_window *= s
    comp = instr.called["to_apply"]
    with stride_loop(b, f.global_id(), const(I64, out.size), f.grid_size(), "elem") as i:
        omulti = Index(out, linear=i).get_multi(b) if out.rank else []
        inits = [k.load(n + m, const(I64, 0)) for m in range(n)]
        slots = []
        for v in inits:
            slot = f.alloca(v.type)
            b.store(v, slot)
            slots.append(slot)
        with f.em.scope(), stride_loop(b, const(I64, 0), const(I64, n_window),
                                       const(I64, 1), "w") as w:
            wmulti = delinearize(b, w, size) if size else []
            ok = const(I1, 1)
            src = []
            for d in range(len(dims)):
                pos = b.add(b.mul(omulti[d], const(I64, stride[d])),
                            b.mul(wmulti[d], const(I64, rhs_dil[d])))
                q, valid = _source_position(k, pos, pad[d][0], lhs_dil[d], dims[d])
                ok = b.and_(ok, valid)
                src.append(b.select(valid, q, const(I64, 0)))
            lin = k.linear(dims, src)
            acc = [b.load(s) for s in slots]
            vals = []
            for m in range(n):
                with b.if_else(ok) as (then, other):
                    with then:
                        loaded = k.load(m, lin)
                        then_block = b.block
                    with other:
                        other_block = b.block
                phi = b.phi(inits[m].type)
                phi.add_incoming(loaded, then_block)
                phi.add_incoming(inits[m], other_block)
                vals.append(phi)
            new = f.em.emit_scalar_computation(comp, acc + vals)
            for s, v in zip(slots, new):
                b.store(v, s)
        for m, s in enumerate(slots):
            k.store(m, i, b.load(s))
    k.finish()
    return GpuKernel(k.f.name, "reduce-window", [Launch(k.f.name, grid_for(out.size), BLOCK)],
                     len(instr.operands), k.outs)


def select_and_scatter_reason(instr: Instruction) -> str | None:
    return _layout_reason(instr)


def emit_select_and_scatter(module, name: str, instr: Instruction) -> GpuKernel:
    k = OpKernel(module, name, instr)
    b, f = k.b, k.f
    shape = instr.operands[0].shape
    dims = shape.dims
    src_dims = instr.operands[1].shape.dims
    size, stride, pad, _, _ = window_config(instr.attrs.get("window"), len(dims))
    reach = [-(-s // st) for s, st in zip(size, stride)]   # windows per dim holding t
    n_reach, n_window = 1, 1
    for r in reach:
        n_reach *= r
    for s in size:
        n_window *= s
    select, scatter = instr.called["select"], instr.called["scatter"]
    vty = k.load(2, const(I64, 0)).type
    with stride_loop(b, f.global_id(), const(I64, shape.size), f.grid_size(), "elem") as t:
        tmulti = Index(shape, linear=t).get_multi(b) if shape.rank else []
        acc = f.alloca(vty)
        b.store(k.load(2, const(I64, 0)), acc)
        first = []
        for d in range(len(dims)):      # the first window (per dim) that can hold t
            num = b.add(tmulti[d], const(I64, pad[d][0] - size[d] + 1))
            num = b.select(b.icmp_signed(">", num, const(I64, 0)), num, const(I64, 0))
            first.append(b.sdiv(b.add(num, const(I64, stride[d] - 1)), const(I64, stride[d])))
        with f.em.scope(), stride_loop(b, const(I64, 0), const(I64, n_reach), const(I64, 1),
                                       "win") as r:
            rmulti = delinearize(b, r, reach) if reach else []
            s_multi, holds = [], const(I1, 1)
            for d in range(len(dims)):
                s = b.add(first[d], rmulti[d])
                start = b.sub(b.mul(s, const(I64, stride[d])), const(I64, pad[d][0]))
                holds = b.and_(holds, b.icmp_signed("<", s, const(I64, src_dims[d])))
                holds = b.and_(holds, b.icmp_signed("<=", start, tmulti[d]))
                s_multi.append(s)
            with b.if_then(holds):
                sel_val = f.alloca(vty)
                sel_lin = f.alloca(I64)
                has = f.alloca(I1)
                b.store(const(I1, 0), has)
                b.store(const(I64, -1), sel_lin)
                b.store(const(vty, 0), sel_val)
                with stride_loop(b, const(I64, 0), const(I64, n_window), const(I64, 1),
                                 "off") as w:
                    wmulti = delinearize(b, w, size) if size else []
                    pos, valid = [], const(I1, 1)
                    for d in range(len(dims)):
                        p = b.add(b.sub(b.mul(s_multi[d], const(I64, stride[d])),
                                        const(I64, pad[d][0])), wmulti[d])
                        valid = b.and_(valid, k.in_range(p, 0, dims[d]))
                        pos.append(p)
                    with b.if_then(valid):
                        lin = k.linear(dims, pos)
                        cand = k.load(0, lin)
                        had = b.load(has)
                        with b.if_else(had) as (then, other):
                            with then:
                                keep = f.em.emit_scalar_computation(
                                    select, [b.load(sel_val), cand])[0]
                                with b.if_then(b.not_(keep)):
                                    b.store(cand, sel_val)
                                    b.store(lin, sel_lin)
                            with other:
                                b.store(cand, sel_val)
                                b.store(lin, sel_lin)
                                b.store(const(I1, 1), has)
                with b.if_then(b.icmp_signed("==", b.load(sel_lin), t)):
                    source = k.load(1, k.linear(src_dims, s_multi))
                    new = f.em.emit_scalar_computation(scatter, [b.load(acc), source])[0]
                    b.store(new, acc)
        k.store(0, t, b.load(acc))
    k.finish()
    return GpuKernel(k.f.name, "select-and-scatter",
                     [Launch(k.f.name, grid_for(shape.size), BLOCK)], 3, k.outs)


def _dim_labels(labels: str, nsp: int):
    lhs, rest = labels.split("_", 1)
    rhs, out = rest.split("->")
    spatial = [str(d) for d in range(nsp)]
    return ([lhs.index("b"), lhs.index("f")] + [lhs.index(s) for s in spatial],
            [rhs.index("o"), rhs.index("i")] + [rhs.index(s) for s in spatial],
            [out.index("b"), out.index("f")] + [out.index(s) for s in spatial])


def convolution_reason(instr: Instruction) -> str | None:
    why = _layout_reason(instr)
    if why is not None:
        return why
    ets = {op.shape.element_type for op in instr.operands} | {instr.shape.element_type}
    if len(ets) != 1:
        return f"mixed element types {sorted(ets)}"
    et = ets.pop()
    if et not in ("f16", "f32", "f64", "s32", "s64"):
        return f"convolution of {et}"
    return None


def emit_convolution(module, name: str, instr: Instruction) -> GpuKernel:
    k = OpKernel(module, name, instr)
    b, f = k.b, k.f
    lhs, rhs = instr.operands[0].shape, instr.operands[1].shape
    out = instr.shape
    nsp = lhs.rank - 2
    labels = instr.attrs.get("dim_labels") or ("bf" + "".join(map(str, range(nsp))) + "_oi"
                                               + "".join(map(str, range(nsp))) + "->bf"
                                               + "".join(map(str, range(nsp))))
    lp, rp, op = _dim_labels(str(labels), nsp)
    groups = int(instr.attrs.get("feature_group_count", 1) or 1)
    bgroups = int(instr.attrs.get("batch_group_count", 1) or 1)
    _, stride, pad, lhs_dil, rhs_dil = window_config(instr.attrs.get("window"), nsp)
    ksize = [rhs.dims[rp[2 + s]] for s in range(nsp)]
    in_feat = rhs.dims[rp[1]]
    out_feat = out.dims[op[1]]
    out_batch = out.dims[op[0]]
    per_group = out_feat // max(groups, bgroups)
    n_inner = in_feat
    for s in ksize:
        n_inner *= s
    et = out.element_type
    vty = k.load(0, const(I64, 0)).type
    aty = F32 if vty == F16 else vty
    floating = is_float(et)
    with stride_loop(b, f.global_id(), const(I64, out.size), f.grid_size(), "elem") as e:
        om = Index(out, linear=e).get_multi(b)
        ob, of = om[op[0]], om[op[1]]
        osp = [om[op[2 + s]] for s in range(nsp)]
        g = b.udiv(of, const(I64, per_group))
        feat0 = b.mul(g, const(I64, in_feat)) if groups > 1 else const(I64, 0)
        batch = b.add(b.mul(g, const(I64, out_batch)), ob) if bgroups > 1 else ob
        acc = f.alloca(aty)
        b.store(const(aty, 0), acc)
        with f.em.scope(), stride_loop(b, const(I64, 0), const(I64, n_inner), const(I64, 1),
                                       "red") as r:
            rm = delinearize(b, r, [in_feat] + ksize)
            ok = const(I1, 1)
            lm = [None] * lhs.rank
            lm[lp[0]], lm[lp[1]] = batch, b.add(feat0, rm[0])
            for s in range(nsp):
                pos = b.add(b.mul(osp[s], const(I64, stride[s])),
                            b.mul(rm[1 + s], const(I64, rhs_dil[s])))
                q, valid = _source_position(k, pos, pad[s][0], lhs_dil[s], lhs.dims[lp[2 + s]])
                ok = b.and_(ok, valid)
                lm[lp[2 + s]] = b.select(valid, q, const(I64, 0))
            rmulti = [None] * rhs.rank
            rmulti[rp[0]], rmulti[rp[1]] = of, rm[0]
            for s in range(nsp):
                rmulti[rp[2 + s]] = rm[1 + s]
            with b.if_then(ok):
                x, w = k.load(0, k.linear(lhs.dims, lm)), k.load(1, k.linear(rhs.dims, rmulti))
                if aty != vty:
                    x, w = b.fpext(x, aty), b.fpext(w, aty)
                cur = b.load(acc)
                b.store(b.fadd(cur, b.fmul(x, w)) if floating else b.add(cur, b.mul(x, w)), acc)
        total = b.load(acc)
        k.store(0, e, b.fptrunc(total, vty) if aty != vty else total)
    k.finish()
    return GpuKernel(k.f.name, "convolution (direct)",
                     [Launch(k.f.name, grid_for(out.size), BLOCK)], 2, k.outs)


__all__ = ["convolution_reason", "emit_convolution", "emit_reduce_window",
           "emit_select_and_scatter", "reduce_window_reason", "select_and_scatter_reason",
           "window_config"]
