"""Structural primitives: convert_element_type, broadcast_in_dim, reshape, transpose,
squeeze, rev, iota, concatenate; the wrappers expand_dims, full, full_like, zeros_like_array.

Each primitive's block holds its wrapper and all of its rules: abstract evaluation, NumPy
implementation, JVP, transpose, batching and HLO lowering.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.array import Array
from minijax.compiler.evaluator.elementwise import convert as xla_convert
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.interpreters.ad import is_undefined_primal
from minijax.interpreters.batching import not_mapped
from minijax.lax.utils import (
    canonical_axis,
    is_scalar_literal,
    standard_primitive,
    weak_scalar,
)

# --------------------------------------------------------------------------- batching helpers


def moveaxis(x, src: int, dst: int):
    """Move axis `src` of x to position `dst` (binds lax.transpose when needed)."""
    ndim = get_aval(x).ndim
    src, dst = src % ndim, dst % ndim
    if src == dst:
        return x
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return transpose(x, tuple(perm))


def bdim_at_front(x, bdim, size: int):
    """x with its batch dimension first; unmapped values are broadcast to `size`."""
    if bdim is not_mapped:
        aval = get_aval(x)
        return broadcast_in_dim(x, (size,) + aval.shape, tuple(range(1, aval.ndim + 1)))
    return moveaxis(x, bdim, 0)


# --------------------------------------------------------------------------- convert_element_type


def convert_element_type(operand, new_dtype, weak_type: bool = False):
    """Elementwise cast to `new_dtype` (no-op if the type already matches)."""
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    if is_scalar_literal(operand):
        return standard_cast_scalar(operand, new_dtype, weak_type)
    aval = get_aval(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type:
        return operand
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=weak_type)


def standard_cast_scalar(value, dtype, weak_type):
    if type(value) is float and np.dtype(dtype).kind in "iu":
        # a Python float is a weak float first; XLA's convert saturates (NaN -> 0), as JAX's
        value = np.asarray(value, dtypes.python_scalar_dtype(value))
        return Array(xla_convert(value, dtype), weak_type)
    return Array(dtypes.astype(value, dtype), weak_type)


def _convert_abstract_eval(x, *, new_dtype, weak_type):
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_impl(x, *, new_dtype, weak_type):
    # XLA's convert (the evaluator's, so eager and jit agree bit for bit): float -> int
    # truncates and saturates, NaN becomes 0; complex -> real drops the imaginary part.
    return xla_convert(np.asarray(x), new_dtype)


convert_element_type_p = standard_primitive(
    "convert_element_type", _convert_abstract_eval, _convert_impl)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if not dtypes.is_inexact(new_dtype) or not dtypes.is_inexact(get_aval(x).dtype):
        return out, ad.Zero.from_value(out)
    if type(t) is ad.Zero:
        return out, ad.Zero.from_value(out)
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    old = x.aval
    if type(ct) is ad.Zero:
        return [ad.Zero(old)]
    return [convert_element_type_p.bind(ct, new_dtype=old.dtype, weak_type=old.weak_type)]


def _convert_batch(trace, vals, dims, **params):
    return convert_element_type_p.bind(vals[0], **params), dims[0]


def _convert_lower(ctx, x, *, new_dtype, weak_type):
    return ctx.builder.convert(x, ctx.element_type(new_dtype), metadata=ctx.metadata)


ad.primitive_jvps[convert_element_type_p] = _convert_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_transpose
batching.primitive_batchers[convert_element_type_p] = _convert_batch
register_lowering(convert_element_type_p, _convert_lower)

# --------------------------------------------------------------------------- broadcast_in_dim


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """Broadcast `operand` into `shape`; operand dim i maps to output dim
    broadcast_dimensions[i] (XLA's BroadcastInDim)."""
    shape = tuple(int(d) for d in shape)
    broadcast_dimensions = tuple(int(d) for d in broadcast_dimensions)
    if is_scalar_literal(operand):
        operand = weak_scalar(operand, get_aval(operand).dtype)
    aval = get_aval(operand)
    if aval.shape == shape and broadcast_dimensions == tuple(range(len(shape))):
        return operand
    return broadcast_in_dim_p.bind(operand, shape=shape,
                                   broadcast_dimensions=broadcast_dimensions)


def broadcast(operand, sizes):
    """Add leading dimensions of `sizes` (lax.broadcast)."""
    aval = get_aval(operand)
    dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
    return broadcast_in_dim(operand, tuple(sizes) + aval.shape, dims)


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must "
                        f"have one entry per operand dimension (operand {x.str_short()})")
    if list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must "
                        "be strictly increasing")
    for i, d in enumerate(broadcast_dimensions):
        if not 0 <= d < len(shape) or x.shape[i] not in (1, shape[d]):
            raise TypeError(f"broadcast_in_dim: operand {x.str_short()} cannot be broadcast "
                            f"to shape {shape} with broadcast_dimensions "
                            f"{broadcast_dimensions} (dimension {i} of size {x.shape[i]})")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    x = np.asarray(x)
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p = standard_primitive(
    "broadcast_in_dim", _broadcast_in_dim_abstract_eval, _broadcast_in_dim_impl)


