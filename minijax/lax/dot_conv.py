"""Contractions: dot_general, dot, conv_general_dilated (and its conv / conv_with_general_padding
forms). Helpers for dimension numbers, padding and the NumPy convolution are in conv_util.py.

dot_general's output dimensions are (batch..., lhs free..., rhs free...). Both primitives
are bilinear: the JVP applies them to each tangent, and each operand has a transpose rule
(for convolutions, the convolutions JAX derives: a flipped kernel with strides turned into
lhs dilation for the lhs, and a convolution of lhs with the cotangent for the rhs).
"""

from __future__ import annotations

import enum
import operator

import numpy as np

from minijax import dtypes
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import ShapedArray, get_aval
from minijax.interpreters import ad, batching
from minijax.lax import structural
from minijax.lax.conv_util import (
    ConvDimensionNumbers,
    check_ints,
    conv_dimension_numbers,
    conv_general_permutations,
    conv_numpy,
    conv_shape,
    dilate_dim,
    dim_labels,
    padtype_to_pads,
    vjp_lhs_padding,
    vjp_rhs_padding,
)
from minijax.lax.out_sharding import check_out_sharding
from minijax.lax.structural import convert_element_type, moveaxis, reshape, transpose
from minijax.lax.utils import promote_scalars, standard_primitive

__all__ = ["ConvDimensionNumbers", "Precision", "conv", "conv_dimension_numbers",
           "conv_general_dilated", "conv_general_permutations", "conv_with_general_padding",
           "dot", "dot_general", "padtype_to_pads"]


class Precision(enum.Enum):
    """Matmul precision hints (accepted and recorded; the reference backends compute in at
    least the operand precision)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    def __str__(self) -> str:
        return self.name


def _canonical_precision(precision):
    if precision is None or isinstance(precision, Precision):
        return precision
    if isinstance(precision, str):
        names = {"default": "DEFAULT", "bfloat16": "DEFAULT", "high": "HIGH",
                 "tensorfloat32": "HIGH", "highest": "HIGHEST", "float32": "HIGHEST",
                 "fastest": "DEFAULT"}
        key = names.get(precision.lower())
        if key is None:
            raise ValueError(f"Unrecognized precision {precision!r}; expected one of "
                             "'default', 'high', 'highest' or a lax.Precision")
        return Precision[key]
    if isinstance(precision, (tuple, list)) and len(precision) == 2:
        return tuple(_canonical_precision(p) for p in precision)
    raise ValueError(f"precision argument must be None, a string, a lax.Precision or a pair "
                     f"of them, got {precision!r}")


def _canonical_preferred(preferred_element_type):
    if preferred_element_type is None:
        return None
    return dtypes.canonicalize_dtype(preferred_element_type)


def _out_dtype(name, lhs, rhs, preferred):
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"{name} requires operands of the same dtype, got {lhs.str_short()} "
                        f"and {rhs.str_short()}. Convert one with lax.convert_element_type, "
                        "or use jnp functions, which promote dtypes.")
    if preferred is None:
        return lhs.dtype
    preferred = np.dtype(preferred)
    if dtypes.kind(lhs.dtype) in "fc" and dtypes.kind(preferred) not in "fc":
        raise TypeError(f"{name}: preferred_element_type {preferred} must be a floating type "
                        f"for floating operands {lhs.str_short()} and {rhs.str_short()}")
    return preferred


def _compute_dtype(dtype):
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


# --------------------------------------------------------------------------- dot_general


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
    """General tensor contraction. `dimension_numbers` is ((lhs_contracting,
    rhs_contracting), (lhs_batch, rhs_batch)); the result has the batch dimensions, then the
    remaining lhs dimensions, then the remaining rhs dimensions. `out_sharding` (JAX's
    explicit-sharding placement of the result) must be None: minijax has no explicit mode."""
    check_no_out_sharding("dot_general", out_sharding)
    (lc, rc), (lb, rb) = dimension_numbers
    dims = ((tuple(map(operator.index, lc)), tuple(map(operator.index, rc))),
            (tuple(map(operator.index, lb)), tuple(map(operator.index, rb))))
    lhs, rhs = promote_scalars("dot_general", lhs, rhs)
    lhs_dtype, rhs_dtype = get_aval(lhs).dtype, get_aval(rhs).dtype
    if lhs_dtype != rhs_dtype:
        # JAX accepts mixed operands: both are converted to XLA's higher-precision type.
        dtype = _higher_precision_type(lhs_dtype, rhs_dtype)
        lhs, rhs = convert_element_type(lhs, dtype), convert_element_type(rhs, dtype)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dims,
                              precision=_canonical_precision(precision),
                              preferred_element_type=_canonical_preferred(
                                  preferred_element_type))


def _precision_key(dtype):
    """XLA's HigherPrecisionType order: complex, then float range, then float precision,
    then bit width, then signed over unsigned."""
    dtype = np.dtype(dtype)
    kind = dtypes.kind(dtype)
    component = dtypes.real_dtype(dtype) if kind == "c" else dtype
    info = dtypes.finfo(component) if kind in "fc" else None
    return (kind == "c", info.maxexp if info else -1, info.nmant if info else -1,
            component.itemsize if dtype != np.bool_ else 0, kind == "i")


def _higher_precision_type(a, b):
    return a if _precision_key(a) > _precision_key(b) else b


def check_no_out_sharding(name: str, out_sharding) -> None:
    """JAX's `out_sharding=` argument: accepted when None (the default placement)."""
    if out_sharding is not None:
        raise NotImplementedError(
            f"{name}(out_sharding={out_sharding!r}): minijax has no explicit-sharding mode; "
            "place the result with jax.lax.with_sharding_constraint or jit's out_shardings.")


