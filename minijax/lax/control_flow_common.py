"""Helpers shared by the higher-order primitives (control flow, custom derivatives, remat):
tracing user functions into closed jaxprs, and transforming jaxprs (JVP, batching,
transposition) by re-tracing them under the corresponding interpreter.

Conventions: a primitive's jaxpr parameters are ClosedJaxprs whose constants are concrete
values (never tracers); values a user function closes over are hoisted into explicit
operands so that every transformation sees them.
"""

from __future__ import annotations

import numpy as np

from minijax import core, tree_util
from minijax.array import Array
from minijax.core import ClosedJaxpr, Jaxpr, ShapedArray, Tracer, Var, get_aval
from minijax.interpreters import ad, batching
from minijax.interpreters.partial_eval import convert_constvars_jaxpr, trace_to_jaxpr
from minijax.lax.structural import bdim_at_front, convert_element_type, moveaxis

# --------------------------------------------------------------------------- tracing


def trace_flat(fun, in_avals, purpose: str = "control flow") -> ClosedJaxpr:
    """Stage `fun(*flat) -> flat list` into a ClosedJaxpr (constants may be tracers)."""
    closed, _ = trace_to_jaxpr(lambda *a: list(fun(*a)), list(in_avals), purpose=purpose)
    return closed


def hoist_consts(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list]:
    """Turn a closed jaxpr's constants into leading inputs: (jaxpr without consts, consts)."""
    return ClosedJaxpr(convert_constvars_jaxpr(closed.jaxpr), []), list(closed.consts)


def trace_user_fun(fun, in_tree, in_avals, what: str):
    """Trace `fun(*tree_unflatten(in_tree, flat))` -> (jaxpr, consts, out_tree).

    The jaxpr takes the hoisted constants first, then the flat inputs.
    """
    store = {}

    def flat_fun(*flat):
        out = fun(*tree_util.tree_unflatten(in_tree, list(flat)))
        leaves, store["out_tree"] = tree_util.tree_flatten(out)
        return leaves
    closed, _ = trace_to_jaxpr(flat_fun, list(in_avals), purpose=what)
    jaxpr, consts = hoist_consts(closed)
    return jaxpr, consts, store["out_tree"]


def forwarded_carries(closed: ClosedJaxpr, num_consts: int, num_carry: int) -> list[bool]:
    """Which carry outputs of a loop body are its carry inputs unchanged. JAX returns the
    init value itself (a Python scalar or NumPy array stays one) for those."""
    j = closed.jaxpr
    carry_in = j.invars[num_consts:num_consts + num_carry]
    return [out is v for out, v in zip(j.outvars[:num_carry], carry_in, strict=True)]


def weak_tangents(tangents, primal_avals):
    """Loop/cond output tangents with their primal outputs' weak types, as JAX gives them
    (minijax's rules run their tangents strongly typed inside)."""
    return [t if type(t) is ad.Zero or not a.weak_type else match_aval(t, ad.tangent_aval(a)
                                                                          .update(weak_type=True))
            for t, a in zip(tangents, primal_avals, strict=True)]


def avals_of(values) -> list[ShapedArray]:
    return [get_aval(v) for v in values]


def as_array(x, aval: ShapedArray):
    """A concrete output as an Array of exactly `aval` (eager implementations)."""
    if type(x) is Array and x.aval == aval:
        return x
    if isinstance(x, Tracer):
        return x
    return Array(np.asarray(x, dtype=aval.dtype), aval.weak_type)


def call_jaxpr_abstract_eval(*avals, call_jaxpr, **_):
    """Abstract evaluation of a primitive that calls its `call_jaxpr` parameter."""
    return list(call_jaxpr.out_avals)


def call_jaxpr_impl(*args, call_jaxpr, **_):
    """Eager evaluation of a primitive that calls its `call_jaxpr` parameter."""
    outs = core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)
    return [as_array(o, a) for o, a in zip(outs, call_jaxpr.out_avals, strict=True)]


def call_jaxpr_lower(ctx, *args, call_jaxpr, **_):
    """HLO lowering of a primitive that calls its `call_jaxpr` parameter: its body inline."""
    return ctx.lower_jaxpr(call_jaxpr, args)


def typematch(a: ShapedArray, b: ShapedArray) -> bool:
    """Same shape and dtype (weak types may differ), as JAX's core.typematch."""
    return a.shape == b.shape and a.dtype == b.dtype


def type_diff_text(tree, avals1, avals2) -> str:
    """A pytree of avals where mismatching leaves read `DIFFERENT a vs. b`."""
    shown = [a.str_short() if typematch(a, b) else f"DIFFERENT {a.str_short()} vs. "
             f"{b.str_short()}" for a, b in zip(avals1, avals2, strict=True)]
    return str(tree_util.tree_unflatten(tree, shown))


