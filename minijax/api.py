"""Public transformations: make_jaxpr, jvp, linearize, vjp, grad, value_and_grad, vmap.

(jit and its Lowered/Compiled objects live in minijax/api_jit.py.)
"""

from __future__ import annotations

import functools

import numpy as np

from minijax import core, dtypes, tree_util
from minijax.api_util import (
    flatten_fun,
    fun_name,
    fun_source,
    is_float0,
    leaf_arg_names,
    normalize_argnums,
)
from minijax.array import Array
from minijax.core import get_aval
from minijax.interpreters import ad
from minijax.interpreters.partial_eval import trace_to_jaxpr
from minijax.lax.structural import convert_element_type
from minijax.lax.vmap import vmap  # noqa: F401 - the public entry point (jax.vmap)
from minijax.traceback_util import api_boundary

# --------------------------------------------------------------------------- make_jaxpr


def make_jaxpr(fun, static_argnums=(), return_shape: bool = False):
    """`make_jaxpr(f)(*args)` returns the ClosedJaxpr that f's trace records for args."""
    static_argnums = (static_argnums,) if isinstance(static_argnums, int) else \
        tuple(static_argnums)

    @functools.wraps(fun)
    def make(*args, **kwargs):
        static = {i % len(args) for i in static_argnums} if args else set()
        dyn_idx = [i for i in range(len(args)) if i not in static]

        def call(*dyn):
            full = list(args)
            for i, v in zip(dyn_idx, dyn, strict=True):
                full[i] = v
            return fun(*full, **kwargs)
        dyn_args = [args[i] for i in dyn_idx]
        leaves, in_tree = tree_util.tree_flatten(tuple(dyn_args))
        flat_fun, store = flatten_fun(call, in_tree)
        names = leaf_arg_names(fun, args)
        dyn_names = _dynamic_leaf_names(names, args, dyn_idx)
        closed, _ = trace_to_jaxpr(flat_fun, [get_aval(x).strip_weak_type()
                                              if not dtypes.is_python_scalar(x) else get_aval(x)
                                              for x in leaves],
                                   arg_names=dyn_names, fun_name=fun_name(fun),
                                   purpose="make_jaxpr", fun_source=fun_source(fun))
        if return_shape:
            shapes = [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals]
            return closed, tree_util.tree_unflatten(store["out_tree"], shapes)
        return closed
    return make


def _dynamic_leaf_names(names, args, dyn_idx):
    out, pos = [], 0
    for i, arg in enumerate(args):
        n = len(tree_util.tree_leaves(arg))
        if i in dyn_idx:
            out.extend(names[pos:pos + n])
        pos += n
    return out


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (jax.ShapeDtypeStruct)."""

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type
        self.aval = core.ShapedArray(self.shape, self.dtype, weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __repr__(self) -> str:
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))


# --------------------------------------------------------------------------- forward mode


@api_boundary
def jvp(fun, primals, tangents, has_aux: bool = False):
    """Forward-mode: returns (fun(*primals), the JVP at primals applied to tangents)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primal and tangent arguments must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}.")
    p_leaves, p_tree = tree_util.tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_util.tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(f"jvp: primal and tangent arguments must have the same tree "
                        f"structure; got {p_tree} and {t_tree}.")
    t_leaves = [_jvp_tangent_in(p, t) for p, t in zip(p_leaves, t_leaves, strict=True)]
    target = _split_aux(fun, has_aux)
    flat_fun, store = flatten_fun(target, p_tree)
    p_outs, t_outs = ad.jvp_flat(flat_fun, p_leaves, t_leaves)
    t_outs = [_tangent_out(p, t) for p, t in zip(p_outs, t_outs, strict=True)]
    out_tree = store["out_tree"]
    primal_out = tree_util.tree_unflatten(out_tree, p_outs)
    tangent_out = tree_util.tree_unflatten(out_tree, t_outs)
    if has_aux:
        return primal_out[0], tangent_out[0], primal_out[1]
    return primal_out, tangent_out


def _jvp_tangent_in(primal, tangent):
    """Checks a jvp tangent against its primal as JAX does (same shape; same dtype, or float0
    for an integer/bool primal) and returns it, a float0 one as a symbolic zero."""
    pa = get_aval(primal)
    t_shape, t_dtype, t_str = _shape_dtype(tangent)
    if pa.shape != t_shape:
        raise ValueError(f"jvp: primal and tangent shapes must match; got primal "
                         f"{pa.str_short()} and tangent {t_str}.")
    expected = pa.dtype if dtypes.is_inexact(pa.dtype) else dtypes.float0
    if t_dtype != expected:
        raise TypeError("jvp: primal and tangent arguments do not match; dtypes must be "
                        "equal, or in case of int/bool primal dtype the tangent dtype must "
                        f"be float0. Got primal dtype {pa.dtype} and so expected tangent "
                        f"dtype {expected}, but got tangent dtype {t_dtype} instead.")
    return ad.Zero(ad.tangent_aval(pa)) if t_dtype == dtypes.float0 else tangent


