"""lax.scan (one higher-order primitive `scan`), lax.map and lax.associative_scan.

`scan_p.bind(*consts, *init, *xs, jaxpr, num_consts, num_carry, length, reverse, unroll)`:
the body jaxpr maps (consts, carry, x) -> (carry, y); xs are scanned along their leading
axis and the ys stacked along a new leading axis of size `length`. Rules: eager impl (a
Python loop), abstract eval, JVP, batching, partial evaluation (the known part saves its
residuals as extra stacked outputs), transpose (a scan running the other way), and HLO
lowering (a while loop with dynamic-slice / dynamic-update-slice, `unroll` steps per
iteration).
"""

from __future__ import annotations

import numpy as np

from minijax import core, tree_util
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import Primitive, get_aval, set_current_trace
from minijax.interpreters import ad, batching
from minijax.interpreters.partial_eval import partial_eval_rules
from minijax.interpreters.partial_eval_jaxpr import partial_eval_jaxpr_fwd
from minijax.lax.control_flow_common import (
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
    transpose_jaxpr,
    weak_tangents,
)
from minijax.lax.elementwise import add
from minijax.lax.slicing import concatenate, slice_in_dim
from minijax.lax.structural import moveaxis, reshape
from minijax.lax.vmap import vmap

# --------------------------------------------------------------------------- wrapper


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """Loop `carry, y = f(carry, x)` over the leading axis of xs; returns (carry, stacked ys).

    As jax.lax.scan: xs may be None (then `length` is required), any pytree of arrays with
    equal leading sizes; `reverse` scans from the end. `unroll` (a positive int, or True for
    all steps) is how many steps one iteration of the compiled loop runs; the length %
    unroll steps left over run after the loop. Values do not depend on it.
    """
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    xs_flat, xs_tree = tree_util.tree_flatten(xs)
    xs_avals = avals_of(xs_flat)
    for x, a in zip(xs_flat, xs_avals, strict=True):
        if a.ndim == 0:
            raise ValueError(f"scan got value with no leading axis to scan over: {x}.")
    lengths = [a.shape[0] for a in xs_avals]
    if length is not None:
        try:
            length = int(length)
        except TypeError as e:
            raise TypeError("scan: the `length` argument must be a concrete integer (it "
                            "fixes the loop's trip count).") from e
        if not all(n == length for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {lengths}.")
    else:
        if len(set(lengths)) > 1:
            raise ValueError("scan got values with different leading axis sizes: "
                             + ", ".join(str(n) for n in lengths) + ".")
        if not lengths:
            raise ValueError("scan got no values to scan over and `length` not provided.")
        length = lengths[0]
    if isinstance(unroll, bool):
        unroll = max(length, 1) if unroll else 1
    elif isinstance(unroll, (int, np.integer)) and unroll >= 1:
        unroll = int(unroll)
    else:
        raise ValueError(f"scan: `unroll` must be a bool or a positive int, got {unroll!r}.")
    init_flat, init_tree = tree_util.tree_flatten(init)
    init_avals = avals_of(init_flat)
    x_avals = [a.update(shape=a.shape[1:]) for a in xs_avals]
    n_carry = len(init_flat)

    def body(carry_avals, fix=None):
        def fun(*args):
            carry = tree_util.tree_unflatten(init_tree, list(args[:n_carry]))
            x = tree_util.tree_unflatten(xs_tree, list(args[n_carry:]))
            out = f(carry, x)
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TypeError(f"scan body output must be a pair, got {out}.")
            new_carry, y = out
            if fix is not None:
                leaves, tree = tree_util.tree_flatten(new_carry)
                if len(leaves) == len(fix):
                    new_carry = tree_util.tree_unflatten(
                        tree, [match_aval(v, a) for v, a in zip(leaves, fix, strict=True)])
            return new_carry, y
        return trace_user_fun(fun, _flat_tree(n_carry + len(xs_flat)),
                              carry_avals + x_avals, "lax.scan body")

    jaxpr, consts, out_tree = body(init_avals)
    carry_tree, y_tree = _split_out_tree(out_tree)
    carry_out = jaxpr.out_avals[:carry_tree.num_leaves]
    if carry_tree == init_tree:
        init_flat, init_avals, changed = promote_weak_inputs(init_flat, init_avals, carry_out)
        if changed:
            jaxpr, consts, out_tree = body(init_avals)
            carry_tree, y_tree = _split_out_tree(out_tree)
            carry_out = jaxpr.out_avals[:carry_tree.num_leaves]
    check_tree_and_avals("scan carry output and input", carry_tree, carry_out, init_tree,
                         init_avals)
    # Weak types, as JAX: when a carry's output differs from its init only in weak type, the
    # body is not retraced; the results take the weak types the body produced. The loop
    # itself keeps the init's types (the body converts its carry outputs to them).
    result_avals = jaxpr.out_avals[:n_carry]
    if any(a.weak_type != o.weak_type for a, o in zip(init_avals, carry_out, strict=True)):
        jaxpr, consts, out_tree = body(init_avals, init_avals)
    outs = scan_p.bind(*consts, *init_flat, *xs_flat, jaxpr=jaxpr, num_consts=len(consts),
                       num_carry=n_carry, length=length, reverse=bool(reverse),
                       unroll=unroll)
    fwd = forwarded_carries(jaxpr, len(consts), n_carry)
    carry_out = [init if f else match_aval(x, a) for init, f, x, a in
                 zip(init_flat, fwd, outs[:n_carry], result_avals, strict=True)]
    ys = outs[n_carry:]
    return (tree_util.tree_unflatten(carry_tree, carry_out),
            tree_util.tree_unflatten(y_tree, ys))


def _flat_tree(n):
    return tree_util.tree_structure(tuple(range(n)))


def _split_out_tree(out_tree):
    """The carry and y subtrees of the flattened (carry, y) pair."""
    children = out_tree.children() if hasattr(out_tree, "children") else None
    if children is None or len(children) != 2:
        raise TypeError(f"scan body output must be a pair, got {out_tree}.")
    return children[0], children[1]


def map(f, xs, *, batch_size=None):  # noqa: A001 - JAX's name
    """Apply f to each leading-axis slice of xs (a scan without carry); stack the results.

    With `batch_size`, slices are processed in vmapped groups of that size.
    """
    if batch_size is not None:
        leaves, tree = tree_util.tree_flatten(xs)
        n = get_aval(leaves[0]).shape[0]
        batch_size = int(batch_size)
        num_batches, rem = divmod(n, batch_size)
        main = [reshape(slice_in_dim(x, 0, num_batches * batch_size, axis=0),
                        (num_batches, batch_size) + get_aval(x).shape[1:]) for x in leaves]
        _, ys = scan(lambda _, x: ((), vmap(f)(tree_util.tree_unflatten(tree, x))), (), main)
        ys = tree_util.tree_map(lambda y: reshape(y, (num_batches * batch_size,)
                                                  + get_aval(y).shape[2:]), ys)
        if rem:
            rest = [slice_in_dim(x, num_batches * batch_size, n, axis=0) for x in leaves]
            ys_rest = vmap(f)(tree_util.tree_unflatten(tree, rest))
            ys = tree_util.tree_map(lambda a, b: concatenate([a, b], 0), ys, ys_rest)
        return ys
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys


# --------------------------------------------------------------------------- primitive

scan_p = Primitive("scan")
scan_p.multiple_results = True


def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, init, xs = split_list(avals, [num_consts, num_carry])
    for x in xs:
        if not x.shape or x.shape[0] != length:
            raise TypeError(f"scan: scanned operand {x.str_short()} does not have leading "
                            f"size {length}")
    outs = jaxpr.out_avals
    ys = [a.update(shape=(length,) + a.shape) for a in outs[num_carry:]]
    return list(outs[:num_carry]) + ys


def _index(x, i):
    return as_array(np.asarray(x)[i], get_aval(x).update(shape=get_aval(x).shape[1:]))


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = split_list(args, [num_consts, num_carry])
    out_avals = jaxpr.out_avals
    ys = [[] for _ in out_avals[num_carry:]]
    for step in range(length):
        i = length - 1 - step if reverse else step
        outs = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *carry,
                               *[_index(x, i) for x in xs])
        carry = outs[:num_carry]
        for acc, y in zip(ys, outs[num_carry:], strict=True):
            acc.append(np.asarray(y))
    if reverse:
        ys = [acc[::-1] for acc in ys]
    stacked = []
    for acc, a in zip(ys, out_avals[num_carry:], strict=True):
        aval = a.update(shape=(length,) + a.shape)
        stacked.append(as_array(np.stack(acc) if acc else np.zeros(aval.shape, a.dtype), aval))
    return [as_array(c, a) for c, a in zip(carry, out_avals[:num_carry], strict=True)] + stacked