def _free_dims(ndim, contract, batch):
    return [d for d in range(ndim) if d not in contract and d not in batch]


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision,
                               preferred_element_type):
    (lc, rc), (lb, rb) = dimension_numbers
    shapes = f"lhs {lhs.str_short()}, rhs {rhs.str_short()}"
    for name, dims, aval in (("lhs contracting", lc, lhs), ("rhs contracting", rc, rhs),
                             ("lhs batch", lb, lhs), ("rhs batch", rb, rhs)):
        if any(not 0 <= d < aval.ndim for d in dims):
            raise TypeError(f"dot_general requires {name} dimensions {dims} to be in range "
                            f"for rank {aval.ndim} ({shapes})")
        if len(set(dims)) != len(dims):
            raise TypeError(f"dot_general requires {name} dimensions {dims} to be distinct "
                            f"({shapes})")
    if set(lc) & set(lb) or set(rc) & set(rb):
        raise TypeError(f"dot_general requires contracting and batch dimensions to be "
                        f"disjoint, got {dimension_numbers} ({shapes})")
    if len(lb) != len(rb):
        raise TypeError(f"dot_general requires equal numbers of lhs and rhs batch dimensions, "
                        f"got lhs_batch={lb} and rhs_batch={rb} ({shapes})")
    if len(lc) != len(rc):
        raise TypeError(f"dot_general requires equal numbers of lhs and rhs contracting "
                        f"dimensions, got lhs_contracting={lc} and rhs_contracting={rc} "
                        f"({shapes})")
    lbs, rbs = tuple(lhs.shape[d] for d in lb), tuple(rhs.shape[d] for d in rb)
    if lbs != rbs:
        raise TypeError(f"dot_general requires lhs batch dimensions and rhs batch dimensions "
                        f"to have the same shape, got {lbs} and {rbs} ({shapes})")
    lcs, rcs = tuple(lhs.shape[d] for d in lc), tuple(rhs.shape[d] for d in rc)
    if lcs != rcs:
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, "
                        f"got {lcs} and {rcs} ({shapes})")
    dtype = _out_dtype("dot_general", lhs, rhs, preferred_element_type)
    shape = (lbs + tuple(lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb))
             + tuple(rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb)))
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _dot_general_impl(lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    cd = _compute_dtype(out_dtype)
    lf, rf = _free_dims(lhs.ndim, lc, lb), _free_dims(rhs.ndim, rc, rb)

    def size(x, ds):
        return int(np.prod([x.shape[d] for d in ds], dtype=np.int64))
    b, m, k, n = size(lhs, lb), size(lhs, lf), size(lhs, lc), size(rhs, rf)
    left = np.transpose(lhs, list(lb) + lf + list(lc)).reshape(b, m, k).astype(cd, copy=False)
    right = np.transpose(rhs, list(rb) + list(rc) + rf).reshape(b, k, n).astype(cd,
                                                                                copy=False)
    out = np.matmul(left, right)
    shape = ([lhs.shape[d] for d in lb] + [lhs.shape[d] for d in lf]
             + [rhs.shape[d] for d in rf])
    return out.reshape(shape).astype(out_dtype, copy=False)


dot_general_p = standard_primitive("dot_general", _dot_general_abstract_eval,
                                   _dot_general_impl)


def _like_cotangent(ct, other, preferred):
    """With a preferred_element_type the cotangent's dtype may differ from the other
    operand's: compute the transpose in the cotangent's dtype (the result is converted back
    to the operand's dtype afterwards)."""
    dtype = get_aval(ct).dtype
    if get_aval(other).dtype != dtype:
        return convert_element_type(other, dtype), None
    return other, preferred


def _dot_transpose_operand(ct, x_aval, y, dimension_numbers, precision, preferred, swap):
    """Cotangent of operand x of dot_general(x, y) (or of dot_general(y, x) if swap)."""
    (xc, yc), (xb, yb) = dimension_numbers
    y_ndim = get_aval(y).ndim
    x_kept = _free_dims(x_aval.ndim, xc, xb)
    y_kept = _free_dims(y_ndim, yc, yb)
    nb = len(xb)
    if swap:
        ans_y = tuple(range(nb, nb + len(y_kept)))
    else:
        ans_y = tuple(range(nb + len(x_kept), nb + len(x_kept) + len(y_kept)))
    dims = ((ans_y, tuple(y_kept)), (tuple(range(nb)), tuple(yb)))
    # The result's dimensions are x's batch, x's free, then x's contracting dimensions in
    # the order of y's (sorted) contracting dimensions.
    x_contract_by_y = [xc[i] for i in np.argsort(yc)]
    y, preferred = _like_cotangent(ct, y, preferred)
    out = dot_general_p.bind(ct, y, dimension_numbers=dims, precision=precision,
                             preferred_element_type=preferred)
    out = transpose(out, tuple(np.argsort(list(xb) + x_kept + x_contract_by_y).tolist()))
    if get_aval(out).dtype != x_aval.dtype:
        out = convert_element_type(out, x_aval.dtype)
    return out


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, precision,
                           preferred_element_type):
    if ad.is_undefined_primal(lhs) and ad.is_undefined_primal(rhs):
        raise ValueError("dot_general: transpose of a product of two linear values")
    if type(ct) is ad.Zero:
        return [None, None]
    (lc, rc), (lb, rb) = dimension_numbers
    if ad.is_undefined_primal(lhs):
        return [_dot_transpose_operand(ct, lhs.aval, rhs, dimension_numbers, precision,
                                       preferred_element_type, False), None]
    swapped = ((rc, lc), (rb, lb))
    return [None, _dot_transpose_operand(ct, rhs.aval, lhs, swapped, precision,
                                         preferred_element_type, True)]


