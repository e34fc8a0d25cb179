"""Per-element LLVM IR for the windowed HLO ops: reduce-window and select-and-scatter.

Both are written as gathers, one output element at a time, so the loop emitters run them
like any elementwise kernel (vectorized inner loop, outer loop split across threads):

- reduce-window: out[o] folds `to_apply` over the window positions k (row-major), from the
  init value, of operand[o * stride + k * window_dilation - pad_lo] on the operand dilated
  by base_dilation; positions in the padding or between dilated elements read the init
  value (XLA pads and dilates with it).
- select-and-scatter: out[i] folds `scatter` over the windows w that cover i, in row-major
  order (the order of the source, so sums round as a scatter in source order does), of
  source[w] where w's selected position is i, from the init value. A window selects its
  first position inside the operand, then each later inside position p for which
  select(selected value, operand[p]) is false (XLA's rule). Each element re-selects the
  few windows that cover it: no atomics, no second pass.

Windows of at most UNROLL positions (and a few covering windows) are emitted
straight-line; larger ones as loops. State lives in stack slots that LLVM promotes.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from minijax.compiler.codegen.index import Index, scalar_index
from minijax.compiler.codegen.llvm_types import I1, I64, const, emit_counted_loop
from minijax.compiler.hlo.ir import Shape

#: Window positions (or covering windows) emitted straight-line rather than as a loop.
UNROLL = 16


def window_config(instr, rank: int):
    """(size, stride, pad, base dilation, window dilation) of a windowed instruction."""
    window = dict(instr.attrs.get("window") or {})
    return (tuple(window.get("size", (1,) * rank)), tuple(window.get("stride", (1,) * rank)),
            tuple(tuple(p) for p in window.get("pad", ((0, 0),) * rank)),
            tuple(window.get("lhs_dilate", (1,) * rank)),
            tuple(window.get("rhs_dilate", (1,) * rank)))


def unsupported_window_reason(instr) -> str | None:
    """Why a reduce-window / select-and-scatter cannot be emitted (None if it can)."""
    if instr.opcode == "reduce-window" and len(instr.operands) != 2:
        return "variadic reduce-window"
    if instr.opcode == "select-and-scatter":
        _, _, pad, ldil, rdil = window_config(instr, instr.shape.rank)
        if any(lo < 0 or hi < 0 for lo, hi in pad) or set(ldil) | set(rdil) != {1}:
            return "select-and-scatter with negative padding or dilation"
    return None


def _repeat(em, count: int, body, cost: int = 1) -> None:
    """body(j) for j in [0, count): unrolled (j an i64 constant) when count * cost (the
    body's size in window positions) is at most UNROLL * 4 and count at most UNROLL, or
    else as a loop."""
    if count <= UNROLL and count * cost <= UNROLL * 4:
        for j in range(count):
            body(const(I64, j))
        return
    with em.scope(), emit_counted_loop(em.b, const(I64, 0), const(I64, count), "win") as j:
        body(j)


def _multi_of(b, linear, dims) -> list:
    return Index(Shape("s64", tuple(dims)), linear=linear).get_multi(b)


def _slot(em, value):
    slot = em.alloca(value.type)
    em.b.store(value, slot)
    return slot


def reduce_window(em, instr, index: Index):
    """The value of reduce-window `instr` at `index`."""
    b = em.b
    x, init = instr.operands
    dims = x.shape.dims
    size, stride, pad, ldil, rdil = window_config(instr, x.shape.rank)
    out_multi = index.get_multi(b)
    init_v = em.emit(init, scalar_index(init.shape))
    comp = instr.called["to_apply"]
    acc = _slot(em, init_v)

    def body(k):
        kmulti = _multi_of(b, k, size)
        ok = ir.Constant(I1, 1)
        multi = []
        for d, n in enumerate(dims):
            (lo, hi), dil = pad[d], ldil[d]
            q = b.add(b.mul(out_multi[d], const(I64, stride[d])),
                      b.mul(kmulti[d], const(I64, rdil[d])))
            if lo:
                q = b.sub(q, const(I64, lo))
            if lo > 0:
                ok = b.and_(ok, b.icmp_signed(">=", q, const(I64, 0)))
            if dil != 1:
                ok = b.and_(ok, b.icmp_signed("==", b.srem(q, const(I64, dil)),
                                              const(I64, 0)))
                q = b.sdiv(q, const(I64, dil))
            if hi > 0 or dil != 1:
                ok = b.and_(ok, b.icmp_signed("<", q, const(I64, n)))
            multi.append(em._clamp_index(q, n) if (lo > 0 or hi > 0 or dil != 1) else q)
        v = em.emit(x, Index(x.shape, multi=multi))
        v = b.select(ok, v, init_v)
        b.store(em.emit_scalar_computation(comp, [b.load(acc), v])[0], acc)

    if x.shape.size:
        _repeat(em, math.prod(size), body)
    return b.load(acc)


def select_and_scatter(em, instr, index: Index):
    """The value of select-and-scatter `instr` at `index` (an operand-shaped position)."""
    b = em.b
    x, source, init = instr.operands
    dims, src_dims = x.shape.dims, source.shape.dims
    size, stride, pad, _, _ = window_config(instr, x.shape.rank)
    multi = index.get_multi(b)
    init_v = em.emit(init, scalar_index(init.shape))
    acc = _slot(em, init_v)
    if x.shape.size == 0 or source.shape.size == 0:
        return b.load(acc)
    select, scatter = instr.called["select"], instr.called["scatter"]
    # Per dim: how many windows can cover a position, and the last one that does.
    covers = [-(-s // st) for s, st in zip(size, stride)]
    t = [b.add(m, const(I64, lo)) if lo else m for m, (lo, _) in zip(multi, pad)]
    last = [b.sdiv(v, const(I64, st)) if st != 1 else v for v, st in zip(t, stride)]
    kstrides = [math.prod(size[d + 1:]) for d in range(len(size))]

    def per_window(c):
        cmulti = _multi_of(b, c, covers)
        ok = ir.Constant(I1, 1)
        w, start, target = [], [], const(I64, 0)
        for d in range(len(dims)):
            wd = b.add(last[d], b.sub(cmulti[d], const(I64, covers[d] - 1)))
            if covers[d] > 1 or pad[d] != (0, 0) or src_dims[d] != dims[d]:
                # Window wd starts at or before the position; it must also reach it.
                st_d = b.mul(wd, const(I64, stride[d]))
                ok = b.and_(ok, b.icmp_signed(">=", wd, const(I64, 0)))
                ok = b.and_(ok, b.icmp_signed("<", wd, const(I64, src_dims[d])))
                ok = b.and_(ok, b.icmp_signed(">", b.add(st_d, const(I64, size[d])), t[d]))
                wd = em._clamp_index(wd, src_dims[d])
            w.append(wd)
            s0 = b.sub(b.mul(wd, const(I64, stride[d])), const(I64, pad[d][0]))
            start.append(s0)
            target = b.add(target, b.mul(b.sub(multi[d], s0), const(I64, kstrides[d])))
        sel_val = sel_k = has = None

        def per_position(k):
            kmulti = _multi_of(b, k, size)
            inside = ir.Constant(I1, 1)
            pos = []
            for d, n in enumerate(dims):
                p = b.add(start[d], kmulti[d])
                if pad[d] != (0, 0):   # without padding, a valid window is inside
                    inside = b.and_(inside, b.and_(b.icmp_signed(">=", p, const(I64, 0)),
                                                   b.icmp_signed("<", p, const(I64, n))))
                    p = em._clamp_index(p, n)
                pos.append(p)
            cand = em.emit(x, Index(x.shape, multi=pos))
            cur, got = b.load(sel_val), b.load(has)
            keep = em.emit_scalar_computation(select, [cur, cand])[0]
            take = b.and_(inside, b.or_(b.not_(got), b.not_(keep)))
            b.store(b.select(take, cand, cur), sel_val)
            b.store(b.select(take, k, b.load(sel_k)), sel_k)
            b.store(b.or_(got, take), has)

        first = em.emit(x, Index(x.shape, multi=[em._clamp_index(s0, n)
                                                  for s0, n in zip(start, dims)]))
        sel_val, sel_k, has = _slot(em, first), _slot(em, const(I64, 0)), _slot(
            em, ir.Constant(I1, 0))
        _repeat(em, math.prod(size), per_position)
        hit = b.and_(b.and_(ok, b.load(has)), b.icmp_signed("==", b.load(sel_k), target))
        src_v = em.emit(source, Index(source.shape, multi=w))
        cur = b.load(acc)
        new = em.emit_scalar_computation(scatter, [cur, src_v])[0]
        b.store(b.select(hit, new, cur), acc)

    _repeat(em, math.prod(covers), per_window, cost=math.prod(size))
    return b.load(acc)