def check_tree_and_avals(what: str, tree1, avals1, tree2, avals2) -> None:
    """Raise JAX's TypeError when two output structures or types differ."""
    if tree1 != tree2:
        raise TypeError(f"{what} must have same type structure, got {tree1} and {tree2}.")
    if not all(typematch(a, b) for a, b in zip(avals1, avals2, strict=True)):
        raise TypeError(f"{what} must have identical types, got\n"
                        f"{type_diff_text(tree1, avals1, avals2)}.")


def promote_weak_inputs(values, in_avals, out_avals):
    """A weakly typed loop input whose body output has another dtype takes that dtype and
    becomes strongly typed (as JAX does for carries initialised with Python scalars: a
    convert_element_type to the result type). Returns (values, avals, changed)."""
    new_vals, new_avals, changed = [], [], False
    for x, a, o in zip(values, in_avals, out_avals, strict=True):
        if a.weak_type and a.shape == o.shape and a.dtype != o.dtype:
            x = convert_element_type(x, o.dtype, weak_type=False)
            a = a.update(dtype=o.dtype, weak_type=False)
            changed = True
        new_vals.append(x)
        new_avals.append(a)
    return new_vals, new_avals, changed


def to_strong(x, aval: ShapedArray):
    """x converted to `aval` when only its weak type differs."""
    if get_aval(x).weak_type and not aval.weak_type:
        return convert_element_type(x, aval.dtype, weak_type=False)
    return x


def permute_invars(closed: ClosedJaxpr, order) -> ClosedJaxpr:
    """The same jaxpr with its inputs reordered: new input k is old input order[k]."""
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, [j.invars[i] for i in order], j.outvars, j.eqns),
                       closed.consts)


def add_dummy_invars(closed: ClosedJaxpr, avals, position: int) -> ClosedJaxpr:
    """The same jaxpr taking extra ignored inputs of `avals` inserted at `position`."""
    j = closed.jaxpr
    extra = [Var(a) for a in avals]
    invars = list(j.invars[:position]) + extra + list(j.invars[position:])
    return ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns), closed.consts)


def split_list(xs, sizes):
    """Split `xs` into consecutive pieces of the given sizes (plus the rest)."""
    out, start = [], 0
    for n in sizes:
        out.append(list(xs[start:start + n]))
        start += n
    out.append(list(xs[start:]))
    return out


# --------------------------------------------------------------------------- JVP


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros, instantiate):
    """The JVP of a closed jaxpr.

    Returns (jvp_closed, out_nonzeros): jvp_closed maps primals + tangents (for the inputs
    with `nonzeros`) to primal outputs + tangents (for the outputs with out_nonzeros).
    `instantiate` (bool or list) forces outputs to have (possibly zero) tangents.
    """
    n_in = len(closed.in_avals)
    nonzeros = list(nonzeros)
    inst = [instantiate] * len(closed.out_avals) if isinstance(instantiate, bool) else \
        list(instantiate)
    t_avals = [ad.tangent_aval(a) for a, nz in zip(closed.in_avals, nonzeros, strict=True)
               if nz]
    store = {}

    def fun(*args):
        primals, tangents_nz = args[:n_in], iter(args[n_in:])
        tangents = [next(tangents_nz) if nz else ad.Zero(ad.tangent_aval(a))
                    for a, nz in zip(closed.in_avals, nonzeros, strict=True)]
        p_out, t_out = ad.jvp_flat(
            lambda *a: core.eval_jaxpr(closed.jaxpr, closed.consts, *a), primals, tangents)
        out_nz = [type(t) is not ad.Zero or i for t, i in zip(t_out, inst, strict=True)]
        store["out_nz"] = out_nz
        return list(p_out) + [match_aval(materialize(t, a), ad.tangent_aval(a)) for t, a, nz in
                              zip(t_out, closed.out_avals, out_nz, strict=True) if nz]
    jvp_closed = trace_flat(fun, list(closed.in_avals) + t_avals, "jvp")
    return jvp_closed, store["out_nz"]


# --------------------------------------------------------------------------- batching


def batch_jaxpr(closed: ClosedJaxpr, axis_size: int, in_batched, instantiate,
                axis_name=None):
    """Batch a closed jaxpr along a new leading axis of its batched inputs.

    Returns (batched_closed, out_batched): batched inputs/outputs have the batch axis at 0.
    """
    in_batched = list(in_batched)
    inst = [instantiate] * len(closed.out_avals) if isinstance(instantiate, bool) else \
        list(instantiate)
    in_avals = [a.update(shape=(axis_size,) + a.shape) if b else a
                for a, b in zip(closed.in_avals, in_batched, strict=True)]
    store = {}

    def fun(*args):
        parent = core.current_trace()
        trace = batching.BatchTrace(parent, axis_size, axis_name)
        wrapped = [batching.BatchTracer(trace, a, 0) if b else a
                   for a, b in zip(args, in_batched, strict=True)]
        with core.set_current_trace(trace):
            outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *wrapped)
        results, out_b = [], []
        for o, i in zip(outs, inst, strict=True):
            val, dim = trace.to_val_dim(o)
            if dim is batching.not_mapped:
                if i:
                    val = bdim_at_front(val, None, axis_size)
                    out_b.append(True)
                else:
                    out_b.append(False)
            else:
                val = moveaxis(val, dim, 0)
                out_b.append(True)
            results.append(val)
        store["out_b"] = out_b
        return results
    batched = trace_flat(fun, in_avals, "vmap")
    return batched, store["out_b"]


