"""Structural primitives: convert_element_type, broadcast_in_dim, reshape, transpose.

Each primitive's block holds its wrapper and all of its rules: abstract evaluation, NumPy
implementation, JVP, transpose, batching and HLO lowering.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.interpreters.ad import is_undefined_primal
from minijax.lax.utils import is_scalar_literal, standard_primitive

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
    from minijax.array import Array
    return Array(np.asarray(value).astype(dtype), weak_type)


def _convert_abstract_eval(x, *, new_dtype, weak_type):
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_impl(x, *, new_dtype, weak_type):
    x = np.asarray(x)
    if x.dtype.kind == "c" and np.dtype(new_dtype).kind != "c":
        x = x.real
    if x.dtype.kind == "f" and np.dtype(new_dtype).kind in "iu":
        # XLA saturates float->int conversion and maps NaN to 0.
        info = np.iinfo(new_dtype)
        x = np.nan_to_num(x, nan=0.0, posinf=info.max, neginf=info.min)
        x = np.clip(x, info.min, info.max)
    return x.astype(new_dtype)


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
        from minijax.lax.utils import weak_scalar
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


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    from minijax.lax.reductions import reduce_sum
    in_aval = x.aval
    if type(ct) is ad.Zero:
        return [ad.Zero(in_aval)]
    new_dims = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    expanded = [d for i, d in enumerate(broadcast_dimensions)
                if in_aval.shape[i] == 1 and shape[d] != 1]
    summed = reduce_sum(ct, tuple(sorted(new_dims + expanded)))
    return [reshape(summed, in_aval.shape)]


def _broadcast_in_dim_batch(trace, vals, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    from minijax.lax.utils import moveaxis
    x = moveaxis(x, d, 0)
    size = get_aval(x).shape[0]
    new_shape = (size,) + shape
    new_dims = (0,) + tuple(b + 1 for b in broadcast_dimensions)
    return broadcast_in_dim_p.bind(x, shape=new_shape, broadcast_dimensions=new_dims), 0


def _broadcast_in_dim_lower(ctx, x, *, shape, broadcast_dimensions):
    return ctx.builder.broadcast(x, shape, broadcast_dimensions, metadata=ctx.metadata)


ad.deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
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
    from minijax.lax.utils import moveaxis
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