def _broadcast_in_dim_batch(trace, vals, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = moveaxis(x, d, 0)
    size = get_aval(x).shape[0]
    new_shape = (size,) + shape
    new_dims = (0,) + tuple(b + 1 for b in broadcast_dimensions)
    return broadcast_in_dim_p.bind(x, shape=new_shape, broadcast_dimensions=new_dims), 0


def _broadcast_in_dim_lower(ctx, x, *, shape, broadcast_dimensions):
    # XLA's broadcast maps operand dims to output dims of equal size; size-1 operand dims
    # that expand are reshaped away first.
    in_shape = ctx.avals_in[0].shape
    keep = [i for i, d in enumerate(broadcast_dimensions) if in_shape[i] == shape[d]]
    if len(keep) != len(in_shape):
        x = ctx.builder.reshape(x, tuple(in_shape[i] for i in keep), metadata=ctx.metadata)
        broadcast_dimensions = tuple(broadcast_dimensions[i] for i in keep)
    return ctx.builder.broadcast(x, shape, broadcast_dimensions, metadata=ctx.metadata)


# Its transpose, a reduce_sum, is registered in reductions.py.
batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch
register_lowering(broadcast_in_dim_p, _broadcast_in_dim_lower)

# --------------------------------------------------------------------------- reshape


def reshape(operand, new_sizes, dimensions=None):
    """Reshape to `new_sizes` (row-major); `dimensions` transposes first, as in lax."""
    new_sizes = tuple(int(d) for d in new_sizes)
    if dimensions is not None and tuple(dimensions) != tuple(range(len(dimensions))):
        operand = transpose(operand, dimensions)
    if get_aval(operand).shape == new_sizes:
        return operand
    return reshape_p.bind(operand, new_sizes=new_sizes)


def _reshape_abstract_eval(x, *, new_sizes):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size or any(d < 0 for d in new_sizes):
        raise TypeError(f"reshape: cannot reshape {x.str_short()} (size {x.size}) to shape "
                        f"{new_sizes} (size {int(np.prod(new_sizes, dtype=np.int64))})")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape_p = standard_primitive(
    "reshape", _reshape_abstract_eval, lambda x, *, new_sizes: np.reshape(x, new_sizes))


def _reshape_transpose(ct, x, *, new_sizes):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    return [reshape_p.bind(ct, new_sizes=x.aval.shape)]


def _reshape_batch(trace, vals, dims, *, new_sizes):
    x = moveaxis(vals[0], dims[0], 0)
    size = get_aval(x).shape[0]
    return reshape_p.bind(x, new_sizes=(size,) + new_sizes), 0


def _reshape_lower(ctx, x, *, new_sizes):
    return ctx.builder.reshape(x, new_sizes, metadata=ctx.metadata)


ad.deflinear(reshape_p, _reshape_transpose)
batching.primitive_batchers[reshape_p] = _reshape_batch
register_lowering(reshape_p, _reshape_lower)

# --------------------------------------------------------------------------- transpose


def transpose(operand, permutation):
    """Permute dimensions: output dim i is operand dim permutation[i]."""
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return operand
    return transpose_p.bind(operand, permutation=permutation)


def _transpose_abstract_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose: permutation {permutation} is not a permutation of the "
                        f"dimensions of {x.str_short()}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


transpose_p = standard_primitive(
    "transpose", _transpose_abstract_eval,
    lambda x, *, permutation: np.transpose(x, permutation))


def _transpose_transpose(ct, x, *, permutation):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    return [transpose_p.bind(ct, permutation=tuple(np.argsort(permutation).tolist()))]


def _transpose_batch(trace, vals, dims, *, permutation):
    (x,), (d,) = vals, dims
    # The batch axis stays where it was; operand dims shift around it.
    perm = [d] + [p + (1 if p >= d else 0) for p in permutation]
    return transpose_p.bind(x, permutation=tuple(perm)), 0


def _transpose_lower(ctx, x, *, permutation):
    return ctx.builder.transpose(x, permutation, metadata=ctx.metadata)


ad.deflinear(transpose_p, _transpose_transpose)
batching.primitive_batchers[transpose_p] = _transpose_batch
register_lowering(transpose_p, _transpose_lower)

_ = is_undefined_primal  # re-exported for rules written in sibling modules

# --------------------------------------------------------------------------- squeeze


def squeeze(array, dimensions):
    """Remove the size-1 `dimensions` (negative dimensions count from the end)."""
    aval = get_aval(array)
    dims = tuple(canonical_axis(int(d), aval.ndim, "squeeze") for d in dimensions)
    if len(set(dims)) != len(dims):
        raise ValueError(f"squeeze: dimensions are not unique: {tuple(dimensions)}")
    if not dims:
        return array
    return squeeze_p.bind(array, dimensions=tuple(sorted(dims)))


def _squeeze_abstract_eval(x, *, dimensions):
    for d in dimensions:
        if not 0 <= d < x.ndim or x.shape[d] != 1:
            raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size "
                             f"not equal to one, got shape={x.shape} and "
                             f"dimensions={dimensions}")
    shape = tuple(n for i, n in enumerate(x.shape) if i not in dimensions)
    return ShapedArray(shape, x.dtype, x.weak_type)


