"""Cumulative reductions: cumsum, cumprod, cummax, cummin, cumlogsumexp (axis, reverse).

cumsum is linear (its transpose is the cumsum in the other direction). The other JVPs
are the JVP of lax.associative_scan (the odd/even recursion) with the combine function, as
JAX differentiates them: the recursion's shape decides how ties split a cummax/cummin
gradient, so it must be JAX's. All lower to an HLO reduce-window whose window spans the whole
axis, padded on one side with the monoid's identity.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.compiler.hlo.ir import Shape
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.lax import elementwise, elementwise_int, elementwise_math
from minijax.lax.control_flow_assoc import associative_scan
from minijax.lax.reductions import _KIND_NAMES, max_identity, min_identity
from minijax.lax.utils import standard_primitive


def _cum_abstract_eval(name, kinds):
    def rule(x, *, axis, reverse):
        if not 0 <= axis < x.ndim:
            raise ValueError(f"{name}: axis {axis} is out of bounds for {x.str_short()}")
        if dtypes.kind(x.dtype) not in kinds:
            allowed = ", ".join(_KIND_NAMES[k] for k in kinds)
            raise TypeError(f"{name} does not accept dtype {x.dtype} ({x.str_short()}); "
                            f"accepted: {allowed}")
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    return rule


def _accumulates_wide(opcode, dtype) -> bool:
    """Running sums, products and log-sum-exps of 16- and 8-bit floats accumulate in float32
    and round once: in their own type a bfloat16 cumsum of ones stalls at 256 (JAX's scan
    stays within ~2 ulps; the float32 accumulator within half an ulp)."""
    dtype = np.dtype(dtype)
    return (opcode in ("add", "multiply", "logaddexp") and dtypes.kind(dtype) == "f"
            and dtype.itemsize <= 2)


def _cum_impl(accumulate, opcode=None):
    def impl(x, *, axis, reverse):
        x = np.asarray(x)
        if x.shape[axis] == 0:
            return x.copy()
        if reverse:
            x = np.flip(x, axis)
        wide = x.astype(np.float32) if _accumulates_wide(opcode, x.dtype) else x
        out = accumulate(wide, axis).astype(x.dtype, copy=False)
        return np.flip(out, axis) if reverse else out
    return impl


def _cum_batcher(prim):
    def rule(trace, vals, dims, *, axis, reverse):
        (x,), (d,) = vals, dims
        return prim.bind(x, axis=axis + 1 if axis >= d else axis, reverse=reverse), d
    return rule


def _wrapper(prim, doc):
    def fn(operand, axis: int = 0, reverse: bool = False):
        ndim = get_aval(operand).ndim
        axis = int(axis)
        if -ndim <= axis < 0:
            axis += ndim
        return prim.bind(operand, axis=axis, reverse=bool(reverse))
    fn.__name__ = prim.name
    fn.__doc__ = doc
    return fn


# --------------------------------------------------------------------------- prefix scan


def logaddexp(x, y):
    """log(exp(x) + exp(y)) in lax terms, stable for large inputs and for infinities."""
    amax = elementwise.max(x, y)
    delta = elementwise.sub(x, y)
    spread = elementwise.exp(elementwise.neg(elementwise.abs(delta)))
    finite = elementwise.add(amax, elementwise_math.log1p(spread))
    # delta is NaN when x and y are equal infinities (or either is NaN): x + y is right then.
    return elementwise_int.select_n(elementwise_int.ne(delta, delta), finite, elementwise.add(x, y))


def _replace_posinf(x):
    inf = elementwise.full_like(x, np.inf)
    return elementwise_int.select_n(elementwise_int.eq(x, inf), x, elementwise.full_like(x, 0))


def _logaddexp_with_tangent(a, b):
    """logaddexp on (value, tangent) pairs with JAX's custom derivative of logaddexp,
    t = ta * exp(xa - out) + tb * exp(xb - out) with +inf read as 0 (the derivative of the
    formula itself is wrong at ties: abs's derivative at 0 hands all of it to one side)."""
    (xa, ta), (xb, tb) = a, b
    out = logaddexp(xa, xb)
    r_out = _replace_posinf(out)

    def weight(v):
        return elementwise.exp(elementwise.sub(_replace_posinf(v), r_out))
    return out, elementwise.add(elementwise.mul(ta, weight(xa)), elementwise.mul(tb, weight(xb)))


def _scan_jvp(prim, combine, pair_combine=None):
    """JVP of a cumulative primitive: that of lax.associative_scan(combine), or, where the
    combine function has a custom derivative, an associative scan of pair_combine over
    (value, tangent) pairs."""
    def rule(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis=axis, reverse=reverse)
        dtype = get_aval(x).dtype
        if type(t) is ad.Zero or not dtypes.is_inexact(dtype):
            return ans, ad.Zero.from_value(ans)
        if pair_combine is not None:
            _, t_out = associative_scan(pair_combine, (x, t), reverse=reverse, axis=axis)
            return ans, t_out

        def scan(v):
            return [associative_scan(combine, v, reverse=reverse, axis=axis)]
        _, (t_out,) = ad.jvp_flat(scan, [x], [t])
        return ans, t_out
    return rule


def _cum_lowering(opcode, identity_fn):
    def rule(ctx, x, *, axis, reverse):
        b = ctx.builder
        aval = ctx.avals_in[0]
        dtype = aval.dtype
        narrow_et = None
        if _accumulates_wide(opcode, dtype):
            narrow_et, dtype = ctx.element_type(dtype), np.dtype(np.float32)
            x = b.convert(x, "f32", metadata=ctx.metadata)
        et = ctx.element_type(dtype)
        if opcode == "logaddexp":
            comp = _logaddexp_computation(ctx, et)
        else:
            op = opcode
            if dtype == np.bool_ and opcode in ("maximum", "minimum"):
                op = "or" if opcode == "maximum" else "and"
            comp = ctx.scalar_computation(f"{op}_{et}", op, et)
        n = aval.shape[axis]
        size = [1] * aval.ndim
        size[axis] = max(n, 1)
        pad = [(0, 0)] * aval.ndim
        pad[axis] = (0, max(n - 1, 0)) if reverse else (max(n - 1, 0), 0)
        init = b.constant(np.asarray(identity_fn(dtype), dtype))
        out = b.reduce_window(x, init, {"size": tuple(size), "pad": tuple(pad)}, comp,
                              metadata=ctx.metadata)
        return out if narrow_et is None else b.convert(out, narrow_et, metadata=ctx.metadata)
    return rule


def _logaddexp_computation(ctx, et):
    cb = ctx.new_computation(f"logaddexp_{et}")
    x = cb.parameter(0, Shape(et, ()))
    y = cb.parameter(1, Shape(et, ()))
    amax = cb.maximum(x, y)
    delta = cb.subtract(x, y)
    finite = cb.add(amax, cb.log_plus_one(cb.exponential(cb.negate(cb.abs(delta)))))
    cb.set_root(cb.select(cb.compare(delta, delta, "NE"), cb.add(x, y), finite))
    return cb.computation


# --------------------------------------------------------------------------- cumsum


def _cumsum_from_plus_zero(x, axis):
    # XLA (and JAX) start the running sum at +0, so a leading -0 sums to +0.
    out = np.cumsum(x, axis=axis, dtype=x.dtype)
    return out + np.zeros((), x.dtype) if x.dtype.kind in "fc" else out



cumsum_p = standard_primitive(
    "cumsum", _cum_abstract_eval("cumsum", "iufc"),
    _cum_impl(lambda x, axis: _cumsum_from_plus_zero(x, axis), "add"))
cumsum = _wrapper(cumsum_p, "Cumulative sum along `axis` (from the end if `reverse`).")


def _cumsum_transpose(ct, x, *, axis, reverse):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


ad.deflinear(cumsum_p, _cumsum_transpose)
batching.primitive_batchers[cumsum_p] = _cum_batcher(cumsum_p)
register_lowering(cumsum_p, _cum_lowering("add", lambda d: np.zeros((), d)))

# --------------------------------------------------------------------------- cumprod


def _mul(x, y):
    return elementwise.mul(x, y)


def _max(x, y):
    return elementwise.max(x, y)


def _min(x, y):
    return elementwise.min(x, y)


def _ones(dtype):
    return np.ones((), dtype)


cumprod_p = standard_primitive(
    "cumprod", _cum_abstract_eval("cumprod", "iufc"),
    _cum_impl(lambda x, axis: np.cumprod(x, axis=axis, dtype=x.dtype), "multiply"))
cumprod = _wrapper(cumprod_p, "Cumulative product along `axis` (from the end if `reverse`).")
ad.primitive_jvps[cumprod_p] = _scan_jvp(cumprod_p, _mul)
batching.primitive_batchers[cumprod_p] = _cum_batcher(cumprod_p)
register_lowering(cumprod_p, _cum_lowering("multiply", _ones))

# --------------------------------------------------------------------------- cummax / cummin

def _signed_zero_accumulate(ufunc, x, axis):
    """ufunc.accumulate with XLA's signed zeros (max(0, -0) = 0, min(0, -0) = -0; NumPy
    returns either) for floats."""
    out = ufunc.accumulate(x, axis=axis)
    if dtypes.kind(x.dtype) != "f" or x.size == 0:
        return out
    want_neg = ufunc is np.minimum
    seen = np.logical_or.accumulate((x == 0) & (np.signbit(x) == want_neg), axis=axis)
    zero = np.asarray(-0.0 if want_neg else 0.0, dtype=out.dtype)
    return np.where((out == 0) & seen, zero, out)


cummax_p = standard_primitive(
    "cummax", _cum_abstract_eval("cummax", "iufb"),
    _cum_impl(lambda x, axis: _signed_zero_accumulate(np.maximum, x, axis)))
cummax = _wrapper(cummax_p, "Cumulative maximum along `axis` (from the end if `reverse`).")
ad.primitive_jvps[cummax_p] = _scan_jvp(cummax_p, _max)
batching.primitive_batchers[cummax_p] = _cum_batcher(cummax_p)
register_lowering(cummax_p, _cum_lowering("maximum", max_identity))

cummin_p = standard_primitive(
    "cummin", _cum_abstract_eval("cummin", "iufb"),
    _cum_impl(lambda x, axis: _signed_zero_accumulate(np.minimum, x, axis)))
cummin = _wrapper(cummin_p, "Cumulative minimum along `axis` (from the end if `reverse`).")
ad.primitive_jvps[cummin_p] = _scan_jvp(cummin_p, _min)
batching.primitive_batchers[cummin_p] = _cum_batcher(cummin_p)
register_lowering(cummin_p, _cum_lowering("minimum", min_identity))

# --------------------------------------------------------------------------- cumlogsumexp


def _neg_inf(dtype):
    return np.array(-np.inf, dtype)


cumlogsumexp_p = standard_primitive(
    "cumlogsumexp", _cum_abstract_eval("cumlogsumexp", "f"),
    _cum_impl(lambda x, axis: np.logaddexp.accumulate(x, axis=axis), "logaddexp"))
cumlogsumexp = _wrapper(
    cumlogsumexp_p, "Cumulative log-sum-exp along `axis` (from the end if `reverse`).")
ad.primitive_jvps[cumlogsumexp_p] = _scan_jvp(cumlogsumexp_p, logaddexp, _logaddexp_with_tangent)
batching.primitive_batchers[cumlogsumexp_p] = _cum_batcher(cumlogsumexp_p)
register_lowering(cumlogsumexp_p, _cum_lowering("logaddexp", _neg_inf))