scan_p.def_abstract_eval(_scan_abstract_eval)
scan_p.def_impl(_scan_impl)


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nz = [type(t) is not ad.Zero for t in tangents]
    const_nz, carry_nz, xs_nz = split_list(nz, [num_consts, num_carry])
    while True:
        _, out_nz = jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                              carry_nz + [False] * (len(jaxpr.out_avals) - num_carry))
        new = [a or b for a, b in zip(carry_nz, out_nz[:num_carry], strict=True)]
        if new == carry_nz:
            break
        carry_nz = new
    jvp_closed, out_nz = jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                                   carry_nz + [False] * (len(jaxpr.out_avals) - num_carry))
    n_c, n_x = num_consts, len(primals) - num_consts - num_carry
    nt_c, nt_carry, nt_x = sum(const_nz), sum(carry_nz), sum(xs_nz)
    # jvp jaxpr inputs: consts, carry, xs, const tangents, carry tangents, xs tangents.
    base = n_c + num_carry + n_x
    order = (list(range(n_c)) + list(range(base, base + nt_c))
             + list(range(n_c, n_c + num_carry)) + list(range(base + nt_c, base + nt_c + nt_carry))
             + list(range(n_c + num_carry, base))
             + list(range(base + nt_c + nt_carry, base + nt_c + nt_carry + nt_x)))
    jvp_closed = permute_invars(jvp_closed, order)
    # Outputs: carry, ys, carry tangents, y tangents -> carry, carry tangents, ys, y tangents.
    n_out = len(jaxpr.out_avals)
    ny_t = sum(out_nz[num_carry:])
    j = jvp_closed.jaxpr
    outvars = (j.outvars[:num_carry] + j.outvars[n_out:n_out + nt_carry]
               + j.outvars[num_carry:n_out] + j.outvars[n_out + nt_carry:n_out + nt_carry + ny_t])
    jvp_closed = core.ClosedJaxpr(core.Jaxpr(j.constvars, j.invars, outvars, j.eqns),
                                  jvp_closed.consts)
    consts, init, xs = split_list(primals, [num_consts, num_carry])
    c_t, init_t, xs_t = split_list(tangents, [num_consts, num_carry])
    carry_avals = jaxpr.out_avals[:num_carry]
    init_t = [materialize(t, ad.tangent_aval(a))
              for t, a, z in zip(init_t, carry_avals, carry_nz, strict=True) if z]
    outs = scan_p.bind(*consts, *[t for t in c_t if type(t) is not ad.Zero], *init,
                       *init_t, *xs, *[t for t in xs_t if type(t) is not ad.Zero],
                       jaxpr=jvp_closed, num_consts=n_c + nt_c,
                       num_carry=num_carry + nt_carry, length=length, reverse=reverse,
                       unroll=unroll)
    carry, carry_t, ys, ys_t = split_list(outs, [num_carry, nt_carry, n_out - num_carry])
    carry_t_it, ys_t_it = iter(carry_t), iter(ys_t)
    out_t = [next(carry_t_it) if z else ad.Zero(ad.tangent_aval(a))
             for z, a in zip(carry_nz, carry_avals, strict=True)]
    y_avals = _scan_abstract_eval(*avals_of(primals), jaxpr=jaxpr, num_consts=num_consts,
                                  num_carry=num_carry, length=length, reverse=reverse,
                                  unroll=unroll)[num_carry:]
    out_t += [next(ys_t_it) if z else ad.Zero(ad.tangent_aval(a))
              for z, a in zip(out_nz[num_carry:], y_avals, strict=True)]
    return carry + ys, weak_tangents(out_t, list(carry_avals) + list(y_avals))


