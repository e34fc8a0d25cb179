"""checkpoint / remat: a `remat` primitive whose intermediates are recomputed in the backward
pass. When linearized, the known part saves only what the policy allows (by default nothing
but the inputs); the transpose runs the known part again and then the unknown part's
transpose.
"""

from __future__ import annotations

import functools
import types

from minijax import core, tree_util
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import Literal, Primitive, set_current_trace
from minijax.custom_derivatives import _merge, _name, _split_nondiff
from minijax.interpreters import ad, batching
from minijax.interpreters.partial_eval import partial_eval_rules
from minijax.interpreters.partial_eval_jaxpr import partial_eval_jaxpr
from minijax.lax.control_flow_common import (
    avals_of,
    batch_jaxpr,
    call_jaxpr_impl,
    hoist_consts,
    jvp_jaxpr,
    move_to_front,
    trace_flat,
    trace_user_fun,
    transpose_jaxpr_call,
)


def _dot_prim(prim) -> bool:
    return prim.name in ("dot_general", "dot")


def _dots_no_batch(prim, *avals, **params) -> bool:
    if not _dot_prim(prim):
        return False
    dims = params.get("dimension_numbers")
    try:
        (_, _), (lhs_batch, rhs_batch) = dims
    except (TypeError, ValueError):
        return True
    return not lhs_batch and not rhs_batch


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=lambda *_, **__: True,
    nothing_saveable=lambda *_, **__: False,
    dots_saveable=lambda prim, *_, **__: _dot_prim(prim),
    checkpoint_dots=lambda prim, *_, **__: _dot_prim(prim),
    dots_with_no_batch_dims_saveable=_dots_no_batch,
    checkpoint_dots_with_no_batch_dims=_dots_no_batch,
)
checkpoint_policies.__doc__ = (
    "Policies for checkpoint(policy=...): policy(primitive, *avals, **params) -> bool says "
    "whether an intermediate may be saved for the backward pass (else it is recomputed).")


def checkpoint(fun, *, prevent_cse: bool = True, policy=None, static_argnums=()):
    """`fun` whose intermediates are recomputed in the backward pass instead of saved.

    `policy(prim, *avals, **params) -> bool` marks intermediates that may be saved
    (see minijax.checkpoint_policies); by default only the inputs are saved.
    """
    static_argnums = (static_argnums,) if isinstance(static_argnums, int) else \
        tuple(static_argnums)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        diff, static, pos = _split_nondiff(args, static_argnums)
        leaves, in_tree = tree_util.tree_flatten((diff, kwargs))

        def call(d, kw):
            return fun(*_merge(d, static, pos), **kw)
        jaxpr, consts, out_tree = trace_user_fun(call, in_tree, avals_of(leaves),
                                                 f"checkpoint of {_name(fun)}")
        outs = remat_p.bind(*consts, *leaves, jaxpr=jaxpr, prevent_cse=prevent_cse,
                            policy=policy)
        return tree_util.tree_unflatten(out_tree, outs)
    return wrapped


remat = checkpoint

remat_p = Primitive("remat")
remat_p.multiple_results = True
remat_p.def_abstract_eval(lambda *avals, jaxpr, **_: list(jaxpr.out_avals))
remat_p.def_impl(lambda *args, jaxpr, **_: call_jaxpr_impl(*args, call_jaxpr=jaxpr))
register_lowering(remat_p, lambda ctx, *args, jaxpr, **_: ctx.lower_jaxpr(jaxpr, args))


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, policy):
    nz = [type(t) is not ad.Zero for t in tangents]
    jvp_closed, out_nz = jvp_jaxpr(jaxpr, nz, False)
    outs = remat_p.bind(*primals, *[t for t in tangents if type(t) is not ad.Zero],
                        jaxpr=jvp_closed, prevent_cse=prevent_cse, policy=policy)
    n = len(jaxpr.out_avals)
    t_iter = iter(outs[n:])
    return outs[:n], [next(t_iter) if z else ad.Zero(ad.tangent_aval(a))
                      for z, a in zip(out_nz, jaxpr.out_avals, strict=True)]


ad.primitive_jvps[remat_p] = _remat_jvp


def _remat_batch(trace, vals, dims, *, jaxpr, prevent_cse, policy):
    vals = move_to_front(trace, vals, dims)
    in_b = [d is not batching.not_mapped for d in dims]
    batched, out_b = batch_jaxpr(jaxpr, trace.axis_size, in_b, False, trace.axis_name)
    outs = remat_p.bind(*vals, jaxpr=batched, prevent_cse=prevent_cse, policy=policy)
    return outs, [0 if b else batching.not_mapped for b in out_b]