def move_to_front(trace, vals, dims, instantiate=None):
    """Move each value's batch dim to 0 (broadcasting unbatched ones where instantiated)."""
    out = []
    for i, (v, d) in enumerate(zip(vals, dims, strict=True)):
        inst = instantiate is True or (isinstance(instantiate, (list, tuple))
                                       and instantiate[i])
        if d is batching.not_mapped:
            out.append(bdim_at_front(v, None, trace.axis_size) if inst else v)
        else:
            out.append(moveaxis(v, d, 0))
    return out


def run_batched(fun, axis_size, axis_name, args, in_batched):
    """Run flat `fun(*args)` under a BatchTrace; every output comes back batched at 0."""
    trace = batching.BatchTrace(core.current_trace(), axis_size, axis_name)
    wrapped = [batching.BatchTracer(trace, a, 0) if b else a
               for a, b in zip(args, in_batched, strict=True)]
    with core.set_current_trace(trace):
        outs = fun(*wrapped)
    results = []
    for o in outs:
        val, dim = trace.to_val_dim(o)
        results.append(bdim_at_front(val, None, axis_size) if dim is batching.not_mapped
                       else moveaxis(val, dim, 0))
    return results


# --------------------------------------------------------------------------- transposition


def transpose_jaxpr_call(closed: ClosedJaxpr, args, cts):
    """Transpose `closed` applied to `args` (known values or ad.UndefinedPrimal).

    Equations reading only known inputs are evaluated forward; the rest are transposed.
    Returns one cotangent per argument (None for known arguments; ad.Zero possible).
    """
    j = closed.jaxpr
    lin = [ad.is_undefined_primal(a) for a in args]
    known_vars = [v for v, is_lin in zip(j.invars, lin, strict=True) if not is_lin]
    known_vals = [a for a, is_lin in zip(args, lin, strict=True) if not is_lin]
    lin_vars = [v for v, is_lin in zip(j.invars, lin, strict=True) if is_lin]
    lin_jaxpr = Jaxpr(list(j.constvars) + known_vars, lin_vars, j.outvars, j.eqns)
    cts_lin = iter(ad.backward_pass(lin_jaxpr, list(closed.consts) + known_vals, list(cts)))
    return [next(cts_lin) if is_lin else None for is_lin in lin]


def transpose_jaxpr(closed: ClosedJaxpr, linear, ct_avals=None) -> ClosedJaxpr:
    """A jaxpr (residuals..., cts...) -> cotangents of the linear inputs (zeros
    instantiated). `linear` marks the linear inputs; the others are residuals."""
    linear = list(linear)
    res_avals = [a for a, is_lin in zip(closed.in_avals, linear, strict=True) if not is_lin]
    lin_avals = [a for a, is_lin in zip(closed.in_avals, linear, strict=True) if is_lin]
    ct_avals = list(ct_avals or [ad.tangent_aval(a) for a in closed.out_avals])
    n_res = len(res_avals)

    def fun(*args):
        res, cts = iter(args[:n_res]), args[n_res:]
        call_args = [ad.UndefinedPrimal(a) if is_lin else next(res)
                     for a, is_lin in zip(closed.in_avals, linear, strict=True)]
        in_cts = transpose_jaxpr_call(closed, call_args, cts)
        return [match_aval(materialize(c, a), ad.tangent_aval(a))
                for c, a, is_lin in zip(in_cts, closed.in_avals, linear, strict=True)
                if is_lin]
    del lin_avals
    return trace_flat(fun, res_avals + ct_avals, "transpose")


def materialize(ct, aval):
    """A concrete cotangent for `aval` (zeros for a symbolic Zero)."""
    if type(ct) is ad.Zero:
        return core.zeros_like_aval(ad.tangent_aval(aval))
    return ct


def match_aval(x, aval: ShapedArray):
    """x converted to exactly `aval`'s dtype and weak type (shapes must already agree)."""
    got = get_aval(x)
    if got.dtype != aval.dtype or got.weak_type != aval.weak_type:
        return convert_element_type(x, aval.dtype, weak_type=aval.weak_type)
    return x
