"""User-defined differentiation: custom_jvp, custom_vjp, stop_gradient.

- `custom_jvp`: the primal function is traced into a jaxpr and bound as `custom_jvp_call`;
  its JVP rule calls the user's rule, its batching rule batches both, and evaluation or
  lowering simply runs the primal jaxpr.
- `custom_vjp`: bound as `custom_vjp_call`; its JVP rule runs the user's fwd (saving
  residuals) and emits a linear `custom_vjp_lin` whose transpose calls the user's bwd.
  Forward mode (jvp) through a custom_vjp function is an error, as in JAX.
- `stop_gradient` (re-exported; defined in lax/stop_gradient.py): an identity primitive
  with a zero derivative.

checkpoint / remat live in ad_checkpoint.py, which builds on this module (imports go one
way: ad_checkpoint imports custom_derivatives, never the reverse).
"""

from __future__ import annotations

import functools
import inspect

from minijax import core, tree_util
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import Primitive, get_aval
from minijax.interpreters import ad, batching
from minijax.lax.control_flow_common import (
    avals_of,
    batch_jaxpr,
    call_jaxpr_abstract_eval,
    call_jaxpr_impl,
    call_jaxpr_lower,
    match_aval,
    materialize,
    move_to_front,
    run_batched,
    trace_user_fun,
    typematch,
)
from minijax.lax.control_flow_solve import closure_convert  # noqa: F401 - jax.closure_convert
from minijax.lax.stop_gradient import stop_gradient, stop_gradient_p  # noqa: F401

# --------------------------------------------------------------------------- shared helpers


def _resolve_args(fun, args, kwargs):
    """Positional arguments with keyword arguments bound by fun's signature."""
    if not kwargs:
        return tuple(args)
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"keyword arguments could not be resolved to positions: {e}") from e
    bound.apply_defaults()
    return tuple(bound.args) + tuple(bound.kwargs.values())


def _split_nondiff(args, nondiff_argnums):
    nums = {i % len(args) for i in nondiff_argnums} if args else set()
    diff = tuple(a for i, a in enumerate(args) if i not in nums)
    nondiff = tuple(args[i] for i in sorted(nums))
    return diff, nondiff, sorted(nums)


def _merge(diff, nondiff, nondiff_pos):
    out, d, n = [], iter(diff), dict(zip(nondiff_pos, nondiff, strict=True))
    for i in range(len(diff) + len(nondiff)):
        out.append(n[i] if i in n else next(d))
    return out


def _nondiff_positions(fun, nondiff_argnums, nondiff_argnames) -> tuple[int, ...]:
    """nondiff_argnums joined with the positions of nondiff_argnames (names of positional-or-
    keyword parameters of fun; others are ignored, as in JAX), sorted."""
    nums = set(nondiff_argnums)
    if nondiff_argnames:
        names = (nondiff_argnames,) if isinstance(nondiff_argnames, str) else \
            tuple(nondiff_argnames)
        params = inspect.signature(fun).parameters.items()
        nums.update(i for i, (k, p) in enumerate(params)
                    if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and k in names)
    return tuple(sorted(nums))


def _name(f) -> str:
    return getattr(f, "__name__", repr(f))


def _closure_error(kind: str):
    return TypeError(
        f"Detected differentiation of a {kind} function with respect to a closed-over "
        f"value. That isn't supported because the custom {kind[7:].upper()} rule only "
        f"specifies how to differentiate the {kind} function with respect to explicit "
        "input parameters. Pass the value as an explicit argument instead.")


class SymbolicZero:
    """A zero tangent or cotangent that was never materialized: what a custom_jvp rule
    (defjvp(..., symbolic_zeros=True)) receives for an input that is not perturbed, and a
    custom_vjp bwd rule (defvjp(..., symbolic_zeros=True)) for an output whose cotangent is
    zero. `aval`, `shape` and `dtype` describe the zeros it stands for."""

    def __init__(self, aval):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self.aval.size)

    def instantiate(self):
        """The zeros array this stands for."""
        return core.zeros_like_aval(self.aval)

    def __repr__(self) -> str:
        return f"SymbolicZero({self.aval.str_short()})"


class CustomVJPPrimal:
    """A primal input as a custom_vjp fwd rule with symbolic_zeros=True sees it: its
    `value`, and whether it is `perturbed` (has a nonzero tangent)."""

    def __init__(self, value, perturbed: bool):
        self.value = value
        self.perturbed = perturbed

    def __repr__(self) -> str:
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def _instantiate(x):
    return x.instantiate() if type(x) is SymbolicZero else x