squeeze_p = standard_primitive(
    "squeeze", _squeeze_abstract_eval,
    lambda x, *, dimensions: np.reshape(x, _squeezed_shape(np.shape(x), dimensions)))


def _squeezed_shape(shape, dimensions):
    return tuple(n for i, n in enumerate(shape) if i not in dimensions)


def _squeeze_transpose(ct, x, *, dimensions):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    return [reshape(ct, x.aval.shape)]


def _squeeze_batch(trace, vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    dims_in = tuple(p + (1 if p >= d else 0) for p in dimensions)
    out_dim = d - sum(1 for p in dims_in if p < d)
    return squeeze_p.bind(x, dimensions=dims_in), out_dim


def _squeeze_lower(ctx, x, *, dimensions):
    return ctx.builder.reshape(x, ctx.avals_out.shape, metadata=ctx.metadata)


ad.deflinear(squeeze_p, _squeeze_transpose)
batching.primitive_batchers[squeeze_p] = _squeeze_batch
register_lowering(squeeze_p, _squeeze_lower)


def expand_dims(array, dimensions):
    """Insert size-1 dimensions at `dimensions` (positions in the result)."""
    dimensions = tuple(int(d) for d in dimensions)
    if len(set(dimensions)) != len(dimensions):
        raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
    aval = get_aval(array)
    ndim_out = aval.ndim + len(dimensions)
    dims = {canonical_axis(d, ndim_out, "expand_dims") for d in dimensions}
    if len(dims) != len(dimensions):
        raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
    shape = list(aval.shape)
    for d in sorted(dims):
        shape.insert(d, 1)
    kept = tuple(i for i in range(ndim_out) if i not in dims)
    return broadcast_in_dim(array, shape, kept)

# --------------------------------------------------------------------------- rev


def rev(operand, dimensions):
    """Reverse the order of elements along `dimensions` (XLA's Rev)."""
    dimensions = tuple(int(d) for d in dimensions)
    if not dimensions:
        return operand
    return rev_p.bind(operand, dimensions=dimensions)


def _rev_abstract_eval(x, *, dimensions):
    if len(set(dimensions)) != len(dimensions):
        raise TypeError(f"rev dimensions must be unique, got {dimensions}")
    if any(not 0 <= d < x.ndim for d in dimensions):
        raise TypeError(f"rev dimensions must be in [0, ndim), got dimensions {dimensions} "
                        f"for operand {x.str_short()}")
    return x


rev_p = standard_primitive("rev", _rev_abstract_eval,
                           lambda x, *, dimensions: np.flip(x, dimensions))
ad.deflinear(rev_p, lambda ct, x, *, dimensions: [
    ad.Zero(x.aval) if type(ct) is ad.Zero else rev_p.bind(ct, dimensions=dimensions)])


def _rev_batch(trace, vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    return rev_p.bind(x, dimensions=tuple(p + (1 if p >= d else 0) for p in dimensions)), d


batching.primitive_batchers[rev_p] = _rev_batch
register_lowering(rev_p, lambda ctx, x, *, dimensions: ctx.builder.reverse(
    x, dimensions, metadata=ctx.metadata))

# --------------------------------------------------------------------------- iota


def iota(dtype, size):
    """`[0, 1, ..., size - 1]` of `dtype` (XLA's Iota)."""
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension):
    """An array of `shape` whose values count up along `dimension`."""
    dtype = dtypes.canonicalize_dtype(dtype)
    shape = tuple(int(d) for d in shape)
    dimension = int(dimension)
    if shape and -len(shape) <= dimension < 0:
        dimension += len(shape)
    return iota_p.bind(dtype=dtype, shape=shape, dimension=dimension)


def _iota_abstract_eval(*, dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota dimension must be between 0 and len(shape), got "
                         f"dimension={dimension} for shape {shape}")
    if any(d < 0 for d in shape):
        raise ValueError(f"iota: shape {shape} has a negative dimension")
    if dtypes.kind(np.dtype(dtype)) not in "iufc":
        raise TypeError(f"iota does not accept dtype {dtype}; use an integer, floating or "
                        "complex dtype")
    return ShapedArray(shape, dtype, False)


def _iota_impl(*, dtype, shape, dimension):
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(np.arange(shape[dimension], dtype=dtype).reshape(view), shape)


iota_p = standard_primitive("iota", _iota_abstract_eval, _iota_impl)
register_lowering(iota_p, lambda ctx, *, dtype, shape, dimension: ctx.builder.iota(
    ctx.shape_of(ctx.avals_out), dimension, metadata=ctx.metadata))

# --------------------------------------------------------------------------- full


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with the scalar `fill_value` (weakly typed if dtype is
    None and fill_value is a Python scalar)."""
    shape = tuple(int(d) for d in shape)
    fill_aval = get_aval(fill_value)
    if fill_aval.shape:
        raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                        f"{fill_aval.shape}.")
    weak_type = dtype is None and fill_aval.weak_type
    dtype = dtypes.canonicalize_dtype(fill_aval.dtype if dtype is None else dtype)
    value = convert_element_type(fill_value, dtype, weak_type)
    return broadcast_in_dim(value, shape, ())


def full_like(x, fill_value, dtype=None, shape=None):
    """Like `full`, with the shape and dtype (and weak type) of `x` by default."""
    aval = get_aval(x)
    shape = aval.shape if shape is None else tuple(int(d) for d in shape)
    weak_type = dtype is None and aval.weak_type
    dtype = aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    return full(shape, convert_element_type(fill_value, dtype, weak_type))


def zeros_like_array(x):
    """Zeros with the shape and dtype of `x`."""
    return full_like(x, 0)

# --------------------------------------------------------------------------- concatenate


def concatenate(operands, dimension):
    """Join arrays of equal rank and dtype along `dimension` (XLA's Concatenate)."""
    operands = list(operands)
    if len(operands) == 1:
        get_aval(operands[0])
        return operands[0]
    return concatenate_p.bind(*operands, dimension=int(dimension))


def _concatenate_abstract_eval(*xs, dimension):
    if not xs:
        raise TypeError("concatenate requires a non-empty sequence of operands")
    text = ", ".join(x.str_short() for x in xs)
    if len({x.ndim for x in xs}) != 1:
        raise TypeError(f"concatenate: cannot concatenate arrays with different numbers of "
                        f"dimensions: got {text}")
    if not 0 <= dimension < xs[0].ndim:
        raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for "
                        f"shapes {text}")
    if len({x.dtype for x in xs}) != 1:
        raise TypeError(f"concatenate: cannot concatenate arrays with different dtypes: {text}")
    others = {x.shape[:dimension] + x.shape[dimension + 1:] for x in xs}
    if len(others) != 1:
        raise TypeError(f"concatenate: cannot concatenate arrays with shapes that differ in "
                        f"dimensions other than the one being concatenated: concatenating "
                        f"along dimension {dimension} for shapes {text}")
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))


concatenate_p = standard_primitive(
    "concatenate", _concatenate_abstract_eval,
    lambda *xs, dimension: np.concatenate([np.asarray(x) for x in xs], axis=dimension))


def _concatenate_batch(trace, vals, dims, *, dimension):
    size = trace.axis_size
    moved = [bdim_at_front(v, d, size) for v, d in zip(vals, dims, strict=True)]
    return concatenate_p.bind(*moved, dimension=dimension + 1), 0


def _concatenate_lower(ctx, *xs, dimension):
    return ctx.builder.concatenate(xs, dimension, metadata=ctx.metadata)


# Its transpose (slices) is registered in slicing.py.
batching.primitive_batchers[concatenate_p] = _concatenate_batch
register_lowering(concatenate_p, _concatenate_lower)