ad.primitive_jvps[scan_p] = _scan_jvp


def _scan_batch(trace, vals, dims, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    size = trace.axis_size
    consts, init, xs = split_list(vals, [num_consts, num_carry])
    c_d, init_d, xs_d = split_list(dims, [num_consts, num_carry])
    c_b = [d is not batching.not_mapped for d in c_d]
    carry_b = [d is not batching.not_mapped for d in init_d]
    xs_b = [d is not batching.not_mapped for d in xs_d]
    n_ys = len(jaxpr.out_avals) - num_carry
    while True:
        _, out_b = batch_jaxpr(jaxpr, size, c_b + carry_b + xs_b, carry_b + [False] * n_ys,
                               trace.axis_name)
        new = [a or b for a, b in zip(carry_b, out_b[:num_carry], strict=True)]
        if new == carry_b:
            break
        carry_b = new
    batched, out_b = batch_jaxpr(jaxpr, size, c_b + carry_b + xs_b, carry_b + [False] * n_ys,
                                 trace.axis_name)
    consts = move_to_front(trace, consts, c_d)
    init = move_to_front(trace, init, init_d, carry_b)
    # Scanned operands keep time at axis 0; their batch axis goes to 1.
    xs = [x if d is batching.not_mapped else moveaxis(x, d, 1) for x, d in zip(xs, xs_d,
                                                                               strict=True)]
    # The batched body sees x slices with the batch axis first: the time axis is removed.
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=batched, num_consts=num_consts,
                       num_carry=num_carry, length=length, reverse=reverse, unroll=unroll)
    out_dims = [0 if b else batching.not_mapped for b in out_b[:num_carry]]
    out_dims += [1 if b else batching.not_mapped for b in out_b[num_carry:]]
    return outs, out_dims