def _dot_general_batch(trace, vals, dims, *, dimension_numbers, **params):
    (lhs, rhs), (ld, rd) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers

    def shift(ds):
        return tuple(d + 1 for d in ds)
    if ld is not batching.not_mapped and rd is not batching.not_mapped:
        lhs, rhs = moveaxis(lhs, ld, 0), moveaxis(rhs, rd, 0)
        new = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=new, **params), 0
    if ld is not batching.not_mapped:
        lhs = moveaxis(lhs, ld, 0)
        new = ((shift(lc), rc), (shift(lb), rb))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=new, **params), len(lb)
    rhs = moveaxis(rhs, rd, 0)
    n_lhs_free = len(_free_dims(get_aval(lhs).ndim, lc, lb))
    new = ((lc, shift(rc)), (lb, shift(rb)))
    return dot_general_p.bind(lhs, rhs, dimension_numbers=new, **params), len(lb) + n_lhs_free


def _dot_general_lower(ctx, lhs, rhs, *, dimension_numbers, precision,
                       preferred_element_type):
    (lc, rc), (lb, rb) = dimension_numbers
    out = ctx.avals_out.dtype
    pet = ctx.element_type(out) if out != ctx.avals_in[0].dtype else None
    return ctx.builder.dot(lhs, rhs, lc, rc, lb, rb, preferred_element_type=pet,
                           metadata=ctx.metadata)


