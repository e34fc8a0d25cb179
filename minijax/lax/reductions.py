"""Reduction primitives: reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and,
reduce_or, reduce_xor, argmax and argmin.

Each block holds the wrapper and all rules (abstract eval, NumPy impl with XLA semantics,
JVP, transpose for the linear reduce_sum, batching, HLO lowering); the JVPs of reduce_max,
reduce_min and reduce_prod, which need elementwise ops, are in reductions_jvp.py. The
transpose of broadcast_in_dim (a reduce_sum) is registered here too. The generic
`lax.reduce` lives in reduce_generic.py and the cumulative reductions in cumulative.py.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.compiler.hlo.ir import Shape
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.lax.structural import broadcast_in_dim, broadcast_in_dim_p, reshape
from minijax.lax.utils import standard_primitive

_KIND_NAMES = {"f": "floating", "c": "complex", "i": "signed integer",
               "u": "unsigned integer", "b": "boolean"}


def _check_axes(name, x, axes):
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: duplicate value in axes {axes} for {x.str_short()}")
    for a in axes:
        if not 0 <= a < x.ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for {x.str_short()}")


def _reduce_abstract_eval(name, kinds=None):
    def rule(x, *, axes):
        _check_axes(name, x, axes)
        if kinds is not None and dtypes.kind(x.dtype) not in kinds:
            allowed = ", ".join(_KIND_NAMES[k] for k in kinds)
            raise TypeError(f"{name} does not accept dtype {x.dtype} ({x.str_short()}); "
                            f"accepted: {allowed}")
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type)
    return rule


def _canonical_axes(operand, axes):
    """Axes as a sorted tuple of non-negative ints (negative axes count from the end)."""
    ndim = get_aval(operand).ndim
    out = []
    for a in axes:
        a = int(a)
        out.append(a + ndim if -ndim <= a < 0 else a)
    return tuple(sorted(out))


def _reduce_batcher(prim):
    def rule(trace, vals, dims, *, axes):
        (x,), (d,) = vals, dims
        new_axes = tuple(a + 1 if a >= d else a for a in axes)
        out_dim = d - sum(1 for a in axes if a < d)
        return prim.bind(x, axes=new_axes), out_dim
    return rule


def _reduce_lowering(opcode, identity_fn):
    def rule(ctx, x, *, axes):
        b = ctx.builder
        dtype = ctx.avals_in[0].dtype
        narrow_et = None
        if opcode == "multiply" and dtypes.is_16bit_float(dtype):
            # Products accumulate in float32 as eagerly (sums are widened by the codegen).
            narrow_et, dtype = ctx.element_type(dtype), np.dtype(np.float32)
            x = b.convert(x, "f32", metadata=ctx.metadata)
        et = ctx.element_type(dtype)
        init = b.constant(np.asarray(identity_fn(dtype), dtype))
        comp = ctx.scalar_computation(f"{opcode}_{et}", opcode, et)
        out = b.reduce(x, init, axes, comp, metadata=ctx.metadata)
        return out if narrow_et is None else b.convert(out, narrow_et, metadata=ctx.metadata)
    return rule


def max_identity(dtype):
    """The identity of max for `dtype`: -inf (-inf+0j for complex, as JAX's), the integer
    minimum, or False."""
    dtype = np.dtype(dtype)
    if dtypes.kind(dtype) in "fc":
        return np.array(-np.inf, dtype)
    if dtype.kind in "iu":
        return np.array(np.iinfo(dtype).min, dtype)
    return np.array(False)


def min_identity(dtype):
    """The identity of min for `dtype`: inf (inf+0j for complex), the integer maximum, or
    True."""
    dtype = np.dtype(dtype)
    if dtypes.kind(dtype) in "fc":
        return np.array(np.inf, dtype)
    if dtype.kind in "iu":
        return np.array(np.iinfo(dtype).max, dtype)
    return np.array(True)


def _identity_fill(x, axes, identity):
    """The result of a reduction over an empty set of elements: the identity everywhere."""
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return np.full(shape, identity, x.dtype)


# --------------------------------------------------------------------------- reduce_sum


#: Sums for dtypes that XLA accumulates in their own narrow type (float8), keyed by np.dtype:
#: `rule(operand, axes)`. lax/float8_sum.py fills it; it is built from elementwise ops that
#: sit above this module.
NARROW_ACCUMULATION_SUMS: dict = {}


def reduce_sum(operand, axes):
    """Sum over `axes` (a sequence of dimension indices). float8 operands are summed in
    XLA's order with a float8 accumulator, as JAX does (minijax.lax.float8_sum)."""
    axes = _canonical_axes(operand, axes)
    narrow_sum = NARROW_ACCUMULATION_SUMS.get(np.dtype(get_aval(operand).dtype))
    if narrow_sum is not None and axes:
        return narrow_sum(operand, axes)
    return reduce_sum_p.bind(operand, axes=axes)


def _wide_reduce(np_fn):
    """np_fn over axes; float16/bfloat16 accumulate in float32 and round once, as XLA does
    (NumPy's bfloat16 sum stalls at 256 for ones)."""
    def impl(x, *, axes):
        x = np.asarray(x)
        if dtypes.is_16bit_float(x.dtype):
            return np_fn(x, axis=axes, dtype=np.float32).astype(x.dtype)
        return np_fn(x, axis=axes, dtype=x.dtype)
    return impl


reduce_sum_p = standard_primitive(
    "reduce_sum", _reduce_abstract_eval("reduce_sum", "iufc"), _wide_reduce(np.sum))


def _reduce_sum_transpose(ct, x, *, axes):
    shape = x.aval.shape
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [broadcast_in_dim(ct, shape, kept)]


ad.deflinear(reduce_sum_p, _reduce_sum_transpose)


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    in_aval = x.aval
    if type(ct) is ad.Zero:
        return [ad.Zero(in_aval)]
    new_dims = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    expanded = [d for i, d in enumerate(broadcast_dimensions)
                if in_aval.shape[i] == 1 and shape[d] != 1]
    summed = reduce_sum(ct, tuple(sorted(new_dims + expanded)))
    return [reshape(summed, in_aval.shape)]


ad.deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)