def _unbatch_zeros(args):
    """For run_batched: a SymbolicZero stays symbolic, unbatched and per example (its aval
    without the leading batch axis); everything else is batched at 0."""
    out = [SymbolicZero(a.aval.update(shape=a.shape[1:])) if type(a) is SymbolicZero else a
           for a in args]
    return out, [type(a) is not SymbolicZero for a in args]


# --------------------------------------------------------------------------- custom_jvp


class custom_jvp:  # noqa: N801 - JAX's name
    """A function with a custom JVP rule: `f = custom_jvp(fun)`, then `f.defjvp(rule)`
    where `rule(primals, tangents) -> (primal_out, tangent_out)`."""

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp, symbolic_zeros: bool = False):
        """Set the JVP rule; usable as a decorator. Returns the rule."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps):
        """Set the JVP rule from one function per argument: jvp_i(g_i, ans, *primals)."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals, tangents):
            primal_out = self(*primals)
            total = None
            for rule, t in zip(jvps, tangents, strict=False):
                if rule is None:
                    continue
                contrib = rule(t, primal_out, *primals)
                total = contrib if total is None else tree_util.tree_map(
                    lambda a, b: a + b, total, contrib)
            if total is None:
                total = tree_util.tree_map(
                    lambda o: core.zeros_like_aval(ad.tangent_aval(get_aval(o))), primal_out)
            return primal_out, total
        self.defjvp(jvp)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {_name(self.fun)} "
                                 "using defjvp.")
        args = _resolve_args(self.fun, args, kwargs)
        diff, nondiff, pos = _split_nondiff(args, self.nondiff_argnums)
        leaves, in_tree = tree_util.tree_flatten(diff)
        jaxpr, consts, out_tree = trace_user_fun(
            lambda *d: self.fun(*_merge(d, nondiff, pos)), in_tree, avals_of(leaves),
            f"custom_jvp function {_name(self.fun)}")
        out_avals = jaxpr.out_avals
        rule = self.jvp

        def jvp_flat(*flat):
            n = len(flat) // 2
            primals = tree_util.tree_unflatten(in_tree, list(flat[:n]))
            tangents = tree_util.tree_unflatten(in_tree, list(flat[n:]))
            out = rule(*nondiff, tuple(primals), tuple(tangents))
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TypeError("Custom JVP rule must produce a pair (list or tuple of length "
                                f"two) representing primal and tangent outputs, but got {out}.")
            p_leaves, p_tree = tree_util.tree_flatten(out[0])
            t_leaves, t_tree = tree_util.tree_flatten(out[1])
            if p_tree != out_tree:
                raise TypeError(
                    "Custom JVP rule must produce primal outputs with equal container (pytree) "
                    f"structures to the primal function, but got {p_tree} and {out_tree}.")
            if t_tree != p_tree:
                raise TypeError(
                    "Custom JVP rule must produce primal and tangent outputs with equal "
                    f"container (pytree) structures, but got {p_tree} and {t_tree} "
                    "respectively.")
            p_out, t_out = [], []
            for p, t, want in zip(p_leaves, t_leaves, out_avals, strict=True):
                if type(t) is SymbolicZero:
                    t = core.zeros_like_aval(ad.tangent_aval(want))
                pa, ta = get_aval(p), get_aval(t)
                if not typematch(pa, want):
                    raise TypeError(
                        "Custom JVP rule must produce primal outputs with the same shapes and "
                        f"dtypes as the primal function, but got {pa.str_short()} for an "
                        f"output of type {want.str_short()}.")
                expected = ad.tangent_aval(want)
                if ta.shape != expected.shape or ta.dtype != expected.dtype:
                    raise TypeError(
                        "Custom JVP rule must produce primal and tangent outputs with "
                        f"corresponding shapes and dtypes. Expected {expected.str_short()} "
                        f"(tangent type of {want.str_short()}) but got {ta.str_short()}.")
                p_out.append(match_aval(p, want))
                t_out.append(match_aval(t, expected))
            return p_out + t_out

        outs = custom_jvp_call_p.bind(*consts, *leaves, call_jaxpr=jaxpr, jvp_fn=jvp_flat,
                                      num_consts=len(consts),
                                      symbolic_zeros=self.symbolic_zeros)
        return tree_util.tree_unflatten(out_tree, outs)


