"""Implicitly differentiated solvers (jax.lax.custom_root, jax.lax.custom_linear_solve)
and closure_convert.

Both run the user's solver without differentiating through it (its iterations may be a
while_loop) and differentiate the solution by the implicit function theorem:

- custom_root: x*(theta) with f(x*, theta) = 0 has dx* = -(df/dx)^-1 df/dtheta dtheta. It is
  written as x* - (c - stop_gradient(c)) with c = tangent_solve(df/dx at x*, f(x*, theta)):
  the value is exactly x*, and since f(x*) = 0 the derivative of c is the IFT term, in
  forward and reverse mode alike (tangent_solve must be differentiable in its right-hand
  side, as a linear solve is). The derivative with respect to initial_guess is zero.
- custom_linear_solve: the solve is staged as `linear_solve` (linear in its right-hand
  side; its transpose is transpose_solve, or solve itself when symmetric), so db flows
  through A^-1; the values matvec closes over (A's entries) enter through the correction
  x - (c - stop_gradient(c)) with c = A^-1 (A x), whose derivative is A^-1 dA x.
"""

from __future__ import annotations

from minijax import core, dtypes, tree_util
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import Primitive, get_aval
from minijax.interpreters import ad, batching
from minijax.lax.control_flow_common import (
    as_array,
    avals_of,
    batch_jaxpr,
    move_to_front,
    trace_user_fun,
)
from minijax.lax.elementwise import sub
from minijax.lax.stop_gradient import stop_gradient
from minijax.lax.structural import zeros_like_array


def _tree_sub(a, b):
    return tree_util.tree_map(sub, a, b)


def _jvp(fun, primal, tangent):
    p_leaves, tree = tree_util.tree_flatten(primal)
    t_leaves = tree_util.tree_leaves(tangent)
    store = {}

    def flat(*xs):
        out = fun(tree_util.tree_unflatten(tree, list(xs)))
        leaves, store["tree"] = tree_util.tree_flatten(out)
        return leaves
    _, t_out = ad.jvp_flat(flat, p_leaves, t_leaves)
    return tree_util.tree_unflatten(store["tree"], [ad.instantiate_zeros(t) for t in t_out])


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """Find a root of `f` with `solve(f, initial_guess)`, differentiated implicitly.

    `tangent_solve(g, y)` solves the linear system g(x) = y for the linear function g (the
    Jacobian of f at the root, e.g. `lambda g, y: y / g(1.0)` for scalars). With `has_aux`,
    `solve` returns `(root, aux)` and aux is returned undifferentiated.
    """
    converted, consts = closure_convert(f, initial_guess)
    frozen = [stop_gradient(c) for c in consts]

    def f_frozen(x):
        return converted(x, *frozen)

    out = solve(f_frozen, stop_gradient(initial_guess))
    root, aux = out if has_aux else (out, None)
    root = stop_gradient(root)
    if not consts:
        return (root, stop_gradient(aux)) if has_aux else root
    residual = converted(root, *consts)  # zero in value; its derivative is df/dtheta

    def jac(z):
        return _jvp(f_frozen, root, z)

    corr = tangent_solve(jac, residual)
    root = _tree_sub(root, _tree_sub(corr, stop_gradient(corr)))
    return (root, stop_gradient(aux)) if has_aux else root