def unbroadcast_scalar(ct, operand_aval):
    """Sum a cotangent down to a rank-0 operand that an elementwise op broadcast."""
    ct_aval = get_aval(ct)
    if operand_aval.ndim == 0 and ct_aval.ndim > 0:
        return reduce_sum(ct, tuple(range(ct_aval.ndim)))
    return ct

batching.primitive_batchers[reduce_sum_p] = _reduce_batcher(reduce_sum_p)
register_lowering(reduce_sum_p, _reduce_lowering("add", lambda d: np.zeros((), d)))

# --------------------------------------------------------------------------- reduce_max / min


def reduce_max(operand, axes):
    """Maximum over `axes` (NaN propagates; an empty reduction gives -inf / int min)."""
    return reduce_max_p.bind(operand, axes=_canonical_axes(operand, axes))


def reduce_min(operand, axes):
    """Minimum over `axes` (NaN propagates; an empty reduction gives inf / int max)."""
    return reduce_min_p.bind(operand, axes=_canonical_axes(operand, axes))


def _minmax_impl(np_fn, identity_fn):
    def impl(x, *, axes):
        x = np.asarray(x)
        if any(x.shape[a] == 0 for a in axes):
            return _identity_fill(x, axes, identity_fn(x.dtype))
        out = np_fn(x, axis=axes)
        if dtypes.kind(x.dtype) != "f":
            return out
        # XLA's signed zeros (max(-0, 0) = 0, min(-0, 0) = -0); NumPy returns either zero
        want_neg = np_fn is np.min
        seen = np.any((x == 0) & (np.signbit(x) == want_neg), axis=axes)
        zero = np.asarray(-0.0 if want_neg else 0.0, dtype=x.dtype)
        return np.where((out == 0) & seen, zero, out)
    return impl


# Complex numbers compare lexicographically (real part, then imaginary), as in JAX and XLA.
reduce_max_p = standard_primitive(
    "reduce_max", _reduce_abstract_eval("reduce_max", "iufbc"),
    _minmax_impl(np.max, max_identity))
