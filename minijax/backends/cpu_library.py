"""CPU backend steps that are not generated kernels: dot via NumPy's BLAS, control flow."""

from __future__ import annotations

import numpy as np


def dot_step(instr, ops, s):
    """dot_general as np.matmul on [batch, M, K] x [batch, K, N] into a preallocated output."""
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
    matmul, empty = np.matmul, np.empty

    def step(env):
        x = env[l_src]
        y = env[r_src]
        x = (x if lid else x.transpose(lperm)).reshape(lshape)
        y = (y if rid else y.transpose(rperm)).reshape(rshape)
        out = empty(out_dims, out_dtype)
        if same:
            matmul(x, y, out=out.reshape(oshape))
        else:
            out.reshape(oshape)[...] = matmul(x, y)
        env[s] = out
    return step


def control_step(compiler, instr, ops, s):
    """while / conditional / call over nested programs of the called computations."""
    op = instr.opcode
    if op == "call":
        body = compiler.program(instr.called["to_apply"])

        def call(env):
            env[s] = body.run([env[o] for o in ops])
        return call
    if op == "while":
        cond = compiler.program(instr.called["condition"])
        body = compiler.program(instr.called["body"])
        src = ops[0]

        def while_(env):
            state = env[src]
            while bool(cond.run([state])):
                state = body.run([state])
            env[s] = state
        return while_
    if "branch_computations" in instr.called:
        branches = [compiler.program(c) for c in instr.called["branch_computations"]]
        pred = False
    else:
        branches = [compiler.program(instr.called["true_computation"]),
                    compiler.program(instr.called["false_computation"])]
        pred = True
    sel, args = ops[0], ops[1:]
    last = len(branches) - 1

    def conditional(env):
        v = env[sel]
        if pred:
            k = 0 if bool(v) else 1
        else:
            k = int(v)
            k = last if k < 0 or k > last else k
        env[s] = branches[k].run([env[args[k]]])
    return conditional