# --------------------------------------------------------------------------- linear_solve


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
    """Solve the linear system matvec(x) = b with `solve(matvec, b)`, differentiated
    implicitly: reverse mode solves the transposed system with `transpose_solve(vecmat,
    ct)` (or with `solve` when `symmetric`), never differentiating through `solve`.

    As in JAX, only `b` and the values `matvec` closes over are differentiated; what
    `solve` / `transpose_solve` close over besides `matvec` is treated as constant.
    """
    converted, consts = closure_convert(matvec, b)
    frozen = [stop_gradient(c) for c in consts]

    def mv_frozen(x):
        return converted(x, *frozen)

    b_leaves, b_tree = tree_util.tree_flatten(b)
    b_avals = avals_of(b_leaves)
    args_tree = tree_util.tree_flatten((b,))[1]
    solve_jaxpr, s_consts, s_tree = trace_user_fun(
        lambda r: solve(mv_frozen, r), args_tree, b_avals, "custom_linear_solve solve")
    num_aux = 0
    if has_aux:
        num_aux = len(solve_jaxpr.out_avals) - len(b_leaves)
    t_jaxpr, t_consts = None, []
    if transpose_solve is not None:
        zeros = tree_util.tree_map(zeros_like_array, b)
        _, vecmat_lin = ad.linearize_flat(lambda *x: tree_util.tree_leaves(
            mv_frozen(tree_util.tree_unflatten(b_tree, list(x)))), tree_util.tree_leaves(zeros))

        def vecmat(y):
            cts = vecmat_lin.transpose(tree_util.tree_leaves(y))
            return tree_util.tree_unflatten(b_tree, [ad.instantiate_zeros(c) for c in cts])

        def tsolve(r):
            out = transpose_solve(vecmat, r)
            return out[0] if has_aux else out
        t_jaxpr, t_consts, _ = trace_user_fun(tsolve, args_tree, b_avals,
                                              "custom_linear_solve transpose_solve")
    elif symmetric:
        t_jaxpr, t_consts = solve_jaxpr, s_consts
        if has_aux:  # the transpose returns the solution only
            t_jaxpr, t_consts, _ = trace_user_fun(
                lambda r: solve(mv_frozen, r)[0], args_tree, b_avals, "custom_linear_solve")
    ss = [stop_gradient(c) for c in s_consts]
    ts = [stop_gradient(c) for c in t_consts]

    def run(rhs_leaves):
        return linear_solve_p.bind(*ss, *ts, *rhs_leaves, solve_jaxpr=solve_jaxpr,
                                   transpose_jaxpr=t_jaxpr, num_s=len(ss), num_t=len(ts),
                                   num_aux=num_aux)

    outs = run(b_leaves)
    n = len(b_leaves)
    x_leaves, aux_leaves = outs[:n], outs[n:]
    if consts:
        ax = tree_util.tree_leaves(converted(tree_util.tree_unflatten(
            b_tree, [stop_gradient(v) for v in x_leaves]), *consts))
        c = run(ax)[:n]
        x_leaves = [sub(x, sub(ci, stop_gradient(ci))) for x, ci in zip(x_leaves, c)]
    x = tree_util.tree_unflatten(b_tree, x_leaves)
    if has_aux:
        aux_tree = s_tree.children()[1]
        return x, tree_util.tree_unflatten(aux_tree, [stop_gradient(a) for a in aux_leaves])
    return x


def _ls_abstract_eval(*avals, solve_jaxpr, **_):
    return list(solve_jaxpr.out_avals)


def _ls_impl(*args, solve_jaxpr, num_s, num_t, **_):
    ss, rhs = args[:num_s], args[num_s + num_t:]
    outs = core.eval_jaxpr(solve_jaxpr.jaxpr, solve_jaxpr.consts, *ss, *rhs)
    return [as_array(o, a) for o, a in zip(outs, solve_jaxpr.out_avals, strict=True)]


def _ls_lower(ctx, *args, solve_jaxpr, num_s, num_t, **_):
    return ctx.lower_jaxpr(solve_jaxpr, list(args[:num_s]) + list(args[num_s + num_t:]))


def _ls_jvp(primals, tangents, *, num_s, num_t, num_aux, **params):
    outs = linear_solve_p.bind(*primals, num_s=num_s, num_t=num_t, num_aux=num_aux, **params)
    rhs_t = tangents[num_s + num_t:]
    n = len(outs) - num_aux
    if all(type(t) is ad.Zero for t in rhs_t):
        return outs, [ad.Zero.from_value(o) for o in outs]
    t_out = linear_solve_p.bind(*primals[:num_s + num_t],
                                *[ad.instantiate_zeros(t) for t in rhs_t],
                                num_s=num_s, num_t=num_t, num_aux=num_aux, **params)
    return outs, list(t_out[:n]) + [ad.Zero.from_value(o) for o in outs[n:]]