batching.primitive_batchers[remat_p] = _remat_batch


def _remat_partial_eval(trace, args, params):
    closed, policy = params["jaxpr"], params["policy"]
    j = closed.jaxpr
    uk_in = [trace.is_own(a) for a in args]
    unknown = {v for v, u in zip(j.invars, uk_in, strict=True) if u}
    producer, uk_eqns = {}, set()
    for eqn in j.eqns:
        if any(type(v) is not Literal and v in unknown for v in eqn.invars):
            unknown.update(eqn.outvars)
            uk_eqns.add(id(eqn))
        for v in eqn.outvars:
            producer[v] = eqn
    out_uk = [type(v) is not Literal and v in unknown for v in j.outvars]

    def saveable(v):
        eqn = producer.get(v)
        if eqn is None:
            return True
        return policy is not None and bool(policy(eqn.primitive, *[x.aval for x in eqn.invars],
                                                  **eqn.params))
    residuals, recompute = {}, set()

    def need(v):
        if type(v) is Literal or v in unknown or v in residuals:
            return
        if saveable(v):
            residuals[v] = None
            return
        eqn = producer[v]
        if id(eqn) not in recompute:
            recompute.add(id(eqn))
            for x in eqn.invars:
                need(x)
    for eqn in j.eqns:
        if id(eqn) in uk_eqns:
            for x in eqn.invars:
                need(x)
    needed = {v for v, u in zip(j.outvars, out_uk, strict=True)
              if not u and type(v) is not Literal} | set(residuals)
    known_eqns = []
    for eqn in reversed(j.eqns):
        if id(eqn) not in uk_eqns and any(v in needed for v in eqn.outvars):
            known_eqns.append(eqn)
            needed.update(v for v in eqn.invars if type(v) is not Literal)
    env = dict(zip(j.constvars, closed.consts, strict=True))
    env.update((v, a) for v, a, u in zip(j.invars, args, uk_in, strict=True) if not u)

    def read(e, v):
        return v.val if type(v) is Literal else e[v]
    with set_current_trace(trace.parent):
        for eqn in reversed(known_eqns):
            outs = eqn.primitive.bind(*[read(env, v) for v in eqn.invars], **eqn.params)
            env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs],
                           strict=True))
    uk_vars = [v for v, u in zip(j.invars, uk_in, strict=True) if u]

    def unknown_part(*vals):
        e = {v: env[v] for v in residuals}
        e.update(zip(uk_vars, vals, strict=True))
        for eqn in j.eqns:
            if id(eqn) in uk_eqns or id(eqn) in recompute:
                outs = eqn.primitive.bind(*[read(e, v) for v in eqn.invars], **eqn.params)
                e.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs],
                             strict=True))
        return [read(e, v) for v, u in zip(j.outvars, out_uk, strict=True) if u]
    u_closed, res_vals = hoist_consts(trace_flat(unknown_part, [v.aval for v in uk_vars],
                                                 "checkpoint"))
    uk_args = [a for a, u in zip(args, uk_in, strict=True) if u]
    staged = trace.stage(remat_p, [*res_vals, *uk_args], dict(params, jaxpr=u_closed))
    s_iter = iter(staged)
    return [next(s_iter) if u else read(env, v) for v, u in zip(j.outvars, out_uk,
                                                                 strict=True)]


partial_eval_rules[remat_p] = _remat_partial_eval


def _remat_transpose(cts, *args, jaxpr, prevent_cse, policy):
    lin = [ad.is_undefined_primal(a) for a in args]
    known, unknown, _, num_res = partial_eval_jaxpr(jaxpr, lin, instantiate=True)
    known_args = [a for a, is_lin in zip(args, lin, strict=True) if not is_lin]
    # The recomputation: run the known part again now, in the backward pass.
    res = core.eval_jaxpr(known.jaxpr, known.consts, *known_args)[-num_res:] \
        if num_res else []
    lin_args = [a for a in args if ad.is_undefined_primal(a)]
    in_cts = transpose_jaxpr_call(unknown, list(res) + lin_args, list(cts))[num_res:]
    it = iter(in_cts)
    return [next(it) if is_lin else None for is_lin in lin]


ad.primitive_transposes[remat_p] = _remat_transpose