batching.primitive_batchers[scan_p] = _scan_batch


def _scan_partial_eval(trace, args, params):
    jaxpr, num_consts, num_carry = params["jaxpr"], params["num_consts"], params["num_carry"]
    unknowns = [trace.is_own(a) for a in args]
    c_uk, carry_uk, xs_uk = split_list(unknowns, [num_consts, num_carry])
    n_ys = len(jaxpr.out_avals) - num_carry
    while True:
        out_uk = partial_eval_jaxpr_fwd(jaxpr, c_uk + carry_uk + xs_uk,
                                        carry_uk + [False] * n_ys)[2]
        new = [a or b for a, b in zip(carry_uk, out_uk[:num_carry], strict=True)]
        if new == carry_uk:
            break
        carry_uk = new
    consts, init, xs = split_list(args, [num_consts, num_carry])
    consts_k = [c for c, u in zip(consts, c_uk, strict=True) if not u]
    init_k = [c for c, u in zip(init, carry_uk, strict=True) if not u]
    xs_k = [x for x, u in zip(xs, xs_uk, strict=True) if not u]
    n_ck, n_carry_k = len(consts_k), len(init_k)
    forwardable = [True] * n_ck + [False] * n_carry_k + [True] * len(xs_k)
    known, unknown, out_uk, res_spec, res_avals = partial_eval_jaxpr_fwd(
        jaxpr, c_uk + carry_uk + xs_uk, carry_uk + [False] * n_ys, forwardable)
    with set_current_trace(trace.parent):
        known_outs = scan_p.bind(*consts_k, *init_k, *xs_k, **dict(
            params, jaxpr=known, num_consts=n_ck, num_carry=n_carry_k))
    n_known_out = out_uk.count(False)
    stacked = iter(known_outs[n_known_out:])
    res_c_pos, res_x_pos, res_c_vals, res_x_vals = [], [], [], []
    for k, spec in enumerate(res_spec):
        if spec is not None and spec < n_ck:
            res_c_pos.append(k)
            res_c_vals.append(consts_k[spec])
        else:
            res_x_pos.append(k)
            res_x_vals.append(next(stacked) if spec is None else xs_k[spec - n_ck - n_carry_k])
    n_res = len(res_spec)
    n_cu, n_carry_u = c_uk.count(True), carry_uk.count(True)
    order = (res_c_pos + list(range(n_res, n_res + n_cu + n_carry_u)) + res_x_pos
             + list(range(n_res + n_cu + n_carry_u, len(unknown.in_avals))))
    unknown = permute_invars(unknown, order)
    consts_u = [c for c, u in zip(consts, c_uk, strict=True) if u]
    init_u = [c for c, u in zip(init, carry_uk, strict=True) if u]
    xs_u = [x for x, u in zip(xs, xs_uk, strict=True) if u]
    staged = trace.stage(scan_p, [*res_c_vals, *consts_u, *init_u, *res_x_vals, *xs_u], dict(
        params, jaxpr=unknown, num_consts=len(res_c_vals) + n_cu, num_carry=n_carry_u))
    k_iter, u_iter = iter(known_outs[:n_known_out]), iter(staged)
    return [next(u_iter) if u else next(k_iter) for u in out_uk]