def _ls_transpose(cts, *args, solve_jaxpr, transpose_jaxpr, num_s, num_t, num_aux):
    if transpose_jaxpr is None:
        raise TypeError("custom_linear_solve: reverse-mode differentiation needs "
                        "transpose_solve (or symmetric=True)")
    n = len(cts) - num_aux
    ss, ts = args[:num_s], args[num_s:num_s + num_t]
    cts = [ad.instantiate_zeros(c) for c in cts[:n]]
    rhs_ct = linear_solve_p.bind(*ts, *ss, *cts, solve_jaxpr=transpose_jaxpr,
                                 transpose_jaxpr=solve_jaxpr, num_s=num_t, num_t=num_s,
                                 num_aux=0)
    return [None] * (num_s + num_t) + list(rhs_ct[:n])


def _ls_batch(trace, vals, dims, *, solve_jaxpr, transpose_jaxpr, num_s, num_t, num_aux):
    vals = move_to_front(trace, vals, dims)
    batched = [d is not batching.not_mapped for d in dims]
    size = trace.axis_size
    s_in = batched[:num_s] + batched[num_s + num_t:]
    new_solve, _ = batch_jaxpr(solve_jaxpr, size, s_in, True, trace.axis_name)
    new_t = None
    if transpose_jaxpr is not None:
        n = len(solve_jaxpr.out_avals) - num_aux
        t_in = batched[num_s:num_s + num_t] + [True] * n
        new_t, _ = batch_jaxpr(transpose_jaxpr, size, t_in, True, trace.axis_name)
    # the right-hand side is batched whole so the transpose sees matching shapes
    vals = move_to_front(trace, vals, [0 if b else batching.not_mapped for b in batched],
                         instantiate=[False] * (num_s + num_t) + [True] * (len(vals) - num_s
                                                                          - num_t))
    if not all(batched[num_s + num_t:]):
        s_in = batched[:num_s] + [True] * (len(vals) - num_s - num_t)
        new_solve, _ = batch_jaxpr(solve_jaxpr, size, s_in, True, trace.axis_name)
    outs = linear_solve_p.bind(*vals, solve_jaxpr=new_solve, transpose_jaxpr=new_t,
                               num_s=num_s, num_t=num_t, num_aux=num_aux)
    return list(outs), [0] * len(outs)


linear_solve_p = Primitive("linear_solve")
linear_solve_p.multiple_results = True
linear_solve_p.def_abstract_eval(_ls_abstract_eval)
linear_solve_p.def_impl(_ls_impl)
ad.primitive_jvps[linear_solve_p] = _ls_jvp
ad.primitive_transposes[linear_solve_p] = _ls_transpose
batching.primitive_batchers[linear_solve_p] = _ls_batch
register_lowering(linear_solve_p, _ls_lower)


# --------------------------------------------------------------------------- closure_convert


def closure_convert(fun, *example_args):
    """Hoist the floating-point tracers `fun` closes over into explicit arguments.

    Returns `(converted, consts)` with `converted(*args, *consts) == fun(*args)`; `fun` is
    traced once at the shapes and dtypes of `example_args`. Use it before handing a closure
    to `custom_vjp` / `custom_jvp`, whose rules cannot see closed-over tracers.
    """
    leaves, in_tree = tree_util.tree_flatten(example_args)
    name = getattr(fun, "__name__", "fun")
    jaxpr, consts, out_tree = trace_user_fun(
        lambda *a: fun(*a), in_tree, avals_of(leaves), f"closure_convert of {name}")
    hoist = [isinstance(c, core.Tracer) and dtypes.is_inexact(get_aval(c).dtype)
             for c in consts]
    hoisted = [c for c, h in zip(consts, hoist, strict=True) if h]
    kept = [c for c, h in zip(consts, hoist, strict=True) if not h]

    def converted(*args_and_consts):
        args, hc = args_and_consts[:len(example_args)], args_and_consts[len(example_args):]
        if len(hc) != len(hoisted):
            raise TypeError(f"closure_convert: the converted function takes "
                            f"{len(example_args)} arguments and {len(hoisted)} constants, "
                            f"got {len(args_and_consts)} values")
        it_h, it_k = iter(hc), iter(kept)
        all_consts = [next(it_h) if h else next(it_k) for h in hoist]
        flat, tree = tree_util.tree_flatten(tuple(args))
        if tree != in_tree:
            raise TypeError(f"closure_convert: arguments {tree} do not match the example "
                            f"arguments' structure {in_tree}")
        outs = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *all_consts, *flat)
        return tree_util.tree_unflatten(out_tree, outs)

    converted.__name__ = f"closure_converted_{name}"
    return converted, hoisted