def _shape_dtype(x):
    """(shape, dtype, short description) of an array or a float0 NumPy array."""
    if is_float0(x):
        return x.shape, dtypes.float0, f"float0{list(x.shape)}".replace(" ", "")
    aval = get_aval(x)
    return aval.shape, aval.dtype, aval.str_short()


def _tangent_out(primal, tangent):
    """An output tangent made concrete: float0 zeros for an integer/bool output (as JAX)."""
    aval = get_aval(primal)
    if not dtypes.is_inexact(aval.dtype):
        return np.zeros(aval.shape, dtypes.float0)
    return ad.instantiate_zeros(tangent)


def _split_aux(fun, has_aux):
    if not has_aux:
        return fun

    def wrapped(*args):
        out = fun(*args)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("has_aux=True requires the function to return a pair "
                            "(output, auxiliary data)")
        main, aux = out
        return main, ad_stop_aux(aux)
    return wrapped


def ad_stop_aux(aux):
    """Auxiliary outputs carry no derivative: strip tracers of the current AD trace."""
    return aux


def _linearize_maybe_aux(fun, p_leaves, p_tree, has_aux):
    """Linearize `fun` at the flat primals; with has_aux, the aux leaves ride along as extra
    outputs (so linearize strips their tracers) and are split off again.

    Returns (primal_out_leaves, LinearFunction, out_tree, aux, n_main_outputs).
    """
    flat_fun, store = flatten_fun(_split_aux(fun, has_aux), p_tree)
    if not has_aux:
        p_outs, linear = ad.linearize_flat(flat_fun, p_leaves)
        return p_outs, linear, store["out_tree"], None, len(p_outs)

    def main_then_aux(*flat):
        leaves = flat_fun(*flat)
        main, aux = tree_util.tree_unflatten(store["out_tree"], leaves)
        main_leaves, store["main_tree"] = tree_util.tree_flatten(main)
        aux_leaves, store["aux_tree"] = tree_util.tree_flatten(aux)
        store["n_main"] = len(main_leaves)
        return main_leaves + aux_leaves
    all_outs, linear = ad.linearize_flat(main_then_aux, p_leaves)
    n_main = store["n_main"]
    aux = tree_util.tree_unflatten(store["aux_tree"], all_outs[n_main:])
    return all_outs[:n_main], linear, store["main_tree"], aux, n_main


def _linear_tangent_in(t, aval):
    """Checks a tangent given to linearize's function (JAX's ValueError on a shape or dtype
    other than the primal's; float0 for an integer/bool primal) and makes it concrete."""
    expected = aval.dtype if dtypes.is_inexact(aval.dtype) else dtypes.float0
    shape, dtype, desc = _shape_dtype(t)
    if shape != aval.shape or dtype != expected:
        raise ValueError(f"linearized function called with a tangent of type {desc} for a "
                         f"primal of type {aval.str_short()} (a tangent has the primal's shape "
                         f"and dtype, float0 for an integer or bool primal).")
    return core.zeros_like_aval(aval) if dtype == dtypes.float0 else t


@api_boundary
def linearize(fun, *primals, has_aux: bool = False):
    """Returns (fun(*primals), f_jvp[, aux]) where f_jvp evaluates the linearized function.

    `f_jvp` takes tangents with the structure of `primals` and returns output tangents.
    """
    p_leaves, p_tree = tree_util.tree_flatten(primals)
    p_outs, linear, out_tree, aux, n_main = _linearize_maybe_aux(fun, p_leaves, p_tree,
                                                                 has_aux)

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_util.tree_flatten(tangents)
        if t_tree != p_tree:
            raise TypeError(f"linearized function called with tangents of structure {t_tree}"
                            f", expected {p_tree}")
        t_leaves = [_linear_tangent_in(t, aval)
                    for t, aval in zip(t_leaves, linear.in_avals, strict=True)]
        t_outs = [_tangent_out(p, t) for p, t in
                  zip(p_outs[:n_main], linear.jvp(t_leaves)[:n_main], strict=True)]
        return tree_util.tree_unflatten(out_tree, t_outs)
    primal_out = tree_util.tree_unflatten(out_tree, p_outs)
    if has_aux:
        return primal_out, f_jvp, aux
    return primal_out, f_jvp


