"""lax.while_loop (one higher-order primitive `while`) and lax.fori_loop.

`while_p.bind(*cond_consts, *body_consts, *init, cond_jaxpr, body_jaxpr, cond_nconsts,
body_nconsts)` repeats `carry = body(body_consts, carry)` while
`cond(cond_consts, carry)` holds. Rules: eager impl (a Python loop), abstract eval, JVP,
batching (a batched predicate runs while any element's predicate holds and selects the
carry per element), partial evaluation (the primal part is computed now; the rest is
staged whole), HLO lowering (`while` with a tuple state). Reverse mode raises JAX's error.

fori_loop with concrete bounds is a scan (so it is reverse-differentiable); otherwise a
while loop.
"""

from __future__ import annotations

import numpy as np

from minijax import core, tree_util
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ClosedJaxpr, Jaxpr, Primitive, Tracer, get_aval, set_current_trace
from minijax.interpreters import ad, batching
from minijax.interpreters.partial_eval import partial_eval_rules
from minijax.interpreters.partial_eval_jaxpr import partial_eval_jaxpr_fwd
from minijax.lax.control_flow_common import (
    add_dummy_invars,
    as_array,
    avals_of,
    batch_jaxpr,
    check_tree_and_avals,
    forwarded_carries,
    jvp_jaxpr,
    match_aval,
    materialize,
    move_to_front,
    permute_invars,
    promote_weak_inputs,
    split_list,
    trace_flat,
    trace_user_fun,
    weak_tangents,
)
from minijax.lax.control_flow_scan import scan
from minijax.lax.elementwise import add
from minijax.lax.elementwise_int import lt, select
from minijax.lax.reductions import reduce_or
from minijax.lax.structural import broadcast_in_dim, convert_element_type

# --------------------------------------------------------------------------- wrappers


def while_loop(cond_fun, body_fun, init_val):
    """Repeat `val = body_fun(val)` while `cond_fun(val)`; returns the final val.

    Not reverse-differentiable (use scan or fori_loop with static bounds for that).
    """
    if not callable(cond_fun) or not callable(body_fun):
        raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be "
                        "callable.")
    init_flat, in_tree = tree_util.tree_flatten(init_val)
    init_avals = avals_of(init_flat)
    wrap_tree = tree_util.tree_structure((init_val,))

    def trace_body(avals, fix=None):
        def fun(val):
            out = body_fun(val)
            if fix is None:
                return out
            leaves, tree = tree_util.tree_flatten(out)
            if len(leaves) != len(fix):
                return out
            return tree_util.tree_unflatten(
                tree, [match_aval(v, a) for v, a in zip(leaves, fix, strict=True)])
        return trace_user_fun(fun, wrap_tree, avals, "lax.while_loop body_fun")

    body, body_consts, body_tree = trace_body(init_avals)
    if body_tree == in_tree:
        init_flat, init_avals, changed = promote_weak_inputs(init_flat, init_avals,
                                                             body.out_avals)
        if changed:
            body, body_consts, body_tree = trace_body(init_avals)
    body_out = body.out_avals
    check_tree_and_avals("body_fun output and input", body_tree, body_out, in_tree,
                         init_avals)
    # Weak types, as JAX: a carry whose output differs from its init only in weak type does
    # not retrace the body; the loop keeps the init's types and the results take the body's.
    if any(a.weak_type != o.weak_type for a, o in zip(init_avals, body_out, strict=True)):
        body, body_consts, body_tree = trace_body(init_avals, init_avals)
    cond, cond_consts, cond_tree = trace_user_fun(cond_fun, wrap_tree, init_avals,
                                                  "lax.while_loop cond_fun")
    if cond_tree.num_leaves != 1:
        raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {cond_tree}.")
    pred = cond.out_avals[0]
    if pred.shape != () or pred.dtype != np.bool_:
        raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                        f"[{pred!r}].")
    outs = while_p.bind(*cond_consts, *body_consts, *init_flat, cond_jaxpr=cond,
                        body_jaxpr=body, cond_nconsts=len(cond_consts),
                        body_nconsts=len(body_consts))
    fwd = forwarded_carries(body, len(body_consts), len(init_flat))
    outs = [init if f else match_aval(x, a)
            for init, f, x, a in zip(init_flat, fwd, outs, body_out, strict=True)]
    return tree_util.tree_unflatten(in_tree, outs)