partial_eval_rules[scan_p] = _scan_partial_eval


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, init, xs = split_list(args, [num_consts, num_carry])
    c_lin = [ad.is_undefined_primal(c) for c in consts]
    x_lin = [ad.is_undefined_primal(x) for x in xs]
    if all(type(c) is ad.Zero for c in cts):
        return [None] * len(args)
    res_c = [c for c, lin in zip(consts, c_lin, strict=True) if not lin]
    res_x = [x for x, lin in zip(xs, x_lin, strict=True) if not lin]
    out_avals = [ad.tangent_aval(a) for a in jaxpr.out_avals]
    stacked_avals = out_avals[:num_carry] + [a.update(shape=(length,) + a.shape)
                                             for a in out_avals[num_carry:]]
    cts = [materialize(c, a) for c, a in zip(cts, stacked_avals, strict=True)]
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    in_avals = jaxpr.in_avals
    lin_c_avals = [ad.tangent_aval(a) for a, lin in zip(in_avals[:num_consts], c_lin,
                                                        strict=True) if lin]
    body_lin = c_lin + [True] * num_carry + x_lin
    t_body = transpose_jaxpr(jaxpr, body_lin, out_avals)
    n_rc, n_lc = len(res_c), len(lin_c_avals)


    def body(*a):
        rc, acc, ct_c, rx, ct_y = split_list(a, [n_rc, n_lc, num_carry, len(res_x)])
        outs = core.eval_jaxpr(t_body.jaxpr, t_body.consts, *rc, *rx, *ct_c, *ct_y)
        d_consts, d_carry, d_xs = split_list(outs, [n_lc, num_carry])
        acc = [add(x, y) for x, y in zip(acc, d_consts, strict=True)]
        return acc + d_carry + d_xs
    body_avals = (avals_of(res_c) + lin_c_avals + out_avals[:num_carry]
                  + [a.update(shape=a.shape[1:]) for a in avals_of(res_x)]
                  + out_avals[num_carry:])
    t_scan = trace_flat(body, body_avals, "transpose")
    zeros = [core.zeros_like_aval(a) for a in lin_c_avals]
    outs = scan_p.bind(*res_c, *zeros, *ct_carry, *res_x, *ct_ys, jaxpr=t_scan,
                       num_consts=n_rc, num_carry=n_lc + num_carry, length=length,
                       reverse=not reverse, unroll=unroll)
    ct_consts, ct_init, ct_xs = split_list(outs, [n_lc, num_carry])
    cc, cx = iter(ct_consts), iter(ct_xs)
    return ([next(cc) if lin else None for lin in c_lin]
            + [c if ad.is_undefined_primal(x) else None for c, x in zip(ct_init, init,
                                                                         strict=True)]
            + [next(cx) if lin else None for lin in x_lin])


