"""Conditionals: lax.cond and lax.switch, one higher-order primitive `cond`.

`cond_p.bind(index, *operands, branches=(closed_jaxpr, ...))` runs branches[index] on the
operands (index is an int32 scalar, already clamped). Every branch takes the hoisted
constants of all branches followed by the user operands, and all branches have identical
output types. Rules: eager impl, abstract eval, JVP, batching (a batched index becomes a
select of all branches), partial evaluation (for linearize), transpose, HLO lowering
(`conditional` with branch_computations).

Loops live in control_flow_loops.py (while_loop, fori_loop) and control_flow_scan.py
(scan, map, associative_scan).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minijax import core, tree_util
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ClosedJaxpr, Jaxpr, Primitive, Var, get_aval, set_current_trace
from minijax.interpreters import ad, batching
from minijax.interpreters.partial_eval import partial_eval_rules
from minijax.interpreters.partial_eval_jaxpr import partial_eval_jaxpr_fwd
from minijax.lax.control_flow_common import (
    as_array,
    avals_of,
    batch_jaxpr,
    check_tree_and_avals,
    jvp_jaxpr,
    materialize,
    move_to_front,
    to_strong,
    trace_flat,
    trace_user_fun,
    transpose_jaxpr,
    weak_tangents,
)
from minijax.lax.elementwise_int import clamp, ne, select_n
from minijax.lax.structural import broadcast_in_dim, convert_element_type, moveaxis

_no_operand = object()

# --------------------------------------------------------------------------- wrappers


def cond(pred, true_fun, false_fun, *operands, operand=_no_operand):
    """Apply true_fun(*operands) if pred else false_fun(*operands), as one traced op.

    Both branches are traced; their outputs must have identical structure and types. JAX's
    older form ``cond(pred, true_operand, true_fun, false_operand, false_fun)`` (each branch
    with its own operand) is recognized as JAX does: by which arguments are callable.
    """
    if (operand is _no_operand and len(operands) == 2 and not callable(true_fun)
            and callable(false_fun) and callable(operands[1])):
        true_operand, real_true, false_operand, real_false = true_fun, false_fun, *operands
        return cond(pred, lambda ops: real_true(ops[0]), lambda ops: real_false(ops[1]),
                    (true_operand, false_operand))
    if operand is not _no_operand:
        if operands:
            raise TypeError("if `operand` is passed, positional `operands` should not be "
                            "passed")
        operands = (operand,)
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or np.ndim(pred) != 0:
        what = f"type {type(pred)}" if isinstance(pred, Sequence) else \
            f"shape {np.shape(pred)}."
        raise TypeError(f"Pred must be a scalar, got {pred} of {what}")
    pred_dtype = get_aval(pred).dtype
    if pred_dtype.kind != "b":
        if pred_dtype.kind in "iuf":  # JAX: pred != 0 (a NaN picks true_fun)
            pred = ne(pred, 0.0 if pred_dtype.kind == "f" else 0)
        else:
            raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
    if not callable(true_fun) or not callable(false_fun):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    index = convert_element_type(pred, np.int32)
    return _bind_cond(index, (false_fun, true_fun), operands, "true_fun and false_fun output")


def switch(index, branches, *operands, operand=_no_operand):
    """Apply branches[index](*operands); index is clamped to [0, len(branches) - 1]."""
    if operand is not _no_operand:
        if operands:
            raise TypeError("if `operand` is passed, positional `operands` should not be "
                            "passed")
        operands = (operand,)
    if not isinstance(branches, Sequence) or isinstance(branches, str):
        raise TypeError(f"switch branches must be a sequence, got {branches}.")
    branches = tuple(branches)
    if len(branches) == 0:
        raise ValueError("Empty branch sequence")
    for b in branches:
        if not callable(b):
            raise TypeError(f"lax.switch: branches must be callable, got {b}.")
    if np.ndim(index) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape "
                        f"{np.shape(index)}.")
    index_dtype = get_aval(index).dtype
    if index_dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index_dtype}.")
    if len(branches) == 1:
        return branches[0](*operands)
    index = convert_element_type(index, np.int32)
    index = clamp(np.int32(0), index, np.int32(len(branches) - 1))
    return _bind_cond(index, branches, operands, None)


def _bind_cond(index, funs, operands, what):
    leaves, in_tree = tree_util.tree_flatten(tuple(operands))
    in_avals = avals_of(leaves)
    traced = [trace_user_fun(lambda *a, f=f: f(*a), in_tree, in_avals, "lax.cond branch")
              for f in funs]
    out_trees = [t[2] for t in traced]
    out_avals = [t[0].out_avals for t in traced]
    if what is not None:  # cond: JAX compares true_fun (branch 1) with false_fun
        check_tree_and_avals(what, out_trees[1], out_avals[1], out_trees[0], out_avals[0])
    for i in range(1, len(funs)):
        check_tree_and_avals(f"branch 0 and {i} outputs", out_trees[0], out_avals[0],
                             out_trees[i], out_avals[i])
    # Weak-type join: an output strong in any branch is strong in all.
    joined = [a.strip_weak_type() if any(not avals[k].weak_type for avals in out_avals)
              else a for k, a in enumerate(out_avals[0])]
    if any(avals[k].weak_type != joined[k].weak_type for avals in out_avals
           for k in range(len(joined))):
        def strong(f):
            def g(*a):
                out = f(*a)
                out_leaves, tree = tree_util.tree_flatten(out)
                return tree_util.tree_unflatten(
                    tree, [to_strong(x, j) for x, j in zip(out_leaves, joined, strict=True)])
            return g
        traced = [trace_user_fun(strong(f), in_tree, in_avals, "lax.cond branch")
                  for f in funs]
    consts = [c for t in traced for c in t[1]]
    jaxprs, before = [], 0
    for jaxpr, cs, _ in traced:
        const_avals = avals_of(consts)
        j = jaxpr.jaxpr
        mine = list(j.invars[:len(cs)])
        invars = ([Var(a) for a in const_avals[:before]] + mine
                  + [Var(a) for a in const_avals[before + len(cs):]] + list(j.invars[len(cs):]))
        jaxprs.append(ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns), jaxpr.consts))
        before += len(cs)
    outs = cond_p.bind(index, *consts, *leaves, branches=tuple(jaxprs))
    return tree_util.tree_unflatten(out_trees[0], outs)


# --------------------------------------------------------------------------- primitive

cond_p = Primitive("cond")
cond_p.multiple_results = True


def _cond_abstract_eval(index, *args, branches):
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond: the branch index must be an int32 scalar, got "
                        f"{index.str_short()}")
    for br in branches:
        if [a.shape for a in br.in_avals] != [a.shape for a in args]:
            raise TypeError("cond: operands " + ", ".join(a.str_short() for a in args)
                            + " do not match the branch inputs "
                            + ", ".join(a.str_short() for a in br.in_avals))
    return list(branches[0].out_avals)


def _cond_impl(index, *args, branches):
    i = int(np.clip(int(np.asarray(index)), 0, len(branches) - 1))
    br = branches[i]
    outs = core.eval_jaxpr(br.jaxpr, br.consts, *args)
    return [as_array(o, a) for o, a in zip(outs, branches[0].out_avals, strict=True)]


cond_p.def_abstract_eval(_cond_abstract_eval)
cond_p.def_impl(_cond_impl)


def _cond_jvp(primals, tangents, *, branches):
    index, args = primals[0], primals[1:]
    arg_ts = tangents[1:]
    nz = [type(t) is not ad.Zero for t in arg_ts]
    out_nz = [False] * len(branches[0].out_avals)
    for br in branches:
        _, onz = jvp_jaxpr(br, nz, False)
        out_nz = [a or b for a, b in zip(out_nz, onz, strict=True)]
    jvps = tuple(jvp_jaxpr(br, nz, out_nz)[0] for br in branches)
    outs = cond_p.bind(index, *args, *[t for t in arg_ts if type(t) is not ad.Zero],
                       branches=jvps)
    n = len(out_nz)
    t_iter = iter(outs[n:])
    t_out = [next(t_iter) if z else ad.Zero(ad.tangent_aval(a))
             for z, a in zip(out_nz, branches[0].out_avals, strict=True)]
    return outs[:n], weak_tangents(t_out, branches[0].out_avals)


ad.primitive_jvps[cond_p] = _cond_jvp


def _bcast_select(index, cases):
    shape = get_aval(cases[0]).shape
    which = broadcast_in_dim(index, shape, (0,)) if len(shape) > 1 else index
    return select_n(which, *cases)


def _cond_batch(trace, vals, dims, *, branches):
    index, args = vals[0], vals[1:]
    idim, adims = dims[0], dims[1:]
    size = trace.axis_size
    args = move_to_front(trace, args, adims)
    in_b = [d is not batching.not_mapped for d in adims]
    if idim is batching.not_mapped:
        out_b = [False] * len(branches[0].out_avals)
        for br in branches:
            _, ob = batch_jaxpr(br, size, in_b, False, trace.axis_name)
            out_b = [a or b for a, b in zip(out_b, ob, strict=True)]
        batched = tuple(batch_jaxpr(br, size, in_b, out_b, trace.axis_name)[0]
                        for br in branches)
        outs = cond_p.bind(index, *args, branches=batched)
        return outs, [0 if b else batching.not_mapped for b in out_b]
    # A batched index: run every branch on the whole batch and select per element.
    index = moveaxis(index, idim, 0)
    results = []
    for br in branches:
        bj, _ = batch_jaxpr(br, size, in_b, True, trace.axis_name)
        results.append(core.eval_jaxpr(bj.jaxpr, bj.consts, *args))
    outs = [_bcast_select(index, [r[k] for r in results])
            for k in range(len(branches[0].out_avals))]
    return outs, [0] * len(outs)


batching.primitive_batchers[cond_p] = _cond_batch


def _cond_partial_eval(trace, args, params):
    branches = params["branches"]
    index, ops = args[0], args[1:]
    if trace.is_own(index):
        return trace.stage(cond_p, args, params)
    unknowns = [trace.is_own(x) for x in ops]
    out_uk = [False] * len(branches[0].out_avals)
    for br in branches:
        out_uk = [a or b for a, b in zip(
            out_uk, partial_eval_jaxpr_fwd(br, unknowns)[2], strict=True)]
    splits = [partial_eval_jaxpr_fwd(br, unknowns, out_uk) for br in branches]
    all_res = [a for s in splits for a in s[4]]
    known_ops = [x for x, uk in zip(ops, unknowns, strict=True) if not uk]
    unknown_ops = [x for x, uk in zip(ops, unknowns, strict=True) if uk]
    known_brs, unknown_brs, before = [], [], 0
    n_known_out = out_uk.count(False)
    for known, unknown, _, _, res_avals in splits:
        known_brs.append(_pad_residual_outputs(known, n_known_out, all_res, before))
        n_res = len(res_avals)
        j = unknown.jaxpr
        invars = ([Var(a) for a in all_res[:before]] + list(j.invars[:n_res])
                  + [Var(a) for a in all_res[before + n_res:]] + list(j.invars[n_res:]))
        unknown_brs.append(ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns),
                                       unknown.consts))
        before += n_res
    with set_current_trace(trace.parent):
        known_outs = cond_p.bind(index, *known_ops, branches=tuple(known_brs))
    residuals = known_outs[n_known_out:]
    staged = trace.stage(cond_p, [index, *residuals, *unknown_ops],
                         {"branches": tuple(unknown_brs)})
    k_iter, u_iter = iter(known_outs[:n_known_out]), iter(staged)
    return [next(u_iter) if uk else next(k_iter) for uk in out_uk]


def _pad_residual_outputs(known: ClosedJaxpr, n_out: int, all_res, before: int):
    """The known branch, outputting zeros for the other branches' residuals."""

    def fun(*args):
        outs = core.eval_jaxpr(known.jaxpr, known.consts, *args)
        own = outs[n_out:]
        zeros_before = [core.zeros_like_aval(a) for a in all_res[:before]]
        zeros_after = [core.zeros_like_aval(a) for a in all_res[before + len(own):]]
        return list(outs[:n_out]) + zeros_before + list(own) + zeros_after
    return trace_flat(fun, known.in_avals, "partial evaluation")