custom_jvp_call_p = Primitive("custom_jvp_call")
custom_jvp_call_p.multiple_results = True


custom_jvp_call_p.def_abstract_eval(call_jaxpr_abstract_eval)
custom_jvp_call_p.def_impl(call_jaxpr_impl)
register_lowering(custom_jvp_call_p, call_jaxpr_lower)


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp_fn, num_consts,
                         symbolic_zeros):
    if any(type(t) is not ad.Zero for t in tangents[:num_consts]):
        raise _closure_error("custom_jvp")
    # With symbolic_zeros, an unperturbed input's tangent reaches the rule as SymbolicZero.
    tangents = [SymbolicZero(ad.tangent_aval(get_aval(p)))
                if symbolic_zeros and type(t) is ad.Zero
                else materialize(t, ad.tangent_aval(get_aval(p)))
                for p, t in zip(primals[num_consts:], tangents[num_consts:], strict=True)]
    outs = jvp_fn(*primals[num_consts:], *tangents)
    n = len(call_jaxpr.out_avals)
    return outs[:n], outs[n:]


ad.primitive_jvps[custom_jvp_call_p] = _custom_jvp_call_jvp


def _custom_jvp_call_batch(trace, vals, dims, *, call_jaxpr, jvp_fn, num_consts,
                           symbolic_zeros):
    size, name = trace.axis_size, trace.axis_name
    vals = move_to_front(trace, vals, dims, True)
    batched, _ = batch_jaxpr(call_jaxpr, size, [True] * len(vals), True, name)

    def batched_jvp(*args):
        args, batched_in = _unbatch_zeros(args)
        return run_batched(jvp_fn, size, name, args, batched_in)
    outs = custom_jvp_call_p.bind(*vals, call_jaxpr=batched, jvp_fn=batched_jvp,
                                  num_consts=num_consts, symbolic_zeros=symbolic_zeros)
    return outs, [0] * len(outs)


batching.primitive_batchers[custom_jvp_call_p] = _custom_jvp_call_batch


# --------------------------------------------------------------------------- custom_vjp


class custom_vjp:  # noqa: N801 - JAX's name
    """A function with a custom VJP: `f = custom_vjp(fun)`, then `f.defvjp(fwd, bwd)` where
    `fwd(*args) -> (out, residuals)` and `bwd(*nondiff_args, residuals, g) -> arg cts`."""

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = None
        self.bwd = None
        self.symbolic_zeros = False

    def defvjp(self, fwd, bwd, symbolic_zeros: bool = False):
        """Set the forward (with residuals) and backward rules. With symbolic_zeros, fwd
        gets each argument leaf as a CustomVJPPrimal (value, perturbed) and bwd gets a
        SymbolicZero for each output whose cotangent is zero."""
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = symbolic_zeros

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {_name(self.fun)} "
                                 "using defvjp.")
        args = _resolve_args(self.fun, args, kwargs)
        diff, nondiff, pos = _split_nondiff(args, self.nondiff_argnums)
        leaves, in_tree = tree_util.tree_flatten(diff)
        in_avals = avals_of(leaves)
        jaxpr, consts, out_tree = trace_user_fun(
            lambda *d: self.fun(*_merge(d, nondiff, pos)), in_tree, in_avals,
            f"custom_vjp function {_name(self.fun)}")
        out_avals = jaxpr.out_avals
        fwd, bwd, fun = self.fwd, self.bwd, self.fun
        symbolic_zeros = self.symbolic_zeros
        store = {}

        def fwd_flat(*flat, perturbed=None):
            if symbolic_zeros:
                perturbed = [True] * len(flat) if perturbed is None else perturbed
                flat = [CustomVJPPrimal(x, bool(p))
                        for x, p in zip(flat, perturbed, strict=True)]
            d = tree_util.tree_unflatten(in_tree, list(flat))
            out = fwd(*_merge(d, nondiff, pos))
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TypeError(
                    "Custom VJP fwd rule must produce a pair (list or tuple of length two) "
                    "where the first element represents the primal output and the second "
                    "element represents residuals, but instead the fwd rule output's type "
                    f"was {type(out)}.")
            o_leaves, o_tree = tree_util.tree_flatten(out[0])
            if o_tree != out_tree or not all(typematch(get_aval(o), a) for o, a in
                                             zip(o_leaves, out_avals, strict=True)):
                got = [get_aval(o).str_short() for o in o_leaves]
                raise TypeError(
                    f"Custom VJP fwd rule {_name(fwd)} for function {_name(fun)} must produce "
                    "a pair (list or tuple of length two) where the first element represents "
                    "the primal output (equal to the output of the custom_vjp-decorated "
                    f"function {_name(fun)}), but the primal output of fwd is {o_tree} with "
                    f"types {got} and of the function is {out_tree} with types "
                    f"{[a.str_short() for a in out_avals]}.")
            r_leaves, store["res_tree"] = tree_util.tree_flatten(out[1])
            return [match_aval(o, a) for o, a in zip(o_leaves, out_avals, strict=True)] + \
                r_leaves

        def bwd_flat(res, cts):
            r = tree_util.tree_unflatten(store["res_tree"], list(res))
            if not symbolic_zeros:
                cts = [_instantiate(c) for c in cts]
            g = tree_util.tree_unflatten(out_tree, list(cts))
            in_cts = bwd(*nondiff, r, g)
            return _flatten_bwd_output(in_cts, diff, in_tree, in_avals, bwd)

        outs = custom_vjp_call_p.bind(*consts, *leaves, call_jaxpr=jaxpr, fwd_fn=fwd_flat,
                                      bwd_fn=bwd_flat, num_consts=len(consts))
        return tree_util.tree_unflatten(out_tree, outs)