reduce_min_p = standard_primitive(
    "reduce_min", _reduce_abstract_eval("reduce_min", "iufbc"),
    _minmax_impl(np.min, min_identity))


batching.primitive_batchers[reduce_max_p] = _reduce_batcher(reduce_max_p)
batching.primitive_batchers[reduce_min_p] = _reduce_batcher(reduce_min_p)


def _minmax_lowering(opcode, identity_fn):
    def rule(ctx, x, *, axes):
        if ctx.avals_in[0].dtype == np.bool_:
            opcode_ = "or" if opcode == "maximum" else "and"
            return _reduce_lowering(opcode_, identity_fn)(ctx, x, axes=axes)
        return _reduce_lowering(opcode, identity_fn)(ctx, x, axes=axes)
    return rule


register_lowering(reduce_max_p, _minmax_lowering("maximum", max_identity))
register_lowering(reduce_min_p, _minmax_lowering("minimum", min_identity))

# --------------------------------------------------------------------------- reduce_prod


def reduce_prod(operand, axes):
    """Product over `axes` (integer products wrap around, as in XLA)."""
    return reduce_prod_p.bind(operand, axes=_canonical_axes(operand, axes))


reduce_prod_p = standard_primitive(
    "reduce_prod", _reduce_abstract_eval("reduce_prod", "iufc"), _wide_reduce(np.prod))



batching.primitive_batchers[reduce_prod_p] = _reduce_batcher(reduce_prod_p)
register_lowering(reduce_prod_p, _reduce_lowering("multiply", lambda d: np.ones((), d)))

# --------------------------------------------------------------------------- and / or / xor


def reduce_and(operand, axes):
    """Bitwise (logical for bool) AND over `axes`."""
    return reduce_and_p.bind(operand, axes=_canonical_axes(operand, axes))


def reduce_or(operand, axes):
    """Bitwise (logical for bool) OR over `axes`."""
    return reduce_or_p.bind(operand, axes=_canonical_axes(operand, axes))


def reduce_xor(operand, axes):
    """Bitwise (logical for bool) XOR over `axes`."""
    return reduce_xor_p.bind(operand, axes=_canonical_axes(operand, axes))


def _bitwise_impl(ufunc):
    def impl(x, *, axes):
        x = np.asarray(x)
        if not axes:
            return x
        return ufunc.reduce(x, axis=axes).astype(x.dtype)
    return impl


def _all_ones(dtype):
    dtype = np.dtype(dtype)
    return np.array(True) if dtype == np.bool_ else np.array(-1).astype(dtype)


reduce_and_p = standard_primitive("reduce_and", _reduce_abstract_eval("reduce_and", "iub"),
                                  _bitwise_impl(np.bitwise_and))
reduce_or_p = standard_primitive("reduce_or", _reduce_abstract_eval("reduce_or", "iub"),
                                 _bitwise_impl(np.bitwise_or))
reduce_xor_p = standard_primitive("reduce_xor", _reduce_abstract_eval("reduce_xor", "iub"),
                                  _bitwise_impl(np.bitwise_xor))
for _prim, _opcode, _identity in ((reduce_and_p, "and", _all_ones),
                                  (reduce_or_p, "or", lambda d: np.zeros((), d)),
                                  (reduce_xor_p, "xor", lambda d: np.zeros((), d))):
    ad.defjvp_zero(_prim)
    batching.primitive_batchers[_prim] = _reduce_batcher(_prim)
    register_lowering(_prim, _reduce_lowering(_opcode, _identity))

# --------------------------------------------------------------------------- argmax / argmin


def argmax(operand, axis: int, index_dtype):
    """Index of the maximum along `axis` (the first one on ties; NaN counts as the largest
    value, so the first NaN wins)."""
    return argmax_p.bind(operand, axes=(_canonical_axes(operand, (axis,))[0],),
                         index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand, axis: int, index_dtype):
    """Index of the minimum along `axis` (the first one on ties; the first NaN wins)."""
    return argmin_p.bind(operand, axes=(_canonical_axes(operand, (axis,))[0],),
                         index_dtype=dtypes.canonicalize_dtype(index_dtype))