partial_eval_rules[cond_p] = _cond_partial_eval


def _cond_transpose(cts, index, *args, branches):
    if ad.is_undefined_primal(index):
        raise ValueError("cond: cannot transpose with respect to the branch index")
    lin = [ad.is_undefined_primal(a) for a in args]
    if all(type(c) is ad.Zero for c in cts):
        return [None] * (1 + len(args))
    res = [a for a, is_lin in zip(args, lin, strict=True) if not is_lin]
    out_avals = branches[0].out_avals
    ct_avals = [ad.tangent_aval(a) for a in out_avals]
    cts = [materialize(c, a) for c, a in zip(cts, ct_avals, strict=True)]
    t_branches = tuple(transpose_jaxpr(br, lin, ct_avals) for br in branches)
    outs = iter(cond_p.bind(index, *res, *cts, branches=t_branches))
    return [None] + [next(outs) if is_lin else None for is_lin in lin]


ad.primitive_transposes[cond_p] = _cond_transpose


def _cond_lower(ctx, index, *args, branches):
    b = ctx.builder
    operands = b.tuple(list(args), metadata=ctx.metadata)
    comps = []
    for i, br in enumerate(branches):
        bb = ctx.new_computation(f"branch_{i}")
        param = bb.parameter(0, operands.shape)
        ins = [bb.get_tuple_element(param, k) for k in range(len(args))]
        outs = ctx.lower_jaxpr(br, ins, builder=bb)
        bb.set_root(bb.tuple(outs))
        comps.append(bb.computation)
    if ctx.avals_in[0].dtype != np.int32:
        index = b.convert(index, "s32", metadata=ctx.metadata)
    result = b.conditional(index, [operands] * len(branches), comps, metadata=ctx.metadata)
    return [b.get_tuple_element(result, k, metadata=ctx.metadata)
            for k in range(len(branches[0].out_avals))]


register_lowering(cond_p, _cond_lower)