# --------------------------------------------------------------------------- reverse mode


@api_boundary
def vjp(fun, *primals, has_aux: bool = False):
    """Returns (fun(*primals), vjp_fn[, aux]) where vjp_fn(ct) gives input cotangents."""
    p_leaves, p_tree = tree_util.tree_flatten(primals)
    p_outs, linear, out_tree, aux, n_main = _linearize_maybe_aux(fun, p_leaves, p_tree,
                                                                 has_aux)

    def vjp_fn(*cts):
        if len(cts) != 1:
            raise TypeError(f"The function returned by vjp takes exactly one argument (the "
                            f"cotangent, with the structure of the primal output), got "
                            f"{len(cts)}.")
        ct_leaves, ct_tree = tree_util.tree_flatten(cts[0])
        if ct_tree != out_tree:
            raise TypeError(f"vjp function called with a cotangent of structure {ct_tree}, "
                            f"expected the output structure {out_tree}")
        ct_leaves = [_vjp_cotangent_in(c, aval)
                     for c, aval in zip(ct_leaves, linear.out_avals[:n_main], strict=True)]
        ct_leaves = ct_leaves + [ad.Zero(a) for a in linear.out_avals[n_main:]]
        in_cts = linear.transpose(ct_leaves)
        in_cts = [_zeros_for(c, p) for c, p in zip(in_cts, p_leaves, strict=True)]
        return tree_util.tree_unflatten(p_tree, in_cts)

    primal_out = tree_util.tree_unflatten(out_tree, p_outs)
    if has_aux:
        return primal_out, vjp_fn, aux
    return primal_out, vjp_fn


float0 = dtypes.float0


def _vjp_cotangent_in(ct, aval):
    """Checks a cotangent given to vjp's function against its primal output (JAX's
    ValueError on another shape, or another dtype for a float output); an integer/bool
    output's cotangent (float0 or not) is a symbolic zero."""
    shape, dtype, desc = _shape_dtype(ct)
    if shape != aval.shape:
        raise ValueError(f"vjp: cotangent shape {desc} does not match the primal output "
                         f"{aval.str_short()}")
    inexact = dtypes.is_inexact(aval.dtype)
    if inexact and dtype != aval.dtype:
        raise ValueError(f"vjp: cotangent dtype {desc} does not match the primal output "
                         f"{aval.str_short()} (a cotangent has the output's dtype)")
    return ct if inexact else ad.Zero(aval)


def _zeros_for(ct, primal):
    aval = get_aval(primal)
    if not dtypes.is_inexact(aval.dtype):
        return np.zeros(aval.shape, dtype=float0)
    if type(ct) is ad.Zero:
        return core.zeros_like_aval(ad.tangent_aval(aval))
    if get_aval(ct).dtype != aval.dtype:
        ct = convert_element_type(ct, aval.dtype)
    return ct


def _check_input_dtype_revderiv(name, holomorphic, allow_int, x):
    dtype = get_aval(x).dtype
    if holomorphic and dtype.kind != "c":
        raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                        f"but got {dtype.name}.")
    if dtype.kind in "iub":
        if not allow_int:
            raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype "
                            f"that is a sub-dtype of np.inexact), but got {dtype.name}. If "
                            "you want to use Boolean- or integer-valued inputs, use vjp or "
                            "set allow_int to True.")
    elif not dtypes.is_inexact(dtype):
        raise TypeError(f"{name} requires numerical-valued inputs (input dtype that is a "
                        f"sub-dtype of np.bool_ or np.number), but got {dtype.name}.")


def _check_output_dtype_revderiv(name, holomorphic, x):
    dtype = get_aval(x).dtype
    if holomorphic:
        if dtype.kind != "c":
            raise TypeError(f"{name} with holomorphic=True requires outputs with complex "
                            f"dtype, but got {dtype.name}.")
    elif dtype.kind == "c":
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {dtype.name}. For holomorphic "
                        "differentiation, pass holomorphic=True. For differentiating "
                        "non-holomorphic functions involving complex outputs, use jax.vjp "
                        "directly.")
    elif dtypes.kind(dtype) != "f":
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {dtype.name}. For "
                        "differentiation of functions with integer outputs, use jax.vjp "
                        "directly.")


def _check_scalar(x):
    try:
        aval = get_aval(x)
    except TypeError:
        raise TypeError(f"Gradient only defined for scalar-output functions. Output was "
                        f"{x}.") from None
    if aval.shape != ():
        raise TypeError(f"Gradient only defined for scalar-output functions. Output had "
                        f"shape: {aval.shape}.")