ad.primitive_transposes[scan_p] = _scan_transpose


def _scan_lower(ctx, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    """A while loop whose body runs `unroll` steps, then the remaining length % unroll steps
    after the loop; no loop at all when unroll >= length (as XLA gets it from JAX)."""
    b = ctx.builder
    md = ctx.metadata
    consts, init, xs = split_list(args, [num_consts, num_carry])
    x_avals = ctx.avals_in[num_consts + num_carry:]
    y_avals = jaxpr.out_avals[num_carry:]
    ys = []
    for a in y_avals:
        zero = b.constant(np.zeros((), a.dtype), a.dtype, metadata=md)
        ys.append(b.broadcast(zero, (length,) + a.shape, (), metadata=md))
    unroll = max(int(unroll), 1)
    looped = length - length % unroll if unroll < length else 0

    def step(bld, k, cs, carry, xv, yv):
        """Scan step number k (an s32 instruction): (new carry, ys with step k written)."""
        idx = bld.subtract(bld.constant(np.int32(length - 1), np.int32), k) if reverse else k
        zero = bld.constant(np.int32(0), np.int32)
        x_t = [bld.reshape(bld.dynamic_slice(x, [idx] + [zero] * (a.ndim - 1),
                                             (1,) + a.shape[1:]), a.shape[1:])
               for x, a in zip(xv, x_avals, strict=True)]
        outs = ctx.lower_jaxpr(jaxpr, [*cs, *carry, *x_t], builder=bld)
        new_ys = [bld.dynamic_update_slice(y, bld.reshape(yt, (1,) + a.shape),
                                           [idx] + [zero] * a.ndim)
                  for y, yt, a in zip(yv, outs[num_carry:], y_avals, strict=True)]
        return outs[:num_carry], new_ys

    carry = list(init)
    if looped:
        state = [b.constant(np.int32(0), np.int32, metadata=md), *consts, *carry, *xs, *ys]
        init_tuple = b.tuple(state, metadata=md)
        cb = ctx.new_computation("scan_cond")
        k = cb.get_tuple_element(cb.parameter(0, init_tuple.shape), 0)
        cb.set_root(cb.compare(k, cb.constant(np.int32(looped), np.int32), "LT"))
        bb = ctx.new_computation("scan_body")
        p = bb.parameter(0, init_tuple.shape)
        parts = [bb.get_tuple_element(p, n) for n in range(len(state))]
        k, cs, body_carry, xv, yv = split_list(parts, [1, num_consts, num_carry, len(xs)])
        for j in range(unroll):
            kj = bb.add(k[0], bb.constant(np.int32(j), np.int32)) if j else k[0]
            body_carry, yv = step(bb, kj, cs, body_carry, xv, yv)
        k_next = bb.add(k[0], bb.constant(np.int32(unroll), np.int32))
        bb.set_root(bb.tuple([k_next, *cs, *body_carry, *xv, *yv]))
        loop = b.while_loop(init_tuple, cb.computation, bb.computation, metadata=md)
        first = 1 + num_consts
        carry = [b.get_tuple_element(loop, first + n, metadata=md) for n in range(num_carry)]
        first += num_carry + len(xs)
        ys = [b.get_tuple_element(loop, first + n, metadata=md) for n in range(len(ys))]
    for k in range(looped, length):
        carry, ys = step(b, b.constant(np.int32(k), np.int32, metadata=md), consts, carry,
                         xs, ys)
    return list(carry) + ys


register_lowering(scan_p, _scan_lower)