def _argminmax_abstract_eval(name):
    def rule(x, *, axes, index_dtype):
        _check_axes(name, x, axes)
        if len(axes) != 1:
            raise ValueError(f"{name} takes exactly one axis, got axes={axes}")
        if np.dtype(index_dtype).kind not in "iu":
            raise TypeError(f"{name}: index_dtype must be an integer type, got {index_dtype}")
        if x.dtype.kind == "c":
            raise TypeError(f"{name} does not accept complex operands, got {x.str_short()}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name} requires a non-empty reduced dimension: operand "
                             f"{x.str_short()}, axis {axes[0]}")
        shape = tuple(d for i, d in enumerate(x.shape) if i != axes[0])
        return ShapedArray(shape, index_dtype, False)
    return rule


def _argminmax_impl(np_fn):
    def impl(x, *, axes, index_dtype):
        return np_fn(np.asarray(x), axis=axes[0]).astype(index_dtype)
    return impl


argmax_p = standard_primitive("argmax", _argminmax_abstract_eval("argmax"),
                              _argminmax_impl(np.argmax))
argmin_p = standard_primitive("argmin", _argminmax_abstract_eval("argmin"),
                              _argminmax_impl(np.argmin))


def _argminmax_batcher(prim):
    def rule(trace, vals, dims, *, axes, index_dtype):
        (x,), (d,) = vals, dims
        axis = axes[0] + 1 if axes[0] >= d else axes[0]
        out_dim = d - 1 if axes[0] < d else d
        return prim.bind(x, axes=(axis,), index_dtype=index_dtype), out_dim
    return rule


def _argminmax_lowering(direction):
    # A variadic reduce over (value, index) pairs. The comparator prefers the better value,
    # then NaN (a NaN beats any number), then the smaller index on ties: this order is
    # commutative and associative, so any reduction tree gives the first extremal index.
    def rule(ctx, x, *, axes, index_dtype):
        b = ctx.builder
        aval = ctx.avals_in[0]
        vt, it = ctx.element_type(aval.dtype), ctx.element_type(index_dtype)
        comp = _argminmax_computation(ctx, direction, aval.dtype, vt, it)
        index = b.iota(Shape(it, aval.shape), axes[0])
        identity = max_identity(aval.dtype) if direction == "GT" else min_identity(aval.dtype)
        out = b.reduce([x, index], [b.constant(identity), b.constant(np.zeros((), index_dtype))],
                       axes, comp, metadata=ctx.metadata)
        return b.get_tuple_element(out, 1)
    return rule


def _argminmax_computation(ctx, direction, dtype, vt, it):
    name = f"argm{'ax' if direction == 'GT' else 'in'}_{vt}_{it}"
    cb = ctx.new_computation(name)
    a = cb.parameter(0, Shape(vt, ()))
    ia = cb.parameter(1, Shape(it, ()))
    c = cb.parameter(2, Shape(vt, ()))
    ic = cb.parameter(3, Shape(it, ()))
    better = cb.compare(a, c, direction)
    same = cb.compare(a, c, "EQ")
    if dtypes.kind(np.dtype(dtype)) == "f":
        a_nan = cb.compare(a, a, "NE")
        c_nan = cb.compare(c, c, "NE")
        better = cb.or_(cb.and_(a_nan, cb.not_(c_nan)), cb.and_(better, cb.not_(c_nan)))
        same = cb.or_(same, cb.and_(a_nan, c_nan))
    first = cb.compare(ia, ic, "LT")
    pick_a = cb.or_(better, cb.and_(same, first))
    root = cb.tuple([cb.select(pick_a, a, c), cb.select(pick_a, ia, ic)])
    cb.set_root(root)
    return cb.computation


for _prim, _dir in ((argmax_p, "GT"), (argmin_p, "LT")):
    ad.defjvp_zero(_prim)
    batching.primitive_batchers[_prim] = _argminmax_batcher(_prim)
    register_lowering(_prim, _argminmax_lowering(_dir))