def _ones_like_output(ans):
    """The cotangent seed: 1 with the output's dtype and weak type (as JAX's grad)."""
    aval = get_aval(ans)
    return Array(np.ones((), aval.dtype), weak_type=aval.weak_type)


def value_and_grad(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False, reduce_axes=()):
    """Returns a function computing (fun(*args), gradient of fun w.r.t. args[argnums])."""

    @api_boundary
    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        wanted = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        if any(i >= len(args) for i in wanted):   # JAX: TypeError (a negative one: ValueError)
            raise TypeError(f"grad: differentiating with respect to argnums={argnums} requires "
                            f"at least {max(wanted) + 1} positional arguments to be passed by "
                            f"the caller, but got only {len(args)} positional arguments.")
        nums = normalize_argnums(argnums, len(args), "grad")
        for i in nums:
            for leaf in tree_util.tree_leaves(args[i]):
                _check_input_dtype_revderiv("grad", holomorphic, allow_int, leaf)

        def partial_fun(*diff_args):
            full = list(args)
            for i, v in zip(nums, diff_args, strict=True):
                full[i] = v
            return fun(*full, **kwargs)
        diff = tuple(args[i] for i in nums)
        if has_aux:
            ans, vjp_fn, aux = vjp(partial_fun, *diff, has_aux=True)
        else:
            ans, vjp_fn = vjp(partial_fun, *diff)
        _check_scalar(ans)
        _check_output_dtype_revderiv("grad", holomorphic, ans)
        grads = vjp_fn(_ones_like_output(ans))
        g = grads[0] if isinstance(argnums, int) else tuple(grads)
        if has_aux:
            return (ans, aux), g
        return ans, g
    return value_and_grad_f


def grad(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False, reduce_axes=()):
    """Returns a function computing the gradient of scalar-valued `fun` w.r.t. args[argnums]."""
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @api_boundary
    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]
    return grad_f


def eval_shape(fun, *args, **kwargs):
    """The output shapes and dtypes of fun(*args) as ShapeDtypeStructs, without computing."""
    closed, shapes = make_jaxpr(lambda *a: fun(*a, **kwargs), return_shape=True)(*args)
    return shapes


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of the linear function `fun` (checked only by tracing it at the
    shapes and dtypes of `primals`, whose values are not used): returns `f_t` with
    `f_t(out_cotangent) == tuple of input cotangents`."""
    if reduce_axes:
        raise NotImplementedError("linear_transpose: reduce_axes is not supported")
    p_leaves, p_tree = tree_util.tree_flatten(primals)
    for p in p_leaves:
        if not dtypes.is_inexact(get_aval(p).dtype):
            raise TypeError(f"linear_transpose only supports float and complex inputs, got "
                            f"{get_aval(p).str_short()}")
    zeros = [np.zeros(get_aval(p).shape, get_aval(p).dtype) for p in p_leaves]
    store = {}

    def flat_fun(*leaves):
        out = fun(*tree_util.tree_unflatten(p_tree, list(leaves)))
        out_leaves, store["out_tree"] = tree_util.tree_flatten(out)
        return out_leaves
    outs, linear = ad.linearize_flat(flat_fun, [Array(z) for z in zeros])
    out_tree = store["out_tree"]
    out_avals = [get_aval(o) for o in outs]

    def transposed(out_cotangent):
        ct_leaves, ct_tree = tree_util.tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"linear_transpose: cotangent structure {ct_tree} does not "
                            f"match the function's output {out_tree}")
        for c, a in zip(ct_leaves, out_avals, strict=True):
            if get_aval(c).shape != a.shape or get_aval(c).dtype != a.dtype:
                raise TypeError(f"linear_transpose: cotangent of type "
                                f"{get_aval(c).str_short()} for an output of type "
                                f"{a.str_short()}")
        cts = linear.transpose(ct_leaves)
        cts = [convert_element_type(ad.instantiate_zeros(c), get_aval(p).dtype)
               for c, p in zip(cts, p_leaves, strict=True)]
        return tree_util.tree_unflatten(p_tree, cts)
    return transposed


def named_call(fun, *, name: str | None = None):
    """`fun`, marked with a name for profiles and op metadata (JAX stages it as a named
    call; minijax inlines it, so only the name is recorded on the wrapper)."""
    @functools.wraps(fun)
    def named(*args, **kwargs):
        return fun(*args, **kwargs)
    if name is not None:
        named.__name__ = named.__qualname__ = name
    return named