ad.defjvp(dot_general_p,
          lambda t, lhs, rhs, **p: dot_general_p.bind(t, rhs, **p),
          lambda t, lhs, rhs, **p: dot_general_p.bind(lhs, t, **p))
ad.primitive_transposes[dot_general_p] = _dot_general_transpose
batching.primitive_batchers[dot_general_p] = _dot_general_batch
register_lowering(dot_general_p, _dot_general_lower)


def dot(lhs, rhs, precision=None, preferred_element_type=None, *, dimension_numbers=None,
        out_sharding=None):
    """Vector/matrix products: [n]·[n] -> [], [m,n]·[n] -> [m], [n]·[n,k] -> [k],
    [m,n]·[n,k] -> [m,k]; with `dimension_numbers`, the general contraction dot_general.
    `out_sharding` may be None or a single-device sharding (minijax does not shard here)."""
    check_out_sharding("dot", out_sharding)
    if dimension_numbers is not None:
        return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)
    ls, rs = get_aval(lhs).shape, get_aval(rhs).shape
    if 1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]:
        return dot_general(lhs, rhs, (((len(ls) - 1,), (0,)), ((), ())), precision,
                           preferred_element_type)
    raise TypeError(f"Incompatible shapes for dot: got {ls} and {rs}.")


# --------------------------------------------------------------------------- convolution


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None):
    """General n-d convolution (XLA's ConvGeneralDilated), as jax.lax.conv_general_dilated.

    `padding` is "VALID", "SAME", "SAME_LOWER" or one (low, high) pair per spatial dim;
    `dimension_numbers` is None (NCHW/OIHW/NCHW), a ConvDimensionNumbers, or three strings
    such as ("NHWC", "HWIO", "NHWC")."""
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    dnums = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    nsp = lhs_aval.ndim - 2
    name = "conv_general_dilated"
    window_strides = check_ints(name, "window_strides", window_strides, nsp, 1)
    lhs_dilation = check_ints(name, "lhs_dilation", lhs_dilation or (1,) * nsp, nsp, 1)
    rhs_dilation = check_ints(name, "rhs_dilation", rhs_dilation or (1,) * nsp, nsp, 1)
    if isinstance(padding, str):
        window = [dilate_dim(rhs_aval.shape[d], r)
                  for d, r in zip(dnums.rhs_spec[2:], rhs_dilation, strict=True)]
        in_sizes = [lhs_aval.shape[d] for d in dnums.lhs_spec[2:]]
        padding = padtype_to_pads(in_sizes, window, window_strides, padding)
    try:
        padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: padding must be a string or a sequence of (low, high) "
                        f"integer pairs, got {padding}") from None
    if len(padding) != nsp:
        raise TypeError(f"{name}: padding must have one (low, high) pair per spatial "
                        f"dimension ({nsp}), got {padding}")
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dnums,
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count),
        precision=_canonical_precision(precision),
        preferred_element_type=_canonical_preferred(preferred_element_type))


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """conv_general_dilated with NCHW/OIHW layouts."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation,
                                rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """Convolution with NCHW/OIHW layouts and no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def _conv_abstract_eval(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
    dtype = _out_dtype("conv_general_dilated", lhs, rhs, preferred_element_type)
    if dtypes.kind(lhs.dtype) not in "iufc":
        raise TypeError(f"conv_general_dilated does not accept dtype {lhs.dtype} "
                        f"(lhs {lhs.str_short()}, rhs {rhs.str_short()})")
    shape = conv_shape(lhs.shape, rhs.shape, window_strides=window_strides, padding=padding,
                       lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                       dimension_numbers=dimension_numbers,
                       feature_group_count=feature_group_count,
                       batch_group_count=batch_group_count)
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _conv_impl(lhs, rhs, *, precision, preferred_element_type, **params):
    lhs = np.asarray(lhs)
    return conv_numpy(lhs, np.asarray(rhs), out_dtype=preferred_element_type or lhs.dtype,
                      **params)


conv_general_dilated_p = standard_primitive("conv_general_dilated", _conv_abstract_eval,
                                            _conv_impl)


def _swap01(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def reshape_axis_out_of(src: int, size1: int, x):
    """Split dimension `src` of x into (size1, rest)."""
    shape = list(get_aval(x).shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape(x, tuple(shape))


def reshape_axis_into(src: int, dst: int, x):
    """Merge dimension `src` into dimension `dst` (numbered after removing src), as the
    major part of the merged dimension."""
    shape = get_aval(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [shape[i] for i in range(len(shape)) if i != src]
    new_shape[dst] *= shape[src]
    return reshape(x, tuple(new_shape), tuple(perm))


def _conv_transpose_lhs(ct, rhs, lhs_aval, p):
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    fgc, bgc = p["feature_group_count"], p["batch_group_count"]
    rhs_shape = get_aval(rhs).shape
    if fgc > 1 or bgc > 1:
        # Move the groups from the kernel's output features into its input features.
        rhs = reshape_axis_out_of(rhs_spec[0], max(fgc, bgc), rhs)
        rhs = reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    padding = vjp_lhs_padding([lhs_aval.shape[d] for d in lhs_spec[2:]],
                              [rhs_shape[d] for d in rhs_spec[2:]], p["window_strides"],
                              [get_aval(ct).shape[d] for d in out_spec[2:]], p["padding"],
                              p["lhs_dilation"], p["rhs_dilation"])
    flipped = structural.rev(rhs, tuple(rhs_spec[2:]))
    flipped, preferred = _like_cotangent(ct, flipped, p["preferred_element_type"])
    dnums = ConvDimensionNumbers(out_spec, _swap01(rhs_spec), lhs_spec)
    out = conv_general_dilated_p.bind(
        ct, flipped, window_strides=p["lhs_dilation"], padding=tuple(padding),
        lhs_dilation=p["window_strides"], rhs_dilation=p["rhs_dilation"],
        dimension_numbers=dnums, feature_group_count=max(fgc, bgc), batch_group_count=1,
        precision=p["precision"], preferred_element_type=preferred)
    if bgc > 1:
        out = reshape_axis_out_of(lhs_spec[1], bgc, out)
        out = reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    if get_aval(out).dtype != lhs_aval.dtype:
        out = convert_element_type(out, lhs_aval.dtype)
    return out


def _conv_transpose_rhs(ct, lhs, rhs_aval, p):
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    fgc, bgc = p["feature_group_count"], p["batch_group_count"]
    lhs_shape = get_aval(lhs).shape
    padding = vjp_rhs_padding([lhs_shape[d] for d in lhs_spec[2:]],
                              [rhs_aval.shape[d] for d in rhs_spec[2:]], p["window_strides"],
                              [get_aval(ct).shape[d] for d in out_spec[2:]], p["padding"],
                              p["lhs_dilation"], p["rhs_dilation"])
    dnums = ConvDimensionNumbers(_swap01(lhs_spec), _swap01(out_spec), _swap01(rhs_spec))
    lhs, preferred = _like_cotangent(ct, lhs, p["preferred_element_type"])
    out = conv_general_dilated_p.bind(
        lhs, ct, window_strides=p["rhs_dilation"], padding=tuple(padding),
        lhs_dilation=p["lhs_dilation"], rhs_dilation=p["window_strides"],
        dimension_numbers=dnums, feature_group_count=bgc, batch_group_count=fgc,
        precision=p["precision"], preferred_element_type=preferred)
    if get_aval(out).dtype != rhs_aval.dtype:
        out = convert_element_type(out, rhs_aval.dtype)
    return out


def _conv_transpose(ct, lhs, rhs, **params):
    if ad.is_undefined_primal(lhs) and ad.is_undefined_primal(rhs):
        raise ValueError("conv_general_dilated: transpose of a product of two linear values")
    if type(ct) is ad.Zero:
        return [None, None]
    if ad.is_undefined_primal(lhs):
        return [_conv_transpose_lhs(ct, rhs, lhs.aval, params), None]
    return [None, _conv_transpose_rhs(ct, lhs, rhs.aval, params)]


def _conv_batch(trace, vals, dims, **params):
    (lhs, rhs), (ld, rd) = vals, dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fgc, bgc = params["feature_group_count"], params["batch_group_count"]
    bind = conv_general_dilated_p.bind
    if ld is not batching.not_mapped and rd is not batching.not_mapped:
        size = get_aval(lhs).shape[ld]
        if bgc > 1:
            new_lhs = reshape_axis_into(ld, lhs_spec[0], lhs)
            params = dict(params, batch_group_count=bgc * size)
        else:
            new_lhs = reshape_axis_into(ld, lhs_spec[1], lhs)
            params = dict(params, feature_group_count=fgc * size)
        new_rhs = reshape_axis_into(rd, rhs_spec[0], rhs)
        out = bind(new_lhs, new_rhs, **params)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    if ld is not batching.not_mapped:
        size = get_aval(lhs).shape[ld]
        if bgc == 1:
            out = bind(reshape_axis_into(ld, lhs_spec[0], lhs), rhs, **params)
            return reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
        # Keep the batch groups outermost: (groups, vmap batch, rest of the batch).
        new_lhs = reshape_axis_out_of(lhs_spec[0] + int(ld <= lhs_spec[0]), bgc, lhs)
        new_lhs = reshape_axis_into(ld + int(lhs_spec[0] < ld), lhs_spec[0] + 1, new_lhs)
        new_lhs = reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
        out = bind(new_lhs, rhs, **params)
        return reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
    size = get_aval(rhs).shape[rd]
    if fgc == 1 and bgc == 1:
        out = bind(lhs, reshape_axis_into(rd, rhs_spec[0], rhs), **params)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    groups = max(fgc, bgc)
    new_rhs = reshape_axis_out_of(rhs_spec[0] + int(rd <= rhs_spec[0]), groups, rhs)
    new_rhs = reshape_axis_into(rd + int(rhs_spec[0] < rd), rhs_spec[0] + 1, new_rhs)
    new_rhs = reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
    out = bind(lhs, new_rhs, **params)
    out = reshape_axis_out_of(out_spec[1], groups, out)
    out = reshape_axis_out_of(out_spec[1] + 1, size, out)
    return reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


def _conv_lower(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count, precision,
                preferred_element_type):
    rhs_spec = dimension_numbers.rhs_spec
    window = {"size": tuple(ctx.avals_in[1].shape[d] for d in rhs_spec[2:]),
              "stride": tuple(window_strides), "pad": tuple(padding),
              "lhs_dilate": tuple(lhs_dilation), "rhs_dilate": tuple(rhs_dilation)}
    out = ctx.avals_out.dtype
    pet = ctx.element_type(out) if out != ctx.avals_in[0].dtype else None
    return ctx.builder.convolution(lhs, rhs, window, dim_labels(dimension_numbers),
                                   feature_group_count, batch_group_count,
                                   preferred_element_type=pet, metadata=ctx.metadata)


ad.defjvp(conv_general_dilated_p,
          lambda t, lhs, rhs, **p: conv_general_dilated_p.bind(t, rhs, **p),
          lambda t, lhs, rhs, **p: conv_general_dilated_p.bind(lhs, t, **p))
ad.primitive_transposes[conv_general_dilated_p] = _conv_transpose
batching.primitive_batchers[conv_general_dilated_p] = _conv_batch
register_lowering(conv_general_dilated_p, _conv_lower)