_ARG_LEAF = object()   # stands for each leaf of a primal argument in _flatten_bwd_output


def _flatten_bwd_output(in_cts, diff, in_tree, in_avals, bwd):
    if not isinstance(in_cts, (tuple, list)) or len(in_cts) != len(diff):
        _, got = tree_util.tree_flatten(in_cts)
        raise TypeError(
            "Custom VJP bwd rule must produce an output with the same container (pytree) "
            "structure as the args tuple of the primal function, and in particular must "
            "produce a tuple of length equal to the number of arguments to the primal "
            f"function, but got bwd output structure {got} for primal input structure "
            f"{in_tree}.")
    flat = []
    for ct, arg in zip(in_cts, diff, strict=True):
        # None stands for a zero cotangent of the whole corresponding subtree of the
        # argument (a leaf, a container, or a None the argument itself holds), as in JAX.
        arg_leaves, arg_tree = tree_util.tree_flatten(arg)
        dummy = tree_util.tree_unflatten(arg_tree, [_ARG_LEAF] * len(arg_leaves))
        part = []

        def append(x, d, part=part):
            if x is None:
                part.extend([None] * len(tree_util.tree_leaves(d)))
            elif d is not _ARG_LEAF:
                raise ValueError("bwd output leaf where the argument has a container")
            else:
                part.append(x)
        try:
            tree_util.tree_map(append, ct, dummy, is_leaf=lambda x: x is None)
        except (ValueError, TypeError):
            _, ct_tree = tree_util.tree_flatten(ct, is_leaf=lambda x: x is None)
            raise TypeError(
                "Custom VJP bwd rule must produce an output with the same container "
                "(pytree) structure as the args tuple of the primal function, but got "
                f"bwd output structure {ct_tree} for primal input structure {arg_tree}."
            ) from None
        flat.extend(part)
    out = []
    for ct, aval in zip(flat, in_avals, strict=True):
        want = ad.tangent_aval(aval)
        if ct is None:
            out.append(core.zeros_like_aval(want))
            continue
        got = get_aval(ct)
        if got.shape != want.shape:
            raise ValueError(
                f"Custom VJP bwd rule {_name(bwd)} must produce an output with the same "
                "shape/dtypes as the args tuple of the primal function, but the bwd rule "
                f"produced an output of shape/dtype {got.str_short()} corresponding to an "
                f"input of shape/dtype {aval.str_short()}.")
        out.append(match_aval(ct, want))
    return out