def _concrete_int(x):
    """x as a Python int if it is concrete (not traced), else None."""
    if isinstance(x, Tracer):
        value = x.to_concrete_value()
        if value is None:
            return None
        x = value
    try:
        return int(np.asarray(x))
    except (TypeError, ValueError):
        return None


def _bounds_dtype(lo, hi):
    """The loop index dtype: the bounds' common dtype; of two signed int dtypes a weakly
    typed one (a Python int) takes the other's, and other mixes raise, as in JAX."""
    if lo.dtype == hi.dtype:
        return lo.dtype
    if lo.dtype.kind == "i" and hi.dtype.kind == "i" and lo.weak_type != hi.weak_type:
        return hi.dtype if lo.weak_type else lo.dtype
    raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                    f"{lo.dtype.name} and {hi.dtype.name}")


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """`val = body_fun(i, val)` for i in range(lower, upper); returns the final val.

    With concrete bounds this is a scan (differentiable in reverse mode); with traced
    bounds a while loop.
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    lo_aval, hi_aval = get_aval(lower), get_aval(upper)
    for name, aval in (("lower", lo_aval), ("upper", hi_aval)):
        if aval.shape != () or aval.dtype.kind not in "iuf":
            raise TypeError(f"fori_loop {name} bound must be an integer scalar, got "
                            f"{aval.str_short()}.")
    dtype = _bounds_dtype(lo_aval, hi_aval)
    lo_c, hi_c = _concrete_int(lower), _concrete_int(upper)
    if lo_c is not None and hi_c is not None:
        # As JAX: the index starts as the Python int lower, so the body sees a weakly typed
        # int32 whatever the bounds' dtypes.
        def step(carry, _):
            i, val = carry
            return (add(i, 1), body_fun(i, val)), None
        (_, result), _ = scan(step, (lo_c, init_val), None, length=max(hi_c - lo_c, 0),
                              unroll=1 if unroll is None else unroll)
        return result
    for name, aval in (("lower", lo_aval), ("upper", hi_aval)):
        if aval.dtype.kind not in "iu":
            raise TypeError(f"fori_loop {name} bound must be an integer scalar, got "
                            f"{aval.str_short()}.")
    lower = convert_element_type(lower, dtype)
    upper = convert_element_type(upper, dtype)

    def cond_fun(carry):
        i, hi, _ = carry
        return lt(i, hi)

    def body(carry):
        i, hi, val = carry
        return add(i, np.asarray(1, dtype)), hi, body_fun(i, val)
    _, _, result = while_loop(cond_fun, body, (lower, upper, init_val))
    return result


# --------------------------------------------------------------------------- primitive

while_p = Primitive("while")
while_p.multiple_results = True


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = avals[cond_nconsts + body_nconsts:]
    if [a.shape for a in carry] != [a.shape for a in body_jaxpr.out_avals]:
        raise TypeError("while: carry " + ", ".join(a.str_short() for a in carry)
                        + " does not match the body outputs "
                        + ", ".join(a.str_short() for a in body_jaxpr.out_avals))
    return list(body_jaxpr.out_avals)


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = split_list(args, [cond_nconsts, body_nconsts])
    while True:
        (pred,) = core.eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, *cc, *carry)
        if not bool(np.asarray(pred)):
            break
        carry = core.eval_jaxpr(body_jaxpr.jaxpr, body_jaxpr.consts, *bc, *carry)
    return [as_array(c, a) for c, a in zip(carry, body_jaxpr.out_avals, strict=True)]


while_p.def_abstract_eval(_while_abstract_eval)
while_p.def_impl(_while_impl)


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = split_list(primals, [cond_nconsts, body_nconsts])
    _, bc_t, carry_t = split_list(tangents, [cond_nconsts, body_nconsts])
    bc_nz = [type(t) is not ad.Zero for t in bc_t]
    carry_nz = [type(t) is not ad.Zero for t in carry_t]
    while True:
        _, out_nz = jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, carry_nz)
        new = [a or b for a, b in zip(carry_nz, out_nz, strict=True)]
        if new == carry_nz:
            break
        carry_nz = new
    body_jvp, _ = jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, carry_nz)
    nb, nc, nbt, nct = len(bc), len(carry), sum(bc_nz), sum(carry_nz)
    order = (list(range(nb)) + list(range(nb + nc, nb + nc + nbt))
             + list(range(nb, nb + nc)) + list(range(nb + nc + nbt, nb + nc + nbt + nct)))
    body_jvp = permute_invars(body_jvp, order)
    carry_avals = body_jaxpr.out_avals
    t_avals = [ad.tangent_aval(a) for a, z in zip(carry_avals, carry_nz, strict=True) if z]
    cond_aug = add_dummy_invars(cond_jaxpr, t_avals, len(cond_jaxpr.in_avals))
    carry_t = [materialize(t, ad.tangent_aval(a))
               for t, a, z in zip(carry_t, carry_avals, carry_nz, strict=True) if z]
    outs = while_p.bind(*cc, *bc, *[t for t in bc_t if type(t) is not ad.Zero], *carry,
                        *carry_t, cond_jaxpr=cond_aug, body_jaxpr=body_jvp,
                        cond_nconsts=len(cc), body_nconsts=nb + nbt)
    t_iter = iter(outs[nc:])
    t_out = [next(t_iter) if z else ad.Zero(ad.tangent_aval(a))
             for z, a in zip(carry_nz, carry_avals, strict=True)]
    return outs[:nc], weak_tangents(t_out, carry_avals)


ad.primitive_jvps[while_p] = _while_jvp


def _while_batch(trace, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size, name = trace.axis_size, trace.axis_name
    cc, bc, carry = split_list(vals, [cond_nconsts, body_nconsts])
    cc_d, bc_d, carry_d = split_list(dims, [cond_nconsts, body_nconsts])
    cc_b = [d is not batching.not_mapped for d in cc_d]
    bc_b = [d is not batching.not_mapped for d in bc_d]
    carry_b = [d is not batching.not_mapped for d in carry_d]
    while True:
        _, out_b = batch_jaxpr(body_jaxpr, size, bc_b + carry_b, carry_b, name)
        new = [a or b for a, b in zip(carry_b, out_b, strict=True)]
        _, (pred_b,) = batch_jaxpr(cond_jaxpr, size, cc_b + new, False, name)
        if pred_b:
            new = [True] * len(carry_b)
        if new == carry_b:
            break
        carry_b = new
    cc = move_to_front(trace, cc, cc_d)
    bc = move_to_front(trace, bc, bc_d)
    carry = move_to_front(trace, carry, carry_d, carry_b)
    body_b, _ = batch_jaxpr(body_jaxpr, size, bc_b + carry_b, carry_b, name)
    out_dims = [0 if b else batching.not_mapped for b in carry_b]
    if not pred_b:
        cond_b, _ = batch_jaxpr(cond_jaxpr, size, cc_b + carry_b, False, name)
        outs = while_p.bind(*cc, *bc, *carry, cond_jaxpr=cond_b, body_jaxpr=body_b,
                            cond_nconsts=len(cc), body_nconsts=len(bc))
        return outs, out_dims
    # A batched predicate: loop while any element's predicate holds; elements that are
    # done keep their carry.
    cond_b, _ = batch_jaxpr(cond_jaxpr, size, cc_b + carry_b, True, name)
    n_cc, n_bc = len(cc), len(bc)

    def new_cond(*args):
        (pred,) = core.eval_jaxpr(cond_b.jaxpr, cond_b.consts, *args)
        return [reduce_or(pred, (0,))]

    def new_body(*args):
        c_consts, b_consts, old = split_list(args, [n_cc, n_bc])
        (pred,) = core.eval_jaxpr(cond_b.jaxpr, cond_b.consts, *c_consts, *old)
        new = core.eval_jaxpr(body_b.jaxpr, body_b.consts, *b_consts, *old)
        out = []
        for n, o in zip(new, old, strict=True):
            shape = get_aval(o).shape
            p = broadcast_in_dim(pred, shape, (0,)) if len(shape) > 1 else pred
            out.append(select(p, n, o))
        return out
    carry_avals = avals_of(carry)
    cond_j = trace_flat(new_cond, avals_of(cc) + carry_avals, "vmap")
    body_j = trace_flat(new_body, avals_of(cc) + avals_of(bc) + carry_avals, "vmap")
    outs = while_p.bind(*cc, *cc, *bc, *carry, cond_jaxpr=cond_j, body_jaxpr=body_j,
                        cond_nconsts=n_cc, body_nconsts=n_cc + n_bc)
    return outs, out_dims


batching.primitive_batchers[while_p] = _while_batch


def _while_partial_eval(trace, args, params):
    cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
    n_cc, n_bc = params["cond_nconsts"], params["body_nconsts"]
    unknowns = [trace.is_own(a) for a in args]
    cc_uk, bc_uk, carry_uk = split_list(unknowns, [n_cc, n_bc])
    staged = trace.stage(while_p, args, params)
    if any(cc_uk):
        return staged
    while True:
        out_uk = partial_eval_jaxpr_fwd(body_jaxpr, bc_uk + carry_uk, carry_uk)[2]
        new = [a or b for a, b in zip(carry_uk, out_uk, strict=True)]
        if new == carry_uk:
            break
        carry_uk = new
    if partial_eval_jaxpr_fwd(cond_jaxpr, cc_uk + carry_uk)[2][0] or all(carry_uk):
        return staged
    # The known carries do not depend on unknown ones: compute them now with a loop over
    # the known part only. The unknown part is the whole loop, staged (recomputed).
    known_body = partial_eval_jaxpr_fwd(body_jaxpr, bc_uk + carry_uk, carry_uk)[0]
    known_cond = partial_eval_jaxpr_fwd(cond_jaxpr, cc_uk + carry_uk)[0]
    n_known = carry_uk.count(False)
    known_body = _keep_outputs(known_body, n_known)
    known_cond = _keep_outputs(known_cond, 1)
    cc, bc, carry = split_list(args, [n_cc, n_bc])
    bc_k = [x for x, u in zip(bc, bc_uk, strict=True) if not u]
    carry_k = [x for x, u in zip(carry, carry_uk, strict=True) if not u]
    with set_current_trace(trace.parent):
        known = while_p.bind(*cc, *bc_k, *carry_k, cond_jaxpr=known_cond,
                             body_jaxpr=known_body, cond_nconsts=n_cc, body_nconsts=len(bc_k))
    k_iter = iter(known)
    return [s if u else next(k_iter) for s, u in zip(staged, carry_uk, strict=True)]


def _keep_outputs(closed: ClosedJaxpr, n: int) -> ClosedJaxpr:
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars[:n], j.eqns), closed.consts)


partial_eval_rules[while_p] = _while_partial_eval

_WHILE_REVERSE_ERROR = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
    "dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
    "start/stop.")


def _while_transpose(cts, *args, **params):
    raise ValueError(_WHILE_REVERSE_ERROR)


ad.primitive_transposes[while_p] = _while_transpose


def _while_lower(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    b = ctx.builder
    init = b.tuple(list(args), metadata=ctx.metadata)
    n = len(args)
    cb = ctx.new_computation("while_cond")
    p = cb.parameter(0, init.shape)
    parts = [cb.get_tuple_element(p, k) for k in range(n)]
    cc, _, carry = split_list(parts, [cond_nconsts, body_nconsts])
    (pred,) = ctx.lower_jaxpr(cond_jaxpr, cc + carry, builder=cb)
    cb.set_root(pred)
    bb = ctx.new_computation("while_body")
    p = bb.parameter(0, init.shape)
    parts = [bb.get_tuple_element(p, k) for k in range(n)]
    cc, bc, carry = split_list(parts, [cond_nconsts, body_nconsts])
    new = ctx.lower_jaxpr(body_jaxpr, bc + carry, builder=bb)
    bb.set_root(bb.tuple(cc + bc + list(new)))
    loop = b.while_loop(init, cb.computation, bb.computation, metadata=ctx.metadata)
    first = cond_nconsts + body_nconsts
    return [b.get_tuple_element(loop, first + k, metadata=ctx.metadata)
            for k in range(len(body_jaxpr.out_avals))]


register_lowering(while_p, _while_lower)