custom_vjp_call_p = Primitive("custom_vjp_call")
custom_vjp_call_p.multiple_results = True
custom_vjp_call_p.def_abstract_eval(call_jaxpr_abstract_eval)
custom_vjp_call_p.def_impl(call_jaxpr_impl)
register_lowering(custom_vjp_call_p, call_jaxpr_lower)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd_fn, bwd_fn, num_consts):
    if any(type(t) is not ad.Zero for t in tangents[:num_consts]):
        raise _closure_error("custom_vjp")
    args = primals[num_consts:]
    res_and_outs = fwd_fn(*args, perturbed=[type(t) is not ad.Zero
                                            for t in tangents[num_consts:]])
    n = len(call_jaxpr.out_avals)
    outs, res = res_and_outs[:n], res_and_outs[n:]
    t_in = [materialize(t, ad.tangent_aval(get_aval(p)))
            for p, t in zip(args, tangents[num_consts:], strict=True)]
    out_avals = tuple(ad.tangent_aval(a) for a in call_jaxpr.out_avals)
    t_out = custom_vjp_lin_p.bind(*res, *t_in, num_res=len(res), bwd_fn=bwd_fn,
                                  out_avals=out_avals)
    return outs, t_out


ad.primitive_jvps[custom_vjp_call_p] = _custom_vjp_call_jvp


def _custom_vjp_call_batch(trace, vals, dims, *, call_jaxpr, fwd_fn, bwd_fn, num_consts):
    size, name = trace.axis_size, trace.axis_name
    vals = move_to_front(trace, vals, dims, True)
    batched, _ = batch_jaxpr(call_jaxpr, size, [True] * len(vals), True, name)

    def fwd_b(*args, perturbed=None):
        return run_batched(functools.partial(fwd_fn, perturbed=perturbed), size, name, args,
                           [True] * len(args))

    def bwd_b(res, cts):
        nr = len(res)
        cts, batched_cts = _unbatch_zeros(cts)
        return run_batched(lambda *a: bwd_fn(a[:nr], a[nr:]), size, name,
                           list(res) + list(cts), [True] * nr + batched_cts)
    outs = custom_vjp_call_p.bind(*vals, call_jaxpr=batched, fwd_fn=fwd_b, bwd_fn=bwd_b,
                                  num_consts=num_consts)
    return outs, [0] * len(outs)


batching.primitive_batchers[custom_vjp_call_p] = _custom_vjp_call_batch

_CUSTOM_VJP_JVP_ERROR = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."

custom_vjp_lin_p = Primitive("custom_vjp_lin")
custom_vjp_lin_p.multiple_results = True
custom_vjp_lin_p.def_abstract_eval(lambda *avals, num_res, bwd_fn, out_avals: list(out_avals))


def _custom_vjp_lin_impl(*args, **params):
    raise TypeError(_CUSTOM_VJP_JVP_ERROR)


def _custom_vjp_lin_jvp(primals, tangents, **params):
    raise TypeError(_CUSTOM_VJP_JVP_ERROR)


def _custom_vjp_lin_transpose(cts, *args, num_res, bwd_fn, out_avals):
    res = args[:num_res]
    # (bwd_fn instantiates these unless the rule asked for symbolic zeros)
    cts = [SymbolicZero(a) if type(c) is ad.Zero else c
           for c, a in zip(cts, out_avals, strict=True)]
    in_cts = bwd_fn(res, cts)
    return [None] * num_res + list(in_cts)


custom_vjp_lin_p.def_impl(_custom_vjp_lin_impl)
ad.primitive_jvps[custom_vjp_lin_p] = _custom_vjp_lin_jvp
ad.primitive_transposes[custom_vjp_lin_p] = _custom_vjp_lin_transpose



def custom_gradient(fun):
    """Define a function's gradient alongside it: `fun(*args)` returns `(value, vjp)` where
    `vjp(cotangent)` returns the cotangents of the arguments (a tuple, or one value when
    there is one argument). Reverse mode only, as in JAX."""

    @functools.wraps(fun)
    def call(*args):
        # Each call gets its own rule: its backward pass must use the vjp of its own forward
        # pass (calls with other shapes or other closed-over values in one trace differ).
        vjps = []

        def primal(*primals):
            return fun(*primals)[0]

        def fwd(*primals):
            value, vjp_fn = fun(*primals)
            converted, consts = closure_convert(vjp_fn, value)
            vjps.append(converted)
            return value, consts

        def bwd(consts, ct):
            cts = vjps[-1](ct, *consts)
            if len(args) == 1 and not (isinstance(cts, tuple) and len(cts) == 1):
                cts = (cts,)
            return tuple(cts)

        wrapped = custom_vjp(primal)
        wrapped.defvjp(fwd, bwd)
        return wrapped(*args)
    return call
